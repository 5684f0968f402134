"""Controller-side safety net for the local fleet's cgroups (the playbook removes them in ``always:``)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["cleanup_emulation", "cleanup_cgroups", "cleanup_knobs", "restore_thp", "local_fleet_lock", "CGROUP_CPU",
           "CGROUP_KNOBS", "LOCK_PATH", "MEM_EVENTS_DIR", "NETNS_DIR", "THP_PATH", "THP_SAVE"]

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
#: The knobs' groups (storage: blkio write-IOPS limit; memory capacity: memory limit), named like the cpu group.
CGROUP_KNOBS = (Path("/sys/fs/cgroup/blkio"), Path("/sys/fs/cgroup/memory"))
#: Where the memory-capacity watcher keeps its count of limit meetings, ``quiho-memcap-<cpu group name>.events``.
MEM_EVENTS_DIR = Path("/run")
#: Where ``ip netns`` keeps named namespaces; the network knob's is ``qh-<cpu group name>``.
NETNS_DIR = Path("/run/netns")
#: Machine-wide transparent-huge-page policy, and where playbooks/files/quiho-emulate.sh saves the original.
THP_PATH = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_SAVE = Path("/run/quiho-thp.orig")
#: One machine-wide lock: two quiho processes measuring local hosts at once would interfere
#: (co-runners, quotas and stressors all share the same 2 vCPUs), so local measurements queue here.
LOCK_PATH = Path("/run/lock/quiho-local-fleet.lock") if Path("/run/lock").is_dir() else Path(
    "/tmp/quiho-local-fleet.lock"
)


@contextmanager
def local_fleet_lock(path: Path = LOCK_PATH, *, blocking: bool = True) -> Iterator[float]:
    """Hold the machine-wide local-fleet lock; yields the seconds spent waiting for it.

    With ``blocking=False`` a lock held elsewhere raises :class:`BlockingIOError` at once. Waiting
    polls every 0.2 s in Python rather than blocking in ``flock``, so Ctrl-C ends a wait at once.
    """
    t0 = time.monotonic()
    with open(path, "a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not blocking:
                    raise
                time.sleep(0.2)
        try:
            yield time.monotonic() - t0
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def restore_thp(save: Path = THP_SAVE, target: Path = THP_PATH) -> str | None:
    """Put back the THP policy an emulated host changed, if a run left it changed; return it (None: nothing to do)."""
    try:
        orig = save.read_text().strip()
    except OSError:
        return None
    if orig not in ("always", "madvise", "never"):
        return None
    try:
        target.write_text(orig + "\n")
        save.unlink()
    except OSError:
        return None
    return orig


def _restore_thp_if_idle(lock: Path = LOCK_PATH) -> None:
    # Only when no other quiho process is measuring a local host: its emulated host may have set THP on purpose.
    try:
        with local_fleet_lock(lock, blocking=False):
            restore_thp()
    except OSError:  # held elsewhere (BlockingIOError) or no lock file possible
        return


def cleanup_emulation(prefix: str) -> list[str]:
    """Undo whatever a local-fleet invocation with cgroup ``prefix`` may have left: its cgroups and THP policy."""
    _restore_thp_if_idle()
    return cleanup_cgroups(prefix) + cleanup_knobs(prefix)


def cleanup_knobs(prefix: str) -> list[str]:
    """Remove the knobs' blkio and memory groups and network namespaces named ``prefix*``; return their names.

    Processes still in them are killed first, as :func:`cleanup_cgroups` does for the cpu groups.
    """
    removed: list[str] = []
    if not prefix:
        return removed
    for root in CGROUP_KNOBS:
        removed += [f"{root.name}/{n}" for n in cleanup_cgroups(prefix, root)]
    for f in sorted(MEM_EVENTS_DIR.glob(f"quiho-memcap-{prefix}*.events*")):  # the memory watcher's count
        f.unlink(missing_ok=True)
        removed.append(f"run/{f.name}")
    if NETNS_DIR.is_dir():
        for ns in sorted(NETNS_DIR.iterdir()):
            if not ns.name.startswith(f"qh-{prefix}"):
                continue
            pids = subprocess.run(["ip", "netns", "pids", ns.name], capture_output=True, text=True, check=False)
            for pid in pids.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            if subprocess.run(["ip", "netns", "del", ns.name], capture_output=True, check=False).returncode == 0:
                removed.append(f"netns/{ns.name}")
    return removed


def cleanup_cgroups(prefix: str, root: Path = CGROUP_CPU) -> list[str]:
    """Kill every process in cgroups named ``prefix*`` under ``root`` and remove them; return their names.

    Used after every local-fleet invocation (:func:`cleanup_emulation`), so a killed
    or cancelled playbook never leaves a co-runner or a quota group behind. Only
    groups with quiho's per-run prefix match.
    """
    removed: list[str] = []
    if not prefix or not root.is_dir():
        return removed
    for d in sorted(root.iterdir()):
        if not d.is_dir() or not d.name.startswith(prefix):
            continue
        # a process may still join while the group is emptied (a start killed midway goes on starting its
        # co-runner and watcher), so the group is emptied again until it can be removed
        for _ in range(100):
            try:
                pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not pids:
                try:
                    d.rmdir()
                    removed.append(d.name)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    pass
            time.sleep(0.1)
    return removed
