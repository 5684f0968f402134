"""Machine facts: one schema for every place quiho records what a machine is.

Histories stamp each measured revision with them, the local fleet's calibration hashes the facts that decide how
its emulation axes act, and fingerprints store them per host. The same keys everywhere, so a fact read in one
place means the same in another: ``cpu_model``, ``vcpus`` (processors the OS has, ``nproc --all``),
``memtotal_mb`` ...; a fact that could not be read is ``None``.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

__all__ = ["CALIBRATION_KEYS", "HOST_KEYS", "MachineFacts", "calibration_facts", "local_facts", "parse_facts"]

_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
_PAGE_REPORTING = Path("/sys/module/page_reporting")
_L3 = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")

#: The facts that decide how the local fleet's emulation axes act (a calibration is reused while they hold).
CALIBRATION_KEYS = ("cpu_model", "vcpus", "memtotal_mb", "kernel", "thp_modes", "cgroup_v1_cpu",
                    "free_page_reporting")

#: The facts a fleet host reports through the playbooks (:func:`parse_facts`).
HOST_KEYS = ("stress_ng_version", "cpu_model", "kernel", "arch", "os", "l3_cache", "vcpus", "cores", "memtotal_mb")


@dataclass(frozen=True)
class MachineFacts:
    """What a machine is (and, for a measurement's record, how busy it was).

    Attributes
    ----------
    host, os, kernel, arch : str or None
        Host name, OS name, kernel release, machine architecture.
    cpu_model : str or None
        ``model name`` of the first processor.
    vcpus, cores : int or None
        Processors the OS has (``nproc --all``); cores per socket.
    memtotal_mb : int or None
        Total memory in MiB.
    l3_cache : str or None
        CPU 0's L3 size as sysfs says it (``32768K``).
    stress_ng_version : str or None
        ``stress-ng --version``'s first line.
    thp_modes : tuple of str or None
        Transparent-huge-page policies the kernel offers.
    cgroup_v1_cpu, free_page_reporting : bool or None
        Whether the cgroup v1 cpu controller is mounted; whether the kernel reports free pages to a hypervisor.
    load1 : float or None
        1-minute load average when the facts were read.
    """

    host: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    vcpus: int | None = None
    cores: int | None = None
    memtotal_mb: int | None = None
    l3_cache: str | None = None
    stress_ng_version: str | None = None
    thp_modes: tuple[str, ...] | None = None
    cgroup_v1_cpu: bool | None = None
    free_page_reporting: bool | None = None
    load1: float | None = None

    def to_dict(self, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
        """JSON-ready mapping (tuples as lists), of every fact or of ``keys`` only."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}
        return out if keys is None else {k: out[k] for k in keys}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MachineFacts:
        """The facts of a mapping written by :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if isinstance(kw.get("thp_modes"), list):
            kw["thp_modes"] = tuple(kw["thp_modes"])
        return cls(**kw)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _int(text: str | None, scale: int = 1) -> int | None:
    try:
        return int(str(text).strip()) // scale
    except ValueError:
        return None


def local_facts() -> MachineFacts:
    """The facts of the machine this process runs on."""
    cpuinfo = _read(Path("/proc/cpuinfo")) or ""
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    cores = re.search(r"^cpu cores\s*:\s*(\d+)", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s+(\d+)", _read(Path("/proc/meminfo")) or "", re.M)
    thp = _read(_THP)
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    os_release = re.search(r'^PRETTY_NAME="?([^"\n]*)"?$', _read(Path("/etc/os-release")) or "", re.M)
    l3 = _read(_L3)
    return MachineFacts(
        host=platform.node() or None,
        os=os_release.group(1) if os_release else platform.platform(),
        kernel=platform.release() or None,
        arch=platform.machine() or None,
        cpu_model=model.group(1).strip() if model else (platform.processor() or None),
        vcpus=os.cpu_count(),
        cores=int(cores.group(1)) if cores else None,
        memtotal_mb=int(mem.group(1)) // 1024 if mem else None,
        l3_cache=l3.strip() if l3 else None,
        thp_modes=tuple(sorted(w.strip("[]") for w in thp.split())) if thp is not None else None,
        cgroup_v1_cpu=_CGROUP_V1_CPU.exists(),
        free_page_reporting=_PAGE_REPORTING.is_dir(),
        load1=load,
    )


def parse_facts(stdout: str) -> MachineFacts:
    """The facts a fleet host printed (the playbooks' ``quiho facts`` task: ``key=value`` lines)."""
    raw = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    return MachineFacts(
        os=raw.get("os") or None,
        kernel=raw.get("kernel") or None,
        arch=raw.get("arch") or None,
        cpu_model=raw.get("cpu_model") or None,
        vcpus=_int(raw.get("vcpus", "")),
        cores=_int(raw.get("cores", "")),
        memtotal_mb=_int(raw.get("mem_kb", ""), 1024),
        l3_cache=raw.get("l3") or None,
        stress_ng_version=raw.get("stress_ng") or None,
    )


def calibration_facts(facts: MachineFacts) -> dict[str, Any]:
    """The facts that decide how the emulation axes act on a machine, as the mapping a calibration records."""
    return facts.to_dict(CALIBRATION_KEYS)
