"""Is an IRUP meaningful? Leave-one-hardware-group-out R² and seed stability.

The paper's own falsifiability argument: with too few or too similar machines
the model under- or over-fits and the profile is noise. quiho measures it:
each hardware group is predicted by a model trained on the others, and the
out-of-group R² of the groups' levels (:func:`r2_between_groups`) says whether
fingerprints predict the metric on hardware the model has not seen. Shuffled K-fold would leak repetitions and
look-alike hosts across folds and inflate R².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quiho._text import json_number
from quiho.irup.importance import ModelParams

__all__ = ["Validity", "logo_predictions", "r2_between_groups", "verdict", "MEANINGFUL_R2", "MIN_GROUPS_MEANINGFUL",
           "MIN_TOP3_FREQUENCY"]

#: Out-of-group R² at or above which an IRUP can be "meaningful".
MEANINGFUL_R2 = 0.5
#: Fewer hardware groups than this can only be "weak".
MIN_GROUPS_MEANINGFUL = 5
#: The top stressor must be among the top 3 of at least this share of seeds for "meaningful".
MIN_TOP3_FREQUENCY = 0.6


@dataclass(frozen=True)
class Validity:
    """Validity verdict of one IRUP, with the evidence."""

    verdict: str
    r2_group_cv: float
    hardware_groups: int
    hosts: int
    rows: int
    top1_frequency: float
    top1_top3_frequency: float
    reason: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready mapping."""
        return {
            "verdict": self.verdict, "r2_group_cv": json_number(self.r2_group_cv, 4),
            "hardware_groups": self.hardware_groups, "hosts": self.hosts, "rows": self.rows,
            "top1_frequency": round(self.top1_frequency, 3),
            "top1_top3_frequency": round(self.top1_top3_frequency, 3), "reason": self.reason,
        }



def logo_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray, g: int, params: ModelParams, seed: int) -> np.ndarray:
    """Predictions for group ``g`` from a model trained on every other group."""
    test = groups == g
    model = params.make(seed).fit(X[~test], y[~test])
    return np.asarray(model.predict(X[test]))


def logo_predictions(fold_preds: dict[int, np.ndarray], groups: np.ndarray, n: int) -> np.ndarray:
    """Assemble per-group predictions into one vector aligned with the rows."""
    out = np.full(n, np.nan)
    for g, pred in fold_preds.items():
        out[groups == g] = pred
    return out


def r2_between_groups(y: np.ndarray, pred: np.ndarray, groups: np.ndarray) -> float:
    """Out-of-group R² of the hardware groups' levels: each group's median metric against its mean prediction.

    A fingerprint describes a machine, not a run: the rows of one hardware group share (nearly) one fingerprint
    (exactly one in a profile, whose rows carry the host's median fingerprint), so a model can predict a group's
    level and nothing of the spread of its runs around it. A per-row R² counts that spread, run-to-run noise and
    the odd outlying run, against the IRUP; the question the validity check asks, whether fingerprints predict the
    metric on hardware the model has not seen, is about the levels. The median makes a group's level robust to
    one outlying run. NaN with fewer than 2 predicted groups.
    """
    ok = np.isfinite(pred)
    gs = np.unique(groups[ok])
    if gs.size < 2:
        return float("nan")
    level = np.array([np.median(y[ok & (groups == g)]) for g in gs])
    predicted = np.array([np.mean(pred[ok & (groups == g)]) for g in gs])
    return r2(level, predicted)


def r2(y: np.ndarray, pred: np.ndarray) -> float:
    """Coefficient of determination (can be negative: worse than the mean)."""
    ok = np.isfinite(pred)
    if ok.sum() < 2:
        return float("nan")
    resid = np.sum((y[ok] - pred[ok]) ** 2)
    tot = np.sum((y[ok] - y[ok].mean()) ** 2)
    return float(1 - resid / tot) if tot > 0 else float("nan")


def verdict(
    r2_cv: float, n_groups: int, n_hosts: int, n_rows: int, top1_frequency: float, top1_top3: float, top1: str
) -> Validity:
    """Turn the evidence into ``meaningful`` / ``weak`` / ``not-meaningful`` with a reason.

    Rules, in order: out-of-group R² ≤ 0 → not-meaningful; R² < 0.5 → weak;
    fewer than 5 hardware groups → weak; the top stressor in the top 3 of
    fewer than 60 % of seeds → weak; otherwise meaningful.
    """
    facts = (
        f"leave-one-group-out R² = {r2_cv:.2f} over {n_groups} hardware groups ({n_hosts} hosts, {n_rows} rows); "
        f"top stressor '{top1}' first in {top1_frequency:.0%} and in the top 3 in {top1_top3:.0%} of seeds"
    )
    if not np.isfinite(r2_cv) or r2_cv <= 0:
        v = "not-meaningful"
        why = "fingerprints do not predict the metric on unseen hardware better than its mean"
    elif r2_cv < MEANINGFUL_R2:
        v, why = "weak", f"out-of-group R² below {MEANINGFUL_R2}: the model explains only part of the metric"
    elif n_groups < MIN_GROUPS_MEANINGFUL:
        v, why = "weak", f"fewer than {MIN_GROUPS_MEANINGFUL} distinct hardware groups: too few to rank stressors"
    elif top1_top3 < MIN_TOP3_FREQUENCY:
        v, why = "weak", "the top stressor drops out of the top 3 in many seeds: the top ranks are not stable"
    else:
        v, why = "meaningful", "fingerprints predict the metric on unseen hardware and the top rank is stable"
    return Validity(v, r2_cv, n_groups, n_hosts, n_rows, top1_frequency, top1_top3, f"{why} ({facts})")
