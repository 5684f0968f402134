"""Clean shutdown of a controller: SIGTERM/SIGINT/SIGHUP unwind through ``finally``, orphans are reaped.

A quiho process that measures a fleet holds things only its Python side can undo:
cgroups and the THP policy of emulated hosts, co-runners, ssh control masters, the
remote run directory of a host that was cut off. :func:`interruptible` turns the
termination signals into :class:`Interrupted` (a ``KeyboardInterrupt``), so every
``finally`` on the way out runs, also for a blocking wait on a lock (``flock`` is
retried after a signal only when the handler does not raise).

Processes that daemonise (ssh ``ControlPersist`` masters) are re-parented to PID 1
when their parent exits; where PID 1 does not reap (containers, some VMs'
init) each one killed would stay a zombie. :func:`become_subreaper`
makes the controller their parent instead, and :func:`reap_children` collects them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Interrupted", "interruptible", "become_subreaper", "reap_children", "reap_all_children",
           "TERMINATING_SIGNALS"]

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_CHILD_SUBREAPER = 36


class Interrupted(KeyboardInterrupt):
    """A termination signal arrived; raised so that cleanup in ``finally`` runs on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGTERM, SIGINT and SIGHUP raise :class:`Interrupted`; old handlers come back after.

    Also makes this process a child subreaper (see :func:`become_subreaper`) and reaps
    finished children on the way out. Outside the main thread it only reaps.
    """
    become_subreaper()
    old = {}
    if threading.current_thread() is threading.main_thread():
        for s in TERMINATING_SIGNALS:
            old[s] = signal.signal(s, _raise)  # also when SIGINT was ignored (started in the background)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        reap_children()


def become_subreaper() -> bool:
    """Make orphaned descendants children of this process (Linux ``PR_SET_CHILD_SUBREAPER``); False if unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


#: Command names (prefixes) of processes a fleet run leaves orphaned and that end as this process's zombie
#: children by subreaping: ssh control masters, and stressors/co-runners killed on the controller's machine.
#: quiho's Python never starts these itself, so reaping them cannot steal a ``subprocess`` child's status.
ORPHAN_COMMS = ("ssh", "stress-ng")


def reap_children(pids: Iterable[int] = ()) -> int:
    """Collect exited children: ``pids`` (killed by us) and zombie orphans named in :data:`ORPHAN_COMMS`.

    Never blocks and never waits for a child it did not name or that is not an adopted
    orphan, so ``subprocess`` objects elsewhere in the process keep their exit status.
    Returns how many were reaped.
    """
    me = os.getpid()
    wanted = set(pids)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                head, tail = fh.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        comm = head.split("(", 1)[-1]
        if len(fields) > 1 and fields[0] == "Z" and int(fields[1]) == me and comm.startswith(ORPHAN_COMMS):
            wanted.add(int(entry))
    n = 0
    for pid in wanted:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (or already collected)
            continue
        n += int(done != 0)
    return n


def reap_all_children() -> int:
    """Collect every exited child, whatever it is (never blocks); for a command that has finished its work.

    A process that exits with zombie children hands them to PID 1, which may never reap
    them; the CLI calls this when a fleet command ends (its own ``subprocess`` children are
    all waited for by then). Returns how many were reaped.
    """
    n = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return n
        if pid == 0:
            return n
        n += 1
