"""Levels of a history compared with the rounds of every revision: a one-way random-effects model.

A revision's value ``y_ij`` (round ``j`` of revision ``i``) is ``mu + a_i + e_ij`` with ``a_i ~ N(0, s_b^2)``
(builds, runs and machines differ) and ``e_ij ~ N(0, s_w^2)`` (rounds of one run differ), so the mean of a
revision measured ``n`` times varies by ``s_b^2 + s_w^2 / n``. Both components are estimated from the baseline
revisions; a benchmark whose revision means vary no more than their rounds predict gets an interval as narrow as
its rounds allow, one whose builds scatter gets the scatter of its builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from quiho.errors import UsageError
from quiho.history._model import History, Summary
from quiho.history.sources import direction_of_unit

__all__ = ["WITHIN_RULES", "LOCATIONS", "DEFAULT_LOCATION", "VarianceComponents", "LevelComparison",
           "variance_components", "compare_levels", "located", "revision_location"]

#: values of ``compare_levels(..., test_within=)``: the round variance a tested revision gets
WITHIN_RULES = ("own", "pooled", "larger")

#: the gate's per-revision location (:class:`~quiho.history.gate.GateOptions`), chosen by docs/history-gate.md's
#: protocol
DEFAULT_LOCATION = "min"

#: per-revision location estimators (:func:`located`) -> the summary statistics each reads, first reported first.
#: ``"rounds"`` keeps every round (the random-effects model on the rounds' means).
LOCATIONS: dict[str, tuple[str, ...]] = {
    "rounds": (),
    "min": ("min", "q1", "median", "mean"),
    "q25": ("q1", "median", "mean"),
    "median": ("median", "mean"),
    "mean": ("mean", "median"),
}


#: a summary statistic read at the other end of the rounds, for a unit where higher is better
_MIRROR = {"min": "max", "q1": "q3"}


def revision_location(samples: np.ndarray, summary: Summary | None, location: str, better: str = "lower") -> float:
    """One revision's value by the estimator ``location`` (a key of :data:`LOCATIONS` other than ``"rounds"``).

    From the rounds when they are kept; from a harness's summary when only it is (its first reported statistic in
    :data:`LOCATIONS` order: asv reports quartiles but no minimum, so ``"min"`` reads its first quartile); a
    revision with one value and no summary is that value whatever the estimator. ``"min"`` and ``"q25"`` are the
    *best* end of the rounds: for a unit where higher is ``better`` (a rate), the maximum and the 75th percentile,
    because interference lowers a rate as it lengthens a time.
    """
    hi = better == "higher"
    if summary is not None:
        for stat in LOCATIONS[location]:
            if not np.isnan(v := summary.get(_MIRROR.get(stat, stat) if hi else stat)):
                return v
    if location == "min":
        return float(samples.max() if hi else samples.min())
    if location == "q25":
        return float(np.quantile(samples, 0.75 if hi else 0.25))
    if location == "median":
        return float(np.median(samples))
    return float(samples.mean())


def located(history: History, location: str) -> History:
    """``history`` with one value per revision, its location by ``location`` (``"rounds"``: unchanged).

    Interference on a shared machine only ever adds time (or takes rate), so an order statistic at the best end of
    a revision's rounds (:func:`revision_location`, by the unit's direction) survives it where their mean does not;
    each revision then counts as one value, and the gate's comparisons become prediction intervals over revisions
    (builds, runs and their interference all scatter between them).

    Raises
    ------
    UsageError
        ``location`` is not one of :data:`LOCATIONS`.

    References
    ----------
    .. [1] J. Chen, J. Revels, "Robust benchmarking in noisy environments", HPEC 2016 (the minimum of timing
       samples as the estimator under one-sided interference; BenchmarkTools.jl).
    .. [2] C. Laaber, J. Scheuner, P. Leitner, "Software microbenchmarking in the cloud. How bad is it really?",
       Empirical Software Engineering 24, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from quiho.history import History
    >>> h = History("s", ("a", "b"), np.arange(2), (np.array([1.0, 1.5, 3.0]), np.array([1.1, 1.2])))
    >>> located(h, "min").values.tolist()
    [1.0, 1.1]
    """
    if location not in LOCATIONS:
        raise UsageError(f"location must be one of {', '.join(LOCATIONS)}, not {location!r}")
    if location == "rounds":
        return history
    sums = history.summaries or (None,) * len(history)
    better = direction_of_unit(history.unit)
    vals = [revision_location(s, m, location, better) for s, m in zip(history.samples, sums, strict=True)]
    return History(history.name, history.revisions, history.orders, tuple(np.array([v]) for v in vals),
                   history.unit, history.config, history.missing)


@dataclass(frozen=True)
class VarianceComponents:
    """Between- and within-revision variance of a baseline (ANOVA estimates).

    ``ms_means`` is the variance of the ``k`` revision means (``k - 1`` degrees of freedom), ``within`` the pooled
    variance of the rounds about their revision's mean (``df_within`` degrees of freedom, 0 when every revision
    has one value), ``mean_inv_n`` the mean of ``1 / n_i`` over the baseline revisions and ``between`` =
    ``max(0, ms_means - mean_inv_n * within)``; ``truncated`` says the max took 0.
    """

    k: int
    ms_means: float
    within: float
    df_within: int
    mean_inv_n: float
    between: float
    truncated: bool


@dataclass(frozen=True)
class LevelComparison:
    """A tested level against a reference level: ``magnitude = (test - ref) / |ref|`` with its interval and p."""

    reference: float
    test: float
    magnitude: float
    ci: tuple[float, float]
    p_value: float
    df: float
    n_reference: int


def variance_components(base: Sequence[np.ndarray]) -> VarianceComponents:
    """Estimate ``s_b^2`` and ``s_w^2`` from the baseline revisions' rounds (``base``, at least two revisions).

    A negative between-revision estimate is set to 0, the usual
    ANOVA rule (the revision means vary no more than the rounds explain).

    References
    ----------
    .. [1] S. R. Searle, G. Casella, C. E. McCulloch, "Variance Components", Wiley 1992, ch. 3 (ANOVA estimation
       in the one-way classification, unbalanced data) and sec. 3.5 (negative estimates).
    .. [2] T. Kalibera, R. Jones, "Rigorous benchmarking in reasonable time", ISMM 2013 (random effects per
       level of repetition in benchmark experiments).
    """
    means = np.array([float(s.mean()) for s in base])
    k = means.size
    ms_means = float(means.var(ddof=1)) if k > 1 else float("nan")
    ss = sum(float(((s - s.mean()) ** 2).sum()) for s in base)
    df_w = sum(s.size - 1 for s in base)
    within = ss / df_w if df_w > 0 else 0.0
    h = float(np.mean([1.0 / s.size for s in base])) if k else float("nan")
    raw = ms_means - h * within
    return VarianceComponents(k, ms_means, within, int(df_w), h, max(raw, 0.0), bool(raw < 0))


def compare_levels(vc: VarianceComponents, ref: Sequence[np.ndarray], test: Sequence[np.ndarray],
                   alpha: float, *, test_within: str = "own",
                   extra: tuple[float, float] | None = None) -> LevelComparison:
    """Compare the mean of ``test``'s revision means with ``ref``'s, using the variance components ``vc``.

    A level of ``k`` revisions with rounds ``n_i`` has variance ``(s_b^2 + s_w^2 mean(1/n_i)) / k``; the
    difference of two levels adds both. The tested revisions' round variance is their own (``s_i^2 / n_i``,
    when they have two rounds or more: a change may make a benchmark noisier, Welch's rule), the reference's
    the pooled ``s_w^2`` of ``vc``. The degrees of freedom are Welch-Satterthwaite's for that sum written in
    its mean squares (``k - 1``, ``df_within``, ``n_i - 1``); with ``s_b^2`` estimated 0 its mean square drops
    out. The interval is ``1 - alpha``, the p-value two-sided.

    ``test_within`` sets the tested revisions' round variance: ``"own"`` (above); ``"pooled"``: ``s_w^2 / n_i``
    with ``df_within``, the model's common round variance (a revision of 3 rounds estimates its own variance with
    2 degrees of freedom: by chance near 0, or a t quantile near 10 at 99 %); ``"larger"``: per tested revision the
    larger of its own ``s_i^2 / n_i`` and ``s_w^2 / n_i``, with the degrees of freedom of the one used (a noisier
    change still widens the interval, a revision whose few rounds are tight by chance is not believed). Every
    ``s_w^2`` term is one mean square, so with ``"pooled"`` or ``"larger"`` their coefficients are summed before
    Satterthwaite's rule (``"own"`` keeps today's separate terms for one-round tested revisions).

    ``extra`` is one more independent variance term of the difference with its degrees of freedom, e.g. the error
    of a machine factor removed from the tested level (:func:`quiho.history.normalise.check_newest_normalised`).

    References
    ----------
    .. [1] F. E. Satterthwaite, "An approximate distribution of estimates of variance components", Biometrics
       Bulletin 2(6), 1946.
    .. [2] B. L. Welch, "The generalization of 'Student's' problem when several different population variances
       are involved", Biometrika 34, 1947.
    .. [3] S. R. Searle, G. Casella, C. E. McCulloch, "Variance Components", Wiley 1992, ch. 3 (the one-way
       random-effects model's common within-revision variance).
    """
    if test_within not in WITHIN_RULES:
        raise UsageError(f"test_within must be one of {', '.join(WITHIN_RULES)}, not {test_within!r}")
    mr = float(np.mean([s.mean() for s in ref]))
    mt = float(np.mean([s.mean() for s in test]))
    kr, kt = len(ref), len(test)
    c_b = 1 / kr + 1 / kt
    c_ref = float(np.mean([1 / s.size for s in ref])) / kr
    # (variance term, degrees of freedom) of each mean square in the sum
    if test_within == "own":
        own = [(float(s.var(ddof=1)) / s.size / kt**2, s.size - 1.0) if s.size > 1 else
               (vc.within / s.size / kt**2, float(vc.df_within)) for s in test]
        c_w = 0.0
    else:  # tested revisions on the pooled s_w^2 add to its coefficient c_w: one mean square, one term
        own, c_w = [], 0.0
        for s in test:
            mine = float(s.var(ddof=1)) / s.size if s.size > 1 else -1.0
            if test_within == "larger" and mine > vc.within / s.size:
                own.append((mine / kt**2, s.size - 1.0))
            else:
                c_w += 1 / s.size / kt**2
    if vc.truncated or vc.k < 2:
        terms = [((c_ref + c_w) * vc.within, float(vc.df_within)), *own]
    else:  # c_b * s_b^2 + c_ref * s_w^2 = c_b * ms_means + (c_ref - c_b * h) * s_w^2
        terms = [(c_b * vc.ms_means, vc.k - 1.0),
                 ((c_ref - c_b * vc.mean_inv_n + c_w) * vc.within, float(vc.df_within)), *own]
    if extra is not None:
        terms.append(extra)
    var = sum(t for t, _ in terms)
    den = sum(t * t / df for t, df in terms if df > 0 and t != 0)
    df = var * var / den if den > 0 else float(max(vc.k - 1, vc.df_within))
    return _interval(mr, mt, max(var, 0.0), df, kr, alpha)


def _interval(mr: float, mt: float, var: float, df: float, kr: int, alpha: float) -> LevelComparison:
    """Magnitude ``(mt - mr) / |mr|``, its ``1 - alpha`` t interval and two-sided p, from the difference's variance."""
    diff, nan = mt - mr, float("nan")
    scale = max(abs(mr), abs(mt), 1e-300)
    half = float(np.sqrt(var))
    if not df >= 1:
        return LevelComparison(mr, mt, diff / abs(mr) if mr else nan, (nan, nan), nan, df, kr)
    if half <= 1e-12 * scale:
        p = 0.0 if abs(diff) > 1e-9 * scale else 1.0
    else:
        p = float(2 * stats.t.sf(abs(diff) / half, df))
    tq = float(stats.t.ppf(1 - alpha / 2, df))
    if mr == 0:
        return LevelComparison(mr, mt, nan, (nan, nan), p, df, kr)
    return LevelComparison(mr, mt, diff / abs(mr), ((diff - tq * half) / abs(mr), (diff + tq * half) / abs(mr)),
                           p, df, kr)
