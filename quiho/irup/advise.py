"""Fleet-size advisor: how many distinct machines an application needs.

Subsample ``n`` hardware groups (n = 3 … all), compute the IRUP on their rows,
and measure how often its top-1 stressor equals the full-fleet IRUP's and how
much of the full top 3 it recovers. The smallest ``n`` whose agreement
reaches the thresholds is the advice; when even the full fleet's IRUP is not
meaningful the advice says so instead of a number, and no subset is fitted: agreement
with a top stressor that does not predict the metric measures nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from quiho.irup.data import TargetData
from quiho.irup.engine import Irup, _units, compute_irup
from quiho.irup.groups import hardware_groups
from quiho.irup.importance import ModelParams, classic_importance

__all__ = ["AdviceRow", "Advice", "advise_fleet_size"]


@dataclass(frozen=True)
class AdviceRow:
    """Agreement with the full fleet when only ``n_groups`` groups are used."""

    n_groups: int
    draws: int
    top1_agreement: float
    top3_overlap: float


@dataclass(frozen=True)
class Advice:
    """The advisor's table and its recommendation."""

    target: str
    full_groups: int
    full_top3: tuple[str, ...]
    rows: tuple[AdviceRow, ...]
    recommended_groups: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "target": self.target, "full_groups": self.full_groups, "full_top3": list(self.full_top3),
            "rows": [r.__dict__ for r in self.rows], "recommended_groups": self.recommended_groups,
            "reason": self.reason,
        }


def _top(X: np.ndarray, y: np.ndarray, cols: list[str], params: ModelParams, seed: int) -> list[str]:
    model = params.make(seed).fit(X, y)
    imp = classic_importance(model)
    return [cols[i] for i in np.argsort(-imp, kind="stable")[:3]]


def advise_fleet_size(
    data: TargetData,
    *,
    full: Irup | None = None,
    draws: int = 8,
    top1_threshold: float = 0.8,
    top3_threshold: float = 2 / 3,
    params: ModelParams | None = None,
    random_state: int = 0,
    n_jobs: int = -1,
) -> Advice:
    """Agreement of subsampled-fleet IRUPs with the full-fleet IRUP.

    Parameters
    ----------
    data : TargetData
        All rows of the target.
    full : Irup, optional
        The full-fleet IRUP (computed with 10 seeds if not given).
    draws : int, default 8
        Random subsets of groups per fleet size.
    top1_threshold, top3_threshold : float
        Agreement a fleet size must reach to be recommended.
    params : ModelParams, optional
        Model parameters (default: the paper's).
    random_state : int, default 0
    n_jobs : int, default -1

    Returns
    -------
    Advice
        No ``rows`` when the full fleet's IRUP is not meaningful (the answer does not depend on any draw).
    """
    params = params or ModelParams()
    full = full or compute_irup(data, seeds=10, random_state=random_state, params=params, n_jobs=n_jobs)
    X = data.X[[f.stressor for f in full.features]]
    groups = hardware_groups(X, _units(data)).row_groups
    ug = np.unique(groups)
    full_top3 = tuple(f.stressor for f in full.top(3))
    v = full.validity
    if v.verdict == "not-meaningful":
        return Advice(data.target, len(ug), full_top3, (), None,
                      f"the full fleet's IRUP is not meaningful ({v.reason}); no subset can do better: add hardware "
                      f"groups that differ in the resources this application might use")
    cols = list(X.columns)
    Xa, ya = X.to_numpy(dtype=float), data.y.to_numpy(dtype=float)
    rng = np.random.default_rng(random_state)
    jobs, keys = [], []
    for n in range(3, len(ug) + 1):
        for _ in range(draws if n < len(ug) else 1):
            pick = rng.choice(ug, size=n, replace=False)
            mask = np.isin(groups, pick)
            jobs.append(delayed(_top)(Xa[mask], ya[mask], cols, params, int(rng.integers(2**31 - 1))))
            keys.append(n)
    tops = Parallel(n_jobs=n_jobs)(jobs)
    rows = []
    for n in sorted(set(keys)):
        got = [t for k, t in zip(keys, tops, strict=True) if k == n]
        t1 = float(np.mean([t[0] == full_top3[0] for t in got]))
        t3 = float(np.mean([len(set(t) & set(full_top3)) / 3 for t in got]))
        rows.append(AdviceRow(n, len(got), round(t1, 3), round(t3, 3)))
    rec = next((r.n_groups for r in rows if r.top1_agreement >= top1_threshold and r.top3_overlap >= top3_threshold),
               None)
    if rec is None:
        reason = (f"even all {len(ug)} groups do not reach top-1 agreement ≥ {top1_threshold:.0%} and top-3 overlap "
                  f"≥ {top3_threshold:.0%}: the fleet is too small for stable ranks; add distinct machines")
    elif rec == len(ug):
        reason = (f"only the full fleet ({rec} groups) reaches top-1 agreement ≥ {top1_threshold:.0%} and top-3 "
                  f"overlap ≥ {top3_threshold:.0%}: it is just big enough; more distinct machines would make the "
                  f"ranks safer")
    else:
        reason = (f"{rec} distinct hardware groups reproduce the full fleet's top stressor in ≥ {top1_threshold:.0%} "
                  f"of draws and ≥ {top3_threshold:.0%} of its top 3 (full fleet: {len(ug)} groups)")
    return Advice(data.target, len(ug), full_top3, tuple(rows), rec, reason)
