"""Metric-change statistics: known truth, null cases, direction, invariances, a slow reference."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.stats import wilcoxon

from quiho.errors import UsageError
from quiho.profile import AnalysisOptions
from quiho.profile.stats import cliffs_delta, metric_change


def _runs(ratios, reps=3, noise=0.0, seed=0, base=None, va="a", vb="b"):
    rng = np.random.default_rng(seed)
    base = base if base is not None else np.linspace(1.0, 3.0, len(ratios))
    rows = []
    for i, (r, b0) in enumerate(zip(ratios, base, strict=True)):
        for _ in range(reps):
            rows.append((f"h{i}", va, b0 * np.exp(rng.normal(0, noise))))
            rows.append((f"h{i}", vb, b0 * r * np.exp(rng.normal(0, noise))))
    return pd.DataFrame(rows, columns=["host", "version", "value"])


def test_exact_recovery_noise_free():
    mc = metric_change(_runs([1.3] * 6), version_a="a", version_b="b")
    assert mc.verdict == "regression"
    assert mc.change == pytest.approx(0.3)
    assert mc.ci_low == pytest.approx(0.3) and mc.ci_high == pytest.approx(0.3)
    assert mc.wilcoxon_p == pytest.approx(2 / 64)  # exact two-sided, n = 6, all positive
    assert mc.rank_biserial == pytest.approx(1.0)
    assert mc.hosts_worse == 6 and mc.hosts_better == 0


def test_direction_follows_higher_is_better():
    runs = _runs([1.3] * 6)
    assert metric_change(runs, version_a="a", version_b="b", higher_is_better=True).verdict == "improvement"
    faster = _runs([0.7] * 6)
    assert metric_change(faster, version_a="a", version_b="b").verdict == "improvement"
    assert metric_change(faster, version_a="a", version_b="b", higher_is_better=True).verdict == "regression"


def test_constant_is_no_change():
    mc = metric_change(_runs([1.0] * 6), version_a="a", version_b="b")
    assert mc.verdict == "no-change"
    assert mc.change == 0 and mc.wilcoxon_p == 1.0


def test_small_noise_same_version_is_no_change_and_below_floor_is_no_change():
    mc = metric_change(_runs([1.0] * 8, noise=0.01, seed=3), version_a="a", version_b="b")
    assert mc.verdict == "no-change", mc.reason
    small = metric_change(_runs([1.02] * 8), version_a="a", version_b="b", options=AnalysisOptions(min_change=0.05))
    assert small.verdict == "no-change" and "smaller than the 5% floor" in small.reason
    assert metric_change(_runs([1.02] * 8), version_a="a", version_b="b",
                         options=AnalysisOptions(min_change=0.01)).verdict == "regression"


def test_heavy_noise_is_inconclusive_not_a_change():
    mc = metric_change(_runs([1.0] * 6, noise=0.3, seed=1), version_a="a", version_b="b")
    assert mc.verdict == "inconclusive", mc.reason
    assert mc.ci_high - mc.ci_low > 0.1


def test_too_few_hosts_is_not_meaningful():
    mc = metric_change(_runs([1.5, 1.5]), version_a="a", version_b="b")
    assert mc.verdict == "inconclusive" and "not meaningful" in mc.reason
    none = metric_change(_runs([1.5]).query("version == 'a'"), version_a="a", version_b="b")
    assert none.verdict == "inconclusive" and none.hosts_used == 0
    assert none.excluded_hosts == {"h0": "no successful run of b"}


def test_invariant_to_scale_and_swap_reverses_sign():
    runs = _runs([1.2, 1.25, 1.3, 1.1, 1.4, 1.35], noise=0.02, seed=2)
    mc = metric_change(runs, version_a="a", version_b="b")
    scaled = metric_change(runs.assign(value=runs["value"] * 1000), version_a="a", version_b="b")
    assert scaled.change == pytest.approx(mc.change) and scaled.wilcoxon_p == pytest.approx(mc.wilcoxon_p)
    swapped = metric_change(runs, version_a="b", version_b="a")
    assert np.log1p(swapped.change) == pytest.approx(-np.log1p(mc.change))
    assert swapped.verdict == "improvement" and mc.verdict == "regression"


def test_per_host_tests_match_reference():
    runs = _runs([1.5] * 5, reps=5, noise=0.01)
    mc = metric_change(runs, version_a="a", version_b="b")
    for h in mc.per_host:
        assert h.cliffs_delta == 1.0
        assert h.mannwhitney_p == pytest.approx(2 / 252)  # exact: 1 of C(10,5) orderings each side
    assert mc.hosts_significant == 5


def test_cliffs_delta_against_brute_force():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=7), rng.normal(0.5, size=5)
    ref = sum(np.sign(y - x) for x, y in itertools.product(a, b)) / (len(a) * len(b))
    assert cliffs_delta(a, b) == pytest.approx(ref)


def test_wilcoxon_p_is_scipys_on_log_ratios():
    runs = _runs([1.2, 0.9, 1.3, 1.1, 1.05, 1.4, 0.95], seed=4)
    mc = metric_change(runs, version_a="a", version_b="b")
    ref = wilcoxon(np.log([1.2, 0.9, 1.3, 1.1, 1.05, 1.4, 0.95])).pvalue
    assert mc.wilcoxon_p == pytest.approx(ref)


def test_bad_input():
    with pytest.raises(UsageError, match="column"):
        metric_change(pd.DataFrame({"host": []}), version_a="a", version_b="b")
    with pytest.raises(ValidationError, match="min_change"):  # nonsensical thresholds: refused by the options
        metric_change(_runs([1.0] * 3), version_a="a", version_b="b", options=AnalysisOptions(min_change=2.0))


def test_seeded_bootstrap_is_reproducible():
    runs = _runs([1.2, 0.9, 1.3, 1.1, 1.05, 1.4], noise=0.05, seed=5)
    x = metric_change(runs, version_a="a", version_b="b", options=AnalysisOptions(random_state=7))
    y = metric_change(runs, version_a="a", version_b="b", options=AnalysisOptions(random_state=7))
    assert (x.ci_low, x.ci_high) == (y.ci_low, y.ci_high)


def test_van_elteren_one_stratum_is_exact_mann_whitney():
    from scipy.stats import mannwhitneyu

    from quiho.profile.stats import van_elteren

    rng = np.random.default_rng(1)
    a, b = rng.normal(size=5), rng.normal(1.0, size=4)
    _, p = van_elteren([(a, b)])
    assert p == pytest.approx(mannwhitneyu(b, a, method="exact").pvalue)
    _, p_same = van_elteren([(np.ones(3), np.ones(3))])
    assert p_same == 1.0


def test_three_hosts_use_the_stratified_test():
    runs = _runs([1.5, 1.6, 1.4], reps=2, noise=0.01, seed=6)
    mc = metric_change(runs, version_a="a", version_b="b")
    assert mc.test == "van-elteren" and mc.wilcoxon_p == pytest.approx(0.25)  # signed ranks cannot go lower
    assert mc.stratified_p == pytest.approx(2 / 216)  # all 3 hosts at the extreme of C(4,2) = 6 splits
    assert mc.verdict == "regression"
    six = metric_change(_runs([1.5] * 6, reps=2), version_a="a", version_b="b")
    assert six.test == "wilcoxon"


def test_van_elteren_extreme_with_unequal_weights_is_not_zero():
    from quiho.profile.stats import van_elteren

    pairs = [(np.array([1.0, 1.1, 1.2]), np.array([2.0, 2.1, 2.2]))] * 6
    _, p = van_elteren(pairs)
    assert p == pytest.approx(2 / 20**6)
