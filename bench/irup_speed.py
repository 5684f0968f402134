"""How long does one IRUP take? Prints a table; rerun with `python bench/irup_speed.py`.

Cases: stream/add-1 of the paper data (136 rows, 14 hardware groups), and "all
rows": the 391 complete fingerprint rows of the paper data with a planted
target (runtime ∝ 1/stream), since no real application has a value on every
row. Each cell is one cold IRUP (20 seeds, paper hyper-parameters, both
cores) including its out-of-group validity check; "warm" reruns the same
target with another seed, reusing the cached validity folds (the cost of the
seeds alone); "fast" is the ``fast`` model preset (250 trees, learning rate
0.04), cold, with its agreement with the paper-parameter IRUP: Spearman rho
over all stressors and the overlap of the top 3.

Options: --seeds N (default 20), --repeat R (default 1), --csv PATH (paper results.csv).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from quiho.irup import ModelParams, TargetData, compute_irup, load_fingerprints, load_target
from quiho.irup import engine as _engine
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

CSV = (Path(__file__).resolve().parents[2]
       / "shared/data/quiho-popper/pipelines/single-node/datapackage/quiho/results.csv")


def all_rows_target(store) -> TargetData:
    runs = [r[0] for r in store.conn.execute(
        "SELECT id FROM fingerprint_runs WHERE source='quiho-popper' AND duplicate_of IS NULL")]
    fp = load_fingerprints(store, runs)
    wide = fp.pivot_table(index=["batch", "host", "repetition"], columns="stressor", values="value").dropna()
    rng = np.random.default_rng(0)
    y = 1e5 / wide["stream"].to_numpy() * rng.lognormal(0, 0.02, len(wide))
    meta = wide.index.to_frame(index=False)
    meta["run_id"], meta["paired"] = 0, True
    X = wide.reset_index(drop=True)
    X.columns = [str(c) for c in X.columns]
    return TargetData("all-rows/planted-stream", X, pd.Series(y, name="planted"), meta, "s", False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--csv", type=Path, default=CSV)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        st = open_store(Path(tmp) / "q.db")
        import_quiho_popper(st, args.csv)
        cases = {"stream/add-1": load_target(st, "stream/add-1"), "all rows (391)": all_rows_target(st)}
        print(f"cores: {os.cpu_count()}, seeds: {args.seeds}, load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'case':<16} {'rows':>5} {'groups':>6} {'formula':<12} {'paper s':>8} {'warm s':>7} {'fast s':>7} "
              f"{'rho':>5} {'top3':>5} {'verdict':<15} top-3 (paper)")
        for name, data in cases.items():
            for formula in ("classic", "impurity", "permutation"):
                cold, warm, fast_t = [], [], []
                for _ in range(args.repeat):
                    _engine._LOGO_CACHE.clear()
                    t0 = time.perf_counter()
                    irup = compute_irup(data, importance=formula, seeds=args.seeds)
                    cold.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    compute_irup(data, importance=formula, seeds=args.seeds, random_state=1)
                    warm.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    fast = compute_irup(data, importance=formula, seeds=args.seeds, params=ModelParams.preset("fast"))
                    fast_t.append(time.perf_counter() - t0)
                a, b = irup.by_stressor(), fast.by_stressor()
                names = sorted(a)
                rho = spearmanr([a[n].importance for n in names], [b[n].importance if n in b else 0 for n in names])[0]
                top3 = len({f.stressor for f in irup.top(3)} & {f.stressor for f in fast.top(3)})
                top = ", ".join(f.stressor for f in irup.top(3))
                print(f"{name:<16} {irup.rows:>5} {irup.validity.hardware_groups:>6} {formula:<12} "
                      f"{np.median(cold):>8.1f} {np.median(warm):>7.1f} {np.median(fast_t):>7.1f} {rho:>5.2f} "
                      f"{top3:>3}/3 {irup.validity.verdict:<15} {top}", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f} (other work on the machine inflates the times)")


if __name__ == "__main__":
    main()
