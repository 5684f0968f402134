"""Controller-side safety net for the local fleet's cgroups (the playbook removes them in ``always:``)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["cleanup_cgroups", "CGROUP_CPU"]

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")


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
