"""Machine facts and the calibration probes of the local fleet (pure measurement; no decisions here).

The probes run directly from Python on the controller (it is the machine the local fleet emulates), each
inside a cgroup made by ``playbooks/files/quiho-emulate.sh start`` and through the *same* join/prefault/pin
wrapper the playbooks use (``qh_join`` in ``playbooks/vars/emulation.yml``), so a probe sees exactly what a
measured command of an emulated host sees. Commands are argv lists.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from quiho._facts import calibration_facts, local_facts
from quiho.errors import InventoryError
from quiho.fleet.inventory import repo_root
from quiho.fleet.local.emulate import CGROUP_CPU, cleanup_cgroups, cleanup_knobs, restore_thp

__all__ = ["PROBES", "PREFAULT_MIB_OF", "CORUNNER_SETTLE_S", "REREAD_MIB", "Cell", "probe_seconds", "reread_seconds",
           "machine_facts", "facts_key", "ProbeRunner", "require_root", "seccomp_wrap"]

#: Fixed work per probe (~0.3 s unthrottled with 4 KiB pages on a current x86 core).
#: memory: stress-ng's STREAM on arrays sized from an 8 MiB "L3" (faults them in, then streams them: the page size
#: acts on both, as on stream@nadds1); cpu: integer arithmetic on registers (no memory traffic). A probe's time is
#: the worker's own (bogo-ops / its real-time rate, from stress-ng's metrics), as the fleet measures stressors:
#: the command's wall time also holds stress-ng's start-up and the wrapper's exit, which no stressor sees.
#: The memory-capacity probe's file (MiB) and its measured passes: 4x the knob's 32 MiB allowance, so every pass
#: under the knob comes from the disk; unthrottled, three passes from the page cache take ~0.05 s.
REREAD_MIB = 128
REREAD_PASSES = 3
PROBES: dict[str, list[str]] = {
    "memory": ["stress-ng", "--stream", "1", "--stream-ops", "12", "--stream-l3-size", "8M", "-q", "--metrics-brief"],
    "cpu": ["stress-ng", "--cpu", "1", "--cpu-method", "int64", "--cpu-ops", "600", "-q", "--metrics-brief"],
    # the knobs' probes (quiho.fleet.local.knobs), each dominated by the resource its knob loads:
    # storage: 4 KiB writes each followed by fsync, in the fleet's run directory (ProbeRunner adds --temp-path)
    "fsync": ["stress-ng", "--hdd", "1", "--hdd-opts", "wr-seq,fsync", "--hdd-write-size", "4K", "--hdd-bytes", "1M",
              "--hdd-ops", "100", "-q", "--metrics-brief"],
    # kernel entry: writes to /dev/null, a system call that does no work
    "syscall": ["stress-ng", "--null", "1", "--null-ops", "20000", "-q", "--metrics-brief"],
    # network: TCP over the loopback (connect, send, receive, close)
    "network": ["stress-ng", "--sock", "1", "--sock-ops", "30", "-q", "--metrics-brief"],
    # memory capacity: a file four times the knob's page-cache allowance, reread (playbooks/files/quiho-reread.py;
    # not stress-ng, whose file stressors drop or write their files: it prints its own seconds)
    "reread": ["quiho-reread.py", str(REREAD_MIB), str(REREAD_PASSES)],
}
#: Prefault (MiB) before each probe (free page reporting, see inventories/local.yml): 128 MiB before the memory
#: probe, which peaks at ~100 MB resident, as the fleet's 512 MiB covers stream@nadds1's 192 MiB; 1 MiB before the
#: CPU probe, which touches no memory worth prefaulting (the wrapper still prints its time marker).
PREFAULT_MIB_OF = {"memory": 128, "cpu": 1, "fsync": 1, "syscall": 1, "network": 1, "reread": 1}
#: Extra wait (s) after a co-runner cell starts, beyond quiho-emulate.sh's 1 s: the stream co-runner faults in its
#: arrays before it streams, and a cell's first probe must meet it loading memory.
CORUNNER_SETTLE_S = 1.0


@dataclass(frozen=True)
class Cell:
    """One emulated condition: CPU quota (% of one CPU), THP policy, CFS period (µs), co-runner on CPU 1, knobs.

    The knobs (:mod:`quiho.fleet.local.knobs`): ``iops`` a write-IOPS limit ``MAJ:MIN:N`` ("0": none),
    ``mem_mib`` the page cache allowed beyond the group's own memory (MiB; 0: no limit), ``net`` loopback shaping
    (``rate:MBIT`` / ``delay:US``, "0": none), ``syscall_rules`` seccomp rules every system call passes (0: none).
    """

    quota_pct: int = 100
    thp: str = "never"
    period_us: int = 20000
    corunner: str = "none"
    iops: str = "0"
    mem_mib: int = 0
    net: str = "0"
    syscall_rules: int = 0

    @property
    def label(self) -> str:
        """Short text form, e.g. ``q94-never-p20000``."""
        co = "" if self.corunner == "none" else f"-co{self.corunner}"
        knobs = "".join(f"-{k}{v}" for k, v in (("iops", self.iops), ("mem", self.mem_mib), ("net", self.net),
                                                  ("sys", self.syscall_rules)) if str(v) != "0")
        return f"q{self.quota_pct}-{self.thp}-p{self.period_us}{co}{knobs}"


def machine_facts() -> dict[str, Any]:
    """The facts that decide how the emulation axes act on this machine (what the calibration key hashes)."""
    return calibration_facts(local_facts())


def facts_key(facts: dict[str, Any]) -> str:
    """Stable hash (sha256 hex) of ``facts``: canonical JSON, sorted keys."""
    return hashlib.sha256(json.dumps(facts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def require_root() -> None:
    """Raise :class:`InventoryError` unless this process can emulate hosts (root, cgroup v1 cpu, stress-ng, THP)."""
    if os.geteuid() != 0:
        raise InventoryError("the local fleet emulates hosts with cgroups and THP and needs root; run as root "
                             "or pass -i with an inventory of real hosts")
    if not (CGROUP_CPU / "cpu.cfs_period_us").exists():
        raise InventoryError(f"the local fleet needs the cgroup v1 cpu controller at {CGROUP_CPU}")
    if shutil.which("stress-ng") is None:
        raise InventoryError("the local fleet's calibration needs stress-ng (apt-get install stress-ng)")


def probe_seconds(text: str, argv: list[str]) -> float:
    """A fixed-work probe's time from stress-ng's ``--yaml`` output: bogo-ops over the real-time rate (s).

    Raises
    ------
    InventoryError
        No metrics entry, no operations or no rate: stress-ng exited 0 without measuring (see
        :mod:`quiho.fingerprint.parse`: exit code 0 is not success).
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InventoryError(f"calibration probe {argv[:3]}: unreadable stress-ng output ({exc})") from exc
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    entry = metrics[0] if isinstance(metrics, list) and metrics and isinstance(metrics[0], dict) else {}
    ops, rate = entry.get("bogo-ops"), entry.get("bogo-ops-per-second-real-time")
    if not isinstance(ops, int | float) or not isinstance(rate, int | float) or ops <= 0 or rate <= 0:
        raise InventoryError(f"calibration probe {argv[:3]}: stress-ng reported no operations (metrics {entry!r})")
    return float(ops) / float(rate)


def reread_seconds(text: str, argv: list[str]) -> float:
    """The memory-capacity probe's time: the positive seconds ``quiho-reread.py`` printed on its last line.

    Raises
    ------
    InventoryError
        No positive number on the last line.
    """
    lines = text.strip().splitlines()
    try:
        s = float(lines[-1]) if lines else math.nan
    except ValueError:
        s = math.nan
    if not s > 0:
        raise InventoryError(f"calibration probe {argv[1:2]}: printed no time ({text.strip()[-100:]!r})")
    return s


def seccomp_wrap(rules: int, python: str = "python3") -> list[str]:
    """The argv prefix that runs a command under the kernel-entry knob's ``rules`` seccomp rules (none for 0)."""
    if rules <= 0:
        return []
    return [python, str(repo_root() / "playbooks" / "files" / "quiho-seccomp.py"), str(int(rules))]


def _join_script() -> str:
    """``qh_join`` from playbooks/vars/emulation.yml: the wrapper every measured command of the fleet runs in."""
    p = repo_root() / "playbooks" / "vars" / "emulation.yml"
    script = yaml.safe_load(p.read_text())["qh_join"]
    assert isinstance(script, str)
    return script


class ProbeRunner:
    """Runs probes in emulated cells; counts every probe run (``runs``) so callers can tell a re-probe.

    Parameters
    ----------
    prefix : str
        Cgroup name prefix (every cgroup is ``<prefix>-<n>`` under /sys/fs/cgroup/cpu; all removed by
        :meth:`cleanup`).
    prefault_mib : int, default 512
        The fleet's prefault before every measured command (see inventories/local.yml); the CPU probe gets
        1 MiB (:data:`PREFAULT_MIB_OF`).
    on_step : callable, optional
        Called with one line per round of cells (progress for a CLI's stderr).
    workdir : str, optional
        Directory the storage probe writes in: the file system the fleet's applications use (default the
        temporary directory).
    """

    def __init__(self, prefix: str, prefault_mib: int = 512, on_step: Callable[[str], None] | None = None,
                 workdir: str | None = None) -> None:
        self.prefix = prefix
        self.workdir = workdir or tempfile.gettempdir()
        self.prefault_mib = prefault_mib
        self.on_step = on_step or (lambda _m: None)
        self.runs = 0
        self._n = 0
        self._warm = False
        self._join = _join_script()
        self._script = repo_root() / "playbooks" / "files" / "quiho-emulate.sh"

    def _emulate(self, *args: str) -> None:
        r = subprocess.run(["sh", str(self._script), *args], capture_output=True, text=True, timeout=60, check=False)
        if r.returncode != 0:
            raise InventoryError(f"calibration: quiho-emulate.sh {args[0]} failed: {r.stderr.strip()[-300:]}")

    @property
    def reread_file(self) -> Path:
        """The memory-capacity probe's file, in the run directory (removed by :meth:`cleanup`)."""
        return Path(self.workdir) / f"quiho-reread-{self.prefix}.bin"

    def _one(self, cg: str, argv: list[str], prefault_mib: int, syscall_rules: int = 0) -> float:
        """Seconds the probe took for its fixed work (stress-ng: bogo-ops / real-time rate; reread: its own)."""
        fd, yml = tempfile.mkstemp(prefix="quiho-probe-", suffix=".yml")
        os.close(fd)
        reread = argv[0] == "quiho-reread.py"
        if reread:
            argv = [sys.executable, str(repo_root() / "playbooks" / "files" / argv[0]), str(self.reread_file),
                    *argv[1:]]
        else:
            argv = [*argv, *(["--temp-path", self.workdir] if argv[1] == "--hdd" else []), "--yaml", yml]
        try:
            r = subprocess.run([*seccomp_wrap(syscall_rules, sys.executable), "sh", "-c", self._join, "sh", cg,
                                str(prefault_mib), "timeout", "-k", "5", "60", *argv],
                               capture_output=True, text=True, timeout=90, check=False)
            self.runs += 1
            if r.returncode != 0:
                raise InventoryError(f"calibration probe {argv[:3]} failed (rc {r.returncode}): "
                                     f"{r.stderr.strip()[-300:]}")
            if reread:
                return reread_seconds(r.stdout, argv)
            return probe_seconds(Path(yml).read_text(), argv)
        finally:
            Path(yml).unlink(missing_ok=True)

    def rounds(self, cells: list[tuple[Cell, int]], probes: list[str],
               probes_of: list[list[str]] | None = None) -> list[dict[str, list[float]]]:
        """Probe times (probe → seconds) per cell, measured round-robin: one repetition of every cell per round.

        Each cell's emulation is started and stopped around its repetition, so a slow change in the machine's
        load (other users, a neighbour VM) falls on every cell alike instead of on whichever cell ran while it
        lasted. ``cells`` pairs each cell with its number of repetitions; ``probes_of`` (one list per cell) runs
        only those probes in that cell instead of all of ``probes``.
        """
        each = probes_of or [probes] * len(cells)
        out: list[dict[str, list[float]]] = [{p: [] for p in ps} for ps in each]
        if not self._warm and cells:  # one unmeasured run of each probe: a calibration's first run is slow
            self._warm = True
            self._visit(cells[0][0], each[0])
        for r in range(max((n for _, n in cells), default=0)):
            for (cell, n), res in zip(cells, out, strict=True):
                if r < n:
                    for p, t in self._visit(cell, list(res)).items():
                        res[p].append(t)
            self.on_step(f"calibration: round {r + 1}: " + "; ".join(
                f"{c.label} " + " ".join(f"{p} {v[-1]:.3f}" for p, v in res.items() if v)
                for (c, n), res in zip(cells, out, strict=True) if r < n))
        return out

    def _visit(self, cell: Cell, probes: list[str]) -> dict[str, float]:
        """One repetition of ``cell``: its emulation started, each probe run once, the emulation stopped."""
        self._n += 1
        cg = str(CGROUP_CPU / f"{self.prefix}-{self._n}")
        self._emulate("start", cg, str(cell.quota_pct), cell.corunner, "120", cell.thp, str(cell.period_us),
                      cell.iops, str(cell.mem_mib), cell.net)
        if cell.corunner != "none":
            time.sleep(CORUNNER_SETTLE_S)
        try:
            return {p: self._one(cg, PROBES[p], min(self.prefault_mib, PREFAULT_MIB_OF[p]), cell.syscall_rules)
                    for p in probes}
        finally:
            self._emulate("stop", cg)

    def cleanup(self) -> None:
        """Remove every cgroup of this runner and put the THP policy back (safe to call twice)."""
        cleanup_cgroups(self.prefix)
        cleanup_knobs(self.prefix)
        restore_thp()
        self.reread_file.unlink(missing_ok=True)
