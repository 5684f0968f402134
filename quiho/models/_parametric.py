"""Parametric models fitted fairly: least squares in the original y space for every family.

Perun fits power and exponential models by ordinary least squares on log-transformed data and then compares
their log-space R² with the linear-space R² of the other families. Here every family
minimises the same objective, the sum of squared errors of ``y`` itself, so R², AIC and BIC are comparable
across families and the best model is the one with the lowest BIC.

* constant ``b0``; linear ``b0 + b1·x``; quadratic ``b0 + b1·x + b2·x²``; logarithmic ``b0 + b1·ln x``
  (needs x > 0): linear least squares on a scaled x (for conditioning), coefficients mapped back.
* power ``b0·x^b1`` (needs x > 0) and exponential ``b0·exp(b1·x)``: variable projection. For a fixed
  exponent the scale ``b0`` has a closed form, so the exponent is found by a 1-D search (grid, then bounded
  Brent) of the residual sum of squares. Non-positive y are allowed (no log of y is taken).
  For more than 20 000 points the exponent is searched on an evenly strided 20 000-point subsample; ``b0`` and
  the fit statistics always use every point.

A family whose domain excludes the data (log or power with some x ≤ 0) is reported with
``meaningful=False`` and the reason, never silently fitted on a subset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar

from quiho._lstsq import one_blas_thread
from quiho.errors import ModelError

__all__ = ["FAMILIES", "ModelFit", "ParametricFits", "fit_family", "fit_parametric"]

#: Families in Perun's complexity order (used by best-model-order equality).
FAMILIES: tuple[str, ...] = ("constant", "logarithmic", "linear", "quadratic", "power", "exponential")
_N_PARAMS = {"constant": 1, "logarithmic": 2, "linear": 2, "quadratic": 3, "power": 2, "exponential": 2}
_SUBSAMPLE = 20_000


@dataclass(frozen=True)
class ModelFit:
    """One fitted parametric model and its fit quality.

    Attributes
    ----------
    family : str
        One of :data:`FAMILIES`.
    coeffs : tuple of float
        ``(b0, b1[, b2])`` in the formula of the family (see module docstring), in original x and y units.
    n : int
        Number of points used.
    r2 : float
        Coefficient of determination in y space (comparable across families); NaN if not meaningful.
    aic, bic : float
        Gaussian AIC and BIC, ``n·ln(SSE/n) + 2k`` and ``n·ln(SSE/n) + k·ln n``.
    sse : float
        Sum of squared errors.
    x_start, x_end : float
        Range of x the model was fitted on.
    meaningful : bool
        False when the family cannot be fitted to this data (reason in ``note``).
    """

    family: str
    coeffs: tuple[float, ...]
    n: int
    r2: float
    aic: float
    bic: float
    sse: float
    x_start: float
    x_end: float
    meaningful: bool = True
    note: str = ""

    @property
    def n_params(self) -> int:
        """Number of fitted parameters (k in AIC/BIC)."""
        return _N_PARAMS[self.family]

    def predict(self, x: ArrayLike) -> NDArray[np.float64]:
        """Evaluate the model at ``x`` (NaN everywhere if the fit is not meaningful)."""
        xv = np.asarray(x, dtype=float)
        if not self.meaningful:
            return np.full(xv.shape, np.nan)
        return _evaluate(self.family, self.coeffs, xv)

    def formula(self) -> str:
        """Human-readable formula with the fitted coefficients."""
        c = self.coeffs
        forms = {
            "constant": "{0:.6g}",
            "linear": "{0:.6g} + {1:.6g}·x",
            "quadratic": "{0:.6g} + {1:.6g}·x + {2:.6g}·x²",
            "logarithmic": "{0:.6g} + {1:.6g}·ln(x)",
            "power": "{0:.6g}·x^{1:.6g}",
            "exponential": "{0:.6g}·exp({1:.6g}·x)",
        }
        return forms[self.family].format(*c) if self.meaningful else f"not meaningful: {self.note}"


@dataclass(frozen=True)
class ParametricFits:
    """All parametric families fitted to one data set; ``best`` has the lowest BIC."""

    fits: tuple[ModelFit, ...]
    best: ModelFit | None = field(default=None)

    def __getitem__(self, family: str) -> ModelFit:
        for f in self.fits:
            if f.family == family:
                return f
        raise KeyError(family)


def _evaluate(family: str, c: Sequence[float], x: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(all="ignore"):
        if family == "constant":
            return np.full(x.shape, c[0], dtype=float)
        if family == "linear":
            return c[0] + c[1] * x
        if family == "quadratic":
            return c[0] + c[1] * x + c[2] * x * x
        if family == "logarithmic":
            return np.asarray(c[0] + c[1] * np.log(x), dtype=float)
        if family == "power":
            return np.asarray(c[0] * np.power(x, c[1]), dtype=float)
        if family == "exponential":
            return np.asarray(c[0] * np.exp(c[1] * x), dtype=float)
    raise ModelError(f"unknown model family {family!r}; choose from {', '.join(FAMILIES)}")


def _stats(family: str, coeffs: tuple[float, ...], x: NDArray[np.float64], y: NDArray[np.float64]) -> ModelFit:
    n = y.size
    resid = y - _evaluate(family, coeffs, x)
    sse = float(resid @ resid)
    tss = float(((y - y.mean()) ** 2).sum())
    k = _N_PARAMS[family]
    r2 = 1.0 - sse / tss if tss > 0 else (1.0 if sse <= 1e-12 * max(1.0, float(y @ y)) else 0.0)
    # floor the SSE so an exact fit gives a very low, finite criterion rather than -inf
    floor = max(1e-300, 1e-24 * float(y @ y) if n else 1e-300)
    ll = n * np.log(max(sse, floor) / n)
    return ModelFit(
        family, coeffs, n, float(r2), float(ll + 2 * k), float(ll + k * np.log(n)), sse,
        float(x.min()), float(x.max()),
    )


def _not_meaningful(family: str, x: NDArray[np.float64], note: str) -> ModelFit:
    nan = float("nan")
    lo, hi = (float(x.min()), float(x.max())) if x.size else (nan, nan)
    return ModelFit(family, (), int(x.size), nan, nan, nan, nan, lo, hi, meaningful=False, note=note)


def _scale_for(b: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    den = float(b @ b)
    return float(b @ y) / den if den > 0 else 0.0


def _projected_search(
    basis: object, x: NDArray[np.float64], y: NDArray[np.float64], lo: float, hi: float
) -> float:
    """Exponent minimising SSE of ``y ≈ b0·basis(x, e)`` with b0 profiled out (variable projection)."""
    if x.size > _SUBSAMPLE:
        idx = np.linspace(0, x.size - 1, _SUBSAMPLE).astype(np.int64)
        x, y = x[idx], y[idx]
    fn = basis

    def sse(e: float) -> float:
        b = fn(x, e)  # type: ignore[operator]
        if not np.all(np.isfinite(b)):
            return float("inf")
        s = _scale_for(b, y)
        r = y - s * b
        return float(r @ r)

    grid = np.linspace(lo, hi, 81)
    vals = np.array([sse(float(e)) for e in grid])
    i = int(np.nanargmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if a == b:
        return float(grid[i])
    res = minimize_scalar(sse, bounds=(float(a), float(b)), method="bounded", options={"xatol": 1e-10})
    return float(res.x) if res.fun <= vals[i] else float(grid[i])


def fit_family(x: ArrayLike, y: ArrayLike, family: str) -> ModelFit:
    """Fit one parametric family by least squares in y space.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Independent variable and measured amount (e.g. duration in ns).
    family : str
        One of :data:`FAMILIES`.

    Returns
    -------
    ModelFit
        With ``meaningful=False`` and a reason when the family's domain excludes the data
        (logarithmic/power need x > 0) or there are fewer points than parameters + 1.

    Raises
    ------
    ModelError
        Unknown family, mismatched shapes or non-finite values.

    Examples
    --------
    >>> fit_family([1, 2, 3, 4], [3, 5, 7, 9], "linear").coeffs
    (1.0..., 2.0...)
    """
    xv = np.asarray(x, dtype=float).ravel()
    yv = np.asarray(y, dtype=float).ravel()
    if family not in _N_PARAMS:
        raise ModelError(f"unknown model family {family!r}; choose from {', '.join(FAMILIES)}")
    if xv.shape != yv.shape:
        raise ModelError(f"x and y differ in length ({xv.size} vs {yv.size})")
    if not (np.all(np.isfinite(xv)) and np.all(np.isfinite(yv))):
        raise ModelError("x and y must be finite (drop NaN/inf before fitting)")
    k = _N_PARAMS[family]
    if xv.size < k + 1:
        return _not_meaningful(family, xv, f"{xv.size} points cannot support {k} parameters")
    if family in ("logarithmic", "power") and xv.min() <= 0:
        return _not_meaningful(family, xv, f"{family} model needs x > 0 (min x = {xv.min():g})")
    span = float(np.abs(xv).max()) or 1.0
    if family == "constant":
        return _stats(family, (float(yv.mean()),), xv, yv)
    if family in ("linear", "quadratic"):
        u = xv / span
        deg = 1 if family == "linear" else 2
        A = np.empty((u.size, deg + 1))  # np.vander(u, deg + 1, increasing=True), without its cumulative product
        A[:, 0] = 1.0
        A[:, 1] = u
        if deg == 2:
            np.multiply(u, u, out=A[:, 2])
        beta, *_ = np.linalg.lstsq(A, yv, rcond=None)
        coeffs = tuple(float(beta[j] / span**j) for j in range(deg + 1))
        return _stats(family, coeffs, xv, yv)
    if family == "logarithmic":
        lx = np.log(xv)
        A = np.column_stack([np.ones_like(lx), lx])
        beta, *_ = np.linalg.lstsq(A, yv, rcond=None)
        return _stats(family, (float(beta[0]), float(beta[1])), xv, yv)
    if family == "power":
        u = xv / span

        def pbasis(t: NDArray[np.float64], e: float) -> NDArray[np.float64]:
            with np.errstate(all="ignore"):
                return np.power(t, e)

        e = _projected_search(pbasis, u, yv, -4.0, 6.0)
        s = _scale_for(pbasis(u, e), yv)
        return _stats(family, (s / span**e, e), xv, yv)
    # exponential on scaled x: b0·exp(c·u), c in [-40, 40] i.e. at most e^40 over the fitted range
    u = xv / span

    def ebasis(t: NDArray[np.float64], c: float) -> NDArray[np.float64]:
        with np.errstate(all="ignore"):
            return np.exp(c * t)

    c = _projected_search(ebasis, u, yv, -40.0, 40.0)
    s = _scale_for(ebasis(u, c), yv)
    return _stats(family, (s, c / span), xv, yv)


def fit_parametric(x: ArrayLike, y: ArrayLike, families: Sequence[str] | None = None) -> ParametricFits:
    """Fit every family (default all six) and pick the best by BIC among the meaningful ones.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Data; see :func:`fit_family`.
    families : sequence of str, optional
        Subset of :data:`FAMILIES`.

    Returns
    -------
    ParametricFits
        ``best`` is None when no family is meaningful for the data.

    References
    ----------
    Schwarz, G. (1978). Estimating the dimension of a model. Annals of Statistics 6(2).
    """
    with one_blas_thread():  # small problems: BLAS threads only add contention
        fits = tuple(fit_family(x, y, f) for f in (families or FAMILIES))
    ok = [f for f in fits if f.meaningful]
    best = min(ok, key=lambda f: (f.bic, FAMILIES.index(f.family))) if ok else None
    return ParametricFits(fits, best)
