"""Integral comparison (whole range and sub-intervals) and local statistics.

Differences from Perun's integral comparison and local statistics:

* Both curves are compared over the **same** x interval, the overlap of the two ranges, on a common grid
  (Perun integrated each model over its own range and truncated curves of unequal length).
* The curves are Nadaraya-Watson kernel regressions with a cross-validated bandwidth (not the best-R² model,
  which for non-parametric fits is often the data itself).
* Thresholds stay Perun's (integral: 10 % maybe, 25 % change), but a change also needs Welch's t-test on the
  raw points of that interval (p < ``alpha``, Bonferroni over the sub-intervals); local statistics use a
  Mann-Whitney test per window with Holm's correction instead of a score of 8 unweighted statistics.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho._stats import welch_p
from quiho.detect._base import Change, PerFunctionProfileDetector, Samples, State, register_profile_detector
from quiho.models import kernel_regression

__all__ = ["IntegralComparison", "LocalStatistics"]


def _overlap(b: Samples, t: Samples) -> tuple[float, float] | None:
    lo, hi = max(b.x.min(), t.x.min()), min(b.x.max(), t.x.max())
    return (float(lo), float(hi)) if hi >= lo else None


@register_profile_detector
class IntegralComparison(PerFunctionProfileDetector):
    """Relative difference of the areas under the two kernel-regression curves, whole range and sub-intervals.

    Parameters
    ----------
    maybe_rel : float, default 0.10
    change_rel : float, default 0.25
        Perun's thresholds on |rel|.
    intervals : int, default 10
        Equal-width sub-intervals of the common x range.
    alpha : float, default 0.01
    """

    name = "int"
    description = "area under kernel-regression curves on the common x range, whole + sub-intervals"
    min_points = 5

    def __init__(self, maybe_rel: float = 0.10, change_rel: float = 0.25, intervals: int = 10,
                 alpha: float = 0.01) -> None:
        self.maybe_rel = maybe_rel
        self.change_rel = change_rel
        self.intervals = intervals
        self.alpha = alpha

    def _state(self, rel: float, p: float, alpha: float) -> State:
        if not np.isfinite(rel):
            return State.NOT_MEANINGFUL
        a = abs(rel)
        if a > self.change_rel and p < alpha:
            return State.DEGRADATION if rel > 0 else State.OPTIMIZATION
        if a > self.maybe_rel:
            return State.MAYBE
        return State.NO_CHANGE

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        ov = _overlap(baseline, target)
        if ov is None:
            return self._nm(function, "the x ranges of baseline and target do not overlap")
        lo, hi = ov
        inb = (baseline.x >= lo) & (baseline.x <= hi)
        int_ = (target.x >= lo) & (target.x <= hi)
        support: dict[str, object] = {"x_range": [lo, hi], "maybe_rel": self.maybe_rel,
                                      "change_rel": self.change_rel, "alpha": self.alpha}
        if hi == lo:
            ib, it = float(baseline.y[inb].mean()), float(target.y[int_].mean())
            rel = (it - ib) / abs(ib) if ib else float("nan")
            p = welch_p(target.y[int_], baseline.y[inb])
            st = self._state(rel, p, self.alpha)
            return Change(function, self.name, st, "constant" if st != State.NO_CHANGE else "", rel, 1 - p, "1-p",
                          p, {**support, "baseline_integral": ib, "target_integral": it})
        grid = np.linspace(lo, hi, 513)
        cb = kernel_regression(baseline.x[inb], baseline.y[inb]).predict(grid)
        ct = kernel_regression(target.x[int_], target.y[int_]).predict(grid)
        ib, it = float(np.trapezoid(cb, grid)), float(np.trapezoid(ct, grid))
        rel = (it - ib) / abs(ib) if ib else float("nan")
        p = welch_p(target.y[int_], baseline.y[inb])
        state = self._state(rel, p, self.alpha)
        kind = "whole" if state != State.NO_CHANGE else ""
        edges = np.linspace(lo, hi, self.intervals + 1)
        parts = []
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            m = (grid >= a) & (grid <= b)
            sb = float(np.trapezoid(cb[m], grid[m]))
            stt = float(np.trapezoid(ct[m], grid[m]))
            r = (stt - sb) / abs(sb) if sb else float("nan")
            pb = (baseline.x >= a) & (baseline.x <= b)
            pt = (target.x >= a) & (target.x <= b)
            pp = welch_p(target.y[pt], baseline.y[pb])
            parts.append({"x_from": float(a), "x_to": float(b), "rel": r, "p_value": pp,
                          "state": self._state(r, pp, self.alpha / self.intervals).value})
        if state in (State.NO_CHANGE, State.MAYBE):
            hits = [q for q in parts if q["state"] in ("degradation", "optimization")]
            if hits:
                signs = {q["state"] for q in hits}
                state = State(str(hits[0]["state"])) if len(signs) == 1 else State.MAYBE
                kind = "localized"
        support.update(baseline_integral=ib, target_integral=it, intervals=parts)
        return Change(function, self.name, state, kind, rel, 1 - p if np.isfinite(p) else 0.0, "1-p", p, support)


@register_profile_detector
class LocalStatistics(PerFunctionProfileDetector):
    """Per-window Mann-Whitney tests over equal-width x windows of the common range, Holm-corrected.

    Parameters
    ----------
    windows : int, default 20
    alpha : float, default 0.01
        Family-wise level over the windows (Holm).
    min_effect : float, default 0.05
        Smallest relative change of the window medians counted as a change.
    min_window_points : int, default 3
    """

    name = "loc"
    description = "windowed Mann-Whitney (Holm) over the common x range; finds localized changes"
    min_points = 5

    def __init__(self, windows: int = 20, alpha: float = 0.01, min_effect: float = 0.05,
                 min_window_points: int = 3) -> None:
        self.windows = windows
        self.alpha = alpha
        self.min_effect = min_effect
        self.min_window_points = min_window_points

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        ov = _overlap(baseline, target)
        if ov is None:
            return self._nm(function, "the x ranges of baseline and target do not overlap")
        lo, hi = ov
        edges = np.linspace(lo, hi, self.windows + 1) if hi > lo else np.array([lo, hi])
        rows = []
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            last = i == edges.size - 2
            mb = (baseline.x >= a) & ((baseline.x <= b) if last else (baseline.x < b))
            mt = (target.x >= a) & ((target.x <= b) if last else (target.x < b))
            yb, yt = baseline.y[mb], target.y[mt]
            if yb.size < self.min_window_points or yt.size < self.min_window_points:
                continue
            p = float(stats.mannwhitneyu(yt, yb, alternative="two-sided").pvalue)
            med = float(np.median(yb))
            rel = (float(np.median(yt)) - med) / abs(med) if med else float("nan")
            rows.append({"x_from": float(a), "x_to": float(b), "rel": rel, "p_value": p if np.isfinite(p) else 1.0})
        if not rows:
            return self._nm(function, f"no window has {self.min_window_points} points on both sides")
        # Holm step-down adjusted p-values
        ps = np.array([r["p_value"] for r in rows])
        order = np.argsort(ps)
        m = ps.size
        adj = np.empty(m)
        adj[order] = np.minimum(1.0, np.maximum.accumulate(ps[order] * (m - np.arange(m))))
        for r, a in zip(rows, adj, strict=True):
            r["p_holm"] = float(a)
            r["changed"] = bool(a < self.alpha and np.isfinite(r["rel"]) and abs(r["rel"]) >= self.min_effect)
        changed = [r for r in rows if r["changed"]]
        pmin = float(adj.min())
        support = {"windows": rows, "alpha": self.alpha, "min_effect": self.min_effect}
        if not changed:
            state = State.MAYBE if pmin < self.alpha else State.NO_CHANGE
            mag = float(np.nanmean([r["rel"] for r in rows]))
            return Change(function, self.name, state, "", mag, 1 - pmin, "1-p (Holm)", pmin, support)
        signs = {np.sign(r["rel"]) for r in changed}
        mag = float(np.mean([r["rel"] for r in changed]))
        if len(signs) > 1:
            state = State.MAYBE
        else:
            state = State.DEGRADATION if mag > 0 else State.OPTIMIZATION
        kind = "localized" if len(changed) < 0.5 * len(rows) else "global"
        return Change(function, self.name, state, kind, mag, 1 - pmin, "1-p (Holm)", pmin, support)
