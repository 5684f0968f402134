"""Controller-side safety net for the local fleet's cgroups (the playbook removes them in ``always:``)."""

from __future__ import annotations

import fcntl
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["cleanup_cgroups", "local_fleet_lock", "CGROUP_CPU", "LOCK_PATH"]

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
#: One machine-wide lock: two quiho processes measuring local hosts at once would interfere
#: (co-runners, quotas and stressors all share the same 2 vCPUs), so local measurements queue here.
LOCK_PATH = Path("/run/lock/quiho-local-fleet.lock") if Path("/run/lock").is_dir() else Path(
    "/tmp/quiho-local-fleet.lock"
)


@contextmanager
def local_fleet_lock(path: Path = LOCK_PATH) -> Iterator[float]:
    """Hold the machine-wide local-fleet lock (blocking); yields the seconds spent waiting for it."""
    t0 = time.monotonic()
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - t0
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cleanup_cgroups(prefix: str, root: Path = CGROUP_CPU) -> list[str]:
    """Kill every process in cgroups named ``prefix*`` under ``root`` and remove them; return their names.

    Used after every local-fleet invocation, so a killed or cancelled playbook
    never leaves a co-runner or a quota group behind. Only groups with quiho's
    per-run prefix match.
    """
    removed: list[str] = []
    if not prefix or not root.is_dir():
        return removed
    for d in sorted(root.iterdir()):
        if not d.is_dir() or not d.name.startswith(prefix):
            continue
        for _ in range(100):
            try:
                pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        try:
            d.rmdir()
            removed.append(d.name)
        except OSError:
            pass
    return removed
