"""IRUPs on the quiho paper's real CloudLab data (shared/data/quiho-popper)."""

import numpy as np
import pytest

from quiho.irup import compare_irups, compute_irup, list_targets, load_target

SMALL_TARGETS = ["hpccg", "ssca", "scikit-learn", "redisbench/SET", "redisbench/GET"]
MARIADB = [f"mysqlslap-mariadb-{v}/{t}" for v in ("10.3.2", "5.5.58") for t in ("innodb_load", "memory_load")]


def _stream_targets(store):
    names = [t for t in list_targets(store)["target"] if t.startswith("stream/add-")]
    assert len(names) == 12  # NADDS 1, 2, 4, ..., 20, 30
    return names


@pytest.fixture(scope="module")
def all_irups(popper_store):
    """Every listed target with every formula (2 seeds each; the out-of-group check is shared)."""
    out = {}
    for target in SMALL_TARGETS + MARIADB + _stream_targets(popper_store):
        data = load_target(popper_store, target)
        for formula in ("classic", "impurity", "permutation"):
            out[target, formula] = compute_irup(data, importance=formula, seeds=2, random_state=0)
    return out


def test_every_formula_gives_a_scaled_profile(all_irups):
    for (target, formula), irup in all_irups.items():
        imps = [f.importance for f in irup.features]
        assert imps[0] == pytest.approx(100.0), (target, formula)
        assert all(0 <= v <= 100.0 + 1e-9 for v in imps)
        assert imps == sorted(imps, reverse=True)
        assert "oom-pipe" in {d.stressor for d in irup.dropped}  # 0 on every host and run of the paper data
        assert all("zero variance" in d.reason for d in irup.dropped)
        assert irup.versions["scikit-learn"]


def test_formulas_disagree_somewhere(all_irups):
    # The paper's formula and today's scikit-learn rank differently on this data (quiho-method.md).
    differs = [t for (t, f) in all_irups if f == "classic"
               and [x.stressor for x in all_irups[t, "classic"].top(5)]
               != [x.stressor for x in all_irups[t, "impurity"].top(5)]]
    assert differs


def test_validity_separates_fit_from_unfit_targets(all_irups):
    verdicts = {}
    for (target, _formula), irup in all_irups.items():
        v = irup.validity
        assert (v.verdict == "not-meaningful") == (v.r2_group_cv <= 0), (target, v)
        verdicts[target] = v
    assert verdicts["hpccg"].r2_group_cv > 0.5 and verdicts["hpccg"].verdict == "meaningful"
    unfit = [t for t, v in verdicts.items() if v.verdict == "not-meaningful"]
    # Pooled STREAM add-N>1: the July batch reports ~1/5 of June's rate on the same machines.
    assert "stream/add-10" in unfit
    assert "disagree" in verdicts["stream/add-10"].reason
    assert "stream/add-1" not in unfit


def test_stream_single_batch_is_fit(popper_store):
    data = load_target(popper_store, "stream/add-10", batch="1498013938000")
    irup = compute_irup(data, seeds=2)
    assert irup.validity.r2_group_cv > 0.3
    assert "disagree" not in irup.validity.reason


def test_same_seed_identical_on_real_data(popper_store):
    data = load_target(popper_store, "hpccg")
    a = compute_irup(data, seeds=2, random_state=5)
    b = compute_irup(data, seeds=2, random_state=5)
    assert a.to_dict()["features"] == b.to_dict()["features"]


@pytest.fixture(scope="module")
def ten_seed(popper_store):
    def get(target, rs=0):
        return compute_irup(load_target(popper_store, target), seeds=10, random_state=rs)
    return get


def test_mariadb_versions_differ_on_innodb_load(ten_seed):
    c = compare_irups(ten_seed("mysqlslap-mariadb-10.3.2/innodb_load"),
                      ten_seed("mysqlslap-mariadb-5.5.58/innodb_load"))
    assert c.verdict == "different"
    assert c.first_divergent_rank is not None and c.first_divergent_rank <= 3


def test_target_against_itself_with_other_seeds_is_equivalent(ten_seed):
    c = compare_irups(ten_seed("hpccg", 0), ten_seed("hpccg", 99))
    assert c.verdict == "equivalent"
    # Over all ~41 stressors (most of them near zero importance) the ranks still agree strongly.
    assert c.spearman > 0.6 and c.spearman_p < 1e-4


def test_innodb_vs_memory_load_differ(ten_seed):
    c = compare_irups(ten_seed("mysqlslap-mariadb-10.3.2/innodb_load"),
                      ten_seed("mysqlslap-mariadb-10.3.2/memory_load"))
    assert c.verdict == "different"
    assert set(c.class_shift) >= {"cpu", "cpu-cache", "memory", "vm"}
    assert np.isclose(sum(c.shares_a.values()), 1.0, atol=1e-3)


def test_not_meaningful_cannot_prove_a_difference(ten_seed, all_irups):
    c = compare_irups(all_irups["stream/add-10", "classic"], ten_seed("hpccg"))
    assert c.verdict == "inconclusive"
