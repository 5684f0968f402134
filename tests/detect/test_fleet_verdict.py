"""Fleet verdict per function: the joint detector on every host, then a majority vote across hosts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from quiho.detect import Change, FleetFunctionVerdict, Profile, Samples, State, detect, fleet_function_verdicts
from quiho.errors import UsageError


def _host_profiles(rng: np.random.Generator, speed: float, hot_change: float,
                   n: int = 300) -> tuple[Profile, Profile]:
    """One host's two versions: ``hot`` (changed by ``hot_change``) and ``steady``, host speed ``speed``."""
    base = {"hot": 20_000.0, "steady": 8_000.0}
    out = []
    for version in (0, 1):
        funcs = {}
        for f, b in base.items():
            scale = speed * (1.0 + hot_change if (version and f == "hot") else 1.0)
            y = b * scale * rng.lognormal(0.0, 0.08, n)
            funcs[f] = Samples.of(np.arange(n), y, y)
        out.append(Profile(funcs))
    return out[0], out[1]


def _planted_fleet(changed_hosts: int = 6, hosts: int = 8, change: float = 0.25, seed: int = 11):
    rng = np.random.default_rng(seed)
    by_host, excl, dmetric = {}, {}, {}
    for i in range(hosts):
        h = f"host{i}"
        speed = float(np.exp(rng.normal(0, 0.3)))  # different hardware: different absolute times
        c = change if i < changed_hosts else 0.0
        pb, pt = _host_profiles(rng, speed, c)
        by_host[h] = detect(pb, pt, ["joint"])  # the real per-host detector, default settings
        per_run = {f: float(s.exclusive.sum()) for f, s in pb.functions.items()}
        excl[h] = per_run
        # the application metric changes by twice what `hot` changes: it explains half of the change
        dmetric[h] = 2.0 * per_run["hot"] * c
    return by_host, excl, dmetric


def test_planted_change_on_six_of_eight_hosts_is_found_with_its_size():
    by_host, excl, dmetric = _planted_fleet()
    verdicts = {v.function: v for v in fleet_function_verdicts(by_host, excl, dmetric, random_state=1)}
    hot, steady = verdicts["hot"], verdicts["steady"]
    assert hot.verdict is State.DEGRADATION and hot.kind == "constant"
    assert hot.hosts == 8 and hot.hosts_flagged >= 6 and hot.degradations >= 6 and hot.optimizations == 0
    assert hot.ci[0] <= 0.25 <= hot.ci[1] and hot.ci[0] < hot.magnitude < hot.ci[1]
    assert abs(hot.magnitude - 0.25) < 0.02
    assert 0.4 < hot.share < 0.6  # planted: half of the metric change
    assert steady.verdict is State.NO_CHANGE and not steady.flagged and steady.hosts == 8
    assert steady.ci[0] <= 0.0 <= steady.ci[1]


def test_reversed_versions_give_the_opposite_verdict():
    by_host, _, _ = _planted_fleet(seed=5)
    rng = np.random.default_rng(5)
    reversed_by_host = {}
    for i, h in enumerate(by_host):
        speed = float(np.exp(rng.normal(0, 0.3)))
        pb, pt = _host_profiles(rng, speed, 0.25 if i < 6 else 0.0)
        reversed_by_host[h] = detect(pt, pb, ["joint"])
    (hot, _) = fleet_function_verdicts(reversed_by_host)
    assert hot.verdict is State.OPTIMIZATION and hot.magnitude < -0.15 and hot.hosts_flagged >= 6


def _change(function: str, state: State, magnitude: float, kind: str = "constant") -> Change:
    p = 0.001 if state in (State.DEGRADATION, State.OPTIMIZATION) else 0.5
    return Change(function, "joint", state, kind if p < 0.01 else "", magnitude, 1 - p, "1-p", p)


@pytest.mark.parametrize("seed", range(20))
def test_three_of_eight_hosts_flagged_in_random_directions_is_not_a_change(seed):
    rng = np.random.default_rng(seed)
    flagged = set(rng.choice(8, size=3, replace=False).tolist())
    by_host = {}
    for i in range(8):
        if i in flagged:
            up = bool(rng.integers(0, 2))
            st = State.DEGRADATION if up else State.OPTIMIZATION
            by_host[f"h{i}"] = [_change("f", st, float(rng.uniform(0.05, 0.5)) * (1 if up else -1))]
        else:
            by_host[f"h{i}"] = [_change("f", State.NO_CHANGE, float(rng.normal(0, 0.01)))]
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.NO_CHANGE and not v.flagged
    assert v.hosts_flagged == 3 and v.hosts == 8 and v.kind == ""


@pytest.mark.parametrize(
    ("states", "why"),
    [
        ([State.DEGRADATION] * 4 + [State.OPTIMIZATION] * 4, "disagree"),
        ([State.DEGRADATION] * 4 + [State.NO_CHANGE] * 4, "disagree"),
        ([State.DEGRADATION] * 2 + [State.OPTIMIZATION] * 2 + [State.NO_CHANGE] * 2, "disagree"),
        ([State.DEGRADATION], "1 host"),
        ([State.DEGRADATION] * 2, "2 host"),
    ],
)
def test_ties_and_too_few_hosts_are_not_meaningful(states, why):
    sign = {State.DEGRADATION: 1.0, State.OPTIMIZATION: -1.0, State.NO_CHANGE: 0.0}
    by_host = {f"h{i}": [_change("f", s, 0.3 * sign[s])] for i, s in enumerate(states)}
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.NOT_MEANINGFUL and why in v.reason and not v.flagged
    assert v.hosts == len(states)


def test_hosts_that_did_not_trace_or_could_not_judge_do_not_vote():
    by_host: dict[str, list[Change]] = {f"h{i}": [_change("f", State.DEGRADATION, 0.2 + 0.01 * i)] for i in range(3)}
    by_host["h3"] = [Change("f", "joint", State.NOT_MEANINGFUL, "", math.nan, 0.0, "none", None,
                            {"reason": "too few calls"})]
    by_host["h4"] = [_change("g", State.NO_CHANGE, 0.0)]  # traced another function only
    by_host["h5"] = []
    verdicts = {v.function: v for v in fleet_function_verdicts(by_host)}
    f = verdicts["f"]
    assert f.verdict is State.DEGRADATION and f.hosts == 3 and f.hosts_flagged == 3
    assert f.not_meaningful_hosts == ("h3",) and f.magnitude == pytest.approx(0.21)
    assert verdicts["g"].verdict is State.NOT_MEANINGFUL and verdicts["g"].hosts == 1
    assert math.isnan(verdicts["g"].ci[0]) and math.isnan(f.share)  # one host: no interval; no metric: no share


def test_kind_is_the_majority_kind_of_the_flagged_hosts():
    kinds = ["linear", "linear", "linear", "constant", "constant", "quadratic"]
    by_host = {f"h{i}": [_change("f", State.DEGRADATION, 0.3, k)] for i, k in enumerate(kinds)}
    by_host["h9"] = [_change("f", State.OPTIMIZATION, -0.3, "exponential")]
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.DEGRADATION
    assert v.kind == "linear" and v.hosts_flagged == 6 and v.optimizations == 1


def test_a_majority_whose_interval_over_hosts_includes_no_change_is_not_meaningful():
    # a 3-host self-comparison (tags@v1 vs itself) under a load shift: two hosts flag every function slower,
    # the third runs it faster; 2 of 3 is a majority, but the median's CI over hosts spans zero
    by_host = {"a": [_change("f", State.DEGRADATION, 0.12)], "b": [_change("f", State.DEGRADATION, 0.06)],
               "c": [_change("f", State.NO_CHANGE, -0.04)]}
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.NOT_MEANINGFUL and "includes no change" in v.reason and v.ci[0] < 0 < v.ci[1]
    by_host["c"] = [_change("f", State.NO_CHANGE, 0.01)]  # the same majority, every host on one side
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.DEGRADATION and v.ci[0] > 0


def test_seeded_and_independent_of_host_order_and_other_functions():
    by_host, excl, dm = _planted_fleet(seed=3)
    a = fleet_function_verdicts(by_host, excl, dm, random_state=7)
    b = fleet_function_verdicts(dict(reversed(list(by_host.items()))), excl, dm, random_state=7)
    assert a == b
    only_hot = {h: [c for c in cs if c.function == "hot"] for h, cs in by_host.items()}
    (hot,) = fleet_function_verdicts(only_hot, excl, dm, random_state=7)
    assert hot == a[0]
    c = fleet_function_verdicts(by_host, excl, dm, random_state=8)
    assert c[0].magnitude == a[0].magnitude  # the median does not depend on the seed, the interval may


def test_to_dict_is_the_report_json_entry():
    by_host, excl, dm = _planted_fleet(seed=2)
    verdicts = fleet_function_verdicts(by_host, excl, dm)
    doc = json.loads(json.dumps([v.to_dict() for v in verdicts], allow_nan=False))
    assert set(doc[0]) == {"function", "verdict", "kind", "magnitude", "ci", "hosts_flagged", "hosts", "share",
                           "reason"}
    assert doc[0]["function"] == "hot" and doc[0]["verdict"] == "degradation" and len(doc[0]["ci"]) == 2
    single = fleet_function_verdicts({"h": [_change("f", State.DEGRADATION, 0.3)]})[0].to_dict()
    assert single["ci"] == [None, None] and single["share"] is None and single["verdict"] == "not-meaningful"
    assert single["reason"] == "1 host(s) with a meaningful result; a fleet verdict needs 3"
    assert isinstance(verdicts[0], FleetFunctionVerdict)


def test_bad_input():
    two_methods = {"h1": [_change("f", State.NO_CHANGE, 0.0)],
                   "h2": [Change("f", "exclusive", State.NO_CHANGE, "", 0.0, 0.5, "1-p", 0.5)]}
    with pytest.raises(UsageError, match="one detector"):
        fleet_function_verdicts(two_methods)
    with pytest.raises(UsageError, match="two verdicts"):
        fleet_function_verdicts({"h": [_change("f", State.NO_CHANGE, 0.0), _change("f", State.NO_CHANGE, 0.0)]})
    for kw in ({"min_hosts": 0}, {"confidence": 1.0}, {"n_boot": 0}, {"random_state": -1}):
        with pytest.raises(UsageError):
            fleet_function_verdicts({}, **kw)
    assert fleet_function_verdicts({}) == []


def test_a_majority_change_below_the_practical_floor_is_no_change() -> None:
    """Every host flags -4.7 % (the CI over hosts excludes 0): below the profile's 5 % floor it is no change,
    with why; with the floor lowered to 1 % the same hosts give an optimization."""
    by_host = {f"h{i}": [_change("f", State.OPTIMIZATION, -0.047 + 0.001 * i)] for i in range(3)}
    (v,) = fleet_function_verdicts(by_host)
    assert v.verdict is State.NO_CHANGE and "below the 5% floor" in v.reason and v.ci[1] < 0
    (w,) = fleet_function_verdicts(by_host, min_effect=0.01)
    assert w.verdict is State.OPTIMIZATION
