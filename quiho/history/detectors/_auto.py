"""The default detector: rank-based binary segmentation that tells steps from drift."""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho.errors import UsageError
from quiho.history.detectors._base import Detector, register_detector

__all__ = ["AutoDetector", "AutoAR1Detector", "pettitt", "step_vs_trend_p", "short_range_rho", "differences_rho",
           "variogram_rho"]

RHO_FROM = ("running-median", "differences", "variogram")
TREND_ON = ("ranks", "values")
TREND_SCALES = ("residuals", "differences")


def _check(where: str, name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"{where}: {name} must be {', '.join(repr(a) for a in allowed)}, got {value!r}")


def short_range_rho(y: np.ndarray, width: int) -> float:
    """Lag-1 autocorrelation of the ranks of ``y`` around their running median, clipped to [0, 0.95].

    The running median (``width`` points) follows steps and slow trends, so
    what is left is the short-range dependence of the noise: about 0 for
    independent repetitions, large for a series that wanders like an AR(1)
    or random walk (economic and environmental series, a benchmark whose
    machine state drifts between runs). Negative values (over-differencing)
    count as 0: they would only make the tests bolder.

    References
    ----------
    .. [1] J. W. Tukey, "Exploratory Data Analysis", 1977 (running medians).
    """
    from scipy.ndimage import median_filter

    if y.size < 3:
        return 0.0
    r = stats.rankdata(y)
    e = r - median_filter(r, size=max(3, width), mode="nearest")
    e = e - e.mean()
    d = float(e @ e)
    if d <= 0:
        return 0.0
    return float(min(max(float(e[1:] @ e[:-1]) / d, 0.0), 0.95))


def pettitt(y: np.ndarray, min_size: int = 1, inflation: float = 1.0) -> tuple[int, float]:
    """Pettitt's rank test for one change in location.

    Returns the split ``k`` (first index of the second part, ``min_size <= k <=
    n - min_size``) maximising ``|U_k| / sqrt(k (n - k))`` (unweighted ``|U_k|``
    pulls the location towards the middle) and the approximate p-value
    ``min(1, 2 exp(-6 K^2 / (inflation (n^3 + n^2))))``, which already accounts for the
    search over ``k``. Ties get average ranks, so a constant series has p = 1.
    ``inflation`` is the long-run variance factor of dependent noise
    (``(1 + rho) / (1 - rho)`` for AR(1)); 1 for independent values.

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
    p = min(1.0, 2.0 * float(np.exp(-6.0 * big_k**2 / (inflation * (n**3 + n**2)))))
    # locate with the variance-standardised statistic: |U_k| favours the middle
    j = int(np.argmax(np.where(ok, np.abs(u) / np.sqrt(ks * (n - ks)), -1.0)))
    return int(ks[j]), p


def step_vs_trend_p(y: np.ndarray, k: int, inflation: float = 1.0, degree: int = 1, on: str = "ranks",
                    width: int = 11, scale: str = "residuals") -> float:
    """p-value of a step at ``k`` in a regression that also has a polynomial trend.

    Fits ``z ~ 1 + P_1(t) + ... + P_degree(t) + [t >= k]`` (Legendre
    polynomials on the segment) by least squares and returns the two-sided
    t-test p-value of the step coefficient. A slow drift is absorbed by the
    trend (p large); a step stays significant. Exact: 0 for a noise-free step,
    1 for a noise-free line. ``inflation`` multiplies the variance of the step
    estimate for dependent noise (see :func:`pettitt`).

    ``on="ranks"``: ``z`` is ``rank(y)``. ``degree=3`` also absorbs the S shape
    a linear drift takes in ranks (the ranks of a drifting series are its
    empirical distribution function, flat where the drift is within the noise
    of the ends). ``on="values"``: ``z`` is ``y`` winsorised at 3 sigma around
    its running median of ``width`` points (:func:`quiho.history.detectors._pelt.winsorise`,
    sigma from lag-1 differences), because the trend model is linear in values
    while clipping keeps the rank test's indifference to spikes and outliers.

    ``scale="residuals"``: the noise variance is the regression's residual
    variance. ``scale="differences"``: it is ``gamma_1 / (1 - rho)``, with
    ``gamma_1`` the lag-1 semivariogram of ``z`` (:func:`quiho.history.detectors._pelt.lag_sigma`
    squared: a MAD scale of lag-1 differences) and ``rho = (inflation - 1) /
    (inflation + 1)`` the AR(1) coefficient the inflation came from; for AR(1)
    noise ``gamma_1 = s^2 (1 - rho)``, so this estimates the marginal variance
    ``s^2``. Reason: another step in the segment is left in the residual and
    widens it, but moves only one lag-1 difference, which a MAD ignores. If
    half the differences are equal (quantised values: the MAD is 0) the
    residual variance is used.

    References
    ----------
    .. [1] J. Rice, "Bandwidth choice for nonparametric regression", Annals of
       Statistics 12, 1984 (noise variance from first differences).
    .. [2] P. Hall, J. W. Kay, D. M. Titterington, "Asymptotically optimal
       difference-based estimation of variance in nonparametric regression",
       Biometrika 77, 1990.
    """
    from quiho.history.detectors._pelt import lag_sigma, winsorise

    _check("step_vs_trend_p", "on", on, TREND_ON)
    _check("step_vs_trend_p", "scale", scale, TREND_SCALES)
    n = y.size
    if on == "ranks":
        z = stats.rankdata(y)
        spread = float(n)  # the scale of ranks
    else:
        z = winsorise(np.asarray(y, dtype=float), width, lag_sigma(y, 1))
        spread = float(np.ptp(z)) if n else 0.0
    u = 2 * np.arange(n, dtype=float) / max(n - 1, 1) - 1
    x = np.column_stack([np.polynomial.legendre.legvander(u, degree), (np.arange(n) >= k).astype(float)])
    j = degree + 1  # column of the step
    beta, *_ = np.linalg.lstsq(x, z, rcond=None)
    resid = z - x @ beta
    dof = n - degree - 2
    if dof <= 0 or spread <= 0:  # a constant segment has no step
        return 1.0
    s2 = float(resid @ resid) / dof
    if scale == "differences":
        gamma1 = lag_sigma(z, 1) ** 2
        if gamma1 > 0:  # 0: quantised values (see the docstring), keep the residual variance
            rho = (inflation - 1) / (inflation + 1)
            s2 = gamma1 / (1 - rho)
    cov = np.linalg.pinv(x.T @ x)
    se = np.sqrt(max(s2 * cov[j, j] * inflation, 0.0))
    if se <= 1e-9 * spread:  # noise-free, relative to the data's scale (values may be nanoseconds or hours)
        return 0.0 if abs(beta[j]) > 1e-6 * spread / max(n, 1) else 1.0
    return float(2 * stats.t.sf(abs(beta[j]) / se, dof))


def differences_rho(y: np.ndarray, lag: int) -> float:
    """Lag-1 autocorrelation of the ranks of ``y`` from robust scales of their differences, in [0, 0.95].

    For AR(1) noise, lag-``h`` differences have variance ``2 s^2 (1 - rho^h)``, so
    ``rho ~ 1 - (sigma_1 / sigma_h)^2`` (MAD scales, centred: a slow drift shifts the
    differences' median, not their spread; a step touches ``h`` of them). Unlike
    :func:`short_range_rho` nothing is fitted first, so a wander slower than the
    running median's window is not mistaken for level.
    """
    from quiho.history.detectors._pelt import long_run_sigma

    if y.size <= lag + 1:
        return 0.0
    return long_run_sigma(stats.rankdata(y), lag)[1]


def variogram_rho(y: np.ndarray) -> float:
    """Lag-1 autocorrelation of the ranks of ``y`` from their variogram at lags 1 and 2, in [0, 0.95].

    For Gaussian AR(1) noise, lag-``h`` differences have variance ``2 s^2 (1 - rho^h)``,
    so ``var(d_2) / var(d_1) = 1 + rho`` and ``rho = (sigma_2 / sigma_1)^2 - 1`` (MAD
    scales of centred differences, :func:`quiho.history.detectors._pelt.lag_sigma`). Only
    one lag-1 and two lag-2 differences straddle a step, so steps barely move
    either scale (unlike the lag-``h`` differences of :func:`differences_rho`).
    The ranks enter as normal scores ``Phi^-1(rank / (n + 1))``: rank differences
    of a wandering series are a scale mixture whose MAD ratio reads high (about
    0.9 for rho 0.7), while normal scores of any monotone transform of a Gaussian
    AR(1) are that AR(1) again.

    References
    ----------
    .. [1] G. Matheron, "Principles of geostatistics", Economic Geology 58, 1963 (the variogram).
    """
    from quiho.history.detectors._pelt import lag_sigma

    if y.size < 4:
        return 0.0
    z = stats.norm.ppf(stats.rankdata(y) / (y.size + 1))  # normal scores: see the docstring
    s1, s2 = lag_sigma(z, 1), lag_sigma(z, 2)
    if s1 <= 0:
        return 0.0
    return float(min(max((s2 / s1) ** 2 - 1.0, 0.0), 0.95))


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

    Both tests assume independent noise, and by default the detector does
    too (``dependence=False``): the AR(1) correction below raised the score on
    the series it was designed on and lowered it on annotated series nobody
    had seen (docs/history-protocol.md, "The held-out stage").
    ``dependence=True`` (registered as ``auto-ar1``, :class:`AutoAR1Detector`)
    is for histories that wander, where a value depends on the one before
    (AR-like noise) and the tests see a "change" at every excursion: it
    estimates the short-range autocorrelation ``rho`` of the whole series once
    (:func:`short_range_rho`, ranks around a running median of
    ``2 min_size + 1`` points, which follows steps) and inflates both test
    variances by the AR(1) long-run factor ``(1 + rho) / (1 - rho)``. With
    independent noise ``rho`` is about 0 and nothing changes. It is the
    standard correction for serial dependence in change-point tests, not a
    threshold: alpha and min_size are untouched. With ``dependence=True``,
    ``rho_from="differences"`` estimates rho from rank
    differences instead (:func:`differences_rho`), ``rho_from="variogram"``
    from the rank variogram at lags 1 and 2 (:func:`variogram_rho`, which a
    step barely moves). ``trend_degree`` is the degree of the trend of the
    step-versus-trend check (3 absorbs the S shape a linear drift has in
    ranks); ``trend_on="values"`` runs that check on values winsorised around
    a running median instead of ranks (a linear drift is linear in values, not
    in ranks; see :func:`step_vs_trend_p`). ``trend_scale="differences"``
    takes that check's noise scale from lag-1 differences instead of the
    regression residual (a second step in the segment widens the residual,
    not the differences), with ``rho`` turning the differences' scale into the
    noise's marginal one.

    References
    ----------
    .. [1] A. N. Pettitt, Applied Statistics 28(2), 1979.
    .. [2] A. J. Scott, M. Knott, Biometrics 30, 1974 (binary segmentation).
    .. [3] W. J. Conover, R. L. Iman, "Rank transformations as a bridge between
       parametric and nonparametric statistics", Am. Stat. 35, 1981.
    .. [4] M. Csörgő, L. Horváth, "Limit Theorems in Change-Point Analysis",
       Wiley 1997, sec. 4 (change-point tests under dependence: long-run variance).
    """

    name = "auto"

    def __init__(self, *, dependence: bool = False, rho_from: str = "running-median", trend_degree: int = 1,
                 trend_on: str = "ranks", trend_scale: str = "residuals", min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        """Keep the settings, many parameters because each is a measured variant (sklearn-style keywords)."""
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.dependence = dependence
        self.rho_from = rho_from
        self.trend_degree = trend_degree
        self.trend_on = trend_on
        self.trend_scale = trend_scale

    def _rho(self, y: np.ndarray) -> float:
        width = 2 * self.min_size + 1
        if not self.dependence:
            return 0.0
        if self.rho_from == "running-median":
            return short_range_rho(y, width)
        if self.rho_from == "differences":
            return differences_rho(y, width)
        return variogram_rho(y)

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        for name, allowed in (("rho_from", RHO_FROM), ("trend_on", TREND_ON), ("trend_scale", TREND_SCALES)):
            _check("auto", name, getattr(self, name), allowed)
        found: list[tuple[int, float]] = []
        rho = self._rho(y)
        self.rho_ = rho
        infl = (1 + rho) / (1 - rho)
        todo = [(0, y.size)]
        while todo:
            lo, hi = todo.pop()
            seg = y[lo:hi]
            if seg.size < 2 * self.min_size:
                continue
            k, p1 = pettitt(seg, self.min_size, infl)
            if p1 > self.alpha:
                continue
            p2 = step_vs_trend_p(seg, k, infl, self.trend_degree, self.trend_on, 2 * self.min_size + 1,
                                 self.trend_scale)
            if p2 > self.alpha:
                continue
            before, after = float(seg[:k].mean()), float(seg[k:].mean())
            if self.magnitude_floor > 0 and before != 0 and abs(after - before) / abs(before) < self.magnitude_floor:
                continue
            found.append((lo + k, max(p1, p2)))
            todo.extend([(lo, lo + k), (lo + k, hi)])
        return found


@register_detector
class AutoAR1Detector(AutoDetector):
    """:class:`AutoDetector` with the AR(1) long-run variance correction on (``dependence=True``): ``auto-ar1``.

    For histories whose values wander (a machine state that drifts between builds): it raises fewer false alarms
    there and finds fewer small steps. It was the default until the held-out stage (docs/history-protocol.md).
    """

    name = "auto-ar1"

    def __init__(self, *, dependence: bool = True, rho_from: str = "running-median", trend_degree: int = 1,
                 trend_on: str = "ranks", trend_scale: str = "residuals", min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        """The same settings as :class:`AutoDetector`, ``dependence`` on by default.

        Many parameters because each is a measured variant (sklearn-style keywords).
        """
        super().__init__(dependence=dependence, rho_from=rho_from, trend_degree=trend_degree, trend_on=trend_on,
                         trend_scale=trend_scale, min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
