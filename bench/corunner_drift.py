"""Whether the stream co-runner's reach on the memory probe drifts with the minute, or is noise around one value.

The calibration decides the co-runner from the rounds of one minute. On the AMD EPYC microVM it moved the memory
probe +33 % to +57 % in seven quiet calibrations of 2026-12-05 and -0.0 %, +0.9 %, +1.6 % in three (which dropped
it). If that is the machine's state in that minute (e.g. where the host runs the two vCPUs), a calibration a few
minutes later would decide otherwise, and the profile's visits, spread over minutes, meet both states.

Every cycle measures the calibration's own cells round-robin (:meth:`ProbeRunner.rounds`, the calibration's
wrapper and prefault): the reference (no knob) and the stream co-runner, ``--rounds`` rounds each, memory probe
only. A cycle's effect is the mean of its rounds' log ratios (as the calibration's paired effect). Prints one row
per cycle (minutes since the start, effect) and then the split of the rounds' variance: within cycles (noise of
a round) and between cycles beyond what that noise predicts (drift). Lag-1 autocorrelation of the cycle effects
says whether neighbouring cycles agree more than distant ones.

    python bench/corunner_drift.py --minutes 10           # root (cgroups), a quiet machine; stores nothing
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from quiho.fleet.local.probes import Cell, ProbeRunner  # noqa: E402


def _autocorr(xs: list[float]) -> float:
    m = statistics.fmean(xs)
    den = sum((x - m) ** 2 for x in xs)
    return sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False)) / den if den else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds a cycle")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("corunner_drift: needs root (cgroups)", file=sys.stderr)
        return 1
    runner = ProbeRunner(f"qhdrift{os.getpid()}")
    ref, co = Cell(100, "never"), Cell(100, "never", corunner="stream")
    t0 = time.monotonic()
    cycles: list[list[float]] = []
    print("| cycle | min | co-runner effect on the memory probe | rounds (log ratio) |\n|---|---|---|---|")
    try:
        while time.monotonic() - t0 < a.minutes * 60:
            at = (time.monotonic() - t0) / 60
            r_ref, r_co = runner.rounds([(ref, a.rounds), (co, a.rounds)], ["memory"])
            logs = [math.log(c / r) for r, c in zip(r_ref["memory"], r_co["memory"], strict=True)]
            cycles.append(logs)
            print(f"| {len(cycles)} | {at:.1f} | {math.expm1(statistics.fmean(logs)):+.1%} | "
                  f"{' '.join(f'{x:+.2f}' for x in logs)} |", flush=True)
    finally:
        runner.cleanup()
    k, n = len(cycles), a.rounds
    if k < 3:
        return 0
    means = [statistics.fmean(c) for c in cycles]
    within = statistics.fmean(statistics.variance(c) for c in cycles)  # a round's variance within a cycle
    between = statistics.variance(means)  # of the cycle means; noise alone predicts within / n
    print(f"\n{k} cycles of {n} rounds: cycle effects {math.expm1(min(means)):+.1%} .. {math.expm1(max(means)):+.1%}, "
          f"mean {math.expm1(statistics.fmean(means)):+.1%}")
    print(f"variance of the cycle means {between:.4f} against {within / n:.4f} from the rounds' noise alone "
          f"(ratio {between / (within / n):.1f}; F-test of drift: {k - 1} and {k * (n - 1)} df)")
    print(f"lag-1 autocorrelation of the cycle effects: {_autocorr(means):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
