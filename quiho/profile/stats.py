"""Whether the metric changed between two versions, by how much, and how sure we are.

The unit of evidence is the *host*: both versions ran on every host, interleaved,
so the per-host ratio ``median(v2) / median(v1)`` cancels what the host is
(quota, co-runner, hardware) and most of the drift. Across hosts:

- the estimate is the median per-host ratio (as a relative change, ``+0.25`` = 25 % higher);
- its confidence interval is a paired bootstrap over hosts (percentile, hosts resampled
  with replacement, ``n_boot`` draws, seeded);
- the test is Wilcoxon's signed-rank test on the per-host log ratios (exact for
  n ≤ 50; with 6 hosts the smallest two-sided p is 2/64 = 0.031). With fewer than
  ``WILCOXON_MIN_HOSTS`` = 6 hosts it cannot reach p < 0.05 at all (5 hosts: 0.0625),
  so the verdict then rests on van Elteren's stratified rank-sum test instead: the
  repetitions of both versions are ranked within each host and the rank sums
  combined with weights 1/(n_h + 1); its p-value is exact (the per-host permutation
  distributions convolved). That test treats run-to-run variation as the noise, so
  it says "changed on these hosts", not "changes on hosts like these"; both p-values
  are always reported;
- the effect size is the matched-pairs rank-biserial correlation (−1 … 1).

Per host, Mann-Whitney's U test on the repetitions with Cliff's delta as the effect
size says on which hosts the change is visible on its own (with 3 repetitions per
version the smallest two-sided p is 0.1, so per-host tests are evidence, not the verdict).

The verdict, in order: fewer than ``min_hosts`` hosts with both versions →
``inconclusive`` (not meaningful); significant (p < alpha and the CI excludes 0)
and ``|estimate| ≥ min_change`` → ``regression`` or ``improvement`` depending on
``higher_is_better``; significant but below the floor → ``no-change`` (detectable
but smaller than the floor); CI inside ``±min_change`` → ``no-change`` (any change is
smaller than the floor); otherwise ``inconclusive`` (the data cannot rule out a
change as large as the floor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu, wilcoxon

from quiho._text import json_number
from quiho.errors import UsageError
from quiho.profile.options import AnalysisOptions

__all__ = ["HostChange", "MetricChange", "metric_change", "VERDICTS", "van_elteren", "WILCOXON_MIN_HOSTS"]

VERDICTS = ("regression", "improvement", "no-change", "inconclusive")
#: Decimals of the numbers in the JSON document.
_DIGITS = 6
#: Fewer hosts than this: the exact signed-rank test cannot reach p < 0.05 (5 hosts: 2/32).
WILCOXON_MIN_HOSTS = 6


@dataclass(frozen=True)
class HostChange:
    """One host: both versions' repetitions and the per-host test."""

    host: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    cov_a: float
    cov_b: float
    mannwhitney_p: float
    cliffs_delta: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {k: json_number(v, _DIGITS) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class MetricChange:
    """The metric verdict with its magnitude, CI, p-value and the per-host data."""

    verdict: str
    reason: str
    change: float
    ci_low: float
    ci_high: float
    confidence: float
    wilcoxon_p: float
    rank_biserial: float
    hosts_used: int
    hosts_worse: int
    hosts_better: int
    hosts_significant: int
    min_change: float
    alpha: float
    unit: str
    higher_is_better: bool
    per_host: tuple[HostChange, ...]
    excluded_hosts: dict[str, str] = field(default_factory=dict)
    n_boot: int = 0
    stratified_p: float = float("nan")
    test: str = "wilcoxon"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (relative changes as fractions: 0.25 = +25 %)."""
        return {
            "verdict": self.verdict, "reason": self.reason, "change": json_number(self.change, _DIGITS),
            "ci": [json_number(self.ci_low, _DIGITS), json_number(self.ci_high, _DIGITS)],
            "confidence": self.confidence, "wilcoxon_p": json_number(self.wilcoxon_p, _DIGITS),
            "rank_biserial": json_number(self.rank_biserial, _DIGITS),
            "hosts_used": self.hosts_used, "hosts_worse": self.hosts_worse, "hosts_better": self.hosts_better,
            "hosts_significant": self.hosts_significant, "min_change": self.min_change, "alpha": self.alpha,
            "unit": self.unit, "higher_is_better": self.higher_is_better, "n_boot": self.n_boot,
            "stratified_p": json_number(self.stratified_p, _DIGITS), "test": self.test,
            "per_host": [h.to_dict() for h in self.per_host], "excluded_hosts": dict(self.excluded_hosts),
        }


def _cov(v: np.ndarray) -> float:
    return float(np.std(v) / np.mean(v)) if len(v) > 1 and np.mean(v) else float("nan")


def cliffs_delta(a: np.ndarray, b: np.ndarray) -> float:
    """Cliff's delta: P(b > a) − P(b < a) over all pairs (−1 … 1; 0 = no shift)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not len(a) or not len(b):
        return float("nan")
    d = np.sign(b[:, None] - a[None, :])
    return float(d.mean())


def _rank_sum_distribution(n_a: int, n_b: int, pooled: np.ndarray) -> dict[float, float]:
    """Exact permutation distribution of B's rank sum within one host (midranks for ties)."""
    from itertools import combinations
    from math import comb

    from scipy.stats import rankdata

    ranks = rankdata(pooled)
    n = n_a + n_b
    dist: dict[float, float] = {}
    w = 1.0 / comb(n, n_b)
    for idx in combinations(range(n), n_b):
        k = round(float(ranks[list(idx)].sum()), 6)
        dist[k] = dist.get(k, 0.0) + w
    return dist


def van_elteren(pairs: list[tuple[np.ndarray, np.ndarray]], max_support: int = 200_000) -> tuple[float, float]:
    """Van Elteren's stratified rank-sum test, exact two-sided p-value.

    Parameters
    ----------
    pairs : list of (a, b)
        Per stratum (host), the repetitions of version A and of version B.
    max_support : int
        Give up (NaN) when the convolved distribution would exceed this many points.

    Returns
    -------
    statistic, p_value
        Weighted sum of B's within-host rank sums minus their expectation (positive: B larger),
        and the exact two-sided p-value under "no change within any host".

    References
    ----------
    van Elteren, P. H. (1960). On the combination of independent two-sample tests of Wilcoxon.
    Bulletin of the International Statistical Institute 37, 351-361.
    """
    total: dict[float, float] = {0.0: 1.0}
    obs = 0.0
    for a, b in pairs:
        a, b = np.asarray(a, float), np.asarray(b, float)
        if not len(a) or not len(b):
            continue
        n = len(a) + len(b)
        if n > 20:
            return float("nan"), float("nan")
        w = 1.0 / (n + 1)
        e = len(b) * (n + 1) / 2
        pooled = np.concatenate([b, a])
        from scipy.stats import rankdata

        obs += w * (float(rankdata(pooled)[: len(b)].sum()) - e)
        dist = _rank_sum_distribution(len(a), len(b), pooled)
        new: dict[float, float] = {}
        for t, pt in total.items():
            for k, pk in dist.items():
                key = round(t + w * (k - e), 6)
                new[key] = new.get(key, 0.0) + pt * pk
        if len(new) > max_support:
            return float("nan"), float("nan")
        total = new
    if obs == 0 and len(total) == 1:
        return 0.0, 1.0
    # keys are rounded to 1e-6: compare with a tolerance above that rounding
    p = sum(pt for t, pt in total.items() if abs(t) >= abs(obs) - 1e-5)
    return float(obs), float(min(1.0, p))


def metric_change(
    runs: pd.DataFrame,
    *,
    version_a: str,
    version_b: str,
    higher_is_better: bool = False,
    unit: str = "",
    options: AnalysisOptions | None = None,
) -> MetricChange:
    """Test whether the metric of ``version_b`` differs from ``version_a``.

    Parameters
    ----------
    runs : DataFrame
        Successful runs, columns ``host``, ``version``, ``value`` (one row per repetition).
    version_a, version_b : str
        The baseline and the candidate.
    higher_is_better : bool, default False
        Direction of the metric (False for run times).
    unit : str
        Unit of ``value`` (reported only).
    options : AnalysisOptions, optional
        The test's settings (default ``AnalysisOptions()``): ``min_change`` (magnitude floor as a fraction,
        default 0.05: smaller changes are ``no-change``), ``alpha`` (significance level of the paired test,
        0.05), ``confidence`` (level of the bootstrap interval, 0.95), ``n_boot`` (bootstrap draws over hosts,
        4000), ``min_hosts`` (fewer hosts with both versions make the verdict ``inconclusive``, 3) and
        ``random_state`` (seed of the bootstrap, 0).

    Returns
    -------
    MetricChange

    Raises
    ------
    UsageError
        Missing columns.

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
    Mann, H. B., Whitney, D. R. (1947). Ann. Math. Statist. 18(1).
    Kerby, D. S. (2014). The simple difference formula: an approach to teaching nonparametric
    correlation. Comprehensive Psychology 3 (matched-pairs rank-biserial correlation).
    Efron, B., Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13 (percentile interval).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(f"h{i}", v, t * (1.3 if v == "new" else 1.0)) for i, t in enumerate([1, 2, 3, 4, 5, 6])
    ...         for v in ("old", "new") for _ in range(3)]
    >>> mc = metric_change(pd.DataFrame(rows, columns=["host", "version", "value"]),
    ...                    version_a="old", version_b="new", options=AnalysisOptions(min_change=0.1))
    >>> mc.verdict, round(mc.change, 2)
    ('regression', 0.3)
    """
    missing = {"host", "version", "value"} - set(runs.columns)
    if missing:
        raise UsageError(f"runs lack column(s) {', '.join(sorted(missing))}")
    o = options or AnalysisOptions()
    min_change, alpha, confidence, n_boot = o.min_change, o.alpha, o.confidence, o.n_boot
    df = runs[runs["version"].isin([version_a, version_b])].copy()
    df["value"] = df["value"].astype(float)
    per_host, excluded, pairs = _per_host(df, version_a, version_b)
    n = len(per_host)
    common = dict(
        min_change=min_change, alpha=alpha, confidence=confidence, unit=unit, higher_is_better=higher_is_better,
        per_host=tuple(per_host), excluded_hosts=excluded, n_boot=n_boot,
    )
    if n == 0:
        return MetricChange("inconclusive", "not meaningful: no host ran both versions successfully",
                            float("nan"), float("nan"), float("nan"), wilcoxon_p=float("nan"),
                            rank_biserial=float("nan"), hosts_used=0, hosts_worse=0, hosts_better=0,
                            hosts_significant=0, **common)  # type: ignore[arg-type]
    logr = np.log([h.ratio for h in per_host])
    est, lo, hi = _bootstrap_median(logr, confidence, n_boot, o.random_state)
    p_w, rb = _signed_rank(logr)
    _, p_strat = van_elteren(pairs)
    test = "wilcoxon" if n >= WILCOXON_MIN_HOSTS or not np.isfinite(p_strat) else "van-elteren"
    p_test = p_w if test == "wilcoxon" else p_strat
    worse_sign = 1 if not higher_is_better else -1
    hosts_worse = int(np.sum(np.sign(logr) == worse_sign))
    hosts_better = int(np.sum(np.sign(logr) == -worse_sign))
    sig_hosts = int(sum(1 for h in per_host if np.isfinite(h.mannwhitney_p) and h.mannwhitney_p < alpha))
    direction = "higher" if est > 0 else "lower"
    facts = (
        f"median per-host change {est:+.1%} ({confidence:.0%} bootstrap CI {lo:+.1%} … {hi:+.1%}) over {n} hosts; "
        f"Wilcoxon signed-rank p = {p_w:.3g}, rank-biserial r = {rb:+.2f}; van Elteren stratified p = "
        f"{p_strat:.3g}{' (the test used: too few hosts for signed ranks)' if test == 'van-elteren' else ''}; "
        f"{direction if est else 'changed'} on {max(hosts_worse, hosts_better) if est else 0} of {n} hosts"
    )
    verdict, why = _verdict(n, o.min_hosts, p_test < alpha and (lo > 0 or hi < 0), est, lo, hi, min_change,
                            higher_is_better)
    return MetricChange(
        verdict, f"{why} ({facts})", est, lo, hi, wilcoxon_p=p_w, rank_biserial=rb, hosts_used=n,
        hosts_worse=hosts_worse, hosts_better=hosts_better, hosts_significant=sig_hosts, stratified_p=p_strat,
        test=test, **common,  # type: ignore[arg-type]
    )


def _per_host(
    df: pd.DataFrame, version_a: str, version_b: str
) -> tuple[list[HostChange], dict[str, str], list[tuple[np.ndarray, np.ndarray]]]:
    """Per-host medians, ratio, Mann-Whitney and Cliff's delta; hosts left out (and why); (a, b) value pairs."""
    per_host: list[HostChange] = []
    excluded: dict[str, str] = {}
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for host, sub in df.groupby("host", sort=True):
        a = sub.loc[sub["version"] == version_a, "value"].to_numpy()
        b = sub.loc[sub["version"] == version_b, "value"].to_numpy()
        if not len(a) or not len(b):
            excluded[str(host)] = f"no successful run of {version_a if not len(a) else version_b}"
            continue
        if np.median(a) <= 0 or np.median(b) <= 0:
            excluded[str(host)] = "non-positive metric: a ratio is undefined"
            continue
        p = float(mannwhitneyu(b, a, alternative="two-sided").pvalue) if len(a) > 1 and len(b) > 1 else float("nan")
        per_host.append(HostChange(
            host=str(host), n_a=len(a), n_b=len(b), median_a=float(np.median(a)), median_b=float(np.median(b)),
            ratio=float(np.median(b) / np.median(a)), cov_a=_cov(a), cov_b=_cov(b), mannwhitney_p=p,
            cliffs_delta=cliffs_delta(a, b),
        ))
        pairs.append((a, b))
    return per_host, excluded, pairs


def _bootstrap_median(logr: np.ndarray, confidence: float, n_boot: int, random_state: int) -> tuple[float, float,
                                                                                                     float]:
    """Median relative change over hosts and its percentile bootstrap interval (hosts resampled)."""
    n = len(logr)
    est = float(np.expm1(np.median(logr)))
    rng = np.random.default_rng(random_state)
    idx = rng.integers(0, n, size=(n_boot, n))
    boot = np.median(logr[idx], axis=1)
    q = (1 - confidence) / 2
    lo, hi = (float(np.expm1(x)) for x in np.quantile(boot, [q, 1 - q]))
    return est, lo, hi


def _signed_rank(logr: np.ndarray) -> tuple[float, float]:
    """Wilcoxon signed-rank p on the log ratios and the matched-pairs rank-biserial correlation."""
    nz = logr[logr != 0]
    if len(nz) < 1:
        return 1.0, 0.0
    p_w = float(wilcoxon(logr, zero_method="wilcox", alternative="two-sided").pvalue)
    ranks = pd.Series(np.abs(nz)).rank().to_numpy()
    return p_w, float((ranks[nz > 0].sum() - ranks[nz < 0].sum()) / ranks.sum())


def _verdict(
    n: int, min_hosts: int, significant: bool, est: float, lo: float, hi: float, min_change: float,
    higher_is_better: bool,
) -> tuple[str, str]:
    """The verdict and its reason from the test result, the estimate, its interval and the floor."""
    floor = f"±{min_change:.0%}"
    if n < min_hosts:
        return "inconclusive", f"not meaningful: only {n} host(s) ran both versions (need {min_hosts})"
    if significant and abs(est) >= min_change:
        worse = (est > 0) != higher_is_better
        return ("regression" if worse else "improvement",
                f"the metric is {abs(est):.1%} {'worse' if worse else 'better'} ({'higher' if est > 0 else 'lower'} "
                f"{'is better' if higher_is_better else 'is worse'}), beyond the {min_change:.0%} floor")
    if significant:
        return "no-change", f"a change of {est:+.1%} is statistically detectable but smaller than the " \
                            f"{min_change:.0%} floor"
    if -min_change < lo and hi < min_change:
        return "no-change", f"the whole confidence interval lies within the {floor} floor"
    return "inconclusive", (f"no significant change, but the confidence interval reaches beyond the {floor} floor: "
                            f"a change of that size cannot be ruled out (more hosts or repetitions would narrow it)")
