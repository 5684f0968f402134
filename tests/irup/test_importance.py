import numpy as np
import pytest

from quiho.datasets import planted_bottleneck
from quiho.errors import NotEnoughData, NotEnoughMachines, UsageError
from quiho.irup import ModelParams, classic_importance, compute_irup
from quiho.irup.importance import fit_seed

SMALL = ModelParams(n_estimators=150, learning_rate=0.1)


def _slow_classic(model):
    """Reference: recompute each tree's impurity decreases from its node arrays, normalise, average."""
    p = model.n_features_in_
    acc = np.zeros(p)
    for est in model.estimators_.ravel():
        t = est.tree_
        imp = np.zeros(p)
        for node in range(t.node_count):
            left, right = t.children_left[node], t.children_right[node]
            if left == -1:
                continue
            wn = t.weighted_n_node_samples
            w, wl, wr = wn[node], wn[left], wn[right]
            imp[t.feature[node]] += w * t.impurity[node] - wl * t.impurity[left] - wr * t.impurity[right]
        if imp.sum() > 0:
            acc += imp / imp.sum()
    return acc / model.estimators_.size


def test_classic_formula_matches_slow_reference():
    d = planted_bottleneck(n_groups=8, reps=2, random_state=1)
    model = SMALL.make(0).fit(d.X.to_numpy(), d.y.to_numpy())
    np.testing.assert_allclose(classic_importance(model), _slow_classic(model), rtol=1e-10, atol=1e-12)
    # ...and it is not scikit-learn's current formula (the two differ on real ensembles).
    assert not np.allclose(classic_importance(model), model.feature_importances_)


@pytest.mark.parametrize("formula", ["classic", "impurity", "permutation"])
def test_planted_bottleneck_is_top_with_every_formula(formula):
    d = planted_bottleneck(n_groups=16, hosts_per_group=1, reps=2, bottleneck="stream", random_state=2)
    irup = compute_irup(d, importance=formula, seeds=4, n_jobs=1)
    assert irup.features[0].stressor == "stream"
    assert irup.features[0].importance == pytest.approx(100.0)
    assert irup.features[1].importance < 50
    assert irup.validity.verdict == "meaningful"


def test_noise_only_target_is_not_meaningful():
    d = planted_bottleneck(n_groups=10, hosts_per_group=1, reps=2, random_state=4)
    rng = np.random.default_rng(0)
    noise = d.y.copy()
    noise[:] = rng.lognormal(size=len(noise))
    d2 = type(d)(target="noise", X=d.X, y=noise, meta=d.meta, unit="s", higher_is_better=False)
    irup = compute_irup(d2, seeds=3, n_jobs=1, params=SMALL)
    assert irup.validity.verdict == "not-meaningful"
    assert irup.validity.r2_group_cv <= 0


def test_same_seed_same_result_and_backend_invariance():
    d = planted_bottleneck(n_groups=6, reps=2, random_state=7)
    a = compute_irup(d, seeds=3, n_jobs=1, params=SMALL, random_state=11)
    b = compute_irup(d, seeds=3, n_jobs=2, params=SMALL, random_state=11)
    assert a.to_dict()["features"] == b.to_dict()["features"]
    assert a.per_seed == b.per_seed
    c = compute_irup(d, seeds=3, n_jobs=1, params=SMALL, random_state=12)
    assert c.per_seed != a.per_seed


def test_importances_invariant_to_feature_scaling():
    d = planted_bottleneck(n_groups=6, reps=2, random_state=8)
    scaled = type(d)(target=d.target, X=d.X * 1000.0, y=d.y, meta=d.meta, unit="s", higher_is_better=False)
    a = compute_irup(d, seeds=2, n_jobs=1, params=SMALL)
    b = compute_irup(scaled, seeds=2, n_jobs=1, params=SMALL)
    assert [f.stressor for f in a.features] == [f.stressor for f in b.features]
    np.testing.assert_allclose([f.importance for f in a.features], [f.importance for f in b.features])


def test_permutation_uses_held_out_groups_only():
    d = planted_bottleneck(n_groups=6, reps=2, random_state=9)
    groups = np.repeat(np.arange(6), 4)
    fit = fit_seed(d.X.to_numpy(), d.y.to_numpy(), groups, formula="permutation", params=SMALL, seed=3,
                   resample="groups")
    held_out = set(groups[fit.oob_rows])
    assert held_out and len(held_out) < 6


def test_zero_variance_stressor_is_dropped_and_listed():
    d = planted_bottleneck(n_groups=6, reps=2, random_state=10)
    X = d.X.copy()
    X["oom-pipe"] = 0.0
    d2 = type(d)(target=d.target, X=X, y=d.y, meta=d.meta, unit="s", higher_is_better=False)
    irup = compute_irup(d2, seeds=2, n_jobs=1, params=SMALL)
    assert "oom-pipe" in [x.stressor for x in irup.dropped]
    assert "oom-pipe" not in irup.by_stressor()


def test_errors():
    d = planted_bottleneck(n_groups=2, hosts_per_group=2, reps=3, random_state=0)
    with pytest.raises(NotEnoughMachines, match="at least 3"):
        compute_irup(d, seeds=1, n_jobs=1, params=SMALL)
    tiny = planted_bottleneck(n_groups=3, hosts_per_group=1, reps=2)
    with pytest.raises(NotEnoughData, match="at least 10"):
        compute_irup(tiny, seeds=1, n_jobs=1, params=SMALL)
    ok = planted_bottleneck(n_groups=4, reps=2)
    with pytest.raises(UsageError):
        compute_irup(ok, importance="gain")
    with pytest.raises(UsageError):
        compute_irup(ok, importance="permutation", resample="none")
