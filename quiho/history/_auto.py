"""The default detector: rank-based binary segmentation that tells steps from drift."""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho.history._base import Detector, register_detector

__all__ = ["AutoDetector", "pettitt", "step_vs_trend_p"]


def pettitt(y: np.ndarray, min_size: int = 1) -> tuple[int, float]:
    """Pettitt's rank test for one change in location.

    Returns the split ``k`` (first index of the second part, ``min_size <= k <=
    n - min_size``) maximising ``|U_k| / sqrt(k (n - k))`` (unweighted ``|U_k|``
    pulls the location towards the middle) and the approximate p-value
    ``min(1, 2 exp(-6 K^2 / (n^3 + n^2)))``, which already accounts for the
    search over ``k``. Ties get average ranks, so a constant series has p = 1.

    References
    ----------
    .. [1] A. N. Pettitt, "A non-parametric approach to the change-point
       problem", Applied Statistics 28(2), 1979.
    """
    n = y.size
    r = stats.rankdata(y)
    u = 2 * np.cumsum(r)[:-1] - np.arange(1, n) * (n + 1)  # U_k for k = 1..n-1
    ks = np.arange(1, n)
    ok = (ks >= min_size) & (ks <= n - min_size)
    if not ok.any():
        return 0, 1.0
    absu = np.where(ok, np.abs(u), -1.0)
    big_k = float(absu.max())
    p = min(1.0, 2.0 * float(np.exp(-6.0 * big_k**2 / (n**3 + n**2))))
    # locate with the variance-standardised statistic: |U_k| favours the middle
    j = int(np.argmax(np.where(ok, np.abs(u) / np.sqrt(ks * (n - ks)), -1.0)))
    return int(ks[j]), p


def step_vs_trend_p(y: np.ndarray, k: int) -> float:
    """p-value of a step at ``k`` in a regression on ranks that also has a linear trend.

    Fits ``rank(y) ~ 1 + t + [t >= k]`` by least squares and returns the
    two-sided t-test p-value of the step coefficient. A slow drift is absorbed
    by the trend (p large); a step stays significant. Exact: 0 for a
    noise-free step, 1 for a noise-free line.
    """
    n = y.size
    r = stats.rankdata(y)
    t = np.arange(n, dtype=float)
    x = np.column_stack([np.ones(n), (t - t.mean()) / n, (t >= k).astype(float)])
    beta, *_ = np.linalg.lstsq(x, r, rcond=None)
    resid = r - x @ beta
    dof = n - 3
    if dof <= 0:
        return 1.0
    s2 = float(resid @ resid) / dof
    cov = np.linalg.pinv(x.T @ x)
    se = np.sqrt(max(s2 * cov[2, 2], 0.0))
    if se <= 1e-9 * n:
        return 0.0 if abs(beta[2]) > 1e-6 else 1.0
    return float(2 * stats.t.sf(abs(beta[2]) / se, dof))


@register_detector
class AutoDetector(Detector):
    """Default: binary segmentation with Pettitt's test and a step-versus-trend check.

    Each segment is split at the Pettitt location if (a) Pettitt's p-value is
    at most ``alpha``, (b) a step at that location is significant on top of a
    linear trend (:func:`step_vs_trend_p`, so slow drift is not split), and
    (c) both sides hold ``min_size`` revisions; the reported p-value is the
    larger of (a) and (b). Ranks make it indifferent to monotone rescaling,
    outliers, heavy tails and bimodal banding (interleaved bands are just a
    noise distribution to a rank test), which is why it needs no tuning.

    References
    ----------
    .. [1] A. N. Pettitt, Applied Statistics 28(2), 1979.
    .. [2] A. J. Scott, M. Knott, Biometrics 30, 1974 (binary segmentation).
    .. [3] W. J. Conover, R. L. Iman, "Rank transformations as a bridge between
       parametric and nonparametric statistics", Am. Stat. 35, 1981.
    """

    name = "auto"

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        found: list[tuple[int, float]] = []
        todo = [(0, y.size)]
        while todo:
            lo, hi = todo.pop()
            seg = y[lo:hi]
            if seg.size < 2 * self.min_size:
                continue
            k, p1 = pettitt(seg, self.min_size)
            if p1 > self.alpha:
                continue
            p2 = step_vs_trend_p(seg, k)
            if p2 > self.alpha:
                continue
            before, after = float(seg[:k].mean()), float(seg[k:].mean())
            if self.magnitude_floor > 0 and before != 0 and abs(after - before) / abs(before) < self.magnitude_floor:
                continue
            found.append((lo + k, max(p1, p2)))
            todo.extend([(lo, lo + k), (lo + k, hi)])
        return found
