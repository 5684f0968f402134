"""The screening design: balance, orthogonality, fold-over clearing two-factor interactions, and what the existing
round-blocked analysis recovers on it."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pandas as pd
import pytest

from quiho.design import factor_table
from quiho.design.effects import version_effects
from quiho.errors import InventoryError
from quiho.fleet.local.screening import screening_design

KNOBS = ("quota", "page-size", "co-runner", "core-sharing", "storage", "kernel-entry", "network")
ALL_K = range(1, 8)


def _signs(design, rounds=(0, 1)) -> np.ndarray:
    """±1 columns of the visited rows of ``rounds``, stacked round after round."""
    return np.array([row for r in rounds for row in design.levels(r)], dtype=float) * 2 - 1


def _two_factor_columns(S: np.ndarray) -> list[tuple[tuple[int, int], np.ndarray]]:
    return [((a, b), S[:, a] * S[:, b]) for a, b in itertools.combinations(range(S.shape[1]), 2)]


@pytest.mark.parametrize("k", ALL_K)
def test_each_round_is_balanced_and_orthogonal(k):
    d = screening_design(KNOBS[:k])
    for r in (0, 1):
        S = _signs(d, (r,))
        assert S.shape == (8, k)
        assert (S.sum(axis=0) == 0).all()  # every knob on at 4 hosts of 8
        assert np.array_equal(S.T @ S, 8 * np.eye(k))


@pytest.mark.parametrize("k", ALL_K)
def test_round_two_is_the_fold_over_of_round_one(k):
    d = screening_design(KNOBS[:k])
    assert [tuple(1 - x for x in row) for row in d.levels(0)] == d.levels(1)
    assert all(len(r) == 8 for r in d.rounds)


@pytest.mark.parametrize("k", ALL_K)
def test_main_effects_are_clear_of_two_factor_interactions_over_both_rounds(k):
    S = _signs(screening_design(KNOBS[:k]))
    for j in range(k):
        for pair, col in _two_factor_columns(S):
            assert S[:, j] @ col == 0, (j, pair)


@pytest.mark.parametrize("k", [5, 6, 7])
def test_round_one_alone_aliases_main_effects_with_two_factor_interactions(k):
    """Why the fold-over is there: in the resolution III fraction D = AB, so D cannot be told from A × B."""
    S = _signs(screening_design(KNOBS[:k]), (0,))
    assert np.array_equal(S[:, 3], S[:, 0] * S[:, 1])
    aliased = {(j, pair) for j in range(k) for pair, col in _two_factor_columns(S) if abs(S[:, j] @ col) == 8}
    assert (3, (0, 1)) in aliased and len(aliased) >= k


@pytest.mark.parametrize("k", ALL_K)
def test_main_effects_are_orthogonal_to_the_round_block(k):
    S = _signs(screening_design(KNOBS[:k]))
    block = np.repeat([-1.0, 1.0], 8)
    assert (block @ S == 0).all()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_three_knobs_or_fewer_take_a_full_factorial_revisited_in_round_two(k):
    d = screening_design(KNOBS[:k])
    assert d.generators == () and "full factorial" in d.kind and not d.split_rounds
    for r in (0, 1):
        counts = pd.Series(d.levels(r)).value_counts()
        assert len(counts) == 2 ** k and (counts == 8 // 2 ** k).all()  # every combination, equally often
    assert len(d.hosts) == 8 and all(h.rounds == (0, 1) for h in d.hosts)


def test_four_knobs_take_the_resolution_iv_half_its_own_fold_over():
    d = screening_design(KNOBS[:4])
    assert d.generators == ("D = ABC",) and "resolution IV" in d.kind
    assert len(d.hosts) == 8 and not d.split_rounds  # I = ABCD has even length: folding repeats the fraction


@pytest.mark.parametrize("k", [5, 6, 7])
def test_five_to_seven_knobs_fold_over_onto_eight_new_hosts(k):
    d = screening_design(KNOBS[:k])
    assert d.generators == ("D = AB", "E = AC", "F = BC", "G = ABC")[:k - 3] and "resolution III" in d.kind
    assert d.split_rounds and not set(d.rounds[0]) & set(d.rounds[1])
    assert len(d.hosts) == 16 and len({h.levels for h in d.hosts}) == 16
    assert all(h.rounds == ((0,) if h.name in d.rounds[0] else (1,)) for h in d.hosts)


@pytest.mark.parametrize("k", ALL_K)
def test_host_names_say_the_knobs_on_and_are_valid_inventory_names(k):
    d = screening_design(KNOBS[:k])
    assert d == screening_design(list(KNOBS[:k]))  # stable: a function of the knobs
    assert len({h.name for h in d.hosts}) == len(d.hosts)
    for h in d.hosts:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$", h.name)  # quiho.fleet.inventory._HOSTNAME
        on = "".join("abcdefg"[j] for j, x in enumerate(h.levels) if x) or "base"
        assert h.name.split("-")[1] == on


@pytest.mark.parametrize("k", ALL_K)
def test_factor_table_keeps_every_knob_over_both_rounds(k):
    d = screening_design(KNOBS[:k])
    t = factor_table(d.design_vars())
    assert t.names == list(KNOBS[:k]) and not t.notes
    assert all((f.reference, f.far) == ("0", "1") for f in t.factors)


def test_json_round_trips():
    d = screening_design(KNOBS[:5])
    doc = json.loads(json.dumps(d.to_dict()))
    assert doc["letters"]["D"] == "core-sharing" and doc["rounds"] == [list(r) for r in d.rounds]
    assert {h["name"]: tuple(h["levels"]) for h in doc["hosts"]} == {h.name: h.levels for h in d.hosts}


@pytest.mark.parametrize("knobs", [[], list(KNOBS) + ["memory"], ["storage", "storage"], ["Storage"], ["a_b"]])
def test_bad_knob_lists_are_refused(knobs):
    with pytest.raises(InventoryError):
        screening_design(knobs)


# --- the existing analysis on the design -------------------------------------------------------------------------

MAINS = {"quota": 0.30, "page-size": -0.15, "co-runner": 0.0, "core-sharing": 0.10, "storage": 0.25,
         "kernel-entry": -0.05, "network": 0.0}
#: A × B on the ±1 scale: 0 on average over the other knob, so the main effects stay MAINS; in round 1 D = AB.
INTERACTION = 0.15


def _runs(d, *, visit_sd: float, run_sd: float, runs: int = 5, seed: int = 0) -> pd.DataFrame:
    """Runs of one version: the planted mains, the A × B interaction, a slow round 2, visit and run noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in (0, 1):
        for name in d.rounds[r]:
            x = d.host(name).levels
            s = [2 * v - 1 for v in x]
            mu = 0.4 * r + sum(MAINS[k] * v for k, v in zip(d.knobs, x, strict=True)) \
                + INTERACTION * s[0] * s[1] + rng.normal(0, visit_sd)
            rows += [{"host": name, "version": "v1", "round": r, "status": "ok",
                      "value": float(np.exp(mu + rng.normal(0, run_sd)))} for _ in range(runs)]
    return pd.DataFrame(rows)


def _estimates(runs: pd.DataFrame, d, rounds: tuple[int, ...]):
    hosts = sorted({h for r in rounds for h in d.rounds[r]})
    dv = d.design_vars()
    table = factor_table({h: dv[h] for h in hosts})
    assert table.names == list(d.knobs)
    return version_effects(runs[runs["round"].isin(rounds)], "v1", table).by_factor()


@pytest.mark.parametrize("k", [5, 7])
def test_fold_over_recovers_main_effects_exactly_and_round_one_alone_is_biased(k):
    """Noise-free: over both rounds every estimate is its main effect; round 1 alone adds 2 × A·B to D's."""
    d = screening_design(KNOBS[:k])
    runs = _runs(d, visit_sd=0.0, run_sd=0.0)
    both, first = _estimates(runs, d, (0, 1)), _estimates(runs, d, (0,))
    for knob in d.knobs:
        assert both[knob].estimate == pytest.approx(MAINS[knob], abs=1e-9)
        aliased = 2 * INTERACTION if knob == "core-sharing" else 0.0
        assert first[knob].estimate == pytest.approx(MAINS[knob] + aliased, abs=1e-9)


def test_fold_over_is_unbiased_under_noise_and_round_one_is_not():
    """Seeded noisy replications, 5 knobs: mean error ≈ 0 with the fold-over, ≈ 2 × A·B on D from round 1 alone."""
    d = screening_design(KNOBS[:5])
    err_both, err_first, covered = [], [], []
    for seed in range(20):
        runs = _runs(d, visit_sd=0.03, run_sd=0.08, runs=3, seed=seed)
        both, first = _estimates(runs, d, (0, 1)), _estimates(runs, d, (0,))
        err_both.append([both[k].estimate - MAINS[k] for k in d.knobs])
        err_first.append([first[k].estimate - MAINS[k] for k in d.knobs])
        covered += [both[k].ci_low < MAINS[k] < both[k].ci_high for k in d.knobs]
    # one estimate's SE is ~0.03 (both rounds) and ~0.05 (round 1): the bounds are 4 SE of a mean of 20
    mean_both, mean_first = np.mean(err_both, axis=0), np.mean(err_first, axis=0)
    assert np.abs(mean_both).max() < 0.03
    assert mean_first[3] == pytest.approx(2 * INTERACTION, abs=0.04)  # D = core-sharing carries A × B
    assert np.abs(np.delete(mean_first, 3)).max() < 0.04
    assert np.mean(covered) >= 0.85  # the interaction lands in the residual, which the intervals account for
