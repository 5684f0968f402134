"""Does normalising by the machine's fingerprint make a history on rotating runners usable? Prints tables; rerun with
`python bench/history_normalised.py` (CloudLab mode, stored data only).

A *pool* of real machines, each with a real fingerprint and real measurements of 3-4 benchmarks of different
resource profiles, stands in for a CI runner pool. Per seed, a history of ``--revisions`` revisions is built for
every benchmark: each revision is measured on a host drawn at random (its real repetitions on that host), a 10 %
regression (runtime × 1.10, rate ÷ 1.10) is planted in one benchmark from a known revision on, and every revision
carries its host's median fingerprint. ``quiho history detect --normalise``'s library call
(:func:`quiho.history.normalise.detect_normalised`) and the raw detector then run on each history.

Counted per mode (raw / normalised as the product decides, falling back to raw where not validated):
false alarms (change points more than ``--tolerance`` revisions from the planted one, or in an unchanged
benchmark), and whether the planted change was found. A fixed-host control draws every revision on one host, each
revision with a fingerprint re-measured (a random repetition of that host's fingerprint, a distinct fingerprint
run), so normalising could only fit noise: it must never be worse than raw. A *pool-shift* scenario draws the
revisions before ``--pool-shift-at`` from one random half of the hosts and the later ones from the other half (a
runner pool that moves to another machine generation): raw detection sees a step that no code made.

The same counts are printed a second time scored by location interval: a change in the planted benchmark is the
planted one if its 95 % location interval (:func:`quiho.history.location_interval`) holds the planted revision or it
is within the tolerance, with the median width of those intervals and how many hold the planted revision, so a
lenient interval shows. *Nearest holds* is the interval's coverage not conditioned on the scoring: in every planted
series with a change, whether the interval of the change nearest the planted revision holds it.

Per scenario it also prints normalised/raw false alarms with the exact 95 % interval of that rate ratio (the
normalised count as a binomial share of both, seeds taken as independent draws from one measured pool), and whether
issue 27's bound holds: at most a fifth of raw's false alarms and the change found at least as often on rotating
and pool-shift, never worse than raw on the fixed host. ``--list-false-alarms SCENARIO…`` lists every false
alarm: where, how large, its p.

The null reference (``--null-series``, 0 to skip): the share q₀ of independent Gaussian series of ``--revisions``
values in which the detector reports any change. In unchanged benchmarks on rotating hosts the revision values are
exchangeable, so a detector that decides from ranks (``auto``) has exactly that false-alarm share raw and
normalised alike; the bench prints each scenario's share with the exact one-sided binomial p of exceeding q₀, and
the unchanged benchmarks' normalised/raw ratio (docs/hardware-protocol.md, "Rotating hosts and a rank detector").

Each revision keeps ``--runs`` of its host's repetitions, drawn without replacement (a CI job runs a benchmark a
few times), so two revisions on one host differ as two real jobs would.

Pools (``--pool``):

``cloudlab``
    The quiho paper's data (``../shared/data/quiho-popper``): batch 1512873230, 21 hosts (~9 hardware groups),
    hpccg, ssca, scikit-learn, redisbench/SET; 3 repetitions per host. Runs anywhere.
``store``
    Any store with fingerprints and application runs, e.g. the local fleet's emulated hosts after
    ``quiho fingerprint --battery quick --repetitions 5`` and ``quiho profile`` of stream@nadds1/@nadds30 and
    pair@loop/@chase with ``--repetitions 10`` (``--store PATH --targets
    stream@nadds1,stream@nadds30,pair@loop,pair@chase``). Measuring that takes the local-fleet lock (~20 min on 2
    vCPUs); this script only reads the store.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from quiho.history import ChangePoint, History, detect
from quiho.history.normalise import MachineFingerprint, NormaliseOptions, detect_normalised
from quiho.irup import load_target
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

RESULTS = (Path(__file__).resolve().parents[2] / "shared" / "data" / "quiho-popper" / "pipelines" / "single-node"
           / "datapackage" / "quiho" / "results.csv")
CLOUDLAB_TARGETS = ("hpccg", "ssca", "scikit-learn", "redisbench/SET")
CLOUDLAB_BATCH = "1512873230"
#: In draw order: each seed draws rotating first, so running a subset keeps rotating's histories.
SCENARIOS = ("rotating", "pool-shift", "fixed-host")


@dataclass(frozen=True)
class Pool:
    """Hosts with a fingerprint (per repetition) and each benchmark's repetitions on them."""

    hosts: tuple[str, ...]
    fingerprints: dict[str, pd.DataFrame]  # host → repetitions × stressors
    values: dict[str, dict[str, np.ndarray]]  # benchmark → host → repetitions
    higher_is_better: dict[str, bool]


def load_pool(store_path: Path, targets: tuple[str, ...], batch: str | None) -> Pool:
    """The hosts on which every target ran, from a store (fingerprint rows as :func:`quiho.irup.load_target`)."""
    fps: dict[str, pd.DataFrame] = {}
    values: dict[str, dict[str, np.ndarray]] = {}
    hib = {}
    with open_store(store_path, create=False) as st:
        for t in targets:
            d = load_target(st, t, batch=batch)
            hib[t] = d.higher_is_better
            values[t] = {str(h): d.y[(d.meta["host"] == h).to_numpy()].to_numpy(dtype=float)
                         for h in sorted(set(d.meta["host"]))}
            for h in values[t]:
                fps.setdefault(str(h), d.X[(d.meta["host"] == h).to_numpy()].reset_index(drop=True))
    hosts = tuple(sorted(set.intersection(*(set(v) for v in values.values()))))
    return Pool(hosts, fps, values, hib)


def _history(pool: Pool, bench: str, hosts: list[str], fp_rows: list[int] | None, shift: float, at: int,
             rng: np.random.Generator, runs: int) -> tuple[History, list[MachineFingerprint]]:
    """One benchmark's history on the drawn hosts, planted change ``shift`` (×) from revision ``at``."""
    samples, machines = [], []
    for i, h in enumerate(hosts):
        v = rng.permutation(pool.values[bench][h])[:runs]
        if i >= at:
            v = v / shift if pool.higher_is_better[bench] else v * shift
        samples.append(v)
        fp = pool.fingerprints[h]
        if fp_rows is None:
            machines.append(MachineFingerprint(h, fp.median()))
        else:
            r = fp_rows[i] % len(fp)
            machines.append(MachineFingerprint(f"{h}#{r}", fp.iloc[r]))
    n = len(hosts)
    return History(bench, tuple(f"r{i:03d}" for i in range(n)), np.arange(n), tuple(samples)), machines


def _score(cps: Sequence[ChangePoint], planted: int | None, tol: int,
           interval: bool = False) -> tuple[list[ChangePoint], ChangePoint | None]:
    """(the false alarms, the change taken as the planted one): every change but the first within ``tol`` of the
    planted one or, with ``interval``, whose location interval holds it."""
    near = [c for c in cps if planted is not None
            and (abs(c.index - planted) <= tol or (interval and c.low <= planted <= c.high))]
    return [c for c in cps if not near or c is not near[0]], near[0] if near else None


def _ratio(a: int, b: int) -> str:
    """a/b with the exact 95 % interval of a rate ratio (binomial a of a + b, Poisson counts, seeds independent)."""
    if a + b == 0:
        return "0/0 (no alarm either way)"
    ci = binomtest(a, a + b).proportion_ci(0.95, method="exact")
    hi = "inf" if ci.high >= 1 else f"{ci.high / (1 - ci.high):.2f}"
    point = "inf" if b == 0 else f"{a / b:.2f}"
    return f"{a}/{b} = {point} [95 % {ci.low / (1 - ci.low):.2f}-{hi}]"


def _print_bounds(tally: dict[tuple[str, str], list[int]], label: str) -> None:
    """Issue 27's bound per scenario from (false alarms, found, …) counts per (scenario, mode)."""
    for scenario in [s for s in SCENARIOS if (s, "raw") in tally]:
        (raw_fa, raw_hits, *_), (norm_fa, norm_hits, *_) = tally[(scenario, "raw")], tally[(scenario, "normalised")]
        if scenario == "fixed-host":  # the control: normalising may only fit noise here, so it must never be worse
            holds, bound = norm_fa <= raw_fa and norm_hits >= raw_hits, "never worse than raw"
        else:
            holds, bound = 5 * norm_fa <= raw_fa and norm_hits >= raw_hits, "≤ 1/5 of raw's false alarms, found ≥ raw"
        print(f"{scenario}{label}: false alarms normalised/raw {_ratio(norm_fa, raw_fa)}; issue 27's bound ({bound}) "
              f"{'holds' if holds else 'does not hold'}")


def null_share(method: str, n: int, series: int, min_size: int, alpha: float) -> tuple[int, int]:
    """(series with any change, series): the detector on independent Gaussian series of ``n`` values, seeded."""
    rng = np.random.default_rng(20261126)
    hit = sum(bool(detect(rng.standard_normal(n), method, min_size=min_size, alpha=alpha).change_points)
              for _ in range(series))
    return hit, series


def _print_null(unchanged: dict[tuple[str, str], list[int]], fa: dict[tuple[str, str], int],
                q0: tuple[int, int]) -> None:
    """Each scenario's share of unchanged series with a false alarm against the independent-noise share q₀."""
    ci = binomtest(*q0).proportion_ci(0.95, method="exact")
    share = q0[0] / q0[1]
    print(f"null reference: independent Gaussian series with any change {q0[0]}/{q0[1]} = {share:.3%} "
          f"[95 % {ci.low:.3%}-{ci.high:.3%}]")
    for (scenario, mode), (k, n) in sorted(unchanged.items()):
        p = binomtest(k, n, share, alternative="greater").pvalue
        print(f"  {scenario:<11} {mode:<11} unchanged series with a false alarm {k}/{n} = {k / n:.3%}, "
              f"one-sided p of exceeding q0 = {p:.3g}")
    for scenario in sorted({s for s, _ in unchanged}):
        print(f"  {scenario}: unchanged benchmarks' false alarms normalised/raw "
              f"{_ratio(fa[(scenario, 'normalised')], fa[(scenario, 'raw')])}")


def run(pool: Pool, args: argparse.Namespace) -> None:
    opts = NormaliseOptions(method=args.method, model=args.model, stressors=args.stressors, min_size=args.min_size,
                            alpha=args.alpha, ridge=args.ridge, intercepts=args.intercepts)
    benches = list(pool.values)
    tally: dict[tuple[str, str], list[int]] = {}
    tally_i: dict[tuple[str, str], list[int]] = {}  # scored by location interval: fa, found, planted, fa unchanged
    width: dict[tuple[str, str], list[int]] = {}  # revisions in the interval of each planted change found
    covered: dict[tuple[str, str], list[bool]] = {}  # whether that interval holds the planted revision
    nearest: dict[tuple[str, str], list[bool]] = {}  # whether the change nearest the planted one holds it
    unchanged: dict[tuple[str, str], list[int]] = {}  # unchanged series with a false alarm, unchanged series
    reasons: Counter[str] = Counter()
    false_alarms: list[str] = []
    for seed in range(args.seed_offset, args.seed_offset + args.seeds):
        rng = np.random.default_rng(seed)
        planted_bench = benches[seed % len(benches)]
        for scenario in [s for s in SCENARIOS if s in args.scenarios]:
            if scenario == "rotating":
                hosts, rows = [str(h) for h in rng.choice(pool.hosts, size=args.revisions)], None
            elif scenario == "pool-shift":
                order = [str(h) for h in rng.permutation(pool.hosts)]
                first, second = order[:len(order) // 2], order[len(order) // 2:]
                k = args.pool_shift_at
                hosts = ([str(h) for h in rng.choice(first, size=k)]
                         + [str(h) for h in rng.choice(second, size=args.revisions - k)])
                rows = None
            else:
                one = str(rng.choice(pool.hosts))
                hosts, rows = [one] * args.revisions, [int(x) for x in rng.integers(0, 1000, size=args.revisions)]
            for b in benches:
                planted = args.at if b == planted_bench else None
                h, ms = _history(pool, b, hosts, rows, 1 + args.shift if planted is not None else 1.0, args.at, rng,
                                 args.runs)
                raw = detect(h, args.method, min_size=args.min_size, alpha=args.alpha)
                nd = detect_normalised(h, ms, opts)
                reasons[f"{scenario}: {'normalised' if nd.normalised else 'raw'}"] += 1
                for mode, d in (("raw", raw), ("normalised", nd.detection)):
                    false, found = _score(d.change_points, planted, args.tolerance)
                    fa = len(false)
                    if scenario in args.list_false_alarms:
                        false_alarms.extend(
                            f"{scenario} {mode}: seed {seed} {b} "
                            f"{'unchanged' if planted is None else f'planted at {planted}'}: change at {c.index} "
                            f"[{c.low}-{c.high}] {c.magnitude:+.1%}, p = {c.p_value:.1e}" for c in false)
                    t = tally.setdefault((scenario, mode), [0, 0, 0, 0, 0, 0])
                    t[0] += fa
                    t[5] += fa if planted is None else 0
                    if planted is None:
                        u = unchanged.setdefault((scenario, mode), [0, 0])
                        u[0] += int(fa > 0)
                        u[1] += 1
                    t[1] += int(found is not None)
                    t[2] += int(planted is not None)
                    t[3] += 1
                    t[4] += len(nd.machine_changes) if mode == "normalised" else 0
                    false_i, found_i = _score(d.change_points, planted, args.tolerance, interval=True)
                    ti = tally_i.setdefault((scenario, mode), [0, 0, 0, 0])
                    ti[0] += len(false_i)
                    ti[1] += int(found_i is not None)
                    ti[2] += int(planted is not None)
                    ti[3] += len(false_i) if planted is None else 0
                    if planted is not None and d.change_points:  # coverage, not conditioned on being found
                        c = min(d.change_points, key=lambda c: abs(c.index - planted))
                        nearest.setdefault((scenario, mode), []).append(c.low <= planted <= c.high)
                    if found_i is not None and planted is not None:
                        width.setdefault((scenario, mode), []).append(found_i.high - found_i.low + 1)
                        covered.setdefault((scenario, mode), []).append(found_i.low <= planted <= found_i.high)
    model = f"ridge {args.ridge} on the top {args.stressors} stressor(s)" if args.model == "ridge" else args.model
    print(f"detector {args.method}, machine-effect model: {model}"
          f"{', with machine intercepts' if args.intercepts else ''}; seeds {args.seed_offset}-"
          f"{args.seed_offset + args.seeds - 1}")
    print(f"{args.seeds} seeds × {len(benches)} benchmarks ({', '.join(benches)}), {args.revisions} revisions, "
          f"{len(pool.hosts)} hosts; planted {args.shift:+.0%} at revision {args.at} in one benchmark per seed")
    print(f"{'scenario':<11} {'mode':<11} {'false alarms':>12} {'unchanged':>9} {'per series':>10} "
          f"{'planted found':>14} {'set apart':>9}")
    for (scenario, mode), (fa, hits, n_planted, n, apart, fa_unchanged) in sorted(tally.items()):
        print(f"{scenario:<11} {mode:<11} {fa:>12} {fa_unchanged:>9} {fa / n:>10.2f} {hits:>8}/{n_planted:<5} "
              f"{apart if mode == 'normalised' else '-':>9}")
    _print_bounds(tally, "")
    print(f"scored by location interval (a change is the planted one if its 95 % interval holds the planted revision "
          f"or it is within {args.tolerance}):")
    print(f"{'scenario':<11} {'mode':<11} {'false alarms':>12} {'unchanged':>9} {'planted found':>14} "
          f"{'interval width (median, 90th pct)':>34} {'holds planted':>13} {'nearest holds':>13}")
    for (scenario, mode), (fa, hits, n_planted, fa_unchanged) in sorted(tally_i.items()):
        w = width.get((scenario, mode), [])
        cov = covered.get((scenario, mode), [])
        ws = f"{np.median(w):.0f}, {np.percentile(w, 90):.0f}" if w else "-"
        near = nearest.get((scenario, mode), [])
        print(f"{scenario:<11} {mode:<11} {fa:>12} {fa_unchanged:>9} {hits:>8}/{n_planted:<5} {ws:>34} "
              f"{f'{sum(cov)}/{len(cov)}' if cov else '-':>13} {f'{sum(near)}/{len(near)}' if near else '-':>13}")
    _print_bounds(tally_i, " (by interval)")
    if args.null_series:
        _print_null(unchanged, {k: v[5] for k, v in tally.items()},
                    null_share(args.method, args.revisions, args.null_series, args.min_size, args.alpha))
    print("unchanged: the false alarms in benchmarks with nothing planted (the rest are in the planted benchmark, "
          f"more than {args.tolerance} revisions from its change)")
    print("set apart: changes --normalise reports as the machines' (their mix changed there and explains them)")
    print("what --normalise decided (series):", ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
    if false_alarms:
        print("false alarms (--list-false-alarms):")
        print("\n".join(f"  {line}" for line in false_alarms))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", choices=("cloudlab", "store"), default="cloudlab")
    ap.add_argument("--store", type=Path, help="store of --pool store")
    ap.add_argument("--targets", default=None, help="targets (default: stream@nadds1,stream@nadds30,pair@loop,"
                                                   "pair@chase for --pool store, "
                                                   f"{','.join(CLOUDLAB_TARGETS)} for cloudlab)")
    ap.add_argument("--batch", default=None, help=f"batch (default: all for --pool store, {CLOUDLAB_BATCH} for "
                                                  "cloudlab)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed-offset", type=int, default=0, help="first seed (fresh seeds: 1000)")
    ap.add_argument("--intercepts", action=argparse.BooleanOptionalAction, default=False,
                    help="machine intercepts by partial pooling (NormaliseOptions.intercepts)")
    ap.add_argument("--revisions", type=int, default=60)
    ap.add_argument("--at", type=int, default=40, help="first revision of the planted change")
    ap.add_argument("--shift", type=float, default=0.10)
    ap.add_argument("--runs", type=int, default=3, help="runs per revision, drawn from its host's repetitions")
    ap.add_argument("--pool-shift-at", type=int, default=20, help="revision where pool-shift moves to other hosts")
    ap.add_argument("--tolerance", type=int, default=3)
    ap.add_argument("--list-false-alarms", nargs="*", default=(), choices=SCENARIOS,
                    help="list every false alarm of these scenarios: where, how large, its p")
    ap.add_argument("--stressors", type=int, default=2)
    ap.add_argument("--ridge", type=float, default=1.0)
    ap.add_argument("--model", default="auto", help="machine-effect model: auto (--normalise's default), gbm, ridge")
    ap.add_argument("--method", default="auto", help="history detector (raw and normalised alike)")
    ap.add_argument("--min-size", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--scenarios", nargs="+", default=SCENARIOS, choices=SCENARIOS,
                    help="scenarios to run (default: all three)")
    ap.add_argument("--null-series", type=int, default=100_000,
                    help="independent Gaussian series for the null reference (0: skip)")
    args = ap.parse_args()
    run(pool_from_arguments(ap, args), args)


def pool_from_arguments(ap: argparse.ArgumentParser, args: argparse.Namespace) -> Pool:
    """The pool ``--pool``/``--store``/``--targets``/``--batch`` name (CloudLab: imported into a temporary store)."""
    if args.pool == "store":
        if args.store is None:
            ap.error("--pool store needs --store")
        targets = args.targets or "stream@nadds1,stream@nadds30,pair@loop,pair@chase"
        return load_pool(args.store, tuple(targets.split(",")), args.batch)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.db"
        with open_store(path) as st:
            import_quiho_popper(st, RESULTS)
        targets = tuple(args.targets.split(",")) if args.targets else CLOUDLAB_TARGETS
        return load_pool(path, targets, args.batch or CLOUDLAB_BATCH)


if __name__ == "__main__":
    main()
