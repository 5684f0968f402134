import numpy as np
import pandas as pd
import pytest

from quiho.datasets.history import (
    ar_noise_history,
    bimodal_history,
    heavy_tail_history,
    outlier_history,
    step_history,
    trend_history,
)
from quiho.errors import HistoryError, UsageError
from quiho.history import DETECTORS, ChangePoint, History, detect, make_detector
from quiho.history.detectors._auto import pettitt, step_vs_trend_p

ALL = sorted(DETECTORS)
# detectors that look at a local window or test against a trend: they must not split slow drift
DRIFT_SAFE = ["auto", "auto-ar1", "ttest", "mannwhitney", "gmm"]
# detectors with a bimodal-aware or rank-based noise model: no false alarm on banding
BAND_SAFE = ["auto", "auto-ar1", "gmm", "ttest"]


def test_registry_has_every_issue_method():
    assert {"auto", "auto-ar1", "cusum", "binseg", "bottomup", "gmm", "ttest", "mannwhitney"} <= set(DETECTORS)
    with pytest.raises(UsageError, match="unknown detector"):
        make_detector("nope")
    with pytest.raises(UsageError, match="detector 'cusum'"):
        make_detector("cusum", bogus=1)


@pytest.mark.parametrize("method", ALL)
def test_exact_recovery_noise_free(method):
    case = step_history(120, (40, 80), (100.0, 130.0, 110.0), noise=0)
    d = detect(case.values, method)
    assert [c.index for c in d.change_points] == [40, 80]
    first, second = d.change_points
    assert first.before == pytest.approx(100) and first.after == pytest.approx(130)
    assert first.magnitude == pytest.approx(0.30)
    assert second.magnitude == pytest.approx(110 / 130 - 1)
    assert all(0 <= c.p_value <= 0.01 for c in d.change_points)


@pytest.mark.parametrize("method", ALL)
def test_constant_has_no_change(method):
    assert detect(np.full(100, 7.5), method).change_points == ()


@pytest.mark.parametrize("method", ALL)
def test_noisy_steps_found_within_margin(method):
    case = step_history(200, (60, 130), (100, 115, 105), noise=2.0, random_state=3)
    found = [c.index for c in detect(case.values, method).change_points]
    assert len(found) == 2
    assert all(abs(f - t) <= 5 for f, t in zip(found, case.truth, strict=True))


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pure_noise_has_no_change(method, seed):
    y = 100 + np.random.default_rng(seed).normal(0, 20, 200)
    assert detect(y, method).change_points == ()


@pytest.mark.parametrize("method", DRIFT_SAFE)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slow_drift_is_not_split(method, seed):
    case = trend_history(200, drift=8.0, noise=2.0, random_state=seed)
    assert detect(case.values, method).change_points == ()


def test_noise_free_drift_is_not_split_by_auto():
    assert detect(np.linspace(100, 120, 150), "auto").change_points == ()


@pytest.mark.parametrize("method", BAND_SAFE)
@pytest.mark.parametrize("p_upper", [0.1, 0.3, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_bimodal_banding_is_not_a_change(method, p_upper, seed):
    case = bimodal_history(200, p_upper=p_upper, random_state=seed)
    assert detect(case.values, method).change_points == ()


def test_cusum_does_raise_false_alarms_on_banding():
    # the reason the GMM detector exists: a plain CUSUM scaled by sliding-window std alarms on rare bands
    alarms = sum(len(detect(bimodal_history(200, p_upper=0.1, random_state=s).values, "cusum",
                            alpha=1.0).change_points) for s in range(4))
    assert alarms > 0


def test_gmm_calls_rare_bands_banded():
    from quiho.history.detectors._talos import band_noise_variance

    y = bimodal_history(300, p_upper=0.2, random_state=0).values
    _, k, banded = band_noise_variance(y, 12)
    assert k >= 2 and banded
    y = step_history(300, (150,), (100, 130), noise=1.5, random_state=0).values
    _, k, banded = band_noise_variance(y, 12)
    assert k >= 2 and not banded


@pytest.mark.parametrize("method", ["auto", "mannwhitney"])
def test_heavy_tails_and_outliers(method):
    for case in (heavy_tail_history(200, random_state=1), outlier_history(200, random_state=1)):
        found = [c.index for c in detect(case.values, method).change_points]
        assert len(found) == len(case.truth)
        assert all(abs(f - t) <= 5 for f, t in zip(found, case.truth, strict=True))


@pytest.mark.parametrize("method", ALL)
def test_scaling_invariance(method):
    y = step_history(150, (50, 100), (100, 120, 90), noise=2.0, random_state=5).values
    a = [c.index for c in detect(y, method).change_points]
    b = [c.index for c in detect(3.0 * y + 1000.0, method).change_points]
    assert a == b


def test_reversal_invariance_auto():
    y = step_history(150, (50, 100), (100, 120, 90), noise=2.0, random_state=5).values
    fwd = [c.index for c in detect(y, "auto").change_points]
    rev = [150 - c.index for c in detect(y[::-1], "auto").change_points]
    assert fwd == sorted(rev)


def test_ndarray_list_series_and_history_agree():
    case = step_history(100, (50,), (10.0, 12.0), noise=0.3, random_state=0)
    revs = [f"r{i}" for i in range(100)]
    a = detect(case.values)
    b = detect(list(case.values))
    c = detect(pd.Series(case.values, index=revs))
    d = detect(History.from_values(case.values, revs))
    assert [x.index for x in a.change_points] == [x.index for x in b.change_points] == [50]
    assert c.change_points[0].revision == d.change_points[0].revision == "r50"
    assert c.change_points == d.change_points


def test_repetitions_are_averaged():
    samples = tuple(np.array([10.0, 10.2]) if i < 20 else np.array([12.0, 12.2]) for i in range(40))
    h = History("reps", tuple(str(i) for i in range(40)), np.arange(40), samples)
    (cp,) = detect(h).change_points
    assert (cp.index, cp.before, cp.after) == (20, pytest.approx(10.1), pytest.approx(12.1))


def test_magnitude_floor_and_min_size():
    y = np.r_[np.full(50, 100.0), np.full(50, 101.0), np.full(50, 120.0)]
    assert [c.index for c in detect(y).change_points] == [50, 100]
    assert [c.index for c in detect(y, magnitude_floor=0.05).change_points] == [100]
    blip = np.r_[np.full(50, 100.0), np.full(3, 150.0), np.full(50, 100.0)]
    assert detect(blip, "auto", min_size=5).change_points == ()


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("min_size", [3, 12])
def test_min_size_is_respected(method, min_size):
    y = np.r_[np.full(40, 100.0), np.full(8, 120.0), np.full(40, 100.0)]
    y = y + np.random.default_rng(0).normal(0, 0.5, y.size)
    idx = [0, *(c.index for c in detect(y, method, min_size=min_size).change_points), y.size]
    assert min(np.diff(idx)) >= min_size


def test_short_series_is_not_meaningful():
    d = detect([1.0, 2.0, 3.0], "auto")
    assert not d.meaningful and "not meaningful" in d.reason and d.change_points == ()


def test_change_point_is_frozen_and_json_ready():
    cp = ChangePoint(3, "abc", 0.0, 1.0, float("nan"), 0.001)
    with pytest.raises(AttributeError):
        cp.index = 4  # type: ignore[misc]
    assert cp.to_dict() == {"index": 3, "revision": "abc", "before": 0.0, "after": 1.0, "magnitude": None,
                            "p_value": 0.001}


def test_rejects_bad_values():
    with pytest.raises(HistoryError, match="finite"):
        detect([1.0, float("nan"), 2.0])
    with pytest.raises(HistoryError, match="one-dimensional"):
        detect(np.ones((3, 3)))


def test_pettitt_matches_brute_force():
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0, 1, 30), rng.normal(1.5, 1, 25)]
    n = y.size
    sign = np.sign(y[None, :] - y[:, None])  # sign(x_j - x_i)
    u = np.array([sign[:k, k:].sum() for k in range(1, n)])
    big_k = np.abs(u).max()
    k, p = pettitt(y)
    assert p == pytest.approx(min(1, 2 * np.exp(-6 * big_k**2 / (n**3 + n**2))))
    std = np.abs(u) / np.sqrt(np.arange(1, n) * (n - np.arange(1, n)))
    assert k == int(np.argmax(std)) + 1


def test_step_vs_trend_closed_forms():
    t = np.arange(60, dtype=float)
    assert step_vs_trend_p(t, 30) == 1.0
    assert step_vs_trend_p(np.r_[np.zeros(30), np.ones(30)], 30) == 0.0


def test_tcpdbench_metrics():
    from quiho.history.detectors.metrics import covering, f1_margin, true_positives

    # TCPDBench's own doctest cases for the matching
    assert true_positives({1, 10, 20, 23}, {3, 8, 20}) == {1, 10, 20}
    assert true_positives({1, 10, 20, 23}, {1, 3, 5, 8, 20}) == {1, 10, 20}
    assert true_positives(set(), {1, 2, 3}) == set()
    assert f1_margin([], []) == 1.0
    assert f1_margin([50], [52]) == 1.0
    assert f1_margin([50], [60]) == pytest.approx(2 * 0.5 * 0.5 / 1.0)  # {0} of {0, 60}; {0} of {0, 50}
    assert f1_margin([], [10]) == pytest.approx(2 / 3)
    assert covering([50], [50], 100) == 1.0
    assert covering([], [50], 100) == pytest.approx(0.5)
    assert covering([50], [], 100) == pytest.approx(0.5)


@pytest.mark.parametrize("module", ["detectors._base", "sampling._kernels", "sampling._gp", "detectors.metrics"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(f"quiho.history.{module}"))
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spread_change_is_not_reported_as_a_level_change(seed):
    # all detectors here test the mean; a change in spread alone (bench column "variance") must not be
    # misreported as a level shift by the default
    from quiho.datasets.history import variance_change_history

    case = variance_change_history(200, 100, noise=(1.0, 6.0), random_state=seed)
    assert detect(case.values, "auto").change_points == ()


def _ar1_counts(method):
    """False alarms on 20 change-free AR(1) series (rho 0.7) and 3-sd steps found within 5 in 20 others."""
    fa, hits = 0, 0
    for seed in range(20):
        fa += len(detect(ar_noise_history(300, rho=0.7, noise=1.0, random_state=seed).values, method).change_points)
        step = ar_noise_history(300, (150,), (100.0, 103.0), rho=0.7, noise=1.0, random_state=100 + seed)
        hits += any(abs(c.index - 150) <= 5 for c in detect(step.values, method).change_points)
    return fa, hits


def test_auto_ar1_serially_dependent_noise_is_not_a_change_but_a_step_in_it_is():
    # histories that wander (AR-like noise): without the long-run variance correction the rank detector puts a
    # change at 19 of these 20 change-free AR(1) series; auto-ar1 keeps the correction for them
    fa, hits = _ar1_counts("auto-ar1")
    assert fa <= 6 and hits >= 15


def test_default_is_the_independent_noise_detector():
    # the held-out stage chose auto without the AR(1) correction (docs/history-protocol.md): the default assumes
    # independent noise, so it reads an AR(1) wander as changes where auto-ar1 does not, and finds the steps too
    d = make_detector()
    assert d.name == "auto" and d.get_params()["dependence"] is False
    assert make_detector("auto-ar1").get_params()["dependence"] is True
    y = ar_noise_history(300, rho=0.7, noise=1.0, random_state=3).values
    assert make_detector().fit(y).rho_ == 0.0 and make_detector("auto-ar1").fit(y).rho_ > 0.3
    assert [c.index for c in detect(y).change_points] == [c.index for c in detect(y, "auto", dependence=False)
                                                         .change_points]
    fa, hits = _ar1_counts("auto")
    fa_ar1, _ = _ar1_counts("auto-ar1")
    assert fa >= 15 > fa_ar1 and hits >= 15


def test_auto_ar1_equals_auto_with_dependence():
    y = ar_noise_history(300, (150,), (100.0, 103.0), rho=0.7, noise=1.0, random_state=7).values
    a = detect(y, "auto-ar1").change_points
    assert a == detect(y, "auto", dependence=True).change_points
    assert [c.index for c in detect(y, "auto-ar1", dependence=False).change_points] == \
        [c.index for c in detect(y).change_points]


def test_combo_keeps_the_ar1_rank_detector_it_was_measured_with():
    # combo = auto-ar1's changes that PELT confirms: on wandering noise every combo change is one of auto-ar1's,
    # while the default (no correction) reports changes auto-ar1 does not
    extra = 0
    for seed in range(6):
        y = ar_noise_history(300, rho=0.7, noise=1.0, random_state=seed).values
        ar1 = {c.index for c in detect(y, "auto-ar1").change_points}
        assert {c.index for c in detect(y, "combo").change_points} <= ar1
        extra += len({c.index for c in detect(y).change_points} - ar1)
    assert extra > 0


def test_ar_noise_generator_is_seeded_and_has_the_asked_dependence():
    a, b = ar_noise_history(5000, random_state=3), ar_noise_history(5000, random_state=3)
    assert np.array_equal(a.values, b.values) and a.truth == ()
    e = a.values - a.signal
    assert np.corrcoef(e[1:], e[:-1])[0, 1] == pytest.approx(0.7, abs=0.05) and e.std() == pytest.approx(2, rel=0.1)
    with pytest.raises(ValueError, match="rho"):
        ar_noise_history(rho=1.0)


@pytest.mark.parametrize("make", [
    lambda s: step_history(120, (40, 80), (100.0, 104.0, 101.0), noise=2.0, random_state=s),
    lambda s: outlier_history(150, random_state=s),
    lambda s: heavy_tail_history(200, random_state=s),
    lambda s: ar_noise_history(200, (100,), (100.0, 103.0), random_state=s),
    lambda s: bimodal_history(200, random_state=s),
], ids=["steps", "outliers", "heavy-tail", "ar1", "bimodal"])
@pytest.mark.parametrize("seed", range(4))
def test_auto_decides_from_ranks_only(make, seed):
    """Any increasing transform of the values leaves auto's change points and p-values as they are.

    It is why a random mix of machines cannot raise auto's false alarms: exchangeable values have uniformly random
    ranks whatever their distribution (docs/hardware-protocol.md, "Rotating hosts and a rank detector").
    """
    y = np.asarray(make(seed).values, dtype=float)
    assert y.min() > 0 and np.unique(y).size == y.size  # the transforms below are increasing and keep values apart
    base = detect(y, "auto").change_points
    for z in (np.log(y), y ** 3, np.exp((y - y.mean()) / y.std()), np.argsort(np.argsort(y)).astype(float)):
        moved = detect(z, "auto").change_points
        assert [c.index for c in moved] == [c.index for c in base]
        assert [c.p_value for c in moved] == pytest.approx([c.p_value for c in base], rel=1e-9)
