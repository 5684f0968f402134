"""The local fleet's factors in one table: the resource class each loads, its host variable, levels, probe, label.

The fleet (the calibration and its knobs) sets them and the analysis (design factors, classes, hints) reads them;
both take them from here, so a new knob is one row. The far level of the quota and of the knobs is the one the
calibration measured on the machine (``on`` None here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FactorSpec", "FACTORS", "FACTOR_BY_NAME"]


@dataclass(frozen=True)
class FactorSpec:
    """One factor: its name, table label, the resource class it loads, host variable, levels and calibration probe."""

    name: str
    label: str
    resource: str
    host_var: str
    off: Any
    on: Any
    probe: str
    #: whether its on level slows what leans on its resource (huge pages speed it up)
    slows: bool = True


#: In the order the analysis lists factors; the compute co-runner (core sharing) shares the stream co-runner's host
#: variable, told apart by its level.
FACTORS: tuple[FactorSpec, ...] = (
    FactorSpec("cpu-quota", "CPU quota", "cpu", "quiho_cpu_quota_pct", 100, None, "cpu"),
    FactorSpec("huge-pages", "huge pages", "memory", "quiho_thp", "never", "always", "memory", slows=False),
    FactorSpec("co-runner", "co-runner", "memory", "quiho_corunner", "none", "stream", "memory"),
    FactorSpec("core-sharing", "core sharing", "cpu", "quiho_corunner", "none", "cpu", "cpu"),
    FactorSpec("storage", "write-IOPS limit", "storage", "quiho_write_iops", "0", None, "fsync"),
    FactorSpec("kernel-entry", "seccomp rules", "kernel-entry", "quiho_syscall_rules", 0, None, "syscall"),
    FactorSpec("network", "loopback shaping", "network", "quiho_net", "0", None, "network"),
    FactorSpec("memory-capacity", "page-cache allowance", "memory-capacity", "quiho_mem_cache_mib", 0, None, "reread"),
)
FACTOR_BY_NAME: dict[str, FactorSpec] = {f.name: f for f in FACTORS}
