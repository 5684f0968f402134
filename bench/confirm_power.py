"""``quiho history confirm`` on this machine: its power at +30 % and its false-positive rate, by number of pairs.

Run: ``.venv/bin/python bench/confirm_power.py [--tries 10] [--pairs 20]``. Prints a table; asserts nothing. Each
try makes a fresh git project (tests/history/test_history_confirm.py's: a Python loop that prints the CPU seconds of
the fastest of three runs of it) with three commits: the loop, the same loop, the loop with 30 % more iterations.
Per try, two real reruns of ``--pairs`` pairs each: the +30 % commit against its parent (power) and the identical
commits against each other (false positives). The verdicts at fewer pairs are those of the first 8, 12 or 16
pairs of the same reruns (an even prefix keeps the alternating order balanced), so every column is measured on the
same runs. Counts come with their 95 % Wilson interval. About 15 s per try on a 2-vCPU VM.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from quiho.history.gate import ConfirmOptions, confirm_revisions, paired_change

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("confirm_tests", HERE.parent / "tests" / "history" /
                                               "test_history_confirm.py")
assert _spec is not None and _spec.loader is not None
t = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(t)


def one_try(tmp: Path, pairs: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    root = tmp / "repo"
    shas = t.make_repo(root, [t.bench(), t.bench(), t.bench(int(t.N * 1.3))])
    target = t._target(root)
    out = {}
    for name, (suspect, baseline) in {"+30 %": (shas[2], shas[1]), "identical": (shas[1], shas[0])}.items():
        c = confirm_revisions(None, target, suspect, baseline, ConfirmOptions(pairs=pairs))
        out[name] = (np.array([p.baseline for p in c.pairs]), np.array([p.suspect for p in c.pairs]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=20)
    args = ap.parse_args()
    prefixes = [k for k in (8, 12, 16, 20, 30, 40) if k < args.pairs] + [args.pairs]
    confirmed: dict[str, dict[int, int]] = {n: {k: 0 for k in prefixes} for n in ("+30 %", "identical")}
    estimates: list[float] = []
    t0 = time.perf_counter()
    for i in range(args.tries):
        with tempfile.TemporaryDirectory() as d:
            runs = one_try(Path(d), args.pairs)
        line = []
        for name, (b, s) in runs.items():
            for k in prefixes:
                ch = paired_change(b[:k], s[:k])
                confirmed[name][k] += ch.verdict == "confirmed"
            full = paired_change(b, s)
            if name == "+30 %":
                estimates.append(full.magnitude)
            line.append(f"{name} {full.verdict} {full.magnitude:+.1%} [{full.ci[0]:+.1%}, {full.ci[1]:+.1%}] "
                        f"ratios {np.min(s / b):.2f}-{np.max(s / b):.2f}")
        print(f"try {i + 1:2d}: " + "; ".join(line), flush=True)
    n = args.tries
    print(f"\n{n} tries, {time.perf_counter() - t0:.0f} s; confirmed at level 0.95 (95 % Wilson interval)\n")
    print(f"{'pairs':>5}  {'power at +30 %':<24}  {'false positives (identical)':<28}")
    for k in prefixes:
        cells = []
        for name in ("+30 %", "identical"):
            c = confirmed[name][k]
            ci = binomtest(c, n).proportion_ci(0.95, method="wilson")
            lo, hi = ci.low, ci.high
            cells.append(f"{c:2d} / {n} [{lo:.2f}, {hi:.2f}]")
        print(f"{k:>5}  {cells[0]:<24}  {cells[1]:<28}")
    print(f"\nestimates of the +30 % step at {args.pairs} pairs: median {np.median(estimates):+.1%}, "
          f"range {min(estimates):+.1%} to {max(estimates):+.1%}")


if __name__ == "__main__":
    main()
