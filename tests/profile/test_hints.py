"""Hints on a planted version pair (known truth, no fleet)."""

from __future__ import annotations

import pytest

from quiho.profile import Hint, root_cause_hints
from quiho.profile.hints import trace_hints


def test_hints_name_the_planted_shift(planted_result):
    r = planted_result
    assert r.irup_a.features[0].stressor == "stream"
    assert r.irup_b.features[0].stressor == "cpu"
    assert r.comparison.verdict == "different"
    by = {(h.kind, h.subject): h for h in r.hints}
    assert by[("class", "memory")].direction == "lost"
    assert by[("class", "cpu")].direction == "gained"
    assert "raw compute" in by[("class", "cpu")].message  # the catalog's hint for the new top stressor
    ev = by[("stressor", "stream")].evidence
    assert ev["rank_a"] == 1 and ev["rank_b"] > 1 and ev["importance_a"] == pytest.approx(100)
    # class hints come before stressor hints, largest shift first
    kinds = [h.kind for h in r.hints if h.kind in ("class", "stressor")]
    assert kinds == sorted(kinds, key=["class", "stressor"].index)


def test_same_irup_gives_no_shift_hint(planted_result):
    from quiho.irup import compare_irups

    a = planted_result.irup_a
    hints = root_cause_hints(a, a, compare_irups(a, a), metric_verdict="regression")
    assert [h.kind for h in hints if h.kind != "validity"] == ["profile"]
    assert "did not shift" in hints[-1].message and "same resources" in hints[-1].message


def test_not_meaningful_irup_is_said_with_advice():
    import numpy as np

    from quiho.datasets import planted_profile
    from quiho.irup import TargetData
    from quiho.profile import AnalysisOptions, ProfileData, analyse_data

    from .conftest import FAST  # noqa: TID252

    # 6 distinct hardware groups, but the metric the IRUPs see is pure noise (6 runs per host, so host
    # means barely differ): nothing to explain (out-of-group R² < 0 for noise seeds 0-4 with these settings).
    runs, a, b = planted_profile(n_groups=6, reps=6, spread=0.5, change=1.0, stressors=("cpu", "stream", "zero"))
    rng = np.random.default_rng(0)

    def noise(d):
        return TargetData(d.target, d.X, d.y * 0 + rng.lognormal(size=len(d.y)), d.meta, d.unit, d.higher_is_better)

    r = analyse_data(ProfileData(runs, noise(a), noise(b), application="noise", version_a="v1", version_b="v2"),
                     AnalysisOptions(seeds=2, model_params=FAST, n_jobs=2))
    assert r.irup_a is not None and r.irup_a.validity.verdict == "not-meaningful"
    # A not-meaningful profile proves no equivalence; only the permutation test's rejection (at rate alpha
    # on noise like this: p = 0.04 here) can call it different, and then only tentatively.
    assert r.irup_verdict in ("inconclusive", "different")
    assert r.irup_verdict == "inconclusive" or (r.comparison.p_value < 0.05 and "tentative" in r.comparison.reason)
    hint = next(h for h in r.hints if h.kind == "validity" and h.subject == r.irup_a.target)
    assert "is NOT meaningful" in hint.message and "unsupported" in hint.message
    assert r.irup_a.target in r.advice  # the fleet-size advisor ran ...
    assert "Fleet-size advice:" in hint.message and hint.evidence["advice"] is not None  # ... and is said
    assert hint.evidence["advice"]["full_groups"] == 6


def test_trace_verdicts_are_joined():
    from quiho.detect import Change, State

    ch = [Change("parse_row", "joint", State.DEGRADATION, "linear", 0.4, 0.99, "1-p", 0.001),
          Change("idle", "joint", State.NO_CHANGE, "", 0.0, 0.5, "1-p", 0.5)]
    hints = trace_hints(ch)
    assert len(hints) == 1 and isinstance(hints[0], Hint)
    assert "parse_row" in hints[0].message and "+40.0%" in hints[0].message


def test_a_single_axis_fleet_cannot_show_equivalence():
    """Same planted bottleneck in both versions: 'equivalent' on a fleet whose stressors vary independently,
    'inconclusive' (with why) when the fleet says its hosts differ along one axis only; a shift stays 'different'."""
    from quiho.datasets import planted_profile
    from quiho.profile import AnalysisOptions, ProfileData, analyse_data

    from .conftest import FAST  # noqa: TID252

    runs, a, b = planted_profile(n_groups=10, spread=0.5, change=1.5, bottleneck_a="stream", bottleneck_b="stream",
                                 stressors=("cpu", "matrix", "stream", "zero"))
    kw = dict(application="same", version_a="v1", version_b="v2")
    opts = AnalysisOptions(seeds=2, model_params=FAST, n_jobs=2)
    free = analyse_data(ProfileData(runs, a, b, **kw), opts)
    assert free.irup_verdict == "equivalent"
    one = analyse_data(ProfileData(runs, a, b, fleet_axes=1, **kw), opts)
    assert one.irup_verdict == "inconclusive" and "1 independent axis" in one.comparison.reason
    assert one.comparison.p_value == free.comparison.p_value  # the test itself is unchanged
    shifted = analyse_data(ProfileData(*planted_profile(n_groups=10, spread=0.5, change=1.5,
                                                        stressors=("cpu", "matrix", "stream", "zero")),
                                       fleet_axes=1, **kw), opts)
    assert shifted.irup_verdict == "different"


@pytest.mark.parametrize("co_runner_a, leans", [(0.25, True), (-0.25, False)])
def test_a_design_change_names_a_class_only_the_way_its_factor_moves_it(co_runner_a, leans):
    """v1 slower (or faster) beside the stream co-runner, v2 not moved: the change is found either way, but only a
    slowdown is leaning on memory; a version faster under contention names no resource to look at."""
    from quiho.datasets import planted_design
    from quiho.design import analyse_design
    from quiho.profile.hints import design_hints

    runs, table = planted_design(effects_a={"cpu-quota": 0.4, "co-runner": co_runner_a},
                                 effects_b={"cpu-quota": 0.4}, rounds=2, random_state=5)
    design = analyse_design(runs, "v1", "v2", table)
    assert "co-runner" in {c.factor for c in design.moved}
    hints = design_hints(design, "v1", "v2")
    hint = next(h for h in hints if h.kind == "class")
    assert hint.evidence["factor"] == "co-runner" and hint.subject == "memory"
    # the first line says when no change names a resource (here the one change is the co-runner's)
    assert hints[0].message.startswith("The resource profile changed")
    assert ("no change names a resource" in hints[0].message) is (not leans)
    if leans:
        assert hint.message.startswith("v2 leans less on memory bandwidth") and hint.direction == "lost"
    else:
        assert "leans less" not in hint.message and "leans more" not in hint.message
        assert "names no resource" in hint.message and hint.direction == ""
        # the numbers are the design's, as in the verdict's reason and the effect table
        assert design.a.by_factor()["co-runner"].text() in hint.message
