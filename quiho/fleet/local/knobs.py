"""The local fleet's knobs: one real mechanism per resource, scoped to the measured process, each with its probe.

A knob is kept on a machine only on evidence: with the knob on, its probe (a fixed amount of work dominated by
the knob's resource) must slow measurably, and more than the CPU probe does, so the knob orders hosts by that
resource and not by speed. :func:`screen_knobs` measures that, paired by round; :func:`decide_knob` is the rule.

=================  ==============================================  ======================  ====================
knob               mechanism (measured process only)               probe                   resource class
=================  ==============================================  ======================  ====================
core-sharing       a compute co-runner on the other CPU             integer arithmetic      cpu (core sharing)
storage            cgroup v1 blkio write-IOPS limit on the disk     4 KiB write + fsync     storage
                   of the fleet's run directory
kernel-entry       a seccomp filter of N rules every system call    writes to /dev/null     kernel-entry
                   passes (playbooks/files/quiho-seccomp.py)
network            a network namespace whose loopback carries a     TCP over loopback       network
                   netem delay (tbf rate limit without netem)
memory-capacity    the page cache trimmed to 32 MiB beyond the      rereading a file 4x     memory-capacity
                   group's own memory; a cgroup v1 limit 256 MiB    the allowance
                   above that, OOM killer off (a run during which
                   the group meets it is not used)
=================  ==============================================  ======================  ====================

The memory-capacity level is measured on the application while it runs (its anonymous, shmem and kernel memory,
every 20 ms), because these machines have no swap: a limit below that is an OOM kill, not a slower run; and the
limit stays well above it, because at a cgroup v1 limit only page faults wait and any other charge fails. A
shared-cache thrasher is not in the catalogue: on a microVM whose vCPUs share no last-level cache it moves only
memory bandwidth, as the stream co-runner does (``bench/cache_corunner.py``).
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from quiho._factors import FACTOR_BY_NAME
from quiho.fleet.local.probes import Cell, ProbeRunner

__all__ = ["Knob", "KNOBS", "LOOK_AT", "KnobEffect", "KNOB_REPS", "decide_knob", "knob_cells", "screen_knobs",
           "write_disk", "network_mechanism", "paired_mean", "MIN_STEP", "MEM_CACHE_MIB", "effect_text",
           "undecided", "REPROBE_BATCHES", "LAST_LOOK_SE", "batch_note", "append_rounds"]

#: Smallest effect that counts (log): IRUP hardware grouping merges hosts closer than 5 %.
MIN_STEP = math.log(1.05)
#: Most batches of extra rounds for an undecided axis or knob (each costs ~20 s: the cap bounds a busy calibration).
REPROBE_BATCHES = 2
#: SEs an axis's or knob's effect needs at the last look, after every re-probe batch (3 at the looks before it).
LAST_LOOK_SE = 2.0
#: Rounds of every knob cell: the first is dropped (a condition's first run after it is set is a transient), so
#: four paired rounds remain, the fewest whose SE resolves a 10 % effect under the probes' 3-5 % noise.
KNOB_REPS = 5
#: Seccomp rules of the kernel-entry knob (the most one filter holds): the effect must stand out of a busy
#: machine's noise, as the other knobs' do.
SYSCALL_RULES = 4000
#: The storage knob's write-IOPS limit: a quarter of the storage probe's own rate of fsync'd writes, within this
#: range (a small cloud volume's provisioned IOPS; the limit must stand out of a busy disk's noise, and below it
#: one probe run would take seconds).
IOPS_RANGE = (50, 200)
#: fsync'd writes in one storage probe (quiho.fleet.local.probes.PROBES["fsync"]).
FSYNC_OPS = 100
#: The network knob's levels: a netem delay per packet (µs) where the kernel has netem, else a tbf rate (Mbit/s).
NET_DELAY_US = 500
NET_RATE_MBIT = 1000
#: The memory-capacity knob's page-cache allowance (MiB) beyond the application's own memory: a quarter of the
#: probe's file (quiho.fleet.local.probes.REREAD_MIB), so that file cannot stay cached under the knob.
MEM_CACHE_MIB = 32


@dataclass(frozen=True)
class Knob:
    """One knob of the catalogue: what it emulates, its probe, its resource class and where to look."""

    name: str
    resource: str
    klass: str
    probe: str
    host_var: str
    emulates: str
    look_at: str


#: The catalogue, in the order the screening design lists its factors.
def _knob(name: str, resource: str, emulates: str, look_at: str) -> Knob:
    """A catalogue entry whose class, probe and host variable are the factor table's (:mod:`quiho._factors`)."""
    f = FACTOR_BY_NAME[name]
    return Knob(name, resource, f.resource, f.probe, f.host_var, emulates, look_at)


KNOBS: tuple[Knob, ...] = (
    _knob("core-sharing", "core sharing",
          "a busy sibling: a compute co-runner on the other CPU (on VMs two vCPUs may share one physical core)",
          "instruction throughput: hot loops, vector width, work a sibling thread competes for"),
    _knob("storage", "storage",
          "a slower disk: a write-IOPS limit on the disk the application writes to (cgroup blkio)",
          "fsync and synchronous writes: commit/flush frequency, write batching, journal mode, O_SYNC/O_DIRECT"),
    _knob("kernel-entry", "kernel entry",
          "a dearer system call: a seccomp filter every system call of the application passes",
          "system calls per unit of work: small reads/writes, polling, stat/open loops, unbuffered I/O"),
    _knob("network", "network",
          "a slower network: the application's namespace loopback delays packets (netem) or limits the rate (tbf)",
          "round trips and bytes on the wire: requests per operation, connection reuse, batching, payload size"),
    _knob("memory-capacity", "memory capacity",
          "less free memory: the page cache holds at most a fixed allowance beyond the application's own memory "
          "(trimmed back to it as it overshoots; a run during which the group meets its memory limit is not used)",
          "file data read more than once: working sets larger than the cache, scans that an index or a stream "
          "would avoid, temporary files, mmap'd files"),
)
_BY_NAME = {k.name: k for k in KNOBS}
#: Where to look when a version leans more or less on a knob's resource class (the classes beyond CPU and memory).
LOOK_AT: dict[str, str] = {k.klass: k.look_at for k in KNOBS if k.klass != "cpu"}


@dataclass(frozen=True)
class KnobEffect:
    """A knob as measured on this machine: its level, its probe's and the CPU probe's log effect (± SE), why."""

    name: str
    kept: bool
    level: str
    effect_probe: float | None
    se_probe: float | None
    effect_cpu: float | None
    se_cpu: float | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (stored in the calibration's choice)."""
        return asdict(self)


def paired_mean(d: Iterable[float | None]) -> tuple[float, float] | None:
    """Mean and SE of per-round log ratios (``None``: not measured), the first round left out when 3 or more remain.

    The first round is the first run of each condition after the emulation changes: a transient, not the
    condition's speed. None with fewer than 3 rounds.
    """
    d = list(d)
    rest = [x for x in d[1:] if x is not None]
    kept = rest if len(rest) >= 3 else [x for x in d if x is not None]
    if len(kept) < 3:
        return None
    return statistics.fmean(kept), statistics.stdev(kept) / math.sqrt(len(kept))


def _ratios(on: Sequence[float | None], off: Sequence[float | None]) -> list[float | None]:
    return [math.log(a / b) if a and b and a > 0 and b > 0 else None for a, b in zip(on, off, strict=False)]


def effect_text(e: tuple[float, float] | None) -> str:
    """``"+21.0% (2.9 SE)"``: a log effect as a relative change, and how many of its SEs it is from none.

    In SEs of the log ratio, the unit the keep/drop rules decide in.
    """
    if e is None:
        return "not measured"
    return f"{math.expm1(e[0]):+.1%} ({abs(e[0]) / e[1]:.1f} SE)" if e[1] > 0 else f"{math.expm1(e[0]):+.1%} (no noise)"


def undecided(effect: float | None, kept: bool, se: float | None = None) -> bool:
    """A dropped axis or knob whose rounds neither show a 5 % effect nor rule one out: more rounds may decide it.

    Ruled out: the effect and two of its SEs stay within 5 % (it is kept from 5 % and 3 SE on).
    """
    if kept or effect is None:
        return False
    return abs(effect) > MIN_STEP or (se is not None and abs(effect) + 2 * se > MIN_STEP)


def batch_note(batch: int) -> str:
    """What a re-probe step's message adds for batch ``batch`` (0-based): its number, and the last look's bar."""
    if not batch:
        return ""
    decided = f"; decided after it at {LAST_LOOK_SE:g} SE" if batch == REPROBE_BATCHES - 1 else ""
    return f" (batch {batch + 1} of at most {REPROBE_BATCHES}{decided})"


def append_rounds(old: Sequence[float | None] | None, new: Sequence[float | None], width: int) -> list[float | None]:
    """``old`` padded with None to ``width`` rounds, then ``new``: a cell left out of some rounds still pairs."""
    old = list(old or [])
    return [*old, *[None] * (width - len(old)), *new]


def decide_knob(knob: Knob, level: str, on: Mapping[str, Sequence[float | None]],
                off: Mapping[str, Sequence[float | None]], z: float = 3.0) -> KnobEffect:
    """Keep ``knob`` if it slows its probe measurably and measurably more than the CPU probe (pure).

    ``on``/``off``: probe → seconds per round, the two conditions measured in the same rounds. Measurable: the
    mean paired log ratio beyond ``z`` SE (3, or :data:`LAST_LOOK_SE` at the last re-probe look) and beyond 5 %.
    A knob whose probe is the CPU probe (core sharing) needs only the first. Otherwise, where the CPU probe slows
    too (beyond 2 SE and 5 %), the per-round difference ``log(on/off)[probe] - log(on/off)[cpu]`` must be
    measurable: a knob that slows everything alike is a speed knob, which the quota already is.
    """
    ep = paired_mean(_ratios(on.get(knob.probe) or [], off.get(knob.probe) or []))
    ec = paired_mean(_ratios(on.get("cpu") or [], off.get("cpu") or []))
    if ep is None:
        return KnobEffect(knob.name, False, level, None, None, None, None, f"{knob.emulates}: not measured")
    # a knob that also slows the CPU probe (beyond 2 SE and 5 %) must slow its own probe measurably more
    slows_cpu = knob.probe != "cpu" and ec is not None and ec[0] > 2 * ec[1] and ec[0] > MIN_STEP
    diff = None
    if slows_cpu:
        diff = paired_mean(
            None if p is None or c is None else p - c
            for p, c in zip(_ratios(on[knob.probe], off[knob.probe]), _ratios(on["cpu"], off["cpu"]), strict=False))

    def fails_at(bar: float) -> list[str]:
        fails = [] if ep[0] > bar * ep[1] and ep[0] > MIN_STEP else [
            f"no measurable slowdown of the {knob.probe} probe (needs > 5 % and > {bar:g} SE)"]
        if slows_cpu and (diff is None or not (diff[0] > bar * diff[1] and diff[0] > MIN_STEP)):
            fails.append(f"it slows the CPU probe about as much ({knob.probe} minus CPU "
                         f"{effect_text(diff)}; needs > 5 % and > {bar:g} SE): a speed knob")
        return fails

    fails = fails_at(z)
    text = f"{knob.emulates} ({level}): {knob.probe} probe {effect_text(ep)}"
    if knob.probe != "cpu":
        text += f", CPU probe {effect_text(ec)}"
    elif not fails:
        text += ": the two CPUs share a core's throughput"
    if not fails and fails_at(3.0):  # kept only because this was the last look
        text += f" (kept at the last re-probe look's {z:g} SE; 3 SE before it)"
    return KnobEffect(knob.name, not fails, level if not fails else "", ep[0], ep[1],
                      None if ec is None else ec[0], None if ec is None else ec[1], ": ".join([text, *fails]))


# --- what this machine can set -------------------------------------------------------------------------------


def write_disk(path: str | os.PathLike[str]) -> str | None:
    """``MAJ:MIN`` of the whole disk holding ``path`` (a partition's parent), or None: no block device (tmpfs ...)."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    sysdev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdev.exists():
        return None
    if (sysdev / "partition").exists():
        try:
            return (sysdev.resolve().parent / "dev").read_text().strip()
        except OSError:
            return None
    return f"{os.major(dev)}:{os.minor(dev)}"


def network_mechanism() -> str | None:
    """``"delay"`` where a namespace's loopback takes a netem qdisc, ``"rate"`` where only tbf, None: neither."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return None
    ns = f"qh-probe-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True, check=False).returncode != 0:
        return None
    try:
        for kind, qdisc in (("delay", ["netem", "delay", "100us"]),
                            ("rate", ["tbf", "rate", "100mbit", "burst", "256kb", "latency", "100ms"])):
            if subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", *qdisc], capture_output=True,
                              check=False).returncode == 0:
                return kind
        return None
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def knob_cells(workdir: str, fsync_s: float | None = None, vcpus: int = 2,
               stream_kept: bool = False) -> tuple[list[tuple[Knob, Cell]], list[str]]:
    """Each knob this machine can set, as the cell that turns it on; and one line per knob it cannot set.

    ``fsync_s``: the storage probe's unthrottled seconds (its :data:`FSYNC_OPS` fsync'd writes), from which the
    IOPS limit is a quarter of the probe's own operation rate within :data:`IOPS_RANGE` (each such write needs at
    least one device write, so the probe slows at least 4x; a program that writes nothing does not move).
    ``stream_kept``: the stream co-runner is a factor, so core sharing is not probed (both take the other CPU: a
    knob that cannot be a factor would only cost calibration time).
    """
    cells: list[tuple[Knob, Cell]] = []
    notes: list[str] = []
    if vcpus < 2:
        notes.append("core-sharing: one CPU only, no other CPU to share a core with")
    elif stream_kept:
        notes.append("core-sharing: not probed: the stream co-runner, kept, runs on the other CPU, where the "
                     "compute co-runner would have to run")
    else:
        cells.append((_BY_NAME["core-sharing"], Cell(corunner="cpu")))
    disk = write_disk(workdir)
    if disk is None:
        notes.append(f"storage: {workdir} is on no block device (tmpfs?): a write-IOPS limit cannot act on it")
    elif not Path("/sys/fs/cgroup/blkio").is_dir():
        notes.append("storage: no cgroup v1 blkio controller at /sys/fs/cgroup/blkio")
    else:
        ops_per_s = FSYNC_OPS / fsync_s if fsync_s and fsync_s > 0 else IOPS_RANGE[1]
        iops = min(max(round(ops_per_s / 4), IOPS_RANGE[0]), IOPS_RANGE[1])
        cells.append((_BY_NAME["storage"], Cell(iops=f"{disk}:{iops}")))
    cells.append((_BY_NAME["kernel-entry"], Cell(syscall_rules=SYSCALL_RULES)))
    mech = network_mechanism()
    if mech is None:
        notes.append("network: no network namespace with a netem or tbf qdisc here (ip/tc missing or not allowed)")
    else:
        net = f"delay:{NET_DELAY_US}" if mech == "delay" else f"rate:{NET_RATE_MBIT}"
        if mech == "rate":
            notes.append("network: this kernel has no netem qdisc; the knob limits the loopback's rate (tbf) "
                         "instead of delaying it, so it moves bulk transfers, not round trips")
        cells.append((_BY_NAME["network"], Cell(net=net)))
    memcg = Path("/sys/fs/cgroup/memory")
    if not (memcg / "memory.oom_control").exists():
        notes.append("memory-capacity: no cgroup v1 memory controller with memory.oom_control at "
                     "/sys/fs/cgroup/memory (a limit without a way to pause instead of kill is not set)")
    elif disk is None:
        notes.append(f"memory-capacity: {workdir} is on no block device: its files live in memory, a page-cache "
                     "limit cannot evict them")
    else:
        cells.append((_BY_NAME["memory-capacity"], Cell(mem_mib=MEM_CACHE_MIB)))
    return cells, notes


def level_of(cell: Cell, knob: Knob) -> str:
    """The knob's level as its host variable carries it (``"cpu"``, ``"254:0:1875"``, ``"2000"``, ``"32"`` ...)."""
    return {"core-sharing": cell.corunner, "storage": cell.iops, "kernel-entry": str(cell.syscall_rules),
            "network": cell.net, "memory-capacity": str(cell.mem_mib)}[knob.name]


def screen_knobs(runner: ProbeRunner, workdir: str, vcpus: int = 2, reps: int = KNOB_REPS,
                 on_step: Callable[[str], None] | None = None, stream_kept: bool = False) -> dict[str, Any]:
    """Measure every knob this machine can set against its probe and the CPU probe; decide each (:func:`decide_knob`).

    One round measures the reference cell (no knob) and each knob's cell once, round-robin, so a slow minute of
    the machine falls on a round's cells alike and cancels in the paired ratios. The caller holds the locks and
    cleans up. ``stream_kept``: see :func:`knob_cells`. Returns ``{"knobs": [KnobEffect dicts], "notes": [...],
    "cells": [...]}`` (cells: the raw times).
    """
    step = on_step or (lambda _m: None)
    base = runner.rounds([(Cell(), 1)], ["fsync"])[0]["fsync"]
    cells, notes = knob_cells(workdir, base[0] if base else None, vcpus, stream_kept)
    probes_all = sorted({k.probe for k, _ in cells} | {"cpu"})
    plan = [(Cell(), reps, probes_all)] + [(c, reps, sorted({k.probe, "cpu"})) for k, c in cells]
    times: list[dict[str, list[float | None]]] = [
        {p: list(v) for p, v in t.items()}
        for t in runner.rounds([(c, n) for c, n, _ in plan], probes_all, probes_of=[p for _, _, p in plan])]
    effects = [decide_knob(k, level_of(c, k), t, times[0]) for (k, c), t in zip(cells, times[1:], strict=True)]
    # a knob its rounds neither show nor rule out (a busy minute's noise): more rounds, decided on all of them,
    # at most REPROBE_BATCHES batches, the last look at LAST_LOOK_SE (the memory axes' rule)
    reprobed: list[str] = []
    for batch in range(REPROBE_BATCHES):
        again = [i for i, e in enumerate(effects) if undecided(e.effect_probe, e.kept, e.se_probe)]
        if not again:
            break
        step(f"calibration: knob(s) {', '.join(effects[i].name for i in again)} undecided within the noise: "
             f"{reps} more rounds{batch_note(batch)}")
        sub = [plan[0]] + [plan[i + 1] for i in again]
        more = runner.rounds([(c, n) for c, n, _ in sub], probes_all, probes_of=[p for _, _, p in sub])
        width = max(len(v) for v in times[0].values())
        for j, res in zip([0, *(i + 1 for i in again)], more, strict=True):
            for p_, v in res.items():  # a knob not re-probed in an earlier batch is padded
                times[j][p_] = append_rounds(times[j].get(p_), v, width)
        reprobed += [effects[i].name for i in again if effects[i].name not in reprobed]
        z = LAST_LOOK_SE if batch == REPROBE_BATCHES - 1 else 3.0
        effects = [decide_knob(k, level_of(c, k), t, times[0], z if i in again else 3.0)
                   for i, ((k, c), t) in enumerate(zip(cells, times[1:], strict=True))]
    for e in effects:
        step(f"calibration: knob {e.name}: {'kept' if e.kept else 'dropped'}: {e.reason}")
    return {"knobs": [e.to_dict() for e in effects], "notes": notes, "reprobed": reprobed,
            "cells": [{**asdict(c), **t} for (c, _, _), t in zip(plan, times, strict=True)]}
