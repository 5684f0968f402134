"""Perun's model-level detectors done right (AAT, BMOE, FAST) and a rank test (Mann-Whitney).

Differences from Perun's own implementation of these checks:

* **aat**: Perun's ratio thresholds (2.0 / 0.5) are kept as defaults, but a ratio beyond them only counts
  when Welch's t-test on the two means agrees (p < ``alpha``); otherwise the verdict is ``maybe``.
* **bmoe**: best models chosen by BIC from fits done in y space (Perun compared log-space and linear-space
  R²); the R² gate (0.9) is kept and reported; below it the verdict is ``not-meaningful``.
* **fast**: the error profile (target model − baseline model) is evaluated on a common x grid over the
  overlap of both ranges (Perun truncated curves of unequal length) and classified by the best-fitting shape
  on that grid. It has no noise model; thresholds on the relative change are its only gate.
* **mwu**: Mann-Whitney U on raw amounts ignoring x, with the rank-biserial correlation as effect size and
  the Hodges-Lehmann shift relative to the baseline median as magnitude.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho._stats import welch_p
from quiho.detect._base import Change, PerFunctionProfileDetector, Samples, State, classify, register_profile_detector
from quiho.models import FAMILIES, fit_family, fit_parametric

__all__ = ["AverageAmountThreshold", "BestModelOrderEquality", "FastCheck", "MannWhitney"]


@register_profile_detector
class AverageAmountThreshold(PerFunctionProfileDetector):
    """Ratio of mean amounts with Perun's thresholds, confirmed by Welch's t-test.

    Parameters
    ----------
    degradation_ratio : float, default 2.0
        Target/baseline mean ratio at or above which a significant change is a degradation (Perun's value).
    optimization_ratio : float, default 0.5
        Ratio at or below which a significant change is an optimization (Perun's value).
    alpha : float, default 0.01
    """

    name = "aat"
    description = "mean ratio vs thresholds (2.0/0.5) + Welch t-test"

    def __init__(self, degradation_ratio: float = 2.0, optimization_ratio: float = 0.5, alpha: float = 0.01) -> None:
        self.degradation_ratio = degradation_ratio
        self.optimization_ratio = optimization_ratio
        self.alpha = alpha

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        mb, mt = float(baseline.y.mean()), float(target.y.mean())
        p = welch_p(target.y, baseline.y)
        support = {"baseline_mean": mb, "target_mean": mt, "degradation_ratio": self.degradation_ratio,
                   "optimization_ratio": self.optimization_ratio, "alpha": self.alpha}
        if mb <= 0:
            return self._nm(function, f"baseline mean {mb:g} is not positive: a ratio is not meaningful")
        ratio = mt / mb
        support["ratio"] = ratio
        beyond = ratio >= self.degradation_ratio or ratio <= self.optimization_ratio
        sig = p < self.alpha
        if beyond and sig:
            state = State.DEGRADATION if ratio > 1 else State.OPTIMIZATION
        elif beyond or sig:
            state = State.MAYBE
        else:
            state = State.NO_CHANGE
        kind = "mean-ratio" if state != State.NO_CHANGE else ""
        return Change(function, self.name, state, kind, ratio - 1.0, 1.0 - p, "1-p", p, support)


@register_profile_detector
class BestModelOrderEquality(PerFunctionProfileDetector):
    """Compare the best parametric families (BIC) in Perun's complexity order.

    Parameters
    ----------
    min_r2 : float, default 0.9
        Both best models must explain at least this share of variance (Perun's gate).
    """

    name = "bmoe"
    description = "best model family (BIC) moved up/down the complexity order"

    def __init__(self, min_r2: float = 0.9) -> None:
        self.min_r2 = min_r2

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        fb, ft = fit_parametric(baseline.x, baseline.y).best, fit_parametric(target.x, target.y).best
        if fb is None or ft is None:
            return self._nm(function, "no parametric model could be fitted")
        r2 = min(fb.r2, ft.r2)
        mag = float(target.y.mean() / baseline.y.mean() - 1) if baseline.y.mean() != 0 else float("nan")
        support = {"baseline_model": fb.formula(), "target_model": ft.formula(), "baseline_r2": fb.r2,
                   "target_r2": ft.r2, "min_r2": self.min_r2}
        if r2 < self.min_r2:
            return Change(function, self.name, State.NOT_MEANINGFUL, "", mag, max(r2, 0.0), "min R2", None,
                          {**support, "reason": f"min R² {r2:.3f} < {self.min_r2}: models do not describe the data"})
        step = FAMILIES.index(ft.family) - FAMILIES.index(fb.family)
        if step == 0:
            state = State.NO_CHANGE
        else:
            state = State.DEGRADATION if step > 0 else State.OPTIMIZATION
        kind = f"{fb.family}->{ft.family}" if step else ""
        return Change(function, self.name, state, kind, mag, r2, "min R2", None, {**support, "order_step": step})


def _shape_of(xg: np.ndarray, e: np.ndarray) -> str:
    """Simplest family whose fit to a noise-free error curve leaves < 1 % of its variance (else best R²)."""
    if np.ptp(e) <= 1e-9 * max(float(np.abs(e).max()), 1e-300):
        return "constant"
    best, best_r2 = "other", -np.inf
    for fam in ("linear", "logarithmic", "quadratic", "exponential", "power"):
        f = fit_family(xg, e, fam)
        if f.meaningful and f.r2 >= 0.99:
            return fam
        if f.meaningful and f.r2 > best_r2:
            best, best_r2 = fam, f.r2
    return best


@register_profile_detector
class FastCheck(PerFunctionProfileDetector):
    """Error profile of the best models (target − baseline) on a common grid, classified by shape.

    Parameters
    ----------
    maybe_rel : float, default 0.05
        Relative mean change from which the verdict is at least ``maybe``.
    change_rel : float, default 0.10
        Relative mean change from which it is a degradation/optimization.
    grid : int, default 512
    """

    name = "fast"
    description = "error profile of best models on a common grid; relative thresholds 5 %/10 %"

    def __init__(self, maybe_rel: float = 0.05, change_rel: float = 0.10, grid: int = 512) -> None:
        self.maybe_rel = maybe_rel
        self.change_rel = change_rel
        self.grid = grid

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        fb, ft = fit_parametric(baseline.x, baseline.y).best, fit_parametric(target.x, target.y).best
        if fb is None or ft is None:
            return self._nm(function, "no parametric model could be fitted")
        lo, hi = max(baseline.x.min(), target.x.min()), min(baseline.x.max(), target.x.max())
        if hi < lo:
            return self._nm(function, "the x ranges of baseline and target do not overlap")
        xg = np.linspace(lo, hi, self.grid) if hi > lo else np.array([lo])
        mb = fb.predict(xg)
        e = ft.predict(xg) - mb
        base = float(np.mean(mb))
        mag = float(np.mean(e) / abs(base)) if base != 0 else float("nan")
        a = abs(mag)
        state = classify(a >= self.maybe_rel, mag, self.change_rel)
        kind = _shape_of(xg, e) if state in (State.DEGRADATION, State.OPTIMIZATION, State.MAYBE) else ""
        r2 = min(fb.r2, ft.r2)
        support = {"baseline_model": fb.formula(), "target_model": ft.formula(), "x_range": [float(lo), float(hi)],
                   "maybe_rel": self.maybe_rel, "change_rel": self.change_rel}
        return Change(function, self.name, state, kind, mag, max(r2, 0.0), "min R2", None, support)


def _hodges_lehmann(t: np.ndarray, b: np.ndarray, limit: int = 1500) -> float:
    if t.size > limit:
        t = np.sort(t)[np.linspace(0, t.size - 1, limit).astype(np.int64)]
    if b.size > limit:
        b = np.sort(b)[np.linspace(0, b.size - 1, limit).astype(np.int64)]
    return float(np.median(np.subtract.outer(t, b)))


@register_profile_detector
class MannWhitney(PerFunctionProfileDetector):
    """Mann-Whitney U test on raw amounts (x ignored), with effect sizes.

    Parameters
    ----------
    alpha : float, default 0.01
    maybe_alpha : float, default 0.05
    min_effect : float, default 0.03
        Smallest Hodges-Lehmann shift, relative to the baseline median, reported as a change.

    References
    ----------
    Mann, H. B., Whitney, D. R. (1947). Kerby, D. S. (2014), the simple difference formula (rank-biserial).
    Hodges, J. L., Lehmann, E. L. (1963).
    """

    name = "mwu"
    description = "Mann-Whitney U on raw amounts; Hodges-Lehmann shift; rank-biserial effect"

    def __init__(self, alpha: float = 0.01, maybe_alpha: float = 0.05, min_effect: float = 0.03) -> None:
        self.alpha = alpha
        self.maybe_alpha = maybe_alpha
        self.min_effect = min_effect

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        t, b = target.y, baseline.y
        res = stats.mannwhitneyu(t, b, alternative="two-sided")
        p = float(res.pvalue) if np.isfinite(res.pvalue) else 1.0
        rbc = float(2 * res.statistic / (t.size * b.size) - 1)
        med = float(np.median(b))
        shift = _hodges_lehmann(t, b)
        mag = shift / abs(med) if med != 0 else float("nan")
        state = classify(p < self.alpha, mag, self.min_effect, maybe=p < self.maybe_alpha)
        support = {"U": float(res.statistic), "rank_biserial": rbc, "hodges_lehmann_shift": shift,
                   "baseline_median": med, "target_median": float(np.median(t)), "alpha": self.alpha,
                   "min_effect": self.min_effect}
        kind = "distribution" if state in (State.DEGRADATION, State.OPTIMIZATION, State.MAYBE) else ""
        return Change(function, self.name, state, kind, mag, 1.0 - p, "1-p", p, support)
