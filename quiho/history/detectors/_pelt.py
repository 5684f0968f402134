"""PELT with a robust L2 cost and an MBIC penalty scaled by a noise estimate from differences."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from quiho.history.detectors._base import Detector, register_detector

__all__ = ["PeltDetector", "pelt_l2", "lag_sigma", "long_run_sigma", "winsorise"]

_MAD = 1.4826  # MAD -> sd for Gaussian noise


def lag_sigma(y: np.ndarray, lag: int = 1) -> float:
    """Noise sd from lag-``lag`` differences: ``1.4826 MAD(y[t+lag] - y[t]) / sqrt(2)``.

    A level shift touches only ``lag`` of the differences per change, so the MAD ignores it.
    """
    d = y[lag:] - y[:-lag] if y.size > lag else np.zeros(0)
    if d.size == 0:
        return 0.0
    return float(_MAD * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


def long_run_sigma(y: np.ndarray, lag: int) -> tuple[float, float]:
    """Long-run noise sd and lag-1 autocorrelation, both from robust scales of differences.

    For AR(1) noise of marginal sd ``s`` and autocorrelation ``rho``, lag-``h`` differences have variance
    ``2 s^2 (1 - rho^h)``; so ``rho ~ 1 - (sigma_1 / sigma_h)^2`` for moderate ``h`` (``sigma_h`` =
    :func:`lag_sigma`), and the variance of a segment mean is governed by the long-run variance
    ``sigma_h^2 (1 + rho) / (1 - rho)``. Differences, not residuals from a fit, so level shifts do not
    inflate the estimate; ``rho`` is clipped to [0, 0.95]. Returns ``(sigma_long_run, rho)``.

    References
    ----------
    .. [1] M. Csörgő, L. Horváth, "Limit Theorems in Change-Point Analysis", Wiley 1997, sec. 4.
    """
    s1, sh = lag_sigma(y, 1), lag_sigma(y, lag)
    if sh <= 0:
        return s1, 0.0
    rho = float(min(max(1.0 - (s1 / sh) ** 2, 0.0), 0.95))
    return float(sh * np.sqrt((1 + rho) / (1 - rho))), rho


def winsorise(y: np.ndarray, width: int, sigma: float, c: float = 3.0) -> np.ndarray:
    """Clip ``y`` to ``c * sigma`` around its running median of ``width`` points (a Huber-type robust cost).

    The running median follows steps (its window is mostly on the new level from the first build on),
    so steps keep their height while a lone slow build weighs at most ``c`` sigma.

    References
    ----------
    .. [1] P. Fearnhead, G. Rigaill, "Changepoint detection in the presence of outliers", JASA 114, 2019.
    """
    from scipy.ndimage import median_filter

    if sigma <= 0 or y.size < 3:
        return y
    med = median_filter(y, size=max(3, width), mode="nearest")
    return med + np.clip(y - med, -c * sigma, c * sigma)


_KERNEL: list[Callable[[np.ndarray, float, int], np.ndarray]] = []


def pelt_l2(y: np.ndarray, pen: float, min_size: int) -> np.ndarray:
    """:func:`_pelt_l2` compiled with numba on first use (``quiho history`` does not pay numba's import otherwise)."""
    if not _KERNEL:
        from numba import njit

        _KERNEL.append(njit(cache=True, nogil=True)(_pelt_l2))
    return _KERNEL[0](np.ascontiguousarray(y, dtype=np.float64), float(pen), int(min_size))


def _pelt_l2(y: np.ndarray, pen: float, min_size: int) -> np.ndarray:  # pragma: no cover - compiled
    """Optimal partition of ``y`` under ``sum of squared errors + pen * changes``, segments >= ``min_size``.

    PELT: exact; linear time when changes keep coming, up to quadratic when they are rare (the pruning, with
    K = 0 for the L2 cost, keeps every start since the last change that could still begin the best segment).
    Returns the change indexes (first index of each new segment).

    References
    ----------
    .. [1] R. Killick, P. Fearnhead, I. A. Eckley, "Optimal detection of changepoints with a linear
       computational cost", JASA 107, 2012.
    """
    n = y.size
    c1 = np.zeros(n + 1)
    c2 = np.zeros(n + 1)
    mu = y.mean()
    for i in range(n):
        c1[i + 1] = c1[i] + (y[i] - mu)
        c2[i + 1] = c2[i] + (y[i] - mu) ** 2
    f = np.full(n + 1, np.inf)
    f[0] = -pen
    last = np.zeros(n + 1, np.int64)
    cand = np.empty(n + 1, np.int64)
    nc = 0
    for t in range(min_size, n + 1):
        s_new = t - min_size
        if f[s_new] < np.inf:
            cand[nc] = s_new
            nc += 1
        best = np.inf
        arg = 0
        for j in range(nc):
            s = cand[j]
            d = c1[t] - c1[s]
            v = f[s] + (c2[t] - c2[s]) - d * d / (t - s) + pen
            if v < best:
                best = v
                arg = s
        f[t] = best
        last[t] = arg
        k = 0
        for j in range(nc):
            s = cand[j]
            d = c1[t] - c1[s]
            if f[s] + (c2[t] - c2[s]) - d * d / (t - s) <= best:
                cand[k] = s
                k += 1
        nc = k
    out = []
    t = n
    while t > 0:
        t = last[t]
        if t > 0:
            out.append(t)
    res = np.empty(len(out), np.int64)
    for i in range(len(out)):
        res[i] = out[len(out) - 1 - i]
    return res


@register_detector
class PeltDetector(Detector):
    """PELT on winsorised values with the MBIC penalty ``penalty_factor * sigma^2 * ln n``.

    The cost is the squared error of each segment around its mean, after each value is clipped to
    3 sigma around a running median of ``2 min_size + 1`` builds (:func:`winsorise`: a lone slow build
    cannot pay for two changes). The penalty is the leading term of Zhang and Siegmund's modified BIC,
    ``3 ln n`` per change in units of the noise variance. sigma comes from differences, which a level
    shift barely touches: ``scale="diff"`` is :func:`lag_sigma` at lag 1 (independent noise);
    ``scale="long-run"`` is :func:`long_run_sigma` at lag ``min_size`` (serially dependent noise: the
    penalty grows with the long-run variance a wandering history has). p-values are the search-adjusted
    CUSUM tests of the two adjacent segments (:func:`quiho.history.detectors._base.split_p`).

    Parameters
    ----------
    penalty_factor : float, default 3.0
        Penalty per change in units of ``sigma^2 ln n`` (3 = MBIC, 2 = BIC for a mean and a location).
    scale : {"diff", "long-run"}, default "diff"
        Noise scale estimate.

    References
    ----------
    .. [1] R. Killick, P. Fearnhead, I. A. Eckley, JASA 107, 2012 (PELT).
    .. [2] N. R. Zhang, D. O. Siegmund, "A modified Bayes information criterion with applications to the
       analysis of comparative genomic hybridization data", Biometrics 63, 2007 (MBIC).
    .. [3] P. Fearnhead, G. Rigaill, JASA 114, 2019 (robust costs).
    """

    name = "pelt"

    def __init__(self, *, penalty_factor: float = 3.0, scale: str = "diff", min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.penalty_factor = penalty_factor
        self.scale = scale

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        from quiho.errors import UsageError

        if self.scale == "diff":
            sigma, self.rho_ = lag_sigma(y, 1), 0.0
        elif self.scale == "long-run":
            sigma, self.rho_ = long_run_sigma(y, self.min_size)
        else:
            raise UsageError(f"pelt: scale must be 'diff' or 'long-run', got {self.scale!r}")
        self.sigma_ = sigma
        z = winsorise(y, 2 * self.min_size + 1, lag_sigma(y, 1))
        n = y.size
        pen = self.penalty_factor * sigma**2 * np.log(n)
        # noise-free input: sigma 0; a tiny positive penalty still prefers no change over a useless one
        pen = max(pen, 1e-10 * max(1.0, float(np.mean((y - y.mean()) ** 2))) * n)
        return [(int(b), float("nan")) for b in pelt_l2(z, pen, self.min_size)]
