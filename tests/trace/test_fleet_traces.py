"""Fleet verdicts of a profile's traced runs, from a real store (SQLite + Parquet), and their report section."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from quiho.profile.traces import FleetTraceSettings, fleet_traces
from quiho.report.trace_section import figure_order, save_functions_figure, trace_section_html
from quiho.store import open_store
from quiho.trace import CallStats, TraceSource, save_trace

HOSTS = ("h1", "h2", "h3")
ODD = "<b>slow&er</b>"


def _store_runs(db: Path, synthetic_calls: Any, scale_b: dict[str, float]) -> Any:
    st = open_store(db)
    for i, h in enumerate(HOSTS):
        for rep in range(2):
            for version, scale in (("v1", 1.0), ("v2", scale_b[h])):
                calls = synthetic_calls(200, scale, seed=100 * i + 10 * rep + (version == "v2"),
                                        functions=("steady", ODD))
                save_trace(st, "app", version, calls, CallStats(400, 400, 0, 0, 0, 0, 0),
                           TraceSource(command="app", engine="bpftrace", functions=("steady", ODD),
                                       host=h, batch="profile-x", wall_s=1.0))
    # a run of another profile must not be pooled in
    save_trace(st, "app", "v2", synthetic_calls(200, 9.0, seed=7, functions=("steady", ODD)),
               CallStats(400, 400, 0, 0, 0, 0, 0),
               TraceSource(command="app", engine="bpftrace", functions=("steady", ODD),
                           host="h1", batch="profile-other"))
    return st


def test_a_function_slower_on_every_host_is_the_only_one_flagged(tmp_path: Path, synthetic_calls: Any) -> None:
    st = _store_runs(tmp_path / "q.db", synthetic_calls, {h: 1.5 for h in HOSTS})
    # the metric (s per run) rose by 5 ms on every host; the function's own time rose 200 calls x 2.5 us = 0.5 ms
    values = {h: ([0.100, 0.100], [0.105, 0.105]) for h in HOSTS}
    ft = fleet_traces(st, "app", "v1", "v2", "profile-x", metric_values=values, settings=FleetTraceSettings(unit="s"))
    assert ft is not None and ft.traced_runs == 12
    by = {f.function: f for f in ft.functions}
    assert by[ODD].verdict.value == "degradation" and by[ODD].hosts_flagged == 3 and by[ODD].hosts == 3
    assert 0.45 < by[ODD].magnitude < 0.55 and by[ODD].ci[0] > 0.4
    assert by[ODD].share == pytest.approx(0.1, rel=0.05)
    assert by["steady"].verdict.value == "no-change"
    (hint,) = ft.hints()
    assert hint.subject == ODD and "3 of 3 hosts" in hint.message and "10% of the metric change" in hint.message
    doc = ft.to_dict()
    assert {f["function"] for f in doc["functions"]} == {"steady", ODD}
    assert doc["overhead"]["median_ratio"] is None  # no untraced runs stored: no overhead claimed
    assert figure_order(ft)[0] == ODD
    html = "".join(trace_section_html(ft, "<p>img</p>", "v1", "v2"))
    assert "Functions that changed" in html and ODD not in html and "&lt;b&gt;slow&amp;er&lt;/b&gt;" in html
    png = save_functions_figure(ft, "v1", "v2", tmp_path / "functions.png")
    assert png is not None and png.stat().st_size > 10_000
    st.close()


def test_hosts_that_disagree_give_not_meaningful(tmp_path: Path, synthetic_calls: Any) -> None:
    st = _store_runs(tmp_path / "q.db", synthetic_calls, {"h1": 1.5, "h2": 0.6, "h3": 1.0})
    ft = fleet_traces(st, "app", "v1", "v2", "profile-x")
    assert ft is not None
    odd = next(f for f in ft.functions if f.function == ODD)
    assert odd.verdict.value == "not-meaningful" and "disagree" in odd.reason
    assert math.isnan(odd.share)  # no metric given: no share claimed
    assert fleet_traces(st, "app", "v1", "v2", "profile-none") is None
    # APP@VERSION lookups (quiho detect, the profile's join of standalone `quiho trace` runs) never pool a
    # profile's per-host runs across machines
    from quiho.profile.traces import join_traces
    from quiho.store.traces import has_trace_run

    assert not has_trace_run(st, "app", "v1") and join_traces(st, "app", "v1", "v2") is None
    st.close()


def test_a_run_level_shift_is_not_a_function_change(tmp_path: Path, synthetic_calls: Any) -> None:
    """One traced run of the target 40 % slower in everything (the machine's moment, not the code): the pooled
    calls make every function significant on every host, the runs do not; only the function that is slower in
    every target run stays flagged."""
    from quiho.detect import State

    st = open_store(tmp_path / "q.db")
    for i, h in enumerate(HOSTS):
        for rep in range(3):
            for version, scale in (("v1", 1.0), ("v2", 1.5)):
                calls = synthetic_calls(200, scale, seed=100 * i + 10 * rep + (version == "v2"))
                if version == "v2" and rep == 1:
                    calls["inclusive_ns"] = (calls["inclusive_ns"] * 1.4).astype("int64")
                    calls["exclusive_ns"] = calls["inclusive_ns"]
                save_trace(st, "app", version, calls, CallStats(400, 400, 0, 0, 0, 0, 0),
                           TraceSource(command="app", engine="bpftrace", functions=("steady", "slower"),
                                       host=h, batch="profile-x", wall_s=1.0))
    ft = fleet_traces(st, "app", "v1", "v2", "profile-x")
    assert ft is not None
    by = {f.function: f for f in ft.functions}
    assert by["steady"].verdict.value == "no-change", by["steady"]
    assert by["slower"].verdict.value == "degradation" and by["slower"].hosts_flagged == 3
    for h in HOSTS:
        steady = next(c for c in ft.per_host[h] if c.function == "steady")
        # the calls alone flag it (a 40 % run among three), the runs' test does not: 1 of 3 target runs is slower
        assert steady.state is State.MAYBE and "the runs do not" in steady.support["why"], steady
        runs = steady.support["runs"]
        assert len(runs["baseline_medians_ns"]) == 3 and runs["p"] > runs["level"] == 0.05
        slower = next(c for c in ft.per_host[h] if c.function == "slower")
        assert slower.state is State.DEGRADATION and slower.support["runs"]["p"] == pytest.approx(0.05)
    st.close()


def test_a_function_whose_calls_are_mostly_the_tracer_is_not_judged(tmp_path: Path, synthetic_calls: Any) -> None:
    """The tracer costs 3 µs a call on every host (its tracer-cost run): "steady", 1 µs a call, reads 10 % faster in
    v2 as a drift of the probes' cost would make it, and is not judged, with the reason said in the JSON, report
    and site; the 5 → 7.5 µs function stays a degradation; without a tracer cost stored nothing changes."""
    from quiho.detect import State

    def store(db: Path, probe_ns: float | None) -> Any:
        st = open_store(db)
        for i, h in enumerate(HOSTS):
            for rep in range(2):
                for version, scale in (("v1", 1.0), ("v2", 1.5)):
                    calls = synthetic_calls(200, scale, seed=100 * i + 10 * rep + (version == "v2"))
                    if version == "v2":
                        steady = calls["function"] == "steady"
                        calls.loc[steady, "inclusive_ns"] = (calls.loc[steady, "inclusive_ns"] * 0.9).astype("int64")
                    save_trace(st, "app", version, calls, CallStats(400, 400, 0, 0, 0, 0, 0),
                               TraceSource(command="app", engine="bpftrace", functions=("steady", "slower"),
                                           host=h, batch="profile-x", wall_s=1.0, probe_ns=probe_ns))
        return st

    st = store(tmp_path / "q.db", 3000.0)
    ft = fleet_traces(st, "app", "v1", "v2", "profile-x")
    assert ft is not None
    by = {f.function: f for f in ft.functions}
    assert by["slower"].verdict is State.DEGRADATION and by["slower"].hosts == 3
    steady = by["steady"]
    assert steady.verdict is State.NOT_MEANINGFUL and steady.hosts == 0 and len(steady.not_meaningful_hosts) == 3
    assert steady.reason.startswith("its calls are within the tracer's own time on 3 of 3 hosts (median call 1.0 µs, "
                                    "the tracer's 3.0 µs a call)"), steady.reason
    for h in HOSTS:
        c = next(c for c in ft.per_host[h] if c.function == "steady")
        assert c.support["tracer_ns_per_call"] == 3000.0 and c.support["median_call_ns"] == pytest.approx(1000, abs=30)
    doc = ft.to_dict()
    assert {f["function"]: f["reason"] for f in doc["functions"]}["steady"] == steady.reason
    assert {o["tracer_ns_per_call"] for o in doc["overhead"]["hosts"].values()} == {3000.0}
    html = "".join(trace_section_html(ft, "", "v1", "v2"))
    assert "tracer µs / call" in html and "within the tracer&#x27;s own time" in html
    st.close()
    # the same calls without a tracer cost: the drift is read as the change it looks like
    st = store(tmp_path / "plain.db", None)
    ft = fleet_traces(st, "app", "v1", "v2", "profile-x")
    assert ft is not None
    assert {f.function: f.verdict for f in ft.functions} == {"steady": State.OPTIMIZATION, "slower": State.DEGRADATION}
    assert ft.to_dict()["overhead"]["hosts"]["h1"]["tracer_ns_per_call"] is None
    st.close()
