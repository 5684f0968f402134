"""Gaussian-process model of a performance history over revision order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Kernel, Matern, RationalQuadratic, WhiteKernel
from threadpoolctl import threadpool_limits

from quiho.errors import ModelError, UsageError
from quiho.history.sampling._kernels import BrownianKernel

__all__ = ["HistoryGP", "KERNELS", "mape"]


def _white(noise: bool) -> Kernel:
    return WhiteKernel(1e-2, (1e-10, 1e1)) if noise else WhiteKernel(1e-10, "fixed")


def _brownian(noise: bool) -> Kernel:
    # the constant lets the walk start anywhere; normalize_y centres the values
    return ConstantKernel(1.0, (1e-5, 1e3)) + BrownianKernel(1.0, (1e-6, 1e4)) + _white(noise)


def _stationary(base: Callable[[], Kernel]) -> Callable[[bool], Kernel]:
    def make(noise: bool) -> Kernel:
        return ConstantKernel(1.0, (1e-3, 1e3)) * base() + _white(noise)

    return make


#: kernel name -> factory(noise: bool) -> sklearn kernel (inputs are revision positions scaled to [1, 2]).
KERNELS: dict[str, Callable[[bool], Kernel]] = {
    "brownian": _brownian,
    "rbf": _stationary(lambda: RBF(0.1, (1e-3, 1e2))),
    "rq": _stationary(lambda: RationalQuadratic(0.1, 1.0, (1e-3, 1e2), (1e-2, 1e2))),
    "matern32": _stationary(lambda: Matern(0.1, (1e-3, 1e2), nu=1.5)),
    "matern52": _stationary(lambda: Matern(0.1, (1e-3, 1e2), nu=2.5)),
}


def mape(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute percentage error, in percent: ``100 * mean(|y - yhat| / |y|)``.

    Raises
    ------
    ModelError
        ``y_true`` contains a zero (the percentage is undefined).
    """
    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    if np.any(y_true == 0):
        raise ModelError("MAPE is undefined when a true value is 0")
    return float(100.0 * np.mean(np.abs(y_true - y_pred) / np.abs(y_true)))


class HistoryGP:
    """GP regression of a metric on revision order, with the posterior mean and sigma per revision.

    Orders are mapped to ``1 + (order - first) / span`` (so the Brownian kernel
    sees positive inputs and length scales are fractions of the history);
    values are standardised inside the regressor (``normalize_y``).

    Parameters
    ----------
    kernel : {"brownian", "rbf", "rq", "matern32", "matern52"}, default "brownian"
    noise : bool, default True
        Fit a white-noise term (measurement noise); False interpolates.
    n_restarts_optimizer : int, default 1
    fixed_kernel : sklearn kernel, optional
        Use these hyperparameters as they are (e.g. ``gp.gpr_.kernel_`` of an
        earlier fit) instead of maximising the marginal likelihood: a fit is
        then one Cholesky factorisation. ``kernel`` still names the family.
    random_state : int or None, default 0

    References
    ----------
    .. [1] S. Mühlbauer, S. Apel, N. Siegmund, ASE 2019 (GP over revisions, Brownian kernel).
    .. [2] C. E. Rasmussen, C. K. I. Williams, Gaussian Processes for Machine Learning, MIT Press 2006.

    Examples
    --------
    >>> import numpy as np
    >>> gp = HistoryGP().fit([0, 10, 20], [1.0, 1.0, 3.0])
    >>> mean, sigma = gp.predict(np.arange(21))
    >>> bool(sigma[15] > sigma[10])
    True
    """

    def __init__(self, kernel: str = "brownian", *, noise: bool = True, n_restarts_optimizer: int = 1,
                 fixed_kernel: Kernel | None = None, random_state: int | None = 0) -> None:
        self.kernel = kernel
        self.noise = noise
        self.n_restarts_optimizer = n_restarts_optimizer
        self.fixed_kernel = fixed_kernel
        self.random_state = random_state

    def _x(self, orders: Any) -> np.ndarray:
        o = np.asarray(orders, dtype=float).ravel()
        return (1.0 + (o - self.origin_) / self.span_).reshape(-1, 1)

    def fit(self, orders: Any, values: Any, *, noise_var: Any = None, span: float | None = None,
            origin: float | None = None) -> Self:
        """Fit to measured ``values`` at revision ``orders`` (1-D, same length).

        ``noise_var`` (scalar or per value, in squared metric units) is the
        known variance of each value, e.g. ``var(repetitions) / repetitions``;
        given, it replaces the fitted white-noise term, which is poorly
        determined from a handful of revisions. ``origin``/``span`` fix the
        input scaling (default: the fitted orders' minimum and range); pass the
        whole history's so models fitted to different subsets share units.
        """
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        if self.kernel not in KERNELS:
            raise UsageError(f"unknown kernel {self.kernel!r}; choose one of {', '.join(KERNELS)}")
        o = np.asarray(orders, dtype=float).ravel()
        y = np.asarray(values, dtype=float).ravel()
        if o.size != y.size or o.size < 2:
            raise ModelError(f"a GP needs at least two measured revisions (got {y.size})")
        if not np.all(np.isfinite(y)):
            raise ModelError("GP values must be finite")
        self.origin_ = float(o.min()) if origin is None else float(origin)
        self.span_ = float(max(np.ptp(o), 1.0)) if span is None else float(max(span, 1.0))
        alpha: Any = 1e-10
        noise = self.noise
        if noise_var is not None:
            # sklearn adds alpha to the kernel of the *normalised* targets
            nv = np.broadcast_to(np.asarray(noise_var, dtype=float), y.shape)
            alpha = np.maximum(nv, 0.0) / max(float(y.std()), 1e-300) ** 2 + 1e-10
            noise = False
        base = self.fixed_kernel if self.fixed_kernel is not None else KERNELS[self.kernel](noise)
        gpr = GaussianProcessRegressor(base, normalize_y=True, alpha=alpha,
                                       optimizer=None if self.fixed_kernel is not None else "fmin_l_bfgs_b",
                                       n_restarts_optimizer=self.n_restarts_optimizer,
                                       random_state=self.random_state)
        # the matrices are at most a few hundred wide: BLAS threads only spin, and on a shared 2-core
        # machine they made each fit about 4x slower
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore", ConvergenceWarning)
            if np.ptp(y) == 0:  # constant: sklearn's normalisation divides by 0; predict the constant
                self.constant_: float | None = float(y[0])
            else:
                self.constant_ = None
                gpr.fit(self._x(o), y)
        self.gpr_ = gpr
        return self

    def loo_mape(self) -> float:
        """MAPE (%) of leave-one-out predictions at the measured revisions.

        Each measured value is predicted from all the others with the closed
        form ``mu_-i = y_i - [K^-1 y]_i / [K^-1]_ii`` (hyperparameters fitted to
        all values, as usual for this shortcut). This is the honest "MAPE
        against measured points": in-sample predictions are near-exact by
        construction. NaN if fewer than three values or they are constant.

        References
        ----------
        .. [1] C. E. Rasmussen, C. K. I. Williams, Gaussian Processes for Machine
           Learning, MIT Press 2006, eq. 5.12.
        """
        from scipy.linalg import cho_solve

        if self.constant_ is not None or self.gpr_.X_train_.shape[0] < 3:
            return float("nan")
        g = self.gpr_
        k_inv = cho_solve((g.L_, True), np.eye(g.L_.shape[0]))
        y = np.asarray(g.y_train_).ravel()
        loo = y - np.asarray(g.alpha_).ravel() / np.diag(k_inv)
        scale, shift = float(np.ravel(g._y_train_std)[0]), float(np.ravel(g._y_train_mean)[0])
        y_orig, loo_orig = y * scale + shift, loo * scale + shift
        if np.any(y_orig == 0):
            return float("nan")
        return mape(y_orig, loo_orig)

    def predict(self, orders: Any) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and sigma at ``orders`` (sigma includes a fitted white noise, never ``noise_var``)."""
        x = self._x(orders)
        if self.constant_ is not None:
            return np.full(x.shape[0], self.constant_), np.zeros(x.shape[0])
        with threadpool_limits(1):
            mean, std = self.gpr_.predict(x, return_std=True)
        return np.asarray(mean), np.asarray(std)
