"""Paired evidence: is the suspect worse than its baseline, from pairs of runs made side by side.

:func:`paired_change` decides on the log ratios of the pairs: the Hodges-Lehmann estimate, the signed-rank
interval that goes with it, and Wilcoxon's signed-rank test, exact up to 50 pairs (see its docstring for why these).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from quiho._text import json_number
from quiho.errors import UsageError

__all__ = ["PairedChange", "paired_change", "min_pairs"]

#: exact signed-rank distribution up to this many pairs, its normal approximation above (as scipy does)
_EXACT_MAX = 50

@dataclass(frozen=True)
class PairedChange:
    """The paired evidence: relative change (suspect / baseline - 1) with its interval, p-value and verdict."""

    n: int
    magnitude: float
    ci: tuple[float, float]
    p_value: float
    level: float
    verdict: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (non-finite numbers are None)."""
        return {"n_pairs": self.n, "magnitude": json_number(self.magnitude, 6),
                "ci": [json_number(self.ci[0], 6), json_number(self.ci[1], 6)],
                "p_value": json_number(self.p_value, 6), "level": self.level, "verdict": self.verdict,
                "reason": self.reason}


def min_pairs(level: float = 0.95) -> int:
    """Fewest pairs whose signed-rank interval at ``level`` exists: ``2 ** -n <= (1 - level) / 2``.

    >>> min_pairs(0.95), min_pairs(0.99)
    (6, 8)
    """
    return max(1, math.ceil(math.log2(2 / (1 - level)) - 1e-12))


def _null_pmf(ranks: Sequence[int]) -> np.ndarray:
    """P(T = t) of the signed-rank sum of integer ``ranks`` when each sign is + or - with probability 1/2."""
    pmf = np.zeros(int(sum(ranks)) + 1)
    pmf[0] = 1.0
    for r in ranks:
        shifted = np.zeros_like(pmf)
        shifted[r:] = pmf[:pmf.size - r]
        pmf = 0.5 * (pmf + shifted)
    return pmf


def _signed_rank_p(d: np.ndarray) -> float:
    """Two-sided p of Wilcoxon's signed-rank test of ``d`` (zeros dropped, tied ranks averaged).

    Exact (the permutation distribution of the rank sum given the ranks, ties included) up to 50 nonzero
    differences, normal with the tie correction above.
    """
    from scipy.stats import rankdata

    d = d[d != 0]
    if d.size == 0:
        return 1.0
    r2 = np.rint(2 * rankdata(np.abs(d))).astype(int)  # midranks are halves: doubled, they are integers
    t = int(r2[d > 0].sum())
    if d.size <= _EXACT_MAX:
        pmf = _null_pmf(r2)
        return float(min(1.0, 2 * min(pmf[:t + 1].sum(), pmf[t:].sum())))
    z = (t - r2.sum() / 2) / math.sqrt(float((r2.astype(float) ** 2).sum()) / 4)
    return float(min(1.0, 2 * norm.sf(abs(z))))


def _hodges_lehmann(d: np.ndarray, level: float) -> tuple[float, float, float]:
    """Hodges-Lehmann estimate (median of the Walsh averages) of ``d`` and its signed-rank interval at ``level``.

    The interval is ``[W_(k), W_(M+1-k)]`` of the ``M = n (n + 1) / 2`` sorted Walsh averages, ``k`` the largest
    count with ``P(T <= k - 1) <= (1 - level) / 2`` under the signed-rank null (exact up to 50 pairs): its coverage
    is at least ``level``. NaN bounds when ``n < min_pairs(level)``.
    """
    n = d.size
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    est = float(np.median(walsh))
    half = (1 - level) / 2
    if n <= _EXACT_MAX:
        cdf = np.cumsum(_null_pmf(range(1, n + 1)))
        k = int(np.searchsorted(cdf, half + 1e-12, side="right"))  # count of t with P(T <= t) <= half
    else:
        m = n * (n + 1) / 2
        k = int(math.floor(m / 2 - norm.ppf(1 - half) * math.sqrt(n * (n + 1) * (2 * n + 1) / 24)))
    if k < 1:
        return est, float("nan"), float("nan")
    return est, float(walsh[k - 1]), float(walsh[walsh.size - k])


def paired_change(baseline: Sequence[float], suspect: Sequence[float], *, level: float = 0.95,
                  higher_is_better: bool = False, magnitude_floor: float = 0.0) -> PairedChange:
    """Decide whether ``suspect`` is worse than ``baseline`` from paired runs (``baseline[i]`` with ``suspect[i]``).

    The evidence is the log ratio of each pair, ``d_i = log(suspect_i / baseline_i)``. The estimate is their
    Hodges-Lehmann estimate, the interval the signed-rank (Wilcoxon) interval at ``level`` that goes with it, and
    the p-value Wilcoxon's signed-rank test of ``d = 0``; all three are reported as relative changes
    (``exp(x) - 1``, ``+0.30`` = 30 % more). Why these, not a bootstrap: under "no change" a pair's two runs are
    exchangeable (the same code, run in alternating order), so ``d_i`` is symmetric about 0 and the test and the
    interval are exact for any number of pairs, while a percentile bootstrap of 6-20 pairs covers less than it
    says; and one run slowed by a burst of other load moves one rank, not the estimate (interference is one-sided
    and heavy-tailed on shared runners).

    Verdict: ``"not meaningful"`` with fewer than :func:`min_pairs` pairs (no interval at ``level`` exists);
    ``"confirmed"`` when the interval lies wholly on the worse side of 0, the test agrees (``p < 1 - level``) and
    the change is at least ``magnitude_floor``; else ``"not confirmed"`` (the reason says whether the pairs show
    no change, a change too small, or an improvement).

    Parameters
    ----------
    baseline, suspect : sequence of float, shape (n,)
        Positive values of the pairs' runs.
    level : float, default 0.95
    higher_is_better : bool, default False
    magnitude_floor : float, default 0

    Returns
    -------
    PairedChange

    Raises
    ------
    UsageError
        The sequences differ in length or hold a value that is not positive and finite.

    References
    ----------
    .. [1] J. L. Hodges, E. L. Lehmann, "Estimates of location based on rank tests", Ann. Math. Statist. 34(2),
       1963.
    .. [2] M. Hollander, D. A. Wolfe, E. Chicken, "Nonparametric Statistical Methods", 3rd ed., Wiley 2014,
       sec. 3.1-3.3 (signed-rank test, its interval from the Walsh averages).
    .. [3] L. Bulej et al., "Duet benchmarking: improving measurement accuracy in the cloud", EMSE 25, 2020
       (paired runs of two versions on one cloud machine).

    Examples
    --------
    >>> c = paired_change([1.0, 1.1, 0.9, 1.0, 1.05, 0.95], [1.3, 1.43, 1.17, 1.3, 1.365, 1.235])
    >>> c.verdict, round(c.magnitude, 3)
    ('confirmed', 0.3)
    """
    b = np.asarray(baseline, dtype=float)
    s = np.asarray(suspect, dtype=float)
    if b.shape != s.shape or b.ndim != 1:
        raise UsageError(f"paired runs need as many baseline as suspect values ({b.size} and {s.size})")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(s)) and np.all(b > 0) and np.all(s > 0)):
        raise UsageError("paired runs need positive finite values (their ratio is the evidence)")
    n = b.size
    need = min_pairs(level)
    nan = float("nan")
    if n < need:
        return PairedChange(n, float(np.exp(np.median(np.log(s / b))) - 1) if n else nan, (nan, nan), nan, level,
                            "not meaningful", f"not meaningful: {n} pair{'s' * (n != 1)}; a {100 * level:.4g}% "
                                              f"interval needs at least {need}")
    d = np.log(s / b)
    est, lo, hi = _hodges_lehmann(d, level)
    p = _signed_rank_p(d)
    mag, ci = math.expm1(est), (math.expm1(lo), math.expm1(hi))
    worse_side = lo > 0 if not higher_is_better else hi < 0
    better_side = hi < 0 if not higher_is_better else lo > 0
    if worse_side and p < 1 - level:
        if abs(mag) < magnitude_floor:
            verdict, why = "not confirmed", f"worse, but by less than the magnitude floor {magnitude_floor:.1%}"
        else:
            verdict, why = "confirmed", "the suspect is worse in the paired runs"
    elif better_side and p < 1 - level:
        verdict, why = "not confirmed", "the suspect is better in the paired runs"
    else:
        verdict, why = "not confirmed", f"no change the pairs can tell: the {100 * level:.4g}% interval holds 0"
    return PairedChange(n, mag, ci, p, level, verdict, why)
