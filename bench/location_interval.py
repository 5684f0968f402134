"""Does a change point's 95 % location interval hold the true location? Prints a table; rerun with
`python bench/location_interval.py` (synthetic, about a minute).

One step of ``k`` noise SDs at revision ``--at`` of ``--revisions`` revisions, per noise shape:

``gaussian``
    independent N(0, 1) per revision.
``t3``
    Student-t with 3 degrees of freedom, scaled to unit SD (heavy tails: rare slow builds).
``ar1``
    AR(1) with φ = 0.5, unit stationary SD (serially dependent noise; the interval assumes independence).
``runs``
    3 runs per revision, each revision mean carrying a build effect (SD 0.8) and run noise (SD 0.6 per run),
    unit SD per revision mean in all (several runs per build).

Per cell it prints, over ``--reps`` series: the interval's coverage of the true location and its median width
(revisions) given the true segmentation (the method alone: :func:`quiho.history.location_interval` around the
least-squares split of the whole series), and for the default detector (``detect``): the share of series with a
change, and for the change nearest the truth its index within ±3 revisions, its interval's coverage and median
width. Nominal coverage is 95 %.
"""

from __future__ import annotations

import argparse

import numpy as np

from quiho.history import History, detect, location_interval

SHAPES = ("gaussian", "t3", "ar1", "runs")


def _series(shape: str, n: int, at: int, k: float, rng: np.random.Generator) -> History:
    level = np.where(np.arange(n) >= at, k, 0.0)
    if shape == "gaussian":
        e = rng.normal(size=n)
    elif shape == "t3":
        e = rng.standard_t(3, size=n) / np.sqrt(3.0)
    elif shape == "ar1":
        phi = 0.5
        e = np.empty(n)
        e[0] = rng.normal()
        for i in range(1, n):
            e[i] = phi * e[i - 1] + rng.normal() * np.sqrt(1 - phi ** 2)
    else:
        build = rng.normal(scale=0.8, size=n)
        runs = [100 + level[i] + build[i] + rng.normal(scale=0.6 * np.sqrt(3), size=3) for i in range(n)]
        return History("runs", tuple(f"r{i}" for i in range(n)), np.arange(n), tuple(runs))
    return History.from_values(100 + level + e)


def _ls_split(y: np.ndarray) -> int:
    t = np.arange(1, y.size)
    s = np.cumsum(y - y.mean())[:-1]
    return int(t[np.argmax(s ** 2 / t + s ** 2 / (y.size - t))])  # least squares: the largest between-segment sum


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--revisions", type=int, default=60)
    ap.add_argument("--at", type=int, default=40)
    ap.add_argument("--steps", default="1,1.5,2", help="step sizes in noise SDs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.reps} series per cell, {args.revisions} revisions, one step at {args.at}; nominal coverage 95 %")
    print(f"{'noise':<9} {'step':>5} {'given segments: covers':>23} {'width':>6} | {'detect: found':>13} "
          f"{'within ±3':>9} {'covers':>7} {'width':>6}")
    for shape in SHAPES:
        for k in (float(x) for x in args.steps.split(",")):
            cov, wid, found, near, dcov, dwid = [], [], 0, 0, [], []
            for _ in range(args.reps):
                h = _series(shape, args.revisions, args.at, k, rng)
                y = h.values
                tau = _ls_split(y)
                lo, hi = location_interval(y, 0, tau, y.size)
                cov.append(lo <= args.at <= hi)
                wid.append(hi - lo + 1)
                cps = detect(h).change_points
                if cps:
                    found += 1
                    c = min(cps, key=lambda c: abs(c.index - args.at))
                    near += abs(c.index - args.at) <= 3
                    dcov.append(c.low <= args.at <= c.high)
                    dwid.append(c.high - c.low + 1)
            d = (f"{found / args.reps:>13.0%} {near / max(found, 1):>9.0%} {np.mean(dcov):>7.1%} "
                 f"{np.median(dwid):>6.0f}" if found else f"{0:>13.0%} {'-':>9} {'-':>7} {'-':>6}")
            print(f"{shape:<9} {k:>5.1f} {np.mean(cov):>23.1%} {np.median(wid):>6.0f} | {d}")


if __name__ == "__main__":
    main()
