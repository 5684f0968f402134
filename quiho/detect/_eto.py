"""Exclusive-time outliers across functions (Perun's ETO, with its bugs fixed).

For every function the total exclusive time (ns) of baseline and target is summed, Δ = target − baseline.
A function is flagged when its Δ is an outlier among all functions' Δ and large enough to matter:

* signed modified z-score ``0.6745·(Δ − median Δ)/MAD`` (Perun took ``|Δ − median|`` first, so its
  optimization branch could never fire); MAD = 0 falls back to the mean absolute deviation ×1.2533, and if
  that is 0 too, any Δ different from the median is an outlier;
* |z| > ``z_change`` (3.5, Perun's cut-off) → degradation/optimization; |z| > ``z_maybe`` (2.0) → maybe;
* and |Δ| ≥ ``min_share`` of the total baseline exclusive time (default 1 %), so that a tiny function with a
  large relative swing is not an outlier of importance.

With fewer than ``min_functions`` (5) functions, outlier statistics mean little: the verdict then uses the
share alone (``|Δ|`` ≥ ``change_share``, default 5 %, of the total → change; ≥ ``min_share`` → maybe).
Functions present on one side only are compared against 0 (Perun's left join never reported deleted ones).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho.detect._base import Change, Profile, ProfileDetector, State, register_profile_detector

__all__ = ["ExclusiveTimeOutliers"]


@register_profile_detector
class ExclusiveTimeOutliers(ProfileDetector):
    """Outliers of per-function exclusive-time deltas (see module docstring for the rule and defaults)."""

    name = "eto"
    description = "outliers among per-function deltas of total exclusive time (signed robust z)"

    def __init__(self, z_change: float = 3.5, z_maybe: float = 2.0, min_share: float = 0.01,
                 change_share: float = 0.05, min_functions: int = 5) -> None:
        self.z_change = z_change
        self.z_maybe = z_maybe
        self.min_share = min_share
        self.change_share = change_share
        self.min_functions = min_functions

    def compare(self, baseline: Profile, target: Profile) -> list[Change]:
        names = sorted(set(baseline.functions) | set(target.functions))
        if not names:
            return []

        def total(p: Profile, f: str) -> float:
            s = p.functions.get(f)
            if s is None:
                return 0.0
            return float((s.exclusive if s.exclusive is not None else s.y).sum())

        tb = np.array([total(baseline, f) for f in names])
        tt = np.array([total(target, f) for f in names])
        d = tt - tb
        all_b = float(tb.sum()) or float(tt.sum()) or 1.0
        med = float(np.median(d))
        mad = float(np.median(np.abs(d - med)))
        if mad > 0:
            z = 0.6745 * (d - med) / mad
        else:
            mean_ad = float(np.mean(np.abs(d - med)))
            if mean_ad > 0:
                z = (d - med) / (1.2533 * mean_ad)
            else:
                with np.errstate(invalid="ignore"):
                    z = np.where(d == med, 0.0, np.sign(d - med) * np.inf)
        few = len(names) < self.min_functions
        out = []
        for i, f in enumerate(names):
            share = float(d[i] / all_b)
            big = abs(share) >= self.min_share
            if few:
                if abs(share) >= self.change_share:
                    state = State.DEGRADATION if d[i] > 0 else State.OPTIMIZATION
                else:
                    state = State.MAYBE if big else State.NO_CHANGE
                p = None
                conf, ctype = min(1.0, abs(share) / self.change_share), "share/change_share"
            else:
                zi = float(z[i])
                if big and abs(zi) > self.z_change:
                    state = State.DEGRADATION if d[i] > 0 else State.OPTIMIZATION
                elif big and abs(zi) > self.z_maybe:
                    state = State.MAYBE
                else:
                    state = State.NO_CHANGE
                p = float(2 * stats.norm.sf(abs(zi))) if np.isfinite(zi) else 0.0
                conf, ctype = 1.0 - p, "1-p (normal approx. of robust z)"
            kind = ""
            if state != State.NO_CHANGE:
                kind = "not-in-baseline" if tb[i] == 0 else "not-in-target" if tt[i] == 0 else "exclusive-time"
            rel = float(d[i] / tb[i]) if tb[i] > 0 else float("inf") if d[i] > 0 else float("nan")
            out.append(Change(f, self.name, state, kind, rel, conf, ctype, p, {
                "baseline_exclusive_ns": float(tb[i]), "target_exclusive_ns": float(tt[i]), "delta_ns": float(d[i]),
                "share_of_baseline_total": share, "robust_z": float(z[i]), "few_functions": few,
                "z_change": self.z_change, "min_share": self.min_share}))
        return out
