"""What one knob costs a panel pair's versions on this machine, alone and under the CPU quota.

The memory-capacity knob (the default) keeps a host's page cache at 32 MiB beyond its own memory, so a file
larger than that is read from the disk again on every pass. What that costs a program depends on the disk more
than on the knob: with readahead the reads overlap the program's own work, so a program that computes more slowly
than the disk reads loses little. This prints the machine's side (the disk's cold sequential read rate, md5sum's
rate on a cached file, the device's readahead) and then a pair's two versions (``bench/local_fleet_panel.py``,
md5-reread by default) in a cell without knobs and in a cell with only the knob, interleaved, as wall seconds of
the whole command (its input written in the cell, as the panel does). ``--knob storage`` or ``network`` measures
those knobs the same way, at the fleet's levels (the top of the write-IOPS range on the run directory's disk;
netem's delay, or tbf's rate without netem).

    sudo .venv/bin/python bench/knob_reach.py [--pair md5-reread] [--knob memory-capacity] [--reps 10]
        [--quotas 100,67]

``--quotas``: the CPU quotas (%) the pair of cells is measured at, all cells interleaved in every round (the
fleet's quota level is 67 %: where the program computes more slowly, its waits for the disk may hide in the time
the quota idles it anyway).

Needs root (cgroup v1 memory controller). About 1 min with ``--reps 10 --quotas 100,67``
on 2 vCPUs; nothing else should run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from quiho.fleet.inventory import repo_root
from quiho.fleet.local.knobs import (
    IOPS_RANGE,
    MEM_CACHE_MIB,
    NET_DELAY_US,
    NET_RATE_MBIT,
    network_mechanism,
    write_disk,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_fleet_panel import PAIRS  # noqa: E402

EMULATE = repo_root() / "playbooks" / "files" / "quiho-emulate.sh"
FILE_MIB = 128


def _cold_read_s(path: Path) -> float:
    """Seconds to read ``path`` once after dropping its pages from the page cache (this file only)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        t = time.perf_counter()
        while os.read(fd, 1 << 20):
            pass
        return time.perf_counter() - t
    finally:
        os.close(fd)


def _timed(argv: list[str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="measured runs of each version in each cell")
    ap.add_argument("--quotas", default="100", help="comma-separated CPU quotas (%%) of the pairs of cells")
    ap.add_argument("--pair", default="md5-reread", choices=sorted(PAIRS), metavar="PAIR", help="a panel pair")
    ap.add_argument("--knob", default="memory-capacity", choices=("memory-capacity", "storage", "network"))
    a = ap.parse_args()
    join = yaml.safe_load((repo_root() / "playbooks" / "vars" / "emulation.yml").read_text())["qh_join"]
    versions = PAIRS[a.pair][0]
    with tempfile.TemporaryDirectory(prefix="quiho-knobreach-", dir="/var/tmp") as d:
        f = Path(d) / "f"
        with open(f, "wb") as fh:
            for _ in range(FILE_MIB):
                fh.write(b"\0" * (1 << 20))
            os.fsync(fh.fileno())
        cold = [_cold_read_s(f) for _ in range(3)]
        _timed(["md5sum", str(f)], d)
        warm = [_timed(["md5sum", str(f)], d) for _ in range(3)]
        disk = write_disk(d)
        ra = Path(f"/sys/dev/block/{disk}/queue/read_ahead_kb") if disk else None
        print(f"machine: {FILE_MIB} MiB read cold in {min(cold):.3f}-{max(cold):.3f} s "
              f"({FILE_MIB / statistics.median(cold):.0f} MiB/s); md5sum of it cached "
              f"{statistics.median(warm):.3f} s ({FILE_MIB / statistics.median(warm):.0f} MiB/s); device {disk}, "
              f"readahead {ra.read_text().strip() + ' KiB' if ra and ra.exists() else 'unknown'}")
        f.unlink()
        quotas = [int(q) for q in a.quotas.split(",")]
        mech = network_mechanism()
        if a.knob == "storage" and disk is None or a.knob == "network" and mech is None:
            sys.exit(f"knob_reach: the {a.knob} knob cannot be set here")
        # quiho-emulate.sh's IOPS, MEM_MIB and NET arguments
        level = {"memory-capacity": ["0", str(MEM_CACHE_MIB), "0"], "storage": [f"{disk}:{IOPS_RANGE[1]}", "0", "0"],
                 "network": ["0", "0", f"delay:{NET_DELAY_US}" if mech == "delay" else f"rate:{NET_RATE_MBIT}"]}
        cgs = {(q, on): f"/sys/fs/cgroup/cpu/quiho-knobreach-{os.getpid()}-{q}-{on}" for q in quotas for on in (0, 1)}
        times: dict[tuple[tuple[int, int], str], list[float]] = {(c, v): [] for c in cgs for v in versions}
        try:
            for (q, on), cg in cgs.items():
                knob = level[a.knob] if on else ["0", "0", "0"]
                subprocess.run(["sh", str(EMULATE), "start", cg, str(q), "none", "600", "keep", "20000", *knob, "0"],
                               check=True)
            for r in range(a.reps + 1):  # the first round is a warm-up, not kept
                for cell, cg in cgs.items():
                    for v, cmd in versions.items():
                        s = _timed(["sh", "-c", join, "sh", cg, "0", "sh", "-c", cmd], d)
                        if r:
                            times[(cell, v)].append(s)
        finally:
            for cg in cgs.values():
                subprocess.run(["sh", str(EMULATE), "stop", cg], check=False)
    print(f"\n{a.pair}, knob {a.knob} ({' '.join(x for x in level[a.knob] if x != '0')})")
    print("\n| quota | version | no knob (s) | with the knob (s) | effect of medians "
          "| paired ratios: quartiles |")
    print("|---|---|---|---|---|---|")
    for q in quotas:
        for v in versions:
            ref, knob = times[((q, 0), v)], times[((q, 1), v)]
            lo, _, hi = statistics.quantiles([k / r for k, r in zip(knob, ref, strict=True)], n=4)
            print(f"| {q} % | {v} | {statistics.median(ref):.3f} | {statistics.median(knob):.3f} | "
                  f"{100 * (statistics.median(knob) / statistics.median(ref) - 1):+.0f} % | "
                  f"{100 * (lo - 1):+.0f} % … {100 * (hi - 1):+.0f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
