"""Is "the resource profile changed" calibrated? Prints tables; rerun with `python bench/irup_calibration.py`.

Stored data only, no fleet time:

- **self-pairs**: one version's runs split per host into two random halves (paper targets
  with ≥ 3 repetitions per host; the nadds1 and nadds30 runs of local-fleet profiles when
  ``--profile-store`` names a store holding them). Nothing changed: ``different`` must stay
  at or below 5 %.
- **planted shifts**: :func:`quiho.datasets.planted_profile` version pairs on an 8-host fleet
  whose bottleneck moves from ``stream`` (memory) to ``cpu``: ``different`` must reach 90 %.
  Planted pairs with the *same* bottleneck are a second null; pairs whose metric is pure noise
  (IRUPs not meaningful) a third, where a 'different' would be tentative.
- **MariaDB 10.3.2 vs 5.5.58 innodb_load** and, with ``--profile-store``, nadds1 vs nadds30:
  what the calibrated comparison says.
- with ``--profile-store``: the profile IRUP's rows (host-median fingerprints vs
  per-repetition rows) and formula (classic vs permutation) on the same pairs.

Every comparison is the product's: :func:`quiho.irup.shift_test` then
:func:`quiho.irup.compare_irups` on IRUPs of the default engine. Options: --permutations B
(default 100 here, 200 in the product: the test is exact for any B, B only sets the p
resolution), --splits N per target, --planted N, --seeds S (displayed IRUPs),
--skip SECTIONS (comma list of self, planted, noise, mariadb).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from quiho.datasets import planted_profile
from quiho.errors import NotEnoughData
from quiho.irup import ShiftSettings, TargetData, compare_irups, compute_irup, load_target, shift_test
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

CSV = (Path(__file__).resolve().parents[2]
       / "shared/data/quiho-popper/pipelines/single-node/datapackage/quiho/results.csv")
SELF_TARGETS = ["hpccg", "ssca", "scikit-learn", "redisbench/SET", "redisbench/GET",
                *[f"mysqlslap-mariadb-{v}/{t}" for v in ("10.3.2", "5.5.58") for t in ("innodb_load", "memory_load")]]


def subset(data: TargetData, rows: np.ndarray, name: str) -> TargetData:
    """The rows ``rows`` of ``data`` as a target of its own."""
    return TargetData(name, data.X.iloc[rows].reset_index(drop=True), data.y.iloc[rows].reset_index(drop=True),
                      data.meta.iloc[rows].reset_index(drop=True), data.unit, data.higher_is_better)


def split_halves(data: TargetData, rng: np.random.Generator) -> tuple[TargetData, TargetData]:
    """Each host's runs shuffled and cut in two halves (odd counts: the extra run to a random side)."""
    a, b = [], []
    for _, idx in data.meta.groupby("host").indices.items():
        idx = rng.permutation(idx)
        cut = len(idx) // 2 + (int(rng.integers(2)) if len(idx) % 2 else 0)
        a.extend(idx[:cut])
        b.extend(idx[cut:])
    return subset(data, np.sort(a), data.target + "#A"), subset(data, np.sort(b), data.target + "#B")


def host_median_rows(data: TargetData) -> TargetData:
    """Every run's fingerprint replaced by its host's median fingerprint (the profile's rows)."""
    med = data.X.groupby(data.meta["host"].to_numpy()).median()
    X = med.loc[data.meta["host"].to_numpy()].reset_index(drop=True)
    return TargetData(data.target, X, data.y, data.meta, data.unit, data.higher_is_better)


def judge(a: TargetData, b: TargetData, args, importance: str = "classic", seed: int = 0):
    """The product's comparison of two data sets: (verdict, p, class shift of memory, of cpu, R² a, R² b)."""
    t = shift_test(a, b, ShiftSettings(importance=importance, permutations=args.permutations, random_state=seed,
                                       n_jobs=args.jobs))
    ia = compute_irup(a, importance=importance, seeds=args.seeds, random_state=seed, n_jobs=args.jobs)
    ib = compute_irup(b, importance=importance, seeds=args.seeds, random_state=seed, n_jobs=args.jobs)
    c = compare_irups(ia, ib, shift=t)
    return (c.verdict, t.p_value, c.class_shift.get("memory", 0.0), c.class_shift.get("cpu", 0.0),
            ia.validity.r2_group_cv, ib.validity.r2_group_cv,
            "not-meaningful" in (ia.validity.verdict, ib.validity.verdict), t.distance_p)


def row(name: str, results: list, t0: float) -> str:
    v = Counter(r[0] for r in results)
    n = len(results)
    p = np.median([r[1] for r in results]) if results else float("nan")
    diff = v["different"] / n if n else float("nan")
    rej = np.mean([r[1] < 0.05 for r in results]) if results else float("nan")
    rej_d = np.mean([r[7] < 0.05 for r in results]) if results else float("nan")
    nm = sum(1 for r in results if r[6])
    return (f"{name:<34} {n:>5} {v['different']:>9} {v['equivalent']:>10} {v['inconclusive']:>12} {diff:>9.0%} "
            f"{rej:>6.0%} {rej_d:>7.0%} {nm:>6} {p:>8.3f} {time.perf_counter() - t0:>7.0f}")


HEAD = (f"{'set':<34} {'pairs':>5} {'different':>9} {'equivalent':>10} {'inconclusive':>12} {'diff rate':>9} "
        f"{'p<.05':>6} {'dist<.05':>7} {'not-m.':>6} {'median p':>8} {'time s':>7}\n"
        "(p<.05: the permutation test alone (host x version interaction); dist<.05: the IRUP-distance p alone; "
        "not-m.: pairs where an IRUP is not meaningful: no 'equivalent' then, and a 'different' is tentative)")


def self_pairs(st, args) -> list:
    rng = np.random.default_rng(args.seed)
    out = []
    for target in SELF_TARGETS[: args.targets]:
        data = load_target(st, target)
        for _ in range(args.splits):
            a, b = split_halves(data, rng)
            try:
                out.append(judge(a, b, args, importance=args.formula, seed=int(rng.integers(1 << 30))))
            except NotEnoughData as exc:
                print(f"  skipped a split of {target}: {exc}", flush=True)
    return out


def planted(args, same: bool, n_groups: int = 8) -> list:
    out = []
    for k in range(args.planted):
        # the generator's defaults (one host per hardware group, 3 runs each) on 8 or 12 groups
        _, a, b = planted_profile(n_groups=n_groups, bottleneck_a="stream", bottleneck_b="stream" if same else "cpu",
                                  change=1.0 if same else 1.5, random_state=100 + k)
        out.append(judge(a, b, args, importance=args.formula, seed=k))
    return out


def noise_null(args, n_groups: int = 8) -> list:
    """Pairs whose metric is pure noise (no stressor explains it): IRUPs not meaningful, nothing changed.

    The check of the permutation test's size where it matters most: a 'different' between
    not-meaningful IRUPs stands (tentative), so it must stay at about alpha here.
    """
    out = []
    for k in range(2 * args.planted):
        _, a, b = planted_profile(n_groups=n_groups, bottleneck_a="stream", bottleneck_b="stream", change=1.0,
                                  random_state=300 + k)
        rng = np.random.default_rng(300 + k)
        a, b = (TargetData(d.target, d.X, d.y * 0 + rng.lognormal(size=len(d.y)), d.meta, d.unit,
                           d.higher_is_better) for d in (a, b))
        out.append(judge(a, b, args, importance=args.formula, seed=k))
    return out


def local_fleet(path: Path, args) -> None:
    st = open_store(path, create=False)
    batches = [r[0] for r in st.conn.execute(
        "SELECT DISTINCT batch FROM app_runs WHERE application='stream' AND version IN ('nadds1','nadds30')")]
    print(f"\nlocal-fleet profiles in {path}: {len(batches)} batch(es)")
    if not batches:
        return
    rng = np.random.default_rng(args.seed)
    print(f"{'batch':<34} {'rows':<10} {'formula':<12} {'verdict':<13} {'p':>6} {'memory':>7} {'cpu':>6} "
          f"{'R2 a':>5} {'R2 b':>5} {'self-pairs diff/n':>17} {'self p<.05/n':>12}")
    for batch in batches:
        try:
            da = load_target(st, "stream@nadds1", batch=batch)
            db = load_target(st, "stream@nadds30", batch=batch)
        except NotEnoughData as exc:
            print(f"{batch}: {exc}")
            continue
        for rows_name, prep in (("host-median", host_median_rows), ("per-rep", lambda d: d)):
            for formula in ("classic", "permutation"):
                v, p, dm, dc, ra, rb, _, _ = judge(prep(da), prep(db), args, importance=formula)
                selfs = []
                for d in (da, db):
                    for _ in range(args.local_splits):
                        a, b = split_halves(prep(d), rng)
                        try:
                            selfs.append(judge(a, b, args, importance=formula, seed=int(rng.integers(1 << 30))))
                        except NotEnoughData:
                            pass
                print(f"{batch:<34} {rows_name:<10} {formula:<12} {v:<13} {p:>6.3f} {dm:>+7.0%} {dc:>+6.0%} "
                      f"{ra:>5.2f} {rb:>5.2f} {sum(r[0] == 'different' for r in selfs):>9}/{len(selfs)} "
                      f"{sum(r[1] < 0.05 for r in selfs):>9}/{len(selfs)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--permutations", type=int, default=100)
    ap.add_argument("--splits", type=int, default=5, help="random splits per paper target")
    ap.add_argument("--targets", type=int, default=len(SELF_TARGETS), help="first N paper targets")
    ap.add_argument("--planted", type=int, default=20, help="planted pairs (shifted, and as many unshifted)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the displayed IRUPs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--formula", default="classic", help="importance formula of the planted, noise and self-pair "
                    "rows (classic or permutation)")
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--profile-store", type=Path, default=None, help="store with local-fleet nadds1/nadds30 profiles")
    ap.add_argument("--local-splits", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma list of sections to skip: self,planted,noise,mariadb")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    print(f"cores: {os.cpu_count()}, formula: {args.formula}, permutations: {args.permutations}, "
          f"displayed-IRUP seeds: {args.seeds}, "
          f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        st = open_store(Path(tmp) / "q.db")
        import_quiho_popper(st, args.csv)
        print(HEAD)
        if "planted" not in skip:
            for groups in (8, 12):
                t0 = time.perf_counter()
                print(row(f"planted shift stream->cpu, {groups} hosts", planted(args, False, groups), t0), flush=True)
                t0 = time.perf_counter()
                print(row(f"planted no shift (null), {groups} hosts", planted(args, True, groups), t0), flush=True)
        if "noise" not in skip:
            t0 = time.perf_counter()
            print(row("noise metric null, 8 hosts", noise_null(args), t0), flush=True)
        if "self" not in skip:
            t0 = time.perf_counter()
            print(row("paper self-pairs (split halves)", self_pairs(st, args), t0), flush=True)
        if "mariadb" not in skip:
            a = load_target(st, "mysqlslap-mariadb-10.3.2/innodb_load")
            b = load_target(st, "mysqlslap-mariadb-5.5.58/innodb_load")
            for formula in ("classic", "permutation"):
                t = shift_test(a, b, ShiftSettings(importance=formula, permutations=200, n_jobs=args.jobs))
                c = compare_irups(compute_irup(a, importance=formula, n_jobs=args.jobs),
                                  compute_irup(b, importance=formula, n_jobs=args.jobs), shift=t)
                print(f"MariaDB 10.3.2 vs 5.5.58 innodb_load ({formula}, B=200, 10 seeds): {c.verdict}, "
                      f"p = {t.p_value:.3f} (IRUP distance p = {t.distance_p:.3f}); {c.reason}", flush=True)
    if args.profile_store is not None:
        local_fleet(args.profile_store, args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
