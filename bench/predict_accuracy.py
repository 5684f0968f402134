"""How well does ``quiho predict`` predict a metric on unseen hardware? Prints tables; rerun with
`python bench/predict_accuracy.py` (stored data only, no fleet time).

On the quiho paper's CloudLab data (``../shared/data/quiho-popper``, imported as ``quiho import quiho-popper``
does), for each target: the validity verdict of its IRUP, then every hardware group predicted by a model that never
saw it (:func:`quiho.irup.predict.fit_predictor`): the median absolute error of the groups' levels, next to

- the run-to-run noise of the metric on one machine (median within-group std of log metric), and
- the error of predicting every machine by the fleet's mean (std of the groups' log levels).

Errors are ``exp(|log error|) - 1`` in %. The last column is the coverage of the conformal interval, each
group judged by the interval the other groups' residuals give (as a new machine would be).

A second table compares interval methods on the same leave-one-group-out residuals of every target with a
positive out-of-group R²: conformal (median-centred), conformal (zero-centred), Gaussian (t), empirical quantiles.

Options: --all (every target, ~3 min on 1 core), --level L, --seeds S.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

from quiho.errors import NotEnoughData
from quiho.irup import list_targets, load_target
from quiho.irup.predict import PredictOptions, conformal_interval, fit_predictor
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

RESULTS = (Path(__file__).resolve().parents[2] / "shared" / "data" / "quiho-popper" / "pipelines" / "single-node"
           / "datapackage" / "quiho" / "results.csv")
PAPER_TARGETS = (
    "hpccg", "ssca", "scikit-learn", "comd", "lulesh", "miniaero", "miniamr", "minife", "zlog",
    "redisbench/SET", "redisbench/GET", "redisbench/LPUSH", "redisbench/LPOP",
    "mysqlslap-mariadb-10.3.2/innodb_load", "mysqlslap-mariadb-10.3.2/memory_load",
    "mysqlslap-mariadb-5.5.58/innodb_load", "mysqlslap-mariadb-5.5.58/memory_load",
    "stream/add-1", "stream/add-10", "stream/add-20", "stream/copy-1", "mysqlslap/innodb_load",
    "fio/read-fiofile-4k-seq",
)


def pct(log_err: float) -> str:
    return "-" if not math.isfinite(log_err) else f"{math.expm1(abs(log_err)):.1%}"


def loo_coverage(r: np.ndarray, level: float, method: str) -> tuple[float, float]:
    """Share of residuals inside the interval built from the others, and the median interval width (log)."""
    hits, widths = [], []
    for i in range(len(r)):
        o = np.delete(r, i)
        if method == "conformal":
            c, h = conformal_interval(o, level)
            lo, hi = c - h, c + h
        elif method == "conformal-zero":
            k = math.ceil((len(o) + 1) * level)
            h = float(np.sort(np.abs(o))[k - 1]) if k <= len(o) else math.inf
            lo, hi = -h, h
        elif method == "gaussian-t":
            q = stats.t.ppf(0.5 + level / 2, len(o) - 1) * o.std(ddof=1) * math.sqrt(1 + 1 / len(o))
            lo, hi = o.mean() - q, o.mean() + q
        else:
            lo, hi = np.quantile(o, [(1 - level) / 2, (1 + level) / 2])
        hits.append(lo <= r[i] <= hi)
        widths.append(hi - lo)
    return float(np.mean(hits)), float(np.median(widths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every target of the data set")
    ap.add_argument("--level", type=float, default=0.8)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "q.db") as st:
        import_quiho_popper(st, RESULTS)
        targets = list(list_targets(st)["target"]) if args.all else list(PAPER_TARGETS)
        opts = PredictOptions(level=args.level, seeds=args.seeds)
        print(f"leave-one-hardware-group-out prediction on the paper's CloudLab data ({args.level:.0%} intervals)")
        print(f"{'target':<38} {'G':>3} {'verdict':<15} {'R²':>6} {'error':>7} {'noise':>6} {'mean':>7} "
              f"{'err/noise':>9} {'err/mean':>8} {'covered':>7}")
        residuals: dict[str, tuple[float, np.ndarray]] = {}
        summary: dict[str, list[tuple[float, float, float]]] = {}
        for t in targets:
            try:
                p = fit_predictor(load_target(st, t), opts)
            except NotEnoughData as exc:
                print(f"{t:<38} skipped: {exc}")
                continue
            r = np.array([g.log_error for g in p.residuals])
            residuals[t] = (p.validity.r2_group_cv, r)
            cov, _ = loo_coverage(r, args.level, "conformal")
            err = p.logo_error
            summary.setdefault(p.validity.verdict, []).append((err / p.noise, err / p.spread, cov))
            print(f"{t:<38} {len(r):>3} {p.validity.verdict:<15} {p.validity.r2_group_cv:>6.2f} {pct(err):>7} "
                  f"{pct(p.noise):>6} {pct(p.spread):>7} {err / p.noise:>9.1f} {err / p.spread:>8.2f} {cov:>7.0%}")
        print("\nper verdict: median error / run-to-run noise, median error / fleet-mean error, mean coverage")
        for v, rows in sorted(summary.items()):
            a = np.array(rows)
            print(f"  {v:<15} targets={len(a):>3}  err/noise={np.median(a[:, 0]):6.1f}  "
                  f"err/mean={np.median(a[:, 1]):5.2f}  coverage={a[:, 2].mean():.0%}")
        _methods(residuals, args.level)


def _methods(residuals: dict[str, tuple[float, np.ndarray]], level: float) -> None:
    keep = [r for r2, r in residuals.values() if r2 > 0 and np.isfinite(r).all()]
    n = np.array([len(r) for r in keep])
    print(f"\ninterval methods on {len(keep)} targets with out-of-group R² > 0 ({n.sum()} held-out groups)")
    print(f"{'method':<16} {'level':>5} {'coverage':>8} {'median width':>13} {'unbounded':>9}")
    for lv in (level, 0.9):
        for m in ("conformal", "conformal-zero", "gaussian-t", "quantiles"):
            res = [loo_coverage(r, lv, m) for r in keep]
            cov = float(np.sum([c * k for (c, _), k in zip(res, n, strict=True)]) / n.sum())
            widths = np.array([w for _, w in res])
            fin = widths[np.isfinite(widths)]
            print(f"{m:<16} {lv:>5.0%} {cov:>8.1%} {'×' + format(math.exp(float(np.median(fin))), '.2f'):>13} "
                  f"{np.mean(~np.isfinite(widths)):>9.0%}")


if __name__ == "__main__":
    main()
