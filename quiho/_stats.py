"""Small statistical helpers shared by several packages (one definition each)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["welch_p", "pooled_t_p"]


def welch_p(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided Welch t-test p-value of equal means.

    Parameters
    ----------
    a, b : array-like, shape (n,), (m,)
        The two samples.

    Returns
    -------
    float
        NaN when a side has fewer than 2 points (not meaningful); exactly 0 or 1 when both sides are constant
        (within 1e-12 of the larger mean: the t statistic is undefined there), 0 when the means then differ by more
        than 1e-9 of it; otherwise the t-test p-value.

    References
    ----------
    .. [1] B. L. Welch, "The generalization of Student's problem when several different population variances are
       involved", Biometrika 34, 1947.
    """
    av = np.asarray(a, dtype=float)
    bv = np.asarray(b, dtype=float)
    if av.size < 2 or bv.size < 2:
        return float("nan")
    se2 = av.var(ddof=1) / av.size + bv.var(ddof=1) / bv.size
    diff = bv.mean() - av.mean()
    scale = max(abs(av.mean()), abs(bv.mean()), 1.0)
    if se2 <= (1e-12 * scale) ** 2:
        return 0.0 if abs(diff) > 1e-9 * scale else 1.0
    return float(stats.ttest_ind(av, bv, equal_var=False).pvalue)


def pooled_t_p(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided Student t-test p-value of equal means with a pooled variance, defined for sizes 1 and 2 too.

    A side of one point adds no variance and no degree of freedom, so ``df = len(a) + len(b) - 2``; Welch's test
    needs two points a side.

    Returns
    -------
    float
        NaN when ``df < 1`` (not meaningful); exactly 0 or 1 when the pooled spread is nil (as :func:`welch_p`);
        otherwise the t-test p-value.
    """
    av = np.asarray(a, dtype=float)
    bv = np.asarray(b, dtype=float)
    df = av.size + bv.size - 2
    if av.size < 1 or bv.size < 1 or df < 1:
        return float("nan")
    ss = float(((av - av.mean()) ** 2).sum() + ((bv - bv.mean()) ** 2).sum())
    se = np.sqrt(ss / df * (1 / av.size + 1 / bv.size))
    diff = bv.mean() - av.mean()
    scale = max(abs(av.mean()), abs(bv.mean()), 1.0)
    if se <= 1e-12 * scale:
        return 0.0 if abs(diff) > 1e-9 * scale else 1.0
    return float(2 * stats.t.sf(abs(diff) / se, df))
