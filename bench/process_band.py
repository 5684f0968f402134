"""How far apart are identical processes? The per-process speed band a one-run-per-revision gate cannot see through.

Each of ``--processes`` fresh Python processes (pinned to one CPU, as ``tests/history/test_history_gate_busy.py``
pins its benchmark) builds a list of ``N`` ints and times ``sum`` over it for 0.1 s; its minimum is what a
pytest-benchmark run of that benchmark would report. Every list size is measured in each round, the sizes
alternating, so a slow minute reaches both. Prints per size the median minimum, how many processes were more
than 1.3x and 2x slower than that median, and the slowest ratio: the chance "whole run" change a gate's
``--magnitude-floor`` must stand above (docs/history-gate.md).

    .venv/bin/python bench/process_band.py --processes 60

Stores nothing; about 0.3 s a process. Run it on a quiet machine: a busy one measures the load instead.
"""

from __future__ import annotations

import argparse
import os
import statistics as st
import subprocess
import sys

CHILD = r"""
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[2])})
nums = list(range(int(sys.argv[1])))
best, end = float("inf"), time.perf_counter() + 0.1
while time.perf_counter() < end:
    t0 = time.perf_counter()
    for _ in range(10):
        sum(nums)
    best = min(best, (time.perf_counter() - t0) / 10)
print(best)
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=60, help="fresh processes per list size")
    ap.add_argument("--sizes", default="20000,2000", help="list lengths (the gate test's test_sum uses 20000)")
    ap.add_argument("--cpu", type=int, default=min(os.sched_getaffinity(0)))
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    mins: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(a.processes):
        for n in sizes:
            out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(a.cpu)], capture_output=True, text=True,
                                 check=True).stdout
            mins[n].append(float(out))
    print(f"{'list length':>11}  {'processes':>9}  {'median min (us)':>15}  {'> 1.3x':>6}  {'> 2x':>4}  {'slowest':>7}")
    for n, v in mins.items():
        med = st.median(v)
        print(f"{n:>11}  {len(v):>9}  {med * 1e6:>15.1f}  {sum(x > 1.3 * med for x in v):>6}  "
              f"{sum(x > 2 * med for x in v):>4}  {max(v) / med:>6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
