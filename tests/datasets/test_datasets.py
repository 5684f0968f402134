"""The seeded generators produce the truth they claim, and a seed reproduces a data set exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quiho.datasets import history, perun, planted_bottleneck, planted_profile
from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
from quiho.store import open_store

# --- histories --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [history.step_history, history.outlier_history, history.heavy_tail_history])
def test_history_truth_is_where_the_noise_free_signal_changes(make) -> None:  # noqa: ANN001
    case = make(n=300, random_state=4)
    assert tuple(np.flatnonzero(np.diff(case.signal)) + 1) == case.truth
    assert case.values.shape == case.signal.shape == (300,)


def test_noise_free_steps_are_exactly_the_levels() -> None:
    case = history.step_history(n=10, change_points=(3, 7), levels=(1.0, 5.0, 2.0), noise=0)
    assert case.values.tolist() == [1, 1, 1, 5, 5, 5, 5, 2, 2, 2]
    with pytest.raises(ValueError, match="one more level"):
        history.step_history(n=10, change_points=(3,), levels=(1.0,))


def test_no_change_generators_claim_no_change() -> None:
    trend = history.trend_history(n=100, drift=6.0, random_state=1)
    assert trend.truth == () and trend.signal[-1] - trend.signal[0] == pytest.approx(6.0)
    assert np.all(np.diff(trend.signal) > 0)
    bi = history.bimodal_history(n=2000, bands=(100.0, 130.0), p_upper=0.3, noise=0.0, random_state=1)
    assert bi.truth == () and set(np.unique(bi.values)) == {100.0, 130.0}
    assert np.mean(bi.values == 130.0) == pytest.approx(0.3, abs=0.05)


def test_variance_change_keeps_the_mean_and_changes_the_spread() -> None:
    case = history.variance_change_history(n=4000, change_point=2000, noise=(1.0, 6.0), random_state=2)
    before, after = case.values[:2000], case.values[2000:]
    assert case.truth == (2000,) and np.all(case.signal == 100.0)
    assert abs(before.mean() - after.mean()) < 1.0
    assert after.std() / before.std() == pytest.approx(6.0, rel=0.1)


def test_outliers_are_the_planted_share() -> None:
    case = history.outlier_history(n=5000, noise=0.0, outlier_rate=0.03, outlier_size=60.0, random_state=3)
    jumps = case.values - case.signal
    assert set(np.unique(jumps)) == {0.0, 60.0}
    assert np.mean(jumps > 0) == pytest.approx(0.03, abs=0.01)


def test_history_suite_is_seeded() -> None:
    a, b = history.history_suite(n_each=2, random_state=7), history.history_suite(n_each=2, random_state=7)
    c = history.history_suite(n_each=2, random_state=8)
    assert len(a) == 12 and [x.name for x in a] == [x.name for x in b]
    assert all(np.array_equal(x.values, y.values) and x.truth == y.truth for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x.values, y.values) for x, y in zip(a, c, strict=True))
    for case in a:
        if case.name in ("steps", "outliers", "heavy_tail"):
            assert tuple(np.flatnonzero(np.diff(case.signal)) + 1) == case.truth


# --- IRUP fleets ------------------------------------------------------------------------------------------------


def test_planted_bottleneck_runtime_depends_only_on_the_bottleneck() -> None:
    d = planted_bottleneck(bottleneck="stream", fingerprint_noise=0.0, app_noise=0.0, random_state=5)
    logy = np.log(d.y.to_numpy())
    for col in d.X.columns:
        slope, _ = np.polyfit(np.log(d.X[col].to_numpy()), logy, 1)
        r = np.corrcoef(np.log(d.X[col].to_numpy()), logy)[0, 1]
        if col == "stream":  # runtime = const / speed: exactly slope -1 in logs
            assert slope == pytest.approx(-1.0) and r == pytest.approx(-1.0)
        else:
            assert abs(r) < 0.99
    assert len(d.X) == 8 * 2 * 3 and d.meta["host"].nunique() == 16


def test_planted_bottleneck_weights_and_seed() -> None:
    kw = dict(bottleneck=("cpu", "stream"), weights=(2.0, 1.0), fingerprint_noise=0.0, app_noise=0.0)
    d = planted_bottleneck(**kw, random_state=6)  # type: ignore[arg-type]
    X = np.log(d.X[["cpu", "stream"]].to_numpy())
    coef, *_ = np.linalg.lstsq(np.column_stack([X, np.ones(len(X))]), np.log(d.y.to_numpy()), rcond=None)
    assert coef[:2] == pytest.approx([-2.0, -1.0])
    again = planted_bottleneck(**kw, random_state=6)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(d.X, again.X)
    assert not planted_bottleneck(**kw, random_state=7).X.equals(d.X)  # type: ignore[arg-type]


def test_planted_profile_change_is_the_median_ratio() -> None:
    runs, a, b = planted_profile(change=1.5, random_state=3)
    assert float(np.median(b.y)) / float(np.median(a.y)) == pytest.approx(1.5)
    pd.testing.assert_frame_equal(a.X, b.X)  # same fleet, same fingerprints
    assert set(runs["version"]) == {"v1", "v2"} and len(runs) == len(a.y) + len(b.y)
    assert (runs["status"] == "ok").all()


# --- Perun-style pairs -------------------------------------------------------------------------------------------


def test_perun_pairs_are_36_antisymmetric_and_seeded() -> None:
    pairs = perun.perun_pairs(seed=1)
    assert len(pairs) == 36
    for plus, minus in zip(pairs[0::2], pairs[1::2], strict=True):
        assert plus.direction == 1 and minus.direction == -1 and plus.kind == minus.kind
        assert np.array_equal(plus.baseline.y, minus.target.y) and np.array_equal(plus.target.y, minus.baseline.y)
        assert plus.target.y.mean() > plus.baseline.y.mean()  # every planted change slows the target
    again = perun.perun_pairs(seed=1)
    assert all(np.array_equal(p.target.y, q.target.y) for p, q in zip(pairs, again, strict=True))


@pytest.mark.parametrize("shape", ["constant", "linear", "quadratic", "sqrt", "logarithmic"])
def test_changed_pair_mean_change_is_the_requested_size(shape: str) -> None:
    p = perun.changed_pair("lin", shape, 0.2, seed=2, noise_kind="perun")
    x = p.baseline.x
    c = perun.baseline_curve("lin", x)
    # the noise averages out over 1001 points (sd 300 vs a mean of ~24 700): within 1 % of the baseline mean
    assert (p.target.y.mean() - p.baseline.y.mean()) / c.mean() == pytest.approx(0.2, abs=0.01)
    assert p.direction == 1 and p.kind == shape


def test_null_pair_has_no_change_and_negative_quadratic_points_down() -> None:
    n = perun.null_pair("quad", seed=3)
    assert n.direction == 0 and n.kind == "" and not np.array_equal(n.baseline.y, n.target.y)
    neg = perun.changed_pair("quad", "negative-quadratic", 0.2, seed=3)
    assert neg.direction == -1 and neg.target.y.mean() < neg.baseline.y.mean()


# --- fleet fingerprint histories ----------------------------------------------------------------------------------


def test_fingerprint_history_drift_is_the_planted_factor() -> None:
    h = fingerprint_history(n_hosts=3, n_runs=6, reps=1, noise=0.0, drift_host="h1", drift_at=4, drift_factor=0.8)
    wide = h.pivot_table(index=["host", "stressor"], columns="run", values="value")
    ratio = wide[5] / wide[0]
    drifted = ratio.loc["h1"]
    assert drifted[["stream", "memcpy", "vm", "zero"]].tolist() == pytest.approx([0.8] * 4)
    assert (drifted.drop(["stream", "memcpy", "vm", "zero"]) == 1.0).all()
    assert (ratio.drop("h1", level="host") == 1.0).all()
    assert (wide[3] / wide[0]).loc["h1"].tolist() == pytest.approx([1.0] * len(drifted))  # before drift_at


def test_fingerprint_history_is_seeded_and_stores_as_complete_runs(tmp_path) -> None:  # noqa: ANN001
    a, b = fingerprint_history(n_runs=3, random_state=9), fingerprint_history(n_runs=3, random_state=9)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(fingerprint_history(n_runs=3, random_state=10))
    with open_store(tmp_path / "q.db") as st:
        ids = store_fingerprint_history(st, a)
        assert len(ids) == 3
        from quiho.store.irup import fingerprint_values

        back = fingerprint_values(st, ids)
    assert len(back) == len(a)
    assert sorted(back["batch"].unique()) == ["synthetic-0000", "synthetic-0001", "synthetic-0002"]
    back["run"] = back["batch"].str[-4:].astype(int)
    keys = ["run", "host", "repetition", "stressor"]
    joined = back.merge(a, on=keys, suffixes=("", "_gen"), validate="one_to_one")
    assert len(joined) == len(a) and (joined["value"] == joined["value_gen"]).all()
