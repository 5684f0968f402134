"""Regressogram and moving averages (SMA, SMM, EMA), with the unit and bin rules done right.

Differences from Perun's non-parametric models:

* The regressogram's numpy rule (``doane``, ``fd``, ``sturges`` ...) gives bin **edges** through
  :func:`numpy.histogram_bin_edges`; the bucket count is ``len(edges) - 1``. Perun used the rule's bin *width*
  as the bucket *count*, which made the count depend on the x units.
* Empty buckets are NaN (skipped when evaluating), not 0.
* Moving-average windows are counted in **points** (of the x-sorted data), never in x units. The default window
  is the odd number nearest to ``sqrt(n)``; Perun searched for the largest window with R² ≥ 0.88, which often
  ends at window 1, i.e. the model is the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from quiho.errors import ModelError

__all__ = ["CurveFit", "regressogram", "moving_average", "r_squared"]

BIN_RULES = ("auto", "doane", "fd", "rice", "scott", "sqrt", "sturges", "stone")


@dataclass(frozen=True)
class CurveFit:
    """A non-parametric model: a curve given at knots, evaluated by interpolation.

    Attributes
    ----------
    kind : str
        ``regressogram``, ``sma``, ``smm``, ``ema`` or ``kernel``.
    knots_x, knots_y : ndarray
        The curve. For a regressogram ``knots_x`` are the bin edges (len = bins + 1) and ``knots_y`` the
        per-bin statistic (NaN for empty bins); otherwise the curve passes through ``(knots_x, knots_y)``.
    r2 : float
        Coefficient of determination of the curve at the data points.
    n : int
        Number of data points.
    params : dict
        Settings used (bins, rule, window, bandwidth, ...), plus any approximation error estimate.
    """

    kind: str
    knots_x: NDArray[np.float64]
    knots_y: NDArray[np.float64]
    r2: float
    n: int
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def x_start(self) -> float:
        return float(self.knots_x[0]) if self.knots_x.size else float("nan")

    @property
    def x_end(self) -> float:
        return float(self.knots_x[-1]) if self.knots_x.size else float("nan")

    def predict(self, x: ArrayLike) -> NDArray[np.float64]:
        """Evaluate the curve; outside the fitted range the end values are held, empty bins give NaN."""
        xv = np.asarray(x, dtype=float)
        if self.kind == "regressogram":
            idx = np.clip(np.searchsorted(self.knots_x, xv, side="right") - 1, 0, self.knots_y.size - 1)
            return np.asarray(self.knots_y[idx], dtype=float)
        ok = np.isfinite(self.knots_y)
        if not ok.any():
            return np.full(xv.shape, np.nan)
        return np.interp(xv, self.knots_x[ok], self.knots_y[ok])


def r_squared(y: NDArray[np.float64], yhat: NDArray[np.float64]) -> float:
    """R² of ``yhat`` for ``y`` over the points where ``yhat`` is finite."""
    ok = np.isfinite(yhat)
    if ok.sum() < 2:
        return float("nan")
    r = y[ok] - yhat[ok]
    tss = float(((y[ok] - y[ok].mean()) ** 2).sum())
    sse = float(r @ r)
    return 1.0 - sse / tss if tss > 0 else (1.0 if sse == 0 else 0.0)


def _check(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    xv = np.asarray(x, dtype=float).ravel()
    yv = np.asarray(y, dtype=float).ravel()
    if xv.shape != yv.shape:
        raise ModelError(f"x and y differ in length ({xv.size} vs {yv.size})")
    if xv.size == 0:
        raise ModelError("no data points (empty function?)")
    if not (np.all(np.isfinite(xv)) and np.all(np.isfinite(yv))):
        raise ModelError("x and y must be finite (drop NaN/inf before fitting)")
    return xv, yv


def regressogram(
    x: ArrayLike, y: ArrayLike, bins: int | str = "doane", statistic: Literal["mean", "median"] = "mean"
) -> CurveFit:
    """Piecewise-constant estimate: the mean (or median) of y in each x bin.

    Parameters
    ----------
    x, y : array_like, shape (n,)
    bins : int or str, default "doane"
        Number of equal-width bins, or a numpy rule name (auto, doane, fd, rice, scott, sqrt, sturges, stone)
        that yields the bin edges.
    statistic : {"mean", "median"}

    Returns
    -------
    CurveFit
        ``params`` holds ``bins`` (the count actually used), ``rule`` and ``empty_bins``.

    References
    ----------
    Doane, D. P. (1976). Aesthetic frequency classifications. The American Statistician 30(4).

    Examples
    --------
    >>> regressogram([0, 1, 2, 3], [1, 1, 5, 5], bins=2).knots_y.tolist()
    [1.0, 5.0]
    """
    xv, yv = _check(x, y)
    if isinstance(bins, str) and bins not in BIN_RULES:
        raise ModelError(f"unknown bin rule {bins!r}; choose from {', '.join(BIN_RULES)} or give a number")
    if isinstance(bins, int) and bins < 1:
        raise ModelError(f"bin count must be >= 1, got {bins}")
    if xv.min() == xv.max():
        edges = np.array([xv.min(), xv.max()])
    else:
        edges = np.histogram_bin_edges(xv, bins=bins)
    nb = edges.size - 1
    idx = np.clip(np.searchsorted(edges, xv, side="right") - 1, 0, nb - 1)
    counts = np.bincount(idx, minlength=nb)
    if statistic == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            stat = np.bincount(idx, weights=yv, minlength=nb) / counts
    elif statistic == "median":
        s = pd.Series(yv).groupby(idx).median()
        stat = np.full(nb, np.nan)
        stat[s.index.to_numpy()] = s.to_numpy()
    else:
        raise ModelError(f"unknown statistic {statistic!r}; choose mean or median")
    stat = np.where(counts > 0, stat, np.nan)
    r2 = r_squared(yv, stat[idx])
    return CurveFit(
        "regressogram", edges.astype(float), stat.astype(float), r2, int(xv.size),
        {"bins": nb, "rule": bins if isinstance(bins, str) else "user", "statistic": statistic,
         "empty_bins": int((counts == 0).sum())},
    )


def moving_average(
    x: ArrayLike,
    y: ArrayLike,
    method: Literal["sma", "smm", "ema"] = "sma",
    window: int | None = None,
    min_periods: int | None = 1,
    center: bool = True,
    decay: tuple[str, float] | None = None,
) -> CurveFit:
    """Simple moving average or median, or exponential moving average, over the x-sorted points.

    Parameters
    ----------
    x, y : array_like, shape (n,)
    method : {"sma", "smm", "ema"}, default "sma"
    window : int, optional
        Window length in **points**; default the odd number nearest ``sqrt(n)`` (at least 1).
    min_periods : int or None, default 1
        Fewest points a window needs to produce a value (None = the full window).
    center : bool, default True
        Centre the window on each point (SMA/SMM).
    decay : (str, float), optional
        For EMA: one of ("alpha", a), ("span", s), ("com", c), ("halflife", h). Default ("span", window).

    Returns
    -------
    CurveFit
        Through the smoothed value at each distinct x (duplicates averaged).

    Examples
    --------
    >>> moving_average([0, 1, 2], [0, 3, 6], window=3).knots_y.tolist()
    [1.5, 3.0, 4.5]
    """
    xv, yv = _check(x, y)
    n = xv.size
    if window is None:
        window = max(1, int(round(np.sqrt(n))) | 1)
    if window < 1:
        raise ModelError(f"window must be >= 1 point, got {window}")
    order = np.argsort(xv, kind="stable")
    xs, ys = xv[order], pd.Series(yv[order])
    if method in ("sma", "smm"):
        roll = ys.rolling(window, min_periods=min_periods, center=center)
        sm = (roll.mean() if method == "sma" else roll.median()).to_numpy(dtype=float)
        params: dict[str, Any] = {"window": window, "min_periods": min_periods, "center": center}
    elif method == "ema":
        name, val = decay or ("span", float(max(window, 1)))
        if name not in ("alpha", "span", "com", "halflife"):
            raise ModelError(f"unknown EMA decay {name!r}; use alpha, span, com or halflife")
        sm = ys.ewm(**{name: val}, min_periods=min_periods or 0).mean().to_numpy(dtype=float)
        params = {"decay": name, "value": val, "min_periods": min_periods}
    else:
        raise ModelError(f"unknown moving-average method {method!r}; choose sma, smm or ema")
    r2 = r_squared(ys.to_numpy(), sm)
    ux, inv = np.unique(xs, return_inverse=True)
    ok = np.isfinite(sm)
    with np.errstate(invalid="ignore", divide="ignore"):
        uy = np.bincount(inv[ok], weights=sm[ok], minlength=ux.size) / np.bincount(inv[ok], minlength=ux.size)
    return CurveFit(method, ux, uy, r2, n, params)
