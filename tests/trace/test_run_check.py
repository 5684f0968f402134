"""The run is the unit of replication on every path that pools traced runs: ``quiho detect`` on stored runs, the
trace join of ``quiho profile`` and fleet traces all check a flagged change across the runs (one rule,
:func:`quiho.detect.runs_agree`, applied by :func:`quiho.detect.detect`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quiho.cli.main import main
from quiho.detect import Change, Samples, State, detect, run_medians, runs_agree
from quiho.store import open_store
from quiho.trace import CallStats, TraceSource, load_perun_profile, load_trace_profile, save_trace


def _store(db: Path, synthetic_calls: Any) -> None:
    """Three runs per version; ``slower`` is 1.5x in every v2 run, and v2's second run is 40 % slower in everything."""
    with open_store(db) as st:
        for rep in range(3):
            for version, scale in (("v1", 1.0), ("v2", 1.5)):
                calls = synthetic_calls(200, scale, seed=10 * rep + (version == "v2"))
                if version == "v2" and rep == 1:
                    calls["inclusive_ns"] = (calls["inclusive_ns"] * 1.4).astype("int64")
                    calls["exclusive_ns"] = calls["inclusive_ns"]
                save_trace(st, "app", version, calls, CallStats(400, 400, 0, 0, 0, 0, 0),
                           TraceSource(command="app", engine="bpftrace", functions=("steady", "slower")))


def test_quiho_detect_on_stored_runs_checks_the_runs(tmp_path: Path, capsys: Any, synthetic_calls: Any) -> None:
    """One run in three 40 % slower in everything flags nothing; the function slower in every run stays flagged."""
    db = tmp_path / "q.db"
    _store(db, synthetic_calls)
    capsys.readouterr()
    assert main(["detect", "app@v1", "app@v2", "--store", str(db), "--json", "-m", "joint", "-m", "mwu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by = {(c["function"], c["method"]): c for c in doc["changes"]}
    steady = by[("steady", "joint")]
    assert steady["state"] == "maybe" and "the runs do not" in steady["support"]["why"], steady
    assert len(steady["support"]["runs"]["target_medians_ns"]) == 3
    assert by[("steady", "mwu")]["state"] in ("maybe", "no-change")
    for m in ("joint", "mwu"):
        slower = by[("slower", m)]
        assert slower["state"] == "degradation" and slower["support"]["runs"]["p"] == pytest.approx(0.05)
    assert main(["detect", "app@v1", "app@v2", "--store", str(db), "--fail-on-change", "-m", "joint"]) == 3
    with open_store(db) as st:  # the calls alone flag the steady function: the check is what removes it
        pa, pb = load_trace_profile(st, "app@v1"), load_trace_profile(st, "app@v2")
    alone = {c.function: c.state for c in detect(pa, pb, run_check=False)}
    assert alone == {"steady": State.DEGRADATION, "slower": State.DEGRADATION}


def test_the_profile_trace_join_checks_the_runs(tmp_path: Path, synthetic_calls: Any) -> None:
    from quiho.profile.traces import join_traces

    _store(tmp_path / "q.db", synthetic_calls)
    with open_store(tmp_path / "q.db") as st:
        joined = join_traces(st, "app", "v1", "v2")
    assert joined is not None
    by = {c.function: c for c in joined.changes}
    assert by["steady"].state is State.MAYBE and by["slower"].state is State.DEGRADATION
    assert joined.flagged == 1 and "1 change(s) flagged" in joined.note()


def _samples(medians: list[float], first_run: int, per_run: int = 20) -> Samples:
    y = np.repeat(medians, per_run) + np.tile(np.linspace(-1, 1, per_run), len(medians))
    return Samples.of(np.tile(np.arange(per_run), len(medians)), y,
                      run=np.repeat(np.arange(first_run, first_run + len(medians)), per_run))


def _flag(state: State) -> Change:
    return Change("f", "joint", state, "constant", 0.2 if state is State.DEGRADATION else -0.2, 0.999, "1-p", 1e-6)


def test_runs_agree_is_one_sided_at_the_smallest_attainable_p() -> None:
    a = _samples([100, 101, 102], first_run=1)
    b = _samples([110, 111, 112], first_run=4)
    assert list(run_medians(a)) == [100, 101, 102]
    kept = runs_agree(_flag(State.DEGRADATION), a, b)
    assert kept.state is State.DEGRADATION and kept.support["runs"]["p"] == pytest.approx(0.05)
    # the opposite direction is not what the runs show
    assert runs_agree(_flag(State.OPTIMIZATION), a, b).state is State.MAYBE
    # 2 + 2 runs: the best attainable p is 1/6 > 0.05, so the level is 1/6 (every run beyond every other)
    two = runs_agree(_flag(State.DEGRADATION), _samples([100, 101], 1), _samples([110, 111], 3))
    assert two.state is State.DEGRADATION and two.support["runs"]["level"] == pytest.approx(1 / 6)
    overlap = runs_agree(_flag(State.DEGRADATION), _samples([100, 112], 1), _samples([110, 111], 3))
    assert overlap.state is State.MAYBE
    # one run on a side: nothing to check, the verdict stands untouched
    one = _flag(State.DEGRADATION)
    assert runs_agree(one, _samples([100], 1), b) is one
    # no run labels (a Perun profile): untouched
    plain = Samples.of(np.arange(60), np.repeat([100.0, 101, 102], 20))
    assert runs_agree(one, plain, b) is one


def test_perun_profiles_carry_no_runs_and_their_verdicts_do_not_move(shared_data: Any) -> None:
    data = shared_data("perun/degradation_profiles")
    for fam in ("lin", "exp"):
        base = load_perun_profile(data / f"{fam}1.perf")
        assert all(s.run is None for s in base.functions.values())
        for k in (2, 3, 4):
            tgt = load_perun_profile(data / f"{fam}{k}.perf")
            checked = detect(base, tgt, ["joint", "preg"])
            alone = detect(base, tgt, ["joint", "preg"], run_check=False)
            assert [c.to_dict() for c in checked] == [c.to_dict() for c in alone]


def test_quiho_detect_leaves_out_functions_whose_calls_are_mostly_the_tracer(tmp_path: Path, capsys: Any,
                                                                           synthetic_calls: Any) -> None:
    """Runs traced where the tracer costs 3 µs a call: ``steady`` (1 µs a call, 10 % faster in v2 as a drift of the
    probes would make it) is not judged by any method, with why in the text and JSON; ``slower`` (5 → 7.5 µs) is
    judged. One run without the tracer's time and the rule is off: the calls cannot be read against it."""
    import doctest

    import quiho.detect._runs

    assert doctest.testmod(quiho.detect._runs).failed == 0
    db = tmp_path / "q.db"
    with open_store(db) as st:
        for rep in range(3):
            for version, scale in (("v1", 1.0), ("v2", 1.5)):
                calls = synthetic_calls(200, scale, seed=10 * rep + (version == "v2"))
                if version == "v2":
                    steady = calls["function"] == "steady"
                    calls.loc[steady, "inclusive_ns"] = (calls.loc[steady, "inclusive_ns"] * 0.9).astype("int64")
                save_trace(st, "app", version, calls, CallStats(400, 400, 0, 0, 0, 0, 0),
                           TraceSource(command="app", engine="bpftrace", functions=("steady", "slower"),
                                       probe_ns=3000.0 + rep))
    capsys.readouterr()
    assert main(["detect", "app@v1", "app@v2", "--store", str(db), "--json", "-m", "joint", "-m", "mwu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tracer_ns_per_call"] == {"baseline": 3001.0, "target": 3001.0}
    by = {(c["function"], c["method"]): c for c in doc["changes"]}
    for m in ("joint", "mwu"):
        s = by[("steady", m)]
        assert s["state"] == "not-meaningful" and s["magnitude"] is None, s
        assert s["support"]["measured_magnitude"] < -0.05 and "under 2x the tracer's own time" in s["support"]["why"]
        assert by[("slower", m)]["state"] == "degradation"
    assert main(["detect", "app@v1", "app@v2", "--store", str(db), "-m", "joint"]) == 0
    text = capsys.readouterr().out
    assert "tracer's own time per call: 3.0 µs (baseline), 3.0 µs (target)" in text
    assert "steady (joint): not judged: its calls (median 1.0 µs) are under 2x" in text
    with open_store(db) as st:  # a run of v2 traced without measuring the tracer
        save_trace(st, "app", "v2", synthetic_calls(200, 1.5, seed=99), CallStats(400, 400, 0, 0, 0, 0, 0),
                   TraceSource(command="app", engine="bpftrace", functions=("steady", "slower")))
        pa, pb = load_trace_profile(st, "app@v1"), load_trace_profile(st, "app@v2")
    assert pa.tracer_ns == 3001.0 and pb.tracer_ns is None
    assert all("tracer_ns_per_call" not in c.support for c in detect(pa, pb, ["joint"]))
