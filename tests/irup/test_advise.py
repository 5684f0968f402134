"""The fleet-size advisor: no subset is fitted when the full fleet's IRUP is not meaningful."""

import dataclasses

import numpy as np
import pandas as pd

from quiho.irup import advise as advise_mod
from quiho.irup import compute_irup, load_target

TARGET = "mysqlslap-mariadb-10.3.2/memory_load"


def test_a_not_meaningful_irup_gets_the_advice_without_any_subset_fit(popper_store, monkeypatch):
    data = load_target(popper_store, TARGET)
    # a metric the fingerprints cannot predict: noise, independent of every stressor
    noise = pd.Series(np.random.default_rng(7).normal(100.0, 5.0, len(data.y)), index=data.y.index)
    data = dataclasses.replace(data, y=noise)
    full = compute_irup(data, seeds=2, random_state=0, n_jobs=1)
    assert full.validity.verdict == "not-meaningful"

    def no_fit(*_a, **_k):
        raise AssertionError("a subset was fitted")

    monkeypatch.setattr(advise_mod, "_top", no_fit)
    adv = advise_mod.advise_fleet_size(data, full=full, draws=2, n_jobs=1)
    assert adv.rows == () and adv.recommended_groups is None
    assert adv.full_groups == 7 and len(adv.full_top3) == 3
    assert "not meaningful" in adv.reason and "no subset can do better" in adv.reason


def test_a_meaningful_irup_gets_its_subsets_fitted(popper_store):
    data = load_target(popper_store, TARGET)
    full = compute_irup(data, seeds=2, random_state=0, n_jobs=1)
    assert full.validity.verdict != "not-meaningful"
    adv = advise_mod.advise_fleet_size(data, full=full, draws=2, n_jobs=1)
    assert [r.n_groups for r in adv.rows] == [3, 4, 5, 6, 7]
    assert [r.draws for r in adv.rows] == [2, 2, 2, 2, 1]
