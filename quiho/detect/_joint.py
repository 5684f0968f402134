"""Change-model regression: one joint fit of both versions, the change as a parametric term, and an F-test.

Model, with ``s = -1/2`` for baseline points and ``+1/2`` for target points::

    y = f(x) + s·g(x) + ε

``f`` is a flexible shared curve (cubic B-spline with quantile knots, plus ``ln x`` when x > 0), ``g`` the
change, taken from candidate families (constant, logarithmic, sqrt, linear, quadratic, exponential ``c + a·e^{bx}``
and, for the ``joint`` method, a 6-df spline for changes of any shape). The symmetric ``s`` makes the fit
exactly antisymmetric: swapping baseline and target negates ``g`` and nothing else.

* **Kind** = the family with the lowest BIC (ties to the simpler). If the free-shape spline beats every
  family by more than 10 BIC units the kind is ``localized`` (the per-window difference of means exceeds half
  its maximum on at most 40 % of 10 equal x windows) or ``other``.
* **Significance**: Wald tests with HC3 heteroscedasticity-consistent covariance (referred to F(k, n - p)) of
  pre-specified changes: a constant shift (1 df), a quadratic change (3 df; linear for LREG) and, with free
  shapes, a 6-df spline; the smallest p-value, Bonferroni-corrected for the number of tests. (Testing the
  BIC-selected family instead would need a correction for the selection; it was liberal on null pairs.)
* **Weights**: rows are weighted by ``1/σ̂(x)²``, with σ̂ a spline smooth of |residual| of the flexible fit of
  each version on its own (so a change cannot hide itself and multiplicative noise does not dominate); points
  beyond 4.685 MADs of a robust (bisquare IRLS) fit of their version are dropped, so isolated spikes
  (preemption, page faults) do not decide the verdict.
  ``localized``/``other`` is claimed only if the free shape also wins without the weights.
* **Magnitude** = mean of ``g`` over the observed x (both versions' points) divided by the mean baseline
  amount without the dropped spikes (the fitted baseline curve itself loses precision when the
  target is 10^17 times larger, as in Perun's ``const4``).

This is what Perun's FAST/LREG/PREG aim at (classifying the error profile between two models), done with the
noise model the data provide instead of absolute thresholds (1e8 residual, ±5 % coefficients).

Numerics: a function's ~20 candidate designs share the baseline columns, so those are factored once per weight
vector (QR) and each candidate only adds its own few columns (:class:`_WeightedFits`); the robust per-version fits
solve through a QR too. Both give ``np.linalg.lstsq``'s answers to rounding; designs with condition numbers
beyond ``quiho._lstsq.COND_MAX`` (1e6), and noise weights feeding a fit beyond ``_COND_WEIGHTS``, go through
``np.linalg.lstsq`` as before (``tests/detect/test_pinned_outputs.py`` holds the earlier outputs to
``rtol = 1e-9``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats
from scipy.interpolate import BSpline
from scipy.linalg import solve_triangular

from quiho._lstsq import COND_MAX, condition, one_blas_thread, qr_lstsq, r_factor, svd_lstsq
from quiho.detect._base import (
    Change,
    PerFunctionProfileDetector,
    Profile,
    Samples,
    State,
    classify,
    register_profile_detector,
)

__all__ = ["ChangeModelFit", "fit_change_model", "JointDetector", "PolynomialRateDetector", "LinearRateDetector"]

Arr = NDArray[np.float64]
_Solver = Callable[[Arr, Arr], Arr]
_MAX_POINTS = 10_000  # per side; larger inputs are thinned by an even stride over x-sorted points
#: Largest condition number of the change-model designs for which the noise weights may come from QR solves
#: (their rounding differs from the SVD's by ~1e-15). A worse-conditioned fit amplifies that difference, and on
#: rank-deficient designs (versions whose x ranges barely overlap, fewer calls than spline columns) the HC3
#: statistic amplifies even 1e-15, so there the weights are recomputed with ``np.linalg.lstsq`` as before.
_COND_WEIGHTS = 1e4


def _bspline(u: Arr, df: int) -> Arr:
    """Cubic B-spline basis with ``df`` columns on u ∈ [0, 1], interior knots at quantiles of unique u."""
    uu = np.unique(u)
    if uu.size < df + 2 or df < 4:
        deg = int(min(3, max(uu.size - 1, 0)))
        return np.vander(u, deg + 1, increasing=True)
    inner = np.quantile(uu, np.linspace(0, 1, df - 2)[1:-1])
    t = np.concatenate([[0.0] * 4, inner, [1.0] * 4])
    return np.asarray(BSpline.design_matrix(np.clip(u, 0, 1), t, 3).toarray())


@dataclass(frozen=True)
class ChangeModelFit:
    """Result of :func:`fit_change_model` (all numbers in the units of y)."""

    kind: str
    p_value: float
    magnitude: float
    mean_change: float
    baseline_mean: float
    bic: dict[str, float]
    f_stat: float
    n_baseline: int
    n_target: int


def _family_columns(u: Arr, x: Arr) -> dict[str, Callable[[float], Arr] | Arr]:
    cols: dict[str, Callable[[float], Arr] | Arr] = {
        "constant": np.ones((u.size, 1)),
        "linear": np.column_stack([np.ones_like(u), u]),
        "quadratic": np.column_stack([np.ones_like(u), u, u * u]),
    }
    if x.min() > 0:
        lx = np.log(x)
        cols["logarithmic"] = np.column_stack([np.ones_like(u), (lx - lx.min()) / (np.ptp(lx) or 1.0)])
    if x.min() >= 0:
        sx = np.sqrt(x)
        cols["sqrt"] = np.column_stack([np.ones_like(u), sx / (sx.max() or 1.0)])
    cols["exponential"] = lambda b: np.column_stack([np.ones_like(u), np.expm1(b * u) / np.expm1(b)])
    return cols


_ORDER = ("constant", "logarithmic", "sqrt", "linear", "quadratic", "cubic", "exponential", "spline")
_NPAR = {"constant": 1, "logarithmic": 2, "sqrt": 2, "linear": 2, "quadratic": 3, "cubic": 4, "exponential": 3}


def _robust_residuals(
    B: Arr, y: Arr, u: Arr, Bs: Arr, robust: bool, iterations: int = 5, lstsq: _Solver = svd_lstsq
) -> tuple[Arr, Arr]:
    """Residuals of one version's own flexible fit and a 0/1 mask of the points kept.

    With ``robust`` the curve is refitted by iteratively reweighted least squares with Tukey's bisquare on
    residuals standardised by a local scale (a smooth of |residual| over x, basis ``Bs``) and c = 4.685 MADs,
    so spikes do not bend it; points beyond the cut-off of the final fit are dropped (hard rejection keeps the
    later test calibrated, unlike soft bisquare weights, whose sandwich variance would need ψ'). If that would
    drop more than 10 % of the points, only points beyond three times the cut-off are dropped, and if even
    that is more than 10 %, the residuals are misfit rather than spikes and nothing is dropped.
    """
    t = np.ones(y.size)
    r = y.copy()
    for it in range(iterations if robust else 1):
        st = np.sqrt(t)
        beta = lstsq(B * st[:, None], y * st)
        r = y - B @ beta
        if not robust:
            break
        a = np.abs(r)
        if it == 0:
            # first pass: distance from a running median over x (a least-squares start would bend towards
            # the spikes and condemn their neighbours), on a global scale
            order = np.argsort(u, kind="stable")
            win = max(5, y.size // 20) | 1
            med = pd.Series(y[order]).rolling(win, center=True, min_periods=1).median().to_numpy()
            z = np.empty(y.size)
            z[order] = y[order] - med
        else:
            sig = lstsq(Bs * st[:, None], a * st)
            z = r / np.maximum(Bs @ sig, max(0.1 * float(np.median(a)), 1e-300))
        mad = 1.4826 * float(np.median(np.abs(z - np.median(z))))
        if it == 0 and mad <= 1e-9 * max(float(np.abs(y).max()), 1e-300):
            return r, np.ones(y.size)  # noise-free: nothing is a spike
        if mad <= 0:
            return r, np.ones(y.size)
        t = np.clip(1 - (z / (4.685 * mad)) ** 2, 0, None) ** 2
    keep = (t > 0).astype(float)
    if keep.mean() < 0.90:
        # too many beyond the cut-off for spikes: drop only the gross ones (3x the cut-off), else nothing
        keep = (np.abs(z) <= 3 * 4.685 * mad).astype(float)
        if keep.mean() < 0.90:
            keep[:] = 1.0
    return r, keep


def _wald_hc3(X: Arr, ys: Arr, w: Arr, beta: Arr, k: int) -> float:
    """Wald statistic / k for the last ``k`` coefficients, with HC3 (heteroscedasticity-robust) covariance.

    Robust to wrong weights and to high-leverage points (e.g. the x = 1 point of a log-shaped change).
    """
    sw = np.sqrt(w)
    Xw = X * sw[:, None]
    e = (ys - X @ beta) * sw
    if _exact(e, ys):
        return _exact_stat(beta[-k:])
    Q, R = np.linalg.qr(Xw)
    return _hc3_stat(Xw, e, (Q * Q).sum(axis=1), R, beta, k)


def _exact(e: Arr, ys: Arr) -> bool:
    """True when the weighted residuals ``e`` vanish (noise-free data): the Wald statistic is then 0 or ∞."""
    return float(np.abs(e).max()) <= 1e-12 * max(float(np.abs(ys).max()), 1e-300)


def _exact_stat(bg: Arr) -> float:
    return float("inf") if float(np.abs(bg).max()) > 1e-9 else 0.0


def _hc3_stat(Xw: Arr, e: Arr, lev: Arr, R: Arr, beta: Arr, k: int) -> float:
    """:func:`_wald_hc3` from the weighted design, residuals, leverages and triangular factor of ``Xw``."""
    bg = beta[-k:]
    h = np.clip(lev, 0.0, 1.0 - 1e-6)
    Rinv = np.linalg.pinv(R)
    bread = Rinv @ Rinv.T
    M = Xw * (e / (1.0 - h))[:, None]
    cov = bread @ (M.T @ M) @ bread
    cg = cov[-k:, -k:]
    stat = float(bg @ np.linalg.pinv(cg) @ bg)
    return stat / k if np.isfinite(stat) else float("inf")


def _localized(u: Arr, y: Arr, s: Arr, windows: int = 10) -> bool:
    """True when the target-minus-baseline window means exceed half their maximum on ≤ 40 % of the windows."""
    idx = np.minimum((u * windows).astype(np.int64), windows - 1)
    d = np.full(windows, np.nan)
    for i in range(windows):
        a, b = y[(idx == i) & (s > 0)], y[(idx == i) & (s < 0)]
        if a.size and b.size:
            d[i] = a.mean() - b.mean()
    ok = np.isfinite(d)
    if ok.sum() < 3:
        return False
    big = np.abs(d[ok]) > 0.5 * np.abs(d[ok]).max()
    return bool(big.sum() <= 0.4 * ok.sum())


def _thin(s: Samples, limit: int) -> tuple[Arr, Arr]:
    if len(s) <= limit:
        return s.x, s.y
    pick = np.linspace(0, len(s) - 1, limit).astype(np.int64)
    # x already sorted (call order): the stable argsort is the identity
    idx = pick if bool((s.x[1:] >= s.x[:-1]).all()) else np.argsort(s.x, kind="stable")[pick]
    return s.x[idx], s.y[idx]


def fit_change_model(
    baseline: Samples,
    target: Samples,
    families: Sequence[str] = ("constant", "logarithmic", "sqrt", "linear", "quadratic", "exponential"),
    free_shape: bool = True,
    baseline_df: int = 12,
    linear_baseline: bool = False,
    weighted: bool = True,
    robust: bool = True,
) -> ChangeModelFit:
    """Fit ``y = f(x) + s·g(x)`` (see module docstring) and describe ``g``.

    Parameters
    ----------
    baseline, target : Samples
    families : sequence of str
        Candidate shapes for ``g`` (``cubic`` is also accepted).
    free_shape : bool, default True
        Also try a 6-df spline ``g`` (kinds ``localized``/``other``).
    baseline_df : int, default 12
        Columns of the spline for ``f``.
    linear_baseline : bool, default False
        Use ``f = b0 + b1·x`` instead of the spline (Perun's LREG view).
    weighted : bool, default True
        Weight rows by the inverse of a smoothed squared residual (heteroscedasticity).
    robust : bool, default True
        Drop points beyond 4.685 MADs of a bisquare-IRLS fit of their own version (at most 10 % of a
        version), so isolated spikes do not decide the verdict (only with ``weighted``).
    """
    # many small least-squares problems: BLAS threads only add contention (10x slower on a busy 2-core host)
    with one_blas_thread():
        return _fit(baseline, target, families, free_shape, baseline_df, linear_baseline, weighted, robust)


@dataclass(frozen=True)
class _Design:
    """Both versions stacked: x, y, the side indicator ``s``, scaled y and the shared baseline basis ``B``."""

    x: Arr
    y: Arr
    s: Arr
    u: Arr
    ys: Arr
    scale: float
    B: Arr
    n_baseline: int
    distinct: bool
    spline_ok: bool

    @property
    def n(self) -> int:
        return int(self.y.size)

    @property
    def kb(self) -> int:
        return int(self.B.shape[1])

    def rss(self, X: Arr, w: Arr) -> tuple[float, Arr]:
        """Weighted residual sum of squares of the least-squares fit of ``ys`` on ``X``, and its coefficients."""
        sw = np.sqrt(w)
        beta, *_ = np.linalg.lstsq(X * sw[:, None], self.ys * sw, rcond=None)
        r = self.ys - X @ beta
        return float((w * r * r).sum()), np.asarray(beta, dtype=np.float64)

    def with_change(self, G: Arr) -> Arr:
        """Design matrix of ``f`` plus the change columns ``s·G``."""
        return np.column_stack([self.B, self.s[:, None] * G])

    @cached_property
    def spline6(self) -> Arr:
        """The 6-df cubic B-spline of ``u``: noise-scale smooth, free-shape change and its test."""
        return _bspline(self.u, 6)


#: (weighted RSS, coefficients, change columns G, parameters counted for BIC)
_FamilyFit = tuple[float, Arr, Arr, int]


class _WeightedFits:
    """Weighted least squares of ``ys`` on ``[B, s·G]`` for one weight vector ``w``, B factored once.

    Every candidate change ``G`` shares the baseline columns, so ``B·√w = Q_B·R_B`` is computed once, and the
    change columns of all candidates (and ``ys``), weighted, are made orthogonal to ``Q_B`` together (block
    Gram-Schmidt, applied twice, which keeps them orthogonal to rounding). A design then needs only the small QR
    of its own projected columns: the triangular factor of ``[B, s·G, ys]·√w`` is
    ``[[R_B, P, p_y], [0, R_G, r_gy], [0, 0, r_yy]]``, its coefficients solve the triangle and its weighted RSS
    is ``r_yy²``, as ``np.linalg.lstsq`` of the full design gives them to rounding (≤ cond·eps). Designs whose
    condition exceeds ``COND_MAX`` (rank-deficient bases, few distinct x) are fitted exactly as before, by
    ``np.linalg.lstsq`` (and ``np.linalg.qr`` for the test) of the full design.
    """

    def __init__(self, d: _Design, w: Arr) -> None:
        self.d = d
        self.w = w
        self.sw = np.sqrt(w)
        self.Q, self.R = np.linalg.qr(d.B * self.sw[:, None])
        #: the largest condition number of the designs fitted so far (inf when one was rank-deficient)
        self.worst = condition(self.R)
        self.fast = self.worst <= COND_MAX
        self._lev: Arr | None = None

    def _project(self, C: Arr) -> Arr:
        """``Q_B^T C``, and ``C`` made orthogonal to ``Q_B`` in place (two passes)."""
        P = self.Q.T @ C
        C -= self.Q @ P
        P2 = self.Q.T @ C
        C -= self.Q @ P2
        return np.asarray(P + P2)

    def _factor(self, P: Arr, Rc: Arr, k: int) -> tuple[Arr, Arr] | None:
        """Triangular factor of ``[B, s·G]·√w`` and the right-hand side; None if ill-conditioned."""
        kb = self.d.kb
        if Rc.shape[0] <= k:
            self.worst = float("inf")
            return None
        R = np.zeros((kb + k, kb + k))
        R[:kb, :kb] = self.R
        R[:kb, kb:] = P[:, :k]
        R[kb:, kb:] = Rc[:k, :k]
        cond = max(condition(R[kb:, kb:]), condition(R))
        self.worst = max(self.worst, cond)
        if cond > COND_MAX:
            return None
        return R, np.concatenate([P[:, k], Rc[:k, k]])

    def rss(self, Gs: Sequence[Arr | None]) -> list[tuple[float, Arr]]:
        """Weighted RSS and coefficients of ``ys`` on ``[B, s·G]`` for every ``G`` (None: ``B`` alone)."""
        d = self.d
        if not self.fast:
            return [d.rss(d.B if G is None else d.with_change(G), self.w) for G in Gs]
        # one column per distinct change column: the constant column that most families share goes in once
        ks = [0 if G is None else G.shape[1] for G in Gs]
        C = np.empty((d.n, sum(ks) + 1), order="F")  # filled column by column
        where: list[list[int]] = []
        ones = -1
        m = 0
        for G, k in zip(Gs, ks, strict=True):
            idx = []
            for j in range(k):
                if ones >= 0 and bool((G[:, j] == 1.0).all()):  # type: ignore[index]
                    idx.append(ones)
                    continue
                C[:, m] = G[:, j]  # type: ignore[index]
                if ones < 0 and bool((C[:, m] == 1.0).all()):
                    ones = m
                idx.append(m)
                m += 1
            where.append(idx)
        C[:, m] = d.ys
        C = C[:, :m + 1]
        C[:, :m] *= (d.s * self.sw)[:, None]
        C[:, m] *= self.sw
        P = self._project(C)
        out: list[tuple[float, Arr]] = []
        for G, idx in zip(Gs, where, strict=True):
            cols = [*idx, m]
            Rc = r_factor(C[:, cols])
            fac = self._factor(P[:, cols], Rc, len(idx))
            if fac is None:
                out.append(d.rss(d.B if G is None else d.with_change(G), self.w))
                continue
            beta = np.asarray(solve_triangular(*fac), dtype=np.float64)
            out.append((float(Rc[len(idx), len(idx)] ** 2), beta))
        return out

    def wald(self, G: Arr) -> float:
        """HC3 Wald statistic / k of the change coefficients of ``[B, s·G]`` (as :func:`_wald_hc3`)."""
        d, k = self.d, G.shape[1]
        X = d.with_change(G)
        if self.fast:
            C = np.empty((d.n, k + 1))
            C[:, :k] = G * (d.s * self.sw)[:, None]
            C[:, k] = d.ys * self.sw
            P = self._project(C)
            Qc, Rc = np.linalg.qr(C)
            fac = self._factor(P, Rc, k)
            if fac is not None:
                beta = np.asarray(solve_triangular(*fac), dtype=np.float64)
                e = (d.ys - X @ beta) * self.sw
                if _exact(e, d.ys):
                    return _exact_stat(beta[-k:])
                if self._lev is None:
                    self._lev = (self.Q * self.Q).sum(axis=1)
                lev = self._lev + (Qc[:, :k] * Qc[:, :k]).sum(axis=1)
                return _hc3_stat(X * self.sw[:, None], e, lev, fac[0], beta, k)
        _, beta = d.rss(X, self.w)
        return _wald_hc3(X, d.ys, self.w, beta, k)


def _design(baseline: Samples, target: Samples, free_shape: bool, baseline_df: int,
            linear_baseline: bool) -> _Design:
    xb, yb = _thin(baseline, _MAX_POINTS)
    xt, yt = _thin(target, _MAX_POINTS)
    x = np.concatenate([xb, xt])
    y = np.concatenate([yb, yt])
    s = np.concatenate([np.full(xb.size, -0.5), np.full(xt.size, 0.5)])
    lo, hi = float(x.min()), float(x.max())
    u = (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
    if linear_baseline:
        B = np.column_stack([np.ones_like(u), u])
    else:
        B = _bspline(u, baseline_df)
        if x.min() > 0 and np.ptp(x) > 0:
            B = np.column_stack([B, np.log(x)])
    scale = float(np.abs(y).max()) or 1.0
    distinct = bool(np.ptp(u) > 0)
    return _Design(x, y, s, u, y / scale, scale, B, int(xb.size), distinct,
                   free_shape and distinct and np.unique(u).size >= 10)


def _noise_weights(d: _Design, robust: bool, lstsq: _Solver = svd_lstsq) -> tuple[Arr, Arr]:
    """Row weights ``1/σ̂(x)²`` and the spike-keeping mask ``tk`` (1 kept, 0 dropped).

    The noise scale comes from each version's own flexible fit, so a change cannot inflate it (and hide
    itself); σ̂(x) is one smooth of the kept |residuals| of both versions (a per-version σ̂ made the test
    liberal).
    """
    r0 = np.empty(d.n)
    tk = np.ones(d.n)
    Bs = d.spline6
    for side in (d.s < 0, d.s > 0):
        r0[side], tk[side] = _robust_residuals(d.B[side], d.ys[side], d.u[side], Bs[side], robust, lstsq=lstsq)
    a = np.abs(r0)
    st = np.sqrt(tk)
    sig = lstsq(Bs * st[:, None], a * st)
    sd = np.maximum(Bs @ sig, max(0.1 * float(np.median(a)), 1e-12))
    w = tk / sd**2
    return w / w.mean(), tk


_EXP_RATES = (-30, -15, -8, -4, -2, 2, 4, 8, 15, 30, 60)


def _candidates(d: _Design, families: Sequence[str],
                cols: dict[str, Callable[[float], Arr] | Arr]) -> list[tuple[str, Arr, int]]:
    """(family, change columns G, parameters counted for BIC) of every candidate fit, in order.

    The exponential family is one candidate per rate b of its grid (the rest by least squares), the
    free-shape spline one more.
    """
    out: list[tuple[str, Arr, int]] = []
    for fam in families:
        c = cols.get(fam)
        if c is None:
            continue
        if callable(c):
            out.extend((fam, c(float(b)), _NPAR[fam]) for b in _EXP_RATES)
        else:
            out.append((fam, c, c.shape[1] if fam not in _NPAR else _NPAR[fam]))
    if d.spline_ok:
        out.append(("spline", d.spline6, 6))
    return out


def _select(d: _Design, families: Sequence[str], cols: dict[str, Callable[[float], Arr] | Arr],
            ls: _WeightedFits) -> tuple[str, dict[str, _FamilyFit], dict[str, float], float, float]:
    """Kind by BIC (the simplest family within 2 units of the best; the spline only if 10 units better).

    Returns the kind, every family's fit, the BICs, the RSS without a change and the RSS floor.
    """
    w = ls.w
    cands = _candidates(d, families, cols)
    *solved, (rss0, _) = ls.rss([*(G for _, G, _ in cands), None])
    fits: dict[str, _FamilyFit] = {}
    for (fam, G, npar), (r, beta) in zip(cands, solved, strict=True):
        if fam not in fits or r < fits[fam][0]:  # the exponential's best rate: the first with the least RSS
            fits[fam] = (r, beta, G, npar)
    n = d.n
    tiny = 1e-24 * max(float((w * d.ys * d.ys).sum()), 1e-300)
    bics = {f: float(n * np.log(max(v[0], tiny) / n) + (d.kb + v[3]) * np.log(n)) for f, v in fits.items()}
    simple = {f: v for f, v in bics.items() if f != "spline"}
    best_bic = min(simple.values())
    # the simplest family within 2 BIC units of the best ("not worth the extra parameter")
    kind = next(f for f in _ORDER if f in simple and simple[f] <= best_bic + 2.0)
    if "spline" in bics and bics["spline"] < best_bic - 10.0:
        kind = "spline"
    return kind, fits, bics, rss0, tiny


def _p_value(d: _Design, ls: _WeightedFits, linear_baseline: bool) -> tuple[float, float]:
    """Bonferroni-corrected smallest p-value (and its Wald statistic) of the pre-specified change tests.

    Pre-specified, not the BIC-selected family (whose selection would need its own correction): a constant
    shift (1 df), a quadratic change (3 df; linear for LREG, which can only see intercept and slope) and,
    for free shapes, the 6-df spline.
    """
    tests: list[Arr] = [np.ones((d.n, 1))]
    if d.distinct:
        tests.append(np.vander(d.u, 2 if linear_baseline else 3, increasing=True))
    if d.spline_ok:
        tests.append(d.spline6)
    p, fstat = 1.0, 0.0
    for G in tests:
        k = G.shape[1]
        st_ = ls.wald(G)
        dfe = max(int((ls.w > 0).sum()) - d.kb - k, 1)
        pt = 0.0 if st_ == float("inf") else float(stats.f.sf(max(st_, 0.0), k, dfe))
        if pt < p or (pt == p and st_ > fstat):
            p, fstat = pt, st_
    return min(1.0, p * len(tests)), fstat


def _fit(
    baseline: Samples,
    target: Samples,
    families: Sequence[str],
    free_shape: bool,
    baseline_df: int,
    linear_baseline: bool,
    weighted: bool,
    robust: bool,
) -> ChangeModelFit:
    d = _design(baseline, target, free_shape, baseline_df, linear_baseline)
    cols: dict[str, Callable[[float], Arr] | Arr] = (_family_columns(d.u, d.x) if d.distinct
                                                      else {"constant": np.ones((d.n, 1))})
    if "cubic" in families and d.distinct:
        cols["cubic"] = np.vander(d.u, 4, increasing=True)
    if not (weighted and d.distinct):
        return _fit_weighted(d, np.ones(d.n), np.ones(d.n), cols, families, weighted, linear_baseline)[0]
    fit, worst = _fit_weighted(d, *_noise_weights(d, robust, qr_lstsq), cols, families, weighted,
                               linear_baseline)
    if worst > _COND_WEIGHTS:  # see _COND_WEIGHTS: the weights as before, bit for bit
        fit, _ = _fit_weighted(d, *_noise_weights(d, robust, svd_lstsq), cols, families, weighted,
                               linear_baseline)
    return fit


def _fit_weighted(d: _Design, w: Arr, tk: Arr, cols: dict[str, Callable[[float], Arr] | Arr],
                  families: Sequence[str], weighted: bool, linear_baseline: bool) -> tuple[ChangeModelFit, float]:
    """The fit for row weights ``w`` and spike mask ``tk``, and the worst condition number of its designs."""
    ls = _WeightedFits(d, w)
    kind, fits, bics, rss0, tiny = _select(d, families, cols, ls)
    worst = ls.worst
    if kind == "spline" and weighted:
        # claim "no parametric shape" only if it also holds without the variance weights: a version spanning
        # many orders of magnitude (Perun's const4) makes the weights follow misfit, not noise
        # (the spike-rejecting bisquare weights stay)
        ls_u = _WeightedFits(d, tk / tk.mean())
        kind_u, fits_u, bics_u, rss0_u, tiny_u = _select(d, families, cols, ls_u)
        worst = max(worst, ls_u.worst)
        if kind_u != "spline":
            kind, fits, bics, rss0, tiny, ls = kind_u, fits_u, bics_u, rss0_u, tiny_u, ls_u
    _, beta1, G1, _ = fits[kind]
    mean_change = float((G1 @ beta1[d.kb:] * d.scale).mean())
    nb = d.n_baseline
    tb, yb = tk[:nb], d.y[:nb]
    base_mean = float((tb * yb).sum() / tb.sum()) if tb.sum() > 0 else float(yb.mean())
    p, fstat = _p_value(d, ls, linear_baseline) if rss0 > tiny else (1.0, 0.0)
    worst = max(worst, ls.worst)
    if kind == "spline":
        kind = "localized" if _localized(d.u, d.y, d.s) else "other"
    mag = mean_change / abs(base_mean) if base_mean != 0 else float("nan")
    return ChangeModelFit(kind, p, float(mag), mean_change, base_mean, bics, fstat, nb, d.n - nb), worst


class _ChangeModelDetector(PerFunctionProfileDetector):
    """Shared driver of joint/preg/lreg.

    Parameters
    ----------
    alpha : float, default 0.01
        Level of the (Bonferroni-corrected) test for degradation/optimization.
    maybe_alpha : float, default 0.05
        Below this p-value the verdict is at least ``maybe``.
    min_effect : float, default 0.03
        Smallest relative magnitude reported as degradation/optimization; a significant smaller change is
        ``maybe`` (statistically real, practically negligible). Raise it for noisy single-run comparisons.
    """

    families: ClassVar[tuple[str, ...]] = ()
    free_shape: ClassVar[bool] = False
    linear_baseline: ClassVar[bool] = False
    min_points = 5
    #: the fits spend most of their time in LAPACK (GIL released): two functions at a time take 2 cores
    #: (20 functions of 250 000 calls: 1.9 -> 1.4 s wall, +10 % CPU); verdicts do not depend on it
    threads: ClassVar[int] = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                 else (os.cpu_count() or 1))

    def __init__(self, alpha: float = 0.01, maybe_alpha: float = 0.05, min_effect: float = 0.03) -> None:
        self.alpha = alpha
        self.maybe_alpha = maybe_alpha
        self.min_effect = min_effect

    def compare(self, baseline: Profile, target: Profile) -> list[Change]:
        with one_blas_thread():  # once for all functions (and threads), not per fit
            return super().compare(baseline, target)

    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        fit = fit_change_model(baseline, target, self.families, self.free_shape,
                               linear_baseline=self.linear_baseline)
        state = classify(fit.p_value < self.alpha, fit.magnitude, self.min_effect,
                         maybe=fit.p_value < self.maybe_alpha)
        kind = fit.kind if state not in (State.NO_CHANGE, State.NOT_MEANINGFUL) else ""
        support = {
            "baseline_mean": fit.baseline_mean, "mean_change": fit.mean_change, "f_stat": fit.f_stat,
            "bic": fit.bic, "shape": fit.kind, "n_baseline": fit.n_baseline, "n_target": fit.n_target,
            "alpha": self.alpha, "maybe_alpha": self.maybe_alpha, "min_effect": self.min_effect,
        }
        return Change(function, self.name, state, kind, fit.magnitude, 1.0 - fit.p_value, "1-p", fit.p_value,
                      support)


@register_profile_detector
class JointDetector(_ChangeModelDetector):
    """Change-model regression with all shapes (the recommended per-function detector)."""

    name = "joint"
    description = "joint fit of both versions; change shape by BIC; F-test (module quiho.detect._joint)"
    families = ("constant", "logarithmic", "sqrt", "linear", "quadratic", "exponential")
    free_shape = True


@register_profile_detector
class PolynomialRateDetector(_ChangeModelDetector):
    """Perun's polynomial regression (PREG) done right: polynomial change of degree 0-3 chosen by BIC."""

    name = "preg"
    description = "change as a polynomial of degree 0-3 (BIC), F-test"
    families = ("constant", "linear", "quadratic", "cubic")


@register_profile_detector
class LinearRateDetector(_ChangeModelDetector):
    """Perun's linear regression (LREG) done right: linear models of both versions, test of Δintercept/Δslope.

    Can only report ``constant`` or ``linear`` changes, as in Perun.
    """

    name = "lreg"
    description = "linear baseline, change in intercept/slope, F-test"
    families = ("constant", "linear")
    linear_baseline = True
