"""What a panel pair's versions do to the machine with no knob set: the evidence a registration rests on (issue 47).

Usage (root, cgroup v1 blkio; quiet machine):
    python bench/pair_footprint.py PAIR [PAIR ...]      # pairs of bench/local_fleet_panel.py, or
    python bench/pair_footprint.py --cmd 'seq 10 | wc -l'

For each version, in a fresh directory on the root filesystem, on CPU 0 as the local fleet runs an application
(a pipeline's stages share that CPU), and in a blkio group of its own (no limit set, so the group only counts
what it is charged): the wall time (median of three runs, the first one dropped), the
system calls of the whole process tree (``strace -c -f``, one more run) and their rate over that median, and the
block requests the group was charged (writes and discards, the requests the storage knob's write-IOPS limit
meters) with what they would cost at 200 a second against the wall time. The limit lets a group's first slice
of requests through at once (blk-throttle's 100 ms slice: 20 requests at 200 a second), so the cost is a range:
from requests spread evenly over the run (only what exceeds 200 a second over the run and its free slice
waits) to one burst (every request past the free 20 waits its turn). The rules the registrations of 2026-12-05
wrote down from the panel's misses, with the burst since 2026-12-06: a version is "not kernel entry" only below
~30,000 system calls a second (4,000 seccomp rules at ~0.67 us a call: 2 %), "not storage" only when even the
burst costs under ~3 % of its time, and "storage" only when even the even spread costs more than the 5 % floor.
The first line says which network knob this machine's kernel allows: a netem delay moves round trips, a tbf
rate only bulk transfers.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quiho.fleet.local.knobs import IOPS_RANGE, NET_DELAY_US, NET_RATE_MBIT, network_mechanism  # noqa: E402

BLKIO = Path("/sys/fs/cgroup/blkio")
#: the storage knob's level where the disk is fast (its upper bound): the level every calibration here kept
IOPS = IOPS_RANGE[1]
#: blk-throttle's slice (s): a limited group's first slice of requests is not delayed (20 free at 200 a second)
SLICE_S = 0.1


def _charged(group: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (group / "blkio.throttle.io_serviced").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[1]] = out.get(parts[1], 0) + int(parts[2])
    return out


def _in_group(group: Path, cmd: str, cwd: Path, env: dict[str, str] | None) -> float:
    t0 = time.perf_counter()
    subprocess.run(["sh", "-c", f'echo $$ > "{group}/cgroup.procs"; exec taskset -c 0 sh -c "$0"', cmd], cwd=cwd,
                   check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def footprint(cmd: str, env: dict[str, str] | None = None) -> dict[str, float]:
    """Median wall, system calls (count and rate) and block requests charged, for one shell command in ``env``."""
    work = Path(tempfile.mkdtemp(prefix="qfoot", dir="/root"))
    group = BLKIO / f"qfoot{os.getpid()}"
    group.mkdir()
    try:
        walls, charged = [], []
        for _ in range(4):
            before = _charged(group)
            walls.append(_in_group(group, cmd, work, env))
            subprocess.run(["sync"], check=False)  # writes still in the page cache reach the disk: not this group's
            after = _charged(group)
            charged.append(sum(after.get(k, 0) - before.get(k, 0) for k in ("Write", "Discard")))
        walls, charged = walls[1:], charged[1:]
        subprocess.run(["taskset", "-c", "0", "strace", "-c", "-f", "-o", str(work / ".strace"), "sh", "-c", cmd],
                       cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
        m = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$",
                      (work / ".strace").read_text(), re.M)
        calls = int(m.group(1)) if m else -1
        wall = statistics.median(walls)
        req = statistics.median(charged)
        free = IOPS * SLICE_S
        return {"wall_s": wall, "calls": calls, "calls_per_s": calls / wall if calls >= 0 else float("nan"),
                "requests": req, "storage_spread": max(0.0, (req - free) / IOPS - wall) / wall,
                "storage_burst": max(0.0, req - free) / IOPS / wall}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        group.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*")
    ap.add_argument("--cmd", action="append", default=[])
    args = ap.parse_args()
    from local_fleet_panel import ALL_PAIRS, RUN_ENV
    # a pair in the environment the panel runs it in (quiho's venv first on PATH); a --cmd in this shell's
    rows: list[tuple[str, str, str, dict[str, str] | None]] = [(f"cmd{i + 1}", "", c, None)
                                                               for i, c in enumerate(args.cmd)]
    for name in args.pairs:
        rows += [(name, v, c, RUN_ENV) for v, c in ALL_PAIRS[name][0].items()]
    mech = network_mechanism()
    # A round trip moves only under a delay; a tbf rate moves bulk transfers.
    print({"delay": f"network knob here: netem, {NET_DELAY_US} us a packet (round trips move)",
           "rate": f"network knob here: tbf, {NET_RATE_MBIT} Mbit/s (bulk transfers move, round trips do not)"}
          .get(mech or "", "network knob here: none (no netem or tbf in a namespace)"))
    print(f"| pair | version | wall s | system calls | a second | block requests charged | at {IOPS} IOPS: spread "
          "... burst |")
    print("|---|---|---|---|---|---|---|")
    for name, version, cmd, env in rows:
        f = footprint(cmd, env)
        print(f"| {name} | {version} | {f['wall_s']:.3f} | {f['calls']:,} | {f['calls_per_s']:,.0f} | "
              f"{f['requests']:.0f} | {100 * f['storage_spread']:+.0f} ... {100 * f['storage_burst']:+.0f} % |",
              flush=True)


if __name__ == "__main__":
    main()
