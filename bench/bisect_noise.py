"""How often GP bisection names the wrong commit, by noise model and step size.

24 revisions with one step at revision 15; the 8 revisions ``quiho history
sample --budget 8`` leaves measured are known (3 repetitions each); bisection
builds the rest. Each cell counts, over ``--seeds`` histories, the answers
that name another commit ("wrong") and the verdicts "not meaningful" ("nm").

Noise models (a build's repetitions run back to back):

* ``iid 2%`` - independent 2 % noise per repetition;
* ``state 10%``, ``state 30%`` - a lognormal factor per build shared by its
  repetitions, plus 5 % per repetition;
* ``bimodal`` - a build runs at 1x or 0.5x (p 0.25), 10 % per repetition;
* ``bimodal tight`` - as recorded on the 2-vCPU AMD EPYC VM with a busy sibling
  (``--metric cpu``): 1x or 0.5x per build (p 0.3), repetitions within 1 %,
  each repetition switching mode with p 0.1;
* ``rep outlier`` - 2 % noise, and in 30 % of builds one repetition 2x.

Columns: ``per-build noise`` (the rule: each revision's noise at least the
spread between neighbouring revisions) and ``repetitions only`` (the rule
before it: the repetitions' spread alone).

Run: ``python bench/bisect_noise.py [--seeds 100]`` (about 15 min on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from unittest import mock

import numpy as np

from quiho.history import gp_bisect
from quiho.history.sampling import _sampling

Noise = Callable[[float], np.ndarray]
KNOWN = (0, 5, 8, 11, 14, 17, 20, 23)


def models(rng: np.random.Generator) -> dict[str, Noise]:
    def iid(level: float) -> np.ndarray:
        return level * (1 + rng.normal(0, 0.02, 3))

    def state(sd: float) -> Noise:
        return lambda level: level * np.exp(rng.normal(0, sd)) * (1 + rng.normal(0, 0.05, 3))

    def bimodal(level: float) -> np.ndarray:
        f = 0.5 if rng.random() < 0.25 else 1.0
        return level * f * np.abs(1 + rng.normal(0, 0.1, 3))

    def bimodal_tight(level: float) -> np.ndarray:
        f = 0.5 if rng.random() < 0.3 else 1.0
        x = level * f * (1 + rng.normal(0, 0.01, 3))
        x[rng.random(3) < 0.1] *= 2.0 if f == 0.5 else 0.5
        return x

    def rep_outlier(level: float) -> np.ndarray:
        x = level * (1 + rng.normal(0, 0.02, 3))
        if rng.random() < 0.3:
            x[rng.integers(3)] *= 2
        return x

    return {"iid 2%": iid, "state 10%": state(0.10), "state 30%": state(0.30), "bimodal": bimodal,
            "bimodal tight": bimodal_tight, "rep outlier": rep_outlier}


def cell(model: str, step: float, seeds: int, reps_only: bool) -> tuple[int, int]:
    wrong = not_meaningful = 0
    for seed in range(seeds):
        noise = models(np.random.default_rng(seed))[model]
        level = np.where(np.arange(24) < 15, 1.0, step)
        known = {p: noise(level[p]) for p in KNOWN}
        rule = mock.patch.object(_sampling, "between_revision_var", lambda m: 0.0) if reps_only \
            else contextlib.nullcontext()
        with rule:
            r = gp_bisect(lambda p, noise=noise, level=level: noise(level[p]), 24, known=known)
        if not r.meaningful:
            not_meaningful += 1
        elif r.first_bad != 15:
            wrong += 1
    return wrong, not_meaningful


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--steps", default="10,2,1.3")
    args = ap.parse_args()
    print(f"{args.seeds} histories per cell; wrong = another commit named, nm = not meaningful\n")
    print("| noise | step | per-build noise: wrong / nm | repetitions only: wrong / nm |")
    print("|---|---|---|---|")
    for step in (float(s) for s in args.steps.split(",")):
        for model in models(np.random.default_rng(0)):
            a = cell(model, step, args.seeds, reps_only=False)
            b = cell(model, step, args.seeds, reps_only=True)
            print(f"| {model} | {step:g}x | {a[0]} / {a[1]} | {b[0]} / {b[1]} |", flush=True)


if __name__ == "__main__":
    main()
