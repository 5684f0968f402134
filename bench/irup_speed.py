"""How long does one IRUP take, per engine? Prints a table; rerun with `python bench/irup_speed.py`.

Case: stream/add-1 of the paper data (136 rows x 41 stressors, 14 hardware groups), one
cold 20-seed IRUP with its out-of-group validity (20 seeds + one fit per hardware group), classic
formula, paper hyper-parameters (1000 trees, depth 4, learning rate 0.01), all cores. Every row
is measured in the same run as **one plain scikit-learn fit** on the same rows ("ratio" = IRUP
time / that fit), so machine load cancels out of the ratio.

Engines:

- ``batched`` (the default, ``--model quiho``): every seed and fold in one compiled loop;
- ``sklearn`` (``--model paper``, the reference): one ``GradientBoostingRegressor`` per seed and fold;
- ``lightgbm`` / ``xgboost`` (exact): the same seeds and folds, one fit each, when installed
  (``pip install .[bench]``); classic formula from their per-tree split gains.

"agreement" is against the scikit-learn IRUP of the same run: Spearman rho over all stressors
and the top-3 overlap. Also printed: a 200-permutation profile-shift test on an 8-host,
7-stressor planted profile (the size of a local-fleet quick profile) and on MariaDB innodb_load
(40 rows x 41 stressors).

Cold start (``--cold-start``; ``--cold-only`` skips the rest): the README's scenario, ``quiho irup hpccg``
after ``quiho import quiho-popper``, run through the CLI in a fresh process per row, with numba's cache
(``NUMBA_CACHE_DIR``) empty (a fresh install that did not warm it), warmed by the step ``scripts/setup.sh``
runs, or the installed one (``quiho/irup/__pycache__``). "first call" is the wall from process launch to the
end of the command; "warm call" the same command again in that process; "1 sklearn fit" one
``GradientBoostingRegressor`` fit (paper hyper-parameters) of the target's rows in that process, after both
calls; "ratio" = first call / that fit; "compiled" counts kernel signatures numba compiled instead of loading.
"cpu s" repeats first call and fit in CPU seconds of the process (all its threads), which other load on a
shared machine inflates less than wall time.

Options: --seeds N (default 20), --csv PATH (paper results.csv), --skip-others, --cold-start,
--cold-only, --reps N (cold-start repetitions, default 3), --cold-target NAME (default hpccg).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from quiho.datasets import planted_profile
from quiho.irup import ModelParams, ShiftSettings, compute_irup, load_target, shift_test
from quiho.irup import engine as _engine
from quiho.irup.engine import child_seeds, training_rows
from quiho.irup.importance import seed_weights
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

CSV = (Path(__file__).resolve().parents[2]
       / "shared/data/quiho-popper/pipelines/single-node/datapackage/quiho/results.csv")
QUICK = ("cpu", "matrix", "cache", "stream", "vm", "memcpy", "zero")


#: What ``scripts/setup.sh`` runs to warm numba's cache.
WARM = "from quiho.irup.batched import warm; warm()"
#: One fresh process: the CLI command twice, then one scikit-learn fit of the same rows. Nothing heavy is
#: imported before the first command, so its wall includes every import the CLI does.
CHILD = """
import sys, time, json, resource
store, target, out = sys.argv[1:4]
from quiho.cli.main import main
argv = ["irup", target, "--store", store]
assert main(argv) == 0
first_end = time.time()
ru = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process: numba's too
first_cpu = ru.ru_utime + ru.ru_stime
from quiho.irup import batched, engine, load_target, ModelParams
from quiho.store import open_store
engine.clear_caches()  # the warm call refits the validity folds, as the first did
t0 = time.perf_counter()
assert main(argv) == 0
warm = time.perf_counter() - t0
with open_store(store, create=False) as st:
    data = load_target(st, target)
X = engine.training_rows(data)[0].to_numpy(float)
model = ModelParams().make(0)  # imports scikit-learn, where the CLI did not
t0, c0 = time.perf_counter(), time.process_time()
model.fit(X, data.y.to_numpy(float))
fit, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
compiled = batched.compiled_signatures()
json.dump(dict(first_end=first_end, first_cpu=first_cpu, warm=warm, fit=fit, fit_cpu=fit_cpu, compiled=compiled,
               rows=int(X.shape[0]), stressors=int(X.shape[1])), open(out, "w"))
"""


def _cold_run(store: Path, target: str, cache: str | None, tmp: Path) -> dict:
    """One fresh process (stdout discarded); ``cache`` = NUMBA_CACHE_DIR, None = the installed cache."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    out = tmp / "child.json"
    start = time.time()
    subprocess.run([sys.executable, "-c", CHILD, str(store), target, str(out)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    res = json.loads(out.read_text())
    res["first"] = res["first_end"] - start
    return res


def cold_start(csv: Path, target: str, reps: int) -> None:
    """Print the cold-start table: fresh-process CLI wall per numba cache state, against one sklearn fit."""
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        store = tmp / "q.db"
        with open_store(store) as st:
            import_quiho_popper(st, csv)
        print(f"\ncold start: 'quiho irup {target}' (text output, 10 seeds) in a fresh process; cores: "
              f"{os.cpu_count()}; load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'numba cache':<34} {'rep':>3} {'warm-up s':>9} {'compiled':>8} {'first call s':>12} "
              f"{'warm call s':>11} {'1 sklearn fit s':>15} {'ratio':>6} {'cpu s: first':>12} {'fit':>5} "
              f"{'ratio':>5}  load")
        rows: dict[str, list[float]] = {}
        for rep in range(1, reps + 1):
            for label in ("empty (fresh install, not warmed)", "warmed by setup.sh's step", "installed (quiho/irup)"):
                cache: str | None = None
                warm_s = float("nan")
                if label != "installed (quiho/irup)":
                    cache = tempfile.mkdtemp(dir=tmp)
                if label.startswith("warmed"):
                    t0 = time.perf_counter()
                    subprocess.run([sys.executable, "-c", WARM], env={**os.environ, "NUMBA_CACHE_DIR": cache},
                                   check=True)
                    warm_s = time.perf_counter() - t0
                r = _cold_run(store, target, cache, tmp)
                rows.setdefault(label, []).append(r["first"] / r["fit"])
                ws = f"{warm_s:>9.1f}" if warm_s == warm_s else f"{'-':>9}"
                print(f"{label:<34} {rep:>3} {ws} {r['compiled']:>8} {r['first']:>12.2f} {r['warm']:>11.2f} "
                      f"{r['fit']:>15.2f} {r['first'] / r['fit']:>6.2f} {r['first_cpu']:>12.2f} {r['fit_cpu']:>5.2f} "
                      f"{r['first_cpu'] / r['fit_cpu']:>5.2f}  {os.getloadavg()[0]:.2f}", flush=True)
        print(f"case: {r['rows']} rows x {r['stressors']} stressors; ratio min-max per cache: " + "; ".join(
            f"{k.split(' ')[0]} {min(v):.2f}-{max(v):.2f}" for k, v in rows.items()))
        print(f"load average after: {os.getloadavg()[0]:.2f}")


def other_engine(name: str, data, seeds: int) -> tuple[float, np.ndarray] | None:
    """Time and classic importance of a 20-seed IRUP + validity folds on LightGBM or XGBoost."""
    try:
        if name == "lightgbm":
            import lightgbm as lgb
        else:
            import xgboost as xgb
    except ImportError:
        return None
    X_df, _, _, hw = training_rows(data)
    X, y, groups = X_df.to_numpy(float), data.y.to_numpy(float), hw.row_groups
    t0 = time.perf_counter()
    imps = []
    jobs = [(seed_weights(groups, s, "groups")[2], s) for s in child_seeds(0, seeds)]
    jobs += [((groups != g).astype(float), 0) for g in sorted(set(groups.tolist()))]
    for i, (w, s) in enumerate(jobs):
        inb = w > 0
        if name == "lightgbm":
            m = lgb.LGBMRegressor(n_estimators=1000, max_depth=4, num_leaves=16, learning_rate=0.01,
                                  min_child_samples=1, min_child_weight=0, min_split_gain=0, subsample=1.0,
                                  colsample_bytree=1.0, verbose=-1, random_state=s % 2**31, n_jobs=-1)
            m.fit(X[inb], y[inb], sample_weight=w[inb])
            imp = m.booster_.feature_importance("gain")
        else:
            m = xgb.XGBRegressor(n_estimators=1000, max_depth=4, learning_rate=0.01, tree_method="exact",
                                 min_child_weight=0, reg_lambda=0, random_state=s % 2**31, n_jobs=-1)
            m.fit(X[inb], y[inb], sample_weight=w[inb])
            g = m.get_booster().get_score(importance_type="total_gain")
            imp = np.array([g.get(f"f{j}", 0.0) for j in range(X.shape[1])])
        if i < seeds:
            imps.append(imp / imp.sum() if imp.sum() else imp)
    return time.perf_counter() - t0, np.mean(imps, axis=0)


def agreement(ref: dict[str, float], other: dict[str, float]) -> tuple[float, int]:
    names = sorted(ref)
    rho = spearmanr([ref[n] for n in names], [other.get(n, 0.0) for n in names])[0]
    top = lambda d: set(sorted(d, key=lambda k: -d[k])[:3])  # noqa: E731
    return float(rho), len(top(ref) & top(other))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--skip-others", action="store_true", help="skip LightGBM and XGBoost")
    ap.add_argument("--cold-start", action="store_true", help="also print the cold-start table")
    ap.add_argument("--cold-only", action="store_true", help="print only the cold-start table")
    ap.add_argument("--reps", type=int, default=3, help="cold-start repetitions")
    ap.add_argument("--cold-target", default="hpccg")
    args = ap.parse_args()
    if args.cold_start or args.cold_only:
        cold_start(args.csv, args.cold_target, args.reps)
        if args.cold_only:
            return
    with tempfile.TemporaryDirectory() as tmp:
        st = open_store(Path(tmp) / "q.db")
        import_quiho_popper(st, args.csv)
        data = load_target(st, "stream/add-1")
        mariadb = (load_target(st, "mysqlslap-mariadb-10.3.2/innodb_load"),
                   load_target(st, "mysqlslap-mariadb-5.5.58/innodb_load"))
    compute_irup(data, seeds=1, params=ModelParams(n_estimators=5))  # compile (numba caches it on disk)
    X_df, _, _, _ = training_rows(data)
    print(f"cores: {os.cpu_count()}, seeds: {args.seeds}, load average before: {os.getloadavg()[0]:.2f}")
    print(f"case: stream/add-1, {len(data.y)} rows x {X_df.shape[1]} stressors, {args.seeds}-seed classic IRUP + "
          "validity folds, paper hyper-parameters")
    print(f"{'engine':<10} {'IRUP s':>7} {'IRUP cpu s':>10} {'1 sklearn fit s':>15} {'ratio':>6} {'rho':>6} {'top3':>5}"
          f"  top-3  load")
    ref: dict[str, float] = {}
    for engine in ("sklearn", "batched", "lightgbm", "xgboost"):
        t0 = time.perf_counter()
        ModelParams().make(0).fit(X_df.to_numpy(float), data.y.to_numpy(float))
        one = time.perf_counter() - t0
        _engine.clear_caches()
        c0 = time.process_time()  # this process's threads; scikit-learn's joblib workers are other processes
        if engine in ("sklearn", "batched"):
            t0 = time.perf_counter()
            irup = compute_irup(data, seeds=args.seeds, params=ModelParams(engine=engine))
            took = time.perf_counter() - t0
            imp = {f.stressor: f.importance for f in irup.features}
        else:
            if args.skip_others:
                continue
            res = other_engine(engine, data, args.seeds)
            if res is None:
                print(f"{engine:<10} not installed (pip install .[bench])")
                continue
            took, vec = res
            imp = dict(zip([str(c) for c in X_df.columns], vec.tolist(), strict=True))
        if engine == "sklearn":
            ref = imp
        rho, top3 = agreement(ref, imp)
        top = ", ".join(sorted(imp, key=lambda k: -imp[k])[:3])
        cpu = f"{time.process_time() - c0:>10.1f}" if engine != "sklearn" else f"{'(workers)':>10}"
        print(f"{engine:<10} {took:>7.1f} {cpu} {one:>15.2f} {took / one:>6.2f} {rho:>6.3f} {top3:>3}/3  {top}  "
              f"{os.getloadavg()[0]:.2f}", flush=True)
    print("\nprofile-shift test (200 within-host permutations, 3 seeds per IRUP, 250 trees, lr 0.04, batched):")
    _, a, b = planted_profile(n_groups=8, reps=5, stressors=QUICK, bottleneck_b="cpu", random_state=0)
    for name, (da, db) in (("planted 8 hosts x 5 runs x 7 stressors", (a, b)),
                           ("MariaDB innodb_load 8 hosts x 5 runs x 41", mariadb)):
        t0, c0 = time.perf_counter(), time.process_time()
        t = shift_test(da, db, ShiftSettings(permutations=200))
        print(f"  {name:<42} {time.perf_counter() - t0:>6.1f} s wall {time.process_time() - c0:>6.1f} s cpu  "
              f"p = {t.p_value:.3f}  load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f} (other work on the machine inflates the times)")


if __name__ == "__main__":
    main()
