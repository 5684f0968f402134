"""Running playbooks on a fleet: the one place that knows how quiho invokes Ansible on a set of hosts.

Fingerprints (``fingerprint.yml``), application runs and interleaved profile runs
(``run.yml``) all go through :class:`FleetSession`; a new kind of run (e.g. a per-host
trace playbook) needs only its playbook, its extra variables and a function from
:class:`~quiho.fleet.runner.PlaybookResult` to records. The session owns:

- **grouping**: hosts that share the controller's machine (the local fleet) run one
  invocation per host, others in one invocation;
- **interpreter**: an all-``local`` group uses the controller's own Python;
- **locks**: the machine-wide local-fleet lock for local hosts (inside), the store's
  measurement lock and signal handling for the whole measurement (:func:`measuring`);
- **cleanup** after every invocation, also on timeout or interrupt: emulation cgroups
  and THP policy, stressors left below the remote run directory, and that directory
  itself on hosts that share this machine (a cut-off host cannot remove it);
- batch ids, the remote directory, the per-host time budget of application runs,
  exit-code 124/137 handling and the stderr tail.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quiho.fleet.inventory import FleetHost, Inventory
from quiho.fleet.local.emulate import cleanup_emulation, local_fleet_lock
from quiho.fleet.lock import measurement_lock
from quiho.fleet.runner import (
    SHARED_MACHINE_POLL_S,
    FleetEvent,
    Invocation,
    PlaybookResult,
    reap_cwd,
    run_playbook,
)
from quiho.fleet.shutdown import interruptible
from quiho.store import Store
from quiho.store.fingerprints import mark_interrupted_runs
from quiho.store.hosts import remember_hosts

__all__ = ["FleetAccess", "FleetSession", "STDERR_TAIL", "REMOTE_BASE", "TIMEOUT_RCS", "app_budget", "measuring",
           "limit_failure", "new_batch", "rc_failure", "remember_inventory", "remote_root", "run_rc", "stderr_tail"]

#: Characters of stderr kept with a failed repetition.
STDERR_TAIL = 2000
#: Where the playbooks put each run's files on a host: ``<REMOTE_BASE>/<batch>/<host>``.
REMOTE_BASE = "/tmp/quiho-remote"
#: Exit codes of coreutils ``timeout`` (124: TERM sent; 137: KILL after ``-k``).
TIMEOUT_RCS = (124, 137)


def _copy_files(src: Path, dest: Path, skip: tuple[str, ...]) -> None:
    """Copy the regular files below ``src`` to ``dest`` (names ending in ``skip`` left out; no links, no devices)."""
    for d, _dirs, files in os.walk(src):
        for f in files:
            p = Path(d, f)
            if f.endswith(skip) or p.is_symlink() or not p.is_file():
                continue
            out = dest / p.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, out)  # its times too: the stat files' mtimes date the job (bench/main_job_time.py)


def new_batch(kind: str) -> str:
    """A new batch label ``<kind>-YYYYmmdd-HHMMSS-<4 hex>`` (kind: fp, app, profile, ...)."""
    return f"{kind}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def remote_root(batch: str) -> str:
    """The remote run directory of ``batch`` (one subdirectory per host)."""
    return f"{REMOTE_BASE}/{batch}"


def app_budget(timeout_s: int, n_runs: int) -> tuple[float, int]:
    """(outer deadline per host, emulation session length) in seconds for ``n_runs`` runs of ``timeout_s`` each.

    Every run may use its whole timeout, plus one more for the setup; 30 s per task of
    Ansible overhead and 120 s of slack per host. The emulation (cgroup, co-runner) must
    outlive the runs, so it gets the same plus 60 s.
    """
    return float(timeout_s * (n_runs + 1) + 30 * (n_runs + 2) + 120), int(timeout_s * (n_runs + 1) + 60)


def stderr_tail(res: dict[str, Any]) -> str | None:
    """The last :data:`STDERR_TAIL` characters of a command result's stderr, or None."""
    return str(res.get("stderr", ""))[-STDERR_TAIL:] or None


def rc_failure(rc: Any, timeout_s: float, tail: str | None = None, *, with_stderr: bool = False) -> str | None:
    """Why a command with exit code ``rc`` failed (None: it did not): timeout or ``exit code N``.

    ``with_stderr`` appends the last stderr line to ``exit code N``.
    """
    if rc in TIMEOUT_RCS:
        return f"timed out after {timeout_s:g} s"
    if rc != 0:
        last = tail.strip().splitlines()[-1] if with_stderr and tail and tail.strip() else None
        return f"exit code {rc}" + (f": {last}" if last else "")
    return None


def limit_failure(result: dict[str, Any]) -> str | None:
    """Why a run of ``quiho_runs`` cannot be trusted although it exited 0: its memory-capacity group met its limit.

    At the limit of a cgroup v1 memory group only page faults wait; any other process's system call in that
    moment may have failed (ENOMEM), and a program that hides the error (``cat ... 2>/dev/null | xz``) looks fast.
    """
    n = int(result.get("limit_events") or 0)
    if n <= 0:
        return None
    return (f"the memory-capacity knob's group met its limit ({n}x) while it ran: a system call in it may have "
            "failed, so its result is not used")


def run_rc(result: dict[str, Any]) -> Any:
    """Exit code of one run of ``quiho_runs``; one its guard killed reads as coreutils ``timeout -k``'s 137."""
    return 137 if result.get("guard_killed") else result.get("rc")


def _host_vars(h: FleetHost) -> dict[str, Any]:
    knobs = {"write_iops": h.write_iops, "syscall_rules": h.syscall_rules, "net": h.net} if h.knobs_set else {}
    return {"connection": h.connection, "address": h.address, "cpu_quota_pct": h.cpu_quota_pct,
            "corunner": h.corunner, "thp": h.thp, **knobs}


def remember_inventory(store: Store, inv: Inventory) -> dict[str, int]:
    """Record every inventory host with its groups and quiho variables; return name → host id."""
    return remember_hosts(store, inv.path, ((h.name, list(h.groups), _host_vars(h)) for h in inv.hosts))


_MEASURING: set[str] = set()  # stores this process measures into (inside measuring())


@contextmanager
def measuring(store: Store, what: str, *, wait: bool = True) -> Iterator[list[int]]:
    """Hold the store's measurement lock with termination signals raising (see :mod:`quiho.fleet.shutdown`).

    Yields the ids of fingerprint runs a dead holder left ``running``, now marked
    ``partial`` (only the outermost ``measuring`` marks). Re-entrant: a profile holds it
    around the fingerprint it starts.

    Raises
    ------
    quiho.fleet.lock.Busy
        ``wait`` is False and the lock is held elsewhere.
    """
    key = str(Path(store.path).resolve())
    if key in _MEASURING:
        yield []
        return
    with interruptible(), measurement_lock(store.path, what=what, wait=wait):
        _MEASURING.add(key)
        try:
            yield mark_interrupted_runs(store)
        finally:
            _MEASURING.discard(key)


@dataclass(frozen=True)
class FleetAccess:
    """How quiho reaches and shares a fleet's hosts (the same for every kind of run).

    Attributes
    ----------
    forks : int, default 1
        Hosts in parallel within one invocation (hosts that share this machine always run alone).
    host_key_checking : bool, default True
        SSH host-key checking; off only through an explicit opt-in.
    cgroup_prefix : str, default "quiho"
        Emulated hosts' cgroups are named ``<prefix>-<batch>-...``.
    """

    forks: int = 1
    host_key_checking: bool = True
    cgroup_prefix: str = "quiho"


@dataclass(frozen=True)
class FleetSession:
    """One kind of playbook run over an inventory, invoked group by group with cleanup after each.

    Parameters
    ----------
    inventory : Inventory
        The fleet.
    playbook : str
        File name under ``playbooks/``.
    batch : str
        Label of the run (remote directory, cgroup names).
    cgroup_prefix : str, default "quiho"
        Emulated hosts' cgroups are named ``<prefix>-<batch>-...``.
    host_key_checking : bool, default True
        SSH host-key checking.
    forks : int, default 1
        Hosts in parallel within one invocation (hosts that share this machine always run alone).
    on_event : callable, optional
        Progress events.
    """

    inventory: Inventory
    playbook: str
    batch: str
    cgroup_prefix: str = "quiho"
    host_key_checking: bool = True
    forks: int = 1
    on_event: Callable[[FleetEvent], None] | None = None

    @property
    def remote_root(self) -> str:
        """The remote run directory of this batch."""
        return remote_root(self.batch)

    def groups(self, hosts: list[str]) -> list[list[str]]:
        """Invocation groups: one host each when hosts share this machine, else local and remote hosts apart.

        A group's Python interpreter is chosen per invocation: the controller's own for
        ``ansible_connection: local`` hosts (discovery may find a ``python3`` that cannot run
        Ansible's modules), discovery for the others.
        """
        if self.inventory.shares_machine:
            return [[h] for h in hosts]
        local = [h for h in hosts if self.inventory.host(h).connection == "local"]
        remote = [h for h in hosts if h not in local]
        return [g for g in (local, remote) if g]

    def is_local(self, group: list[str]) -> bool:
        """True when ``group``'s hosts are ``ansible_connection: local`` (all or none are: see :meth:`groups`)."""
        return all(self.inventory.host(h).connection == "local" for h in group)

    def base_vars(self) -> dict[str, Any]:
        """Extra variables every quiho playbook reads."""
        return {"quiho_batch": self.batch, "quiho_remote_root": self.remote_root,
                "quiho_cgroup_prefix": self.cgroup_prefix}

    def run(self, group: list[str], extravars: dict[str, Any], timeout_s: float,
            collect_to: Path | None = None) -> PlaybookResult:
        """Run the playbook on ``group`` with ``extravars`` (added to :meth:`base_vars`) within ``timeout_s``.

        Local hosts queue on the machine-wide local-fleet lock. Whatever happens (timeout,
        failure, interrupt), emulation left-overs, stray processes below the remote
        directory and, on hosts that share this machine, the remote directory are removed.
        For ``ansible_connection: local`` hosts this process makes and removes the remote
        directories itself (``quiho_dir_ready``): each playbook task costs a module run.
        With ``collect_to``, it also copies an ok local host's directory (its regular files)
        to ``collect_to/<host>`` before removing it, where a remote host's playbook collects.
        """
        hosts = [self.inventory.host(h) for h in group]
        local = self.is_local(group)
        res: PlaybookResult | None = None
        if local:  # this machine's filesystem: a module run per host and invocation saved on each side
            extravars = {**extravars, "quiho_dir_ready": True}
        try:
            for h in group if local else []:
                Path(self.remote_root, h).mkdir(mode=0o700, parents=True, exist_ok=True)
            with local_fleet_lock() if local else nullcontext():
                how = Invocation(
                    limit=tuple(group), forks=1 if self.inventory.shares_machine else self.forks, timeout_s=timeout_s,
                    host_key_checking=self.host_key_checking,
                    python_interpreter=sys.executable if local else "auto_silent",
                    # the controller shares the CPUs with what these hosts measure: no spinning strategy loop
                    poll_s=SHARED_MACHINE_POLL_S if local or self.inventory.shares_machine else None,
                )
                res = run_playbook(self.playbook, self.inventory.path, {**self.base_vars(), **extravars}, how,
                                   self.on_event)
        finally:
            if any(h.emulated for h in hosts):
                cleanup_emulation(f"{self.cgroup_prefix}-{self.batch}-")
            if res is None or res.timed_out or any(o.status != "ok" for o in res.hosts.values()):
                self._cleanup_remote(group)
            elif local:
                if collect_to is not None:
                    for h in group:
                        _copy_files(Path(self.remote_root, h), collect_to / h, skip=(".job", ".sh"))
                self._remove_dirs(group)
            try:  # each host's directory is gone (playbook or here); the batch's own stays behind on this machine
                Path(self.remote_root).rmdir()
            except OSError:
                pass
        return res

    def _cleanup_remote(self, group: list[str]) -> None:
        # Stressors and app processes of a cancelled run on this machine (local/netns hosts) outlive ansible's
        # process group (coreutils timeout starts its own); a cut-off host never ran the playbook's cleanup task.
        reap_cwd(self.remote_root)
        self._remove_dirs(group)

    def _remove_dirs(self, group: list[str]) -> None:
        for h in group:
            d = Path(self.remote_root) / h
            if d.is_dir():
                shutil.rmtree(d, ignore_errors=True)

    @staticmethod
    def host_statuses(res: PlaybookResult, group: list[str]) -> dict[str, tuple[str, str | None]]:
        """(status, reason) of every host of ``group``; a host without events is ``unreachable``."""
        out: dict[str, tuple[str, str | None]] = {}
        for h in group:
            o = res.hosts.get(h)
            out[h] = (o.status, o.reason) if o else ("unreachable", "no events for this host")
        return out
