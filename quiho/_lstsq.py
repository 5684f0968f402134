"""Small dense least squares, shared by the change models (``detect``) and the parametric fits (``models``).

Many small problems per function: one BLAS thread (more threads only add contention on a busy host), and a
QR-based solve that gives ``np.linalg.lstsq``'s answer to rounding on well-conditioned designs while
ill-conditioned ones go to ``np.linalg.lstsq`` (SVD, with its rank cut-off) itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular
from threadpoolctl import ThreadpoolController

__all__ = ["COND_MAX", "condition", "one_blas_thread", "qr_lstsq", "r_factor", "svd_lstsq"]

Arr = NDArray[np.float64]

#: Largest condition number solved through a QR factor; beyond it ``np.linalg.lstsq`` solves the design, so
#: rank-deficient and nearly rank-deficient designs get exactly the SVD's answer. Below it both solvers agree
#: to about ``cond·eps`` ≤ 1e-10 (relative).
COND_MAX = 1e6


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    # scanning the loaded libraries costs ~4 ms once numba, scipy and pyarrow are loaded; numpy's and
    # scipy's BLAS are loaded before the first call (both are imported by the modules that call this)
    return ThreadpoolController()


_lock = threading.Lock()
_users = 0
_limiter: Any = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Context manager: BLAS limited to one thread (as ``threadpool_limits(limits=1, user_api="blas")``).

    Safe to enter from several threads at once (the limit is process-wide): the first to enter sets it, the
    last to leave restores the earlier limits.
    """
    global _users, _limiter
    with _lock:
        if _users == 0:
            _limiter = _controller().limit(limits=1, user_api="blas")
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _limiter.restore_original_limits()
                _limiter = None


def r_factor(A: Arr) -> Arr:
    """The triangular factor of a Householder QR of ``A`` (Q is not formed)."""
    return cast(Arr, np.linalg.qr(A, mode="r"))


def condition(R: Arr) -> float:
    """Condition number of the square factor ``R`` (same singular values as its design); inf if singular."""
    if R.shape[0] == 0:
        return 1.0
    sv = np.linalg.svd(R, compute_uv=False)
    return float(sv[0] / sv[-1]) if np.isfinite(sv[0]) and sv[-1] > 0 else float("inf")


def svd_lstsq(X: Arr, y: Arr) -> Arr:
    """``np.linalg.lstsq(X, y, rcond=None)``'s coefficients."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    return np.asarray(beta, dtype=np.float64)


def qr_lstsq(X: Arr, y: Arr) -> Arr:
    """Least-squares coefficients of ``y`` on ``X``: ``np.linalg.lstsq``'s answer to rounding, faster.

    One Householder QR of ``[X | y]`` without Q (LAPACK's ``dgelsd`` also starts with a QR, then runs an SVD)
    and a triangular solve; designs with condition above :data:`COND_MAX` go to :func:`svd_lstsq`.

    Examples
    --------
    >>> import numpy as np
    >>> qr_lstsq(np.column_stack([np.ones(4), np.arange(4.0)]), np.array([1.0, 3, 5, 7])).round(12).tolist()
    [1.0, 2.0]
    """
    p = X.shape[1]
    R = r_factor(np.column_stack([X, y]))
    if R.shape[0] > p and condition(R[:p, :p]) <= COND_MAX:
        return np.asarray(solve_triangular(R[:p, :p], R[:p, p]), dtype=np.float64)
    return svd_lstsq(X, y)
