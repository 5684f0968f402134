"""The event → record mapping of every fleet run, replayed from recorded ansible-runner events (no root, no Ansible).

The files in ``tests/data/fleet-events/`` were recorded once from real runs (root, stress-ng, ansible-runner
on a one-host local inventory plus an unreachable ssh host) with::

    .venv/bin/python tests/fleet/record_events.py tests/data/fleet-events

(see that script for the scenarios). Each file holds the events of each playbook invocation as
ansible-runner delivered them, minus fields the mapping never reads. Replaying them through
:class:`quiho.fleet.runner.EventLog` and the pure mapping functions gives the records the live run stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quiho.app.run import app_records
from quiho.app.spec import AppSpec
from quiho.fingerprint.run import fingerprint_records, unpack_artifacts
from quiho.fleet.runner import EventLog, FleetEvent, PlaybookResult
from quiho.fleet.session import FleetSession
from quiho.profile.interleave import interleaved_records

DATA = Path(__file__).resolve().parents[1] / "data" / "fleet-events"
SPEC = AppSpec.model_validate({
    "name": "rec",
    "versions": {"ok": {"command": ["echo", '{"result": {"ops": 41.5}}']},
                 "fail": {"command": ["sh", "-c", "echo doomed >&2; exit 3"]},
                 "slow": {"command": ["sleep", "30"]}},
    "metric": {"kind": "json", "path": "result.ops", "unit": "ops/s", "higher_is_better": True},
    "repetitions": 2, "timeout": 2,
})


def _load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def _replay(inv: dict[str, Any], seen: list[FleetEvent] | None = None) -> PlaybookResult:
    log = EventLog(seen.append if seen is not None else None)
    for ev in inv["events"]:
        log(ev)
    return log.result(inv["status"], inv["rc"], cancelled=inv["timed_out"], timeout_s=inv["timeout_s"])


def test_fingerprint_events_give_one_row_per_stressor_and_the_host_facts(tmp_path: Path) -> None:
    doc = _load("fingerprint-ok.json")
    (inv,), (rec,) = doc["invocations"], doc["fingerprint_records"]
    seen: list[FleetEvent] = []
    res = _replay(inv, seen)
    assert res.hosts["rec-a"].status == "ok" and not res.timed_out
    assert [e.kind for e in seen if e.kind in ("done", "failed", "unreachable")] == ["done"]
    unpack_artifacts(res, ["rec-a"], tmp_path)
    assert (tmp_path / "rec-a" / "rep1.yaml").exists()
    plan = {int(k): v for k, v in rec["plan"].items()}
    out = fingerprint_records(res, "rec-a", plan, rec["params"], tmp_path)
    assert (out.status, out.reason, out.errors) == ("ok", None, ())
    rows = {(r[0], r[1]): r for r in out.rows}
    assert set(rows) == {(1, "cpu"), (1, "null")}
    assert all(r[3] == "ok" and r[2] is not None and r[2] > 0 for r in rows.values())
    assert all(r[5]["job_rc"] == 0 and 0 <= r[5]["machine_busy_share"] <= 1 for r in rows.values())
    assert out.facts["vcpus"] >= 1 and out.facts["cpu_model"] and out.facts["stress_ng_version"]


def test_a_job_killed_at_the_outer_timeout_blames_the_hung_stressor(tmp_path: Path) -> None:
    doc = _load("fingerprint-hang.json")
    inv, rec = doc["invocations"][0], doc["fingerprint_records"][0]
    res = _replay(inv)
    unpack_artifacts(res, ["rec-a"], tmp_path)
    out = fingerprint_records(res, "rec-a", {int(k): v for k, v in rec["plan"].items()}, rec["params"], tmp_path)
    rows = {r[1]: r for r in out.rows}
    assert rows["null"][3] == "failed" and rows["null"][2] is None
    assert rows["null"][4] == "hung: still running when the outer timeout (6 s) killed the job"
    assert rows["null"][5]["job_rc"] in (124, 137)
    assert rows["cpu"][3] == "ok" and rows["cpu"][2] > 0  # before the hung one: kept
    assert "zero" not in rows  # after it: missing, run again in the next pass
    assert out.status == "ok"


def test_a_run_cancelled_by_the_outer_deadline_marks_the_host_timeout_and_records_nothing(tmp_path: Path) -> None:
    doc = _load("fingerprint-cancelled.json")
    inv, rec = doc["invocations"][0], doc["fingerprint_records"][0]
    res = _replay(inv)
    assert res.timed_out and res.status == "timeout"
    assert res.hosts["rec-a"].status == "timeout"
    assert res.hosts["rec-a"].reason == "outer timeout of 6 s: run cancelled"
    unpack_artifacts(res, ["rec-a"], tmp_path)
    out = fingerprint_records(res, "rec-a", {int(k): v for k, v in rec["plan"].items()}, rec["params"], tmp_path)
    assert out.rows == () and out.status == "timeout"


def test_app_metric_from_json_stdout_and_an_unreachable_host() -> None:
    invs = _load("app-ok.json")["invocations"]
    assert [i["limit"] for i in invs] == [["rec-a"], ["rec-gone"]]  # local and ssh hosts run apart
    seen: list[FleetEvent] = []
    results = [(i["limit"], _replay(i, seen)) for i in invs]
    statuses = {h: s for group, res in results for h, s in FleetSession.host_statuses(res, group).items()}
    assert statuses["rec-a"] == ("ok", None)
    st, why = statuses["rec-gone"]
    assert st == "unreachable" and "Connection refused" in (why or "") and why.startswith("quiho remote dir: ")
    assert any(e.kind == "unreachable" and e.host == "rec-gone" for e in seen)
    recs = [r for _, res in results for r in app_records(res, SPEC, "ok")]
    assert [(r.host, r.repetition, r.status, r.value) for r in recs] == [("rec-a", 1, "ok", 41.5),
                                                                      ("rec-a", 2, "ok", 41.5)]


def test_app_failure_keeps_exit_code_and_stderr() -> None:
    (inv,) = _load("app-fail.json")["invocations"]
    res = _replay(inv)
    recs = app_records(res, SPEC, "fail")
    assert len(recs) == 2
    assert all(r.status == "failed" and r.value is None and r.reason == "exit code 3" for r in recs)
    assert all("doomed" in (r.stderr_tail or "") for r in recs)
    assert res.hosts["rec-a"].status == "ok"  # the command failed; the host did not


def test_app_timeout_is_named_with_the_spec_timeout() -> None:
    (inv,) = _load("app-slow.json")["invocations"]
    recs = app_records(_replay(inv), SPEC, "slow")
    assert [r.reason for r in recs] == ["timed out after 2 s"] * 2
    assert all(r.status == "failed" and r.value is None for r in recs)


def test_interleaved_events_alternate_versions_drop_warmups_and_record_the_unreachable_host() -> None:
    recs = []
    for inv in _load("interleaved.json")["invocations"]:
        res, group = _replay(inv), inv["limit"]
        recs += interleaved_records(res, group, SPEC, {"1": "ok", "2": "fail"}, first=0, n_warm=2, n_runs=6,
                                    statuses=FleetSession.host_statuses(res, group))
    a = sorted((r for r in recs if r.host == "rec-a"), key=lambda r: r.order)
    assert [r.version for r in a] == ["ok", "fail"] * 3  # the wrapper's marker, not the position, decides
    assert [r.warmup for r in a] == [True, True, False, False, False, False]
    assert [(r.version, r.repetition, r.status, r.value) for r in a if not r.warmup] == [
        ("ok", 1, "ok", 41.5), ("fail", 1, "failed", None), ("ok", 2, "ok", 41.5), ("fail", 2, "failed", None)]
    assert all(r.reason == "exit code 3: doomed" for r in a if r.version == "fail")
    gone = [r for r in recs if r.host == "rec-gone"]
    assert len(gone) == 4 and all(r.status == "failed" and (r.reason or "").startswith("not run: host unreachable")
                                  for r in gone)
    assert sorted((r.version, r.repetition) for r in gone) == [("fail", 1), ("fail", 2), ("ok", 1), ("ok", 2)]


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json")))
def test_recorded_files_are_small_and_name_their_recorder(name: str) -> None:
    doc = _load(name)
    assert doc["recorded_with"] == "tests/fleet/record_events.py"
    assert (DATA / name).stat().st_size < 64_000


@pytest.mark.parametrize("name", ["app-ok.json", "app-fail.json", "interleaved.json", "fingerprint-ok.json"])
def test_a_host_on_this_machine_runs_no_task_it_skips(name: str) -> None:
    # a skipped task still costs a worker process: what a whole invocation skips is left out when the play is
    # parsed (the controller's remote directory, a setup there is none of); the stress-ng install depends on facts
    for inv in [i for i in _load(name)["invocations"] if i["limit"] == ["rec-a"]]:
        events = [e for e in inv["events"] if e["event_data"]["host"] == "rec-a"]
        tasks = {e["event_data"]["task"] for e in events}
        assert events and not tasks & {"quiho remote dir", "quiho remote cleanup", "quiho app setup"}
        assert {e["event_data"]["task"] for e in events if e["event"] == "runner_on_skipped"} <= {
            "quiho install stress-ng"}


def test_a_host_lost_during_a_task_is_unreachable_whichever_way_ansible_says_it() -> None:
    """ansible-core 2.16 sends a host whose sshd died during a task as a task failure, 2.19 as unreachable."""
    lost = {"msg": "Failed to connect to the host via ssh: ssh: connect to host 10.200.174.2 port 22: "
                   "Connection refused"}  # recorded from 2.16.19 (tests/fleet/test_fleet_netns.py's killed host)
    events = [{"event": "runner_on_start", "event_data": {"host": h, "task": "quiho measure"}} for h in "abc"]
    events += [
        {"event": "runner_on_failed", "event_data": {"host": "a", "task": "quiho measure", "res": lost}},
        {"event": "runner_on_unreachable", "event_data": {"host": "b", "task": "quiho measure", "res": lost}},
        {"event": "runner_on_failed", "event_data": {"host": "c", "task": "quiho measure",
                                                     "res": {"msg": "non-zero return code", "rc": 2}}},
    ]
    seen: list[FleetEvent] = []
    res = _replay({"events": events, "status": "failed", "rc": 2, "timed_out": False, "timeout_s": 60}, seen)
    assert [res.hosts[h].status for h in "abc"] == ["unreachable", "unreachable", "failed"]
    assert res.hosts["a"].reason == "quiho measure: " + lost["msg"]
    assert [(e.host, e.kind) for e in seen if e.kind != "task"] == [("a", "unreachable"), ("b", "unreachable"),
                                                                    ("c", "failed")]
