"""Common base and registry of change-point detectors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Self

import numpy as np
from scipy import stats

from quiho._stats import welch_p
from quiho.errors import HistoryError, UsageError
from quiho.history._model import ChangePoint, Detection, History

__all__ = ["Detector", "DETECTORS", "register_detector", "make_detector", "detect", "as_history", "welch_p", "split_p",
           "location_interval"]

#: name -> detector class; filled by :func:`register_detector` in each detector module.
DETECTORS: dict[str, type[Detector]] = {}


def register_detector(cls: type[Detector]) -> type[Detector]:
    """Class decorator adding a detector to :data:`DETECTORS` under ``cls.name``."""
    DETECTORS[cls.name] = cls
    return cls


def as_history(data: History | Sequence[float] | np.ndarray | Any) -> History:
    """Accept a :class:`History`, a 1-D array/list, or a pandas Series (index = revisions)."""
    if isinstance(data, History):
        return data
    index = getattr(data, "index", None)
    if callable(index):  # list.index, not a pandas index
        index = None
    values = np.asarray(data, dtype=float)
    if values.ndim != 1:
        raise HistoryError(f"a history is one-dimensional; got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise HistoryError("history values must be finite numbers")
    revisions = [str(r) for r in index] if index is not None else None
    return History.from_values(values, revisions)


def split_p(a: np.ndarray, b: np.ndarray) -> float:
    """Search-adjusted p-value that ``concat(a, b)`` holds one change in mean (at the split or elsewhere).

    The standardised CUSUM process ``C_k = sum_{i<=k} (x_i - mean) / (sigma sqrt(n))``
    of the joined segments tends to a Brownian bridge without a change, so
    ``P(max |C_k| >= c)`` is Kolmogorov's distribution; sigma is the pooled
    within-segment standard deviation. Unlike a t-test at the chosen split,
    this accounts for the split having been searched for (asymptotically).
    Exact 0 or 1 for noise-free segments.

    References
    ----------
    .. [1] M. Csörgő, L. Horváth, "Limit Theorems in Change-Point Analysis", Wiley 1997, ch. 1.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    x = np.concatenate([a, b])
    n = x.size
    dof = n - 2
    ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
    scale = max(float(np.abs(x).max()), 1.0)
    diff = abs(float(b.mean() - a.mean()))
    if dof <= 0 or ss <= (1e-12 * scale) ** 2 * n:
        return 0.0 if diff > 1e-9 * scale else 1.0
    sigma = np.sqrt(ss / dof)
    c = np.abs(np.cumsum(x - x.mean())[:-1]) / (sigma * np.sqrt(n))
    return float(stats.kstwobign.sf(c.max()))


def location_interval(y: np.ndarray, start: int, index: int, stop: int, level: float = 0.95) -> tuple[int, int]:
    """Where a change found at ``index`` in ``y[start:stop]`` may be: its ``level`` location interval (inclusive).

    Likelihood-ratio inversion: every split ``t`` of the two segments whose two-level sum of squares exceeds the
    best split's by at most ``c σ²`` (σ² the best fit's residual variance over its m − 2 degrees of freedom), with
    ``c = -2 ln(1 - √level)`` (7.35 at 95 %), the quantile of the limit of the likelihood ratio at the true break;
    ``index`` itself is always in. Assumes independent noise: under serial dependence it is too narrow.

    References
    ----------
    .. [1] B. E. Hansen, "Sample splitting and threshold estimation", Econometrica 68 (2000), 575-603.
    .. [2] Y. Eo, J. Morley, "Likelihood-ratio-based confidence sets for the timing of structural breaks",
       Quantitative Economics 6 (2015), 463-497.
    """
    x = np.asarray(y[start:stop], dtype=float)
    m = x.size
    if m < 3 or not start < index < stop:
        return index, index
    x = x - x.mean()
    scale = float(np.abs(x).max())
    if scale == 0:
        return index, index
    x = x / scale
    t = np.arange(1, m)
    s = np.cumsum(x)[:-1]  # x sums to 0, so the right segment's sum is -s
    sse = float((x ** 2).sum()) - s ** 2 / t - s ** 2 / (m - t)
    best = float(sse.min())
    tol = max(best / (m - 2), 0.0) * -2 * np.log(1 - np.sqrt(level)) + 1e-12 * m
    inside = start + t[sse - best <= tol]
    return int(min(inside.min(), index)), int(max(inside.max(), index))


class Detector:
    """Base of every change-point detector.

    Subclasses implement ``_locate(y)`` returning candidate change indexes (the
    first index of each new segment) with the detector's own p-value, or NaN
    to let the base compute a search-adjusted p-value for the two adjacent
    segments (:func:`split_p`). The base then enforces the minimum segment length, the
    magnitude floor and the significance level, dropping the weakest change
    and recomputing neighbouring segments until every change passes.

    Parameters
    ----------
    min_size : int, default 5
        Minimum number of revisions in a segment.
    magnitude_floor : float, default 0.0
        Smallest relative change ``|after - before| / |before|`` reported (0.02 = 2 %).
    alpha : float, default 0.01
        Largest p-value reported.
    random_state : int or None
        Seed for detectors with a stochastic part (the GMM); ignored by the others.
    """

    name: ClassVar[str] = ""

    def __init__(self, *, min_size: int = 5, magnitude_floor: float = 0.0, alpha: float = 0.01,
                 random_state: int | None = 0) -> None:
        self.min_size = min_size
        self.magnitude_floor = magnitude_floor
        self.alpha = alpha
        self.random_state = random_state

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, history: History | Sequence[float] | np.ndarray) -> Self:
        """Find the change points of ``history`` (a :class:`History` or 1-D values)."""
        if self.min_size < 1:
            raise UsageError(f"min_size must be >= 1, got {self.min_size}")
        if not 0 < self.alpha <= 1:
            raise UsageError(f"alpha must be in (0, 1], got {self.alpha}")
        h = as_history(history)
        y = h.values
        self.history_ = h
        self.n_ = y.size
        if y.size < 2 * self.min_size:
            self.change_points_: tuple[ChangePoint, ...] = ()
            self.meaningful_ = False
            self.reason_ = (f"not meaningful: {y.size} revisions cannot hold two segments of "
                            f"min_size={self.min_size}")
            return self
        cands = {int(i): float(p) for i, p in self._locate(y) if self.min_size <= i <= y.size - self.min_size}
        cps = self._filter(y, h.revisions, cands)
        self.change_points_ = tuple(cps)
        self.meaningful_ = True
        self.reason_ = ""
        return self

    def predict(self) -> Detection:
        """The :class:`Detection` of the last :meth:`fit`."""
        return Detection(self.history_.name, self.name, self.n_, self.change_points_, self.meaningful_, self.reason_)

    def _filter(self, y: np.ndarray, revisions: Sequence[str], cands: dict[int, float]) -> list[ChangePoint]:
        idx = sorted(cands)
        while True:
            # a segment shorter than min_size is a run of outliers, not a level: drop the changes around it
            bounds = [0, *idx, y.size]
            short = [k for k in range(1, len(bounds)) if bounds[k] - bounds[k - 1] < self.min_size]
            if short:
                k = short[0]
                drop = {bounds[k - 1], bounds[k]} - {0, y.size}
                idx = [i for i in idx if i not in drop]
                continue
            cps = []
            worst, worst_key = -1, (-1.0, 0.0)
            for k in range(1, len(bounds) - 1):
                a, b = y[bounds[k - 1]:bounds[k]], y[bounds[k]:bounds[k + 1]]
                before, after = float(a.mean()), float(b.mean())
                mag = (after - before) / abs(before) if before != 0 else float("nan")
                p = cands[bounds[k]]
                if not np.isfinite(p):
                    p = split_p(a, b)
                p = float(min(max(p, 0.0), 1.0)) if np.isfinite(p) else 1.0
                fails = p > self.alpha or (self.magnitude_floor > 0 and not abs(mag) >= self.magnitude_floor)
                if fails and (p, -abs(mag) if np.isfinite(mag) else 0.0) > worst_key:
                    worst, worst_key = k - 1, (p, -abs(mag) if np.isfinite(mag) else 0.0)
                cps.append(ChangePoint(bounds[k], revisions[bounds[k]], before, after, mag, p))
            if worst < 0:
                return [self._located(y, revisions, bounds, k, c) for k, c in enumerate(cps, start=1)]
            idx.pop(worst)

    @staticmethod
    def _located(y: np.ndarray, revisions: Sequence[str], bounds: list[int], k: int, c: ChangePoint) -> ChangePoint:
        lo, hi = location_interval(y, bounds[k - 1], bounds[k], bounds[k + 1])
        return replace(c, low=lo, high=hi, low_revision=revisions[lo], high_revision=revisions[hi])

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (sklearn style)."""
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {p: getattr(self, p) for p in names}


def make_detector(method: str = "auto", **params: Any) -> Detector:
    """Build a registered detector by name.

    Raises
    ------
    UsageError
        ``method`` is not in :data:`DETECTORS` or a parameter is unknown.
    """
    try:
        cls = DETECTORS[method]
    except KeyError:
        raise UsageError(f"unknown detector {method!r}; choose one of {', '.join(sorted(DETECTORS))}") from None
    try:
        return cls(**params)
    except TypeError as exc:
        raise UsageError(f"detector {method!r}: {exc}") from None


def detect(history: History | Sequence[float] | np.ndarray, method: str = "auto", **params: Any) -> Detection:
    """Run one detector on one history.

    Examples
    --------
    >>> from quiho.history import detect
    >>> d = detect([10.0] * 20 + [13.0] * 20)
    >>> [(c.index, round(c.magnitude, 2)) for c in d.change_points]
    [(20, 0.3)]
    """
    return make_detector(method, **params).fit(history).predict()

