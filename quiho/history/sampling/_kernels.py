"""The Brownian-motion kernel for scikit-learn Gaussian processes."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel

__all__ = ["BrownianKernel"]


class BrownianKernel(Kernel):
    """Covariance of Brownian motion, ``k(x, y) = variance * min(x, y)`` for ``x, y >= 0``.

    A performance history that changes by independent jumps between revisions
    is a random walk over revision order; its GP posterior mean interpolates
    linearly between measured revisions and its posterior standard deviation
    grows with the square root of the distance to the nearest measurement, so
    "largest sigma" means "middle of the widest unmeasured gap". Inputs are
    one-dimensional revision positions; shift them so the first is > 0.

    Parameters
    ----------
    variance : float, default 1.0
        sigma^2, the variance added per unit of order.
    variance_bounds : pair of float or "fixed", default (1e-5, 1e5)

    References
    ----------
    .. [1] S. Mühlbauer, S. Apel, N. Siegmund, "Accurate modeling of performance
       histories for evolving software systems", ASE 2019.
    .. [2] C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine
       Learning", MIT Press 2006, sec. 4.2 (Wiener process covariance).

    Examples
    --------
    >>> import numpy as np
    >>> k = BrownianKernel(2.0)
    >>> k(np.array([[1.0], [3.0]]))
    array([[2., 2.],
           [2., 6.]])
    """

    def __init__(self, variance: float = 1.0, variance_bounds: Any = (1e-5, 1e5)) -> None:
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def hyperparameter_variance(self) -> Hyperparameter:
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None,  # noqa: N803 (sklearn signature)
                 eval_gradient: bool = False) -> Any:
        """Kernel matrix ``k(X, Y)``; with ``eval_gradient`` also ``dK/dlog(variance)``, shape (n, n, 1)."""
        X = np.atleast_2d(X)  # noqa: N806
        if X.shape[1] != 1:
            raise ValueError(f"BrownianKernel takes one input dimension, got {X.shape[1]}")
        if Y is None:
            base = np.minimum(X, X.T)
        else:
            if eval_gradient:
                raise ValueError("gradient can only be evaluated when Y is None")
            base = np.minimum(X, np.atleast_2d(Y).T)
        K = self.variance * base  # noqa: N806
        if not eval_gradient:
            return K
        if self.hyperparameter_variance.fixed:
            return K, np.empty((X.shape[0], X.shape[0], 0))
        return K, K[:, :, np.newaxis]  # d(v * B) / d(log v) = v * B

    def diag(self, X: np.ndarray) -> np.ndarray:  # noqa: N803
        """``k(x, x) = variance * x`` for each row."""
        return self.variance * np.atleast_2d(X)[:, 0].astype(float)

    def is_stationary(self) -> bool:
        """Brownian motion is not stationary: its variance grows with x."""
        return False

    def __repr__(self) -> str:
        return f"{self.variance:.3g} * Brownian()"
