"""playbooks/visit.yml on a real local host: a host's fingerprint jobs and runs in one invocation.

Real ansible-runner, stress-ng and the store; one host, a 2-s job of two stressors, one run per version.
"""

from __future__ import annotations

import pytest

from quiho.app.spec import load_app_spec
from quiho.fingerprint.run import FingerprintPlan, open_run
from quiho.fleet import load_inventory
from quiho.fleet.session import FleetSession
from quiho.profile.interleave import InterleavePlan, Interleaving
from quiho.store import open_store

pytestmark = [pytest.mark.root, pytest.mark.stressng]

HOSTS = """all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    vt-one: {quiho_cpu_quota_pct: 90}
"""
SPEC = """schema_version: 1
name: echo
versions:
  v1:
    command: [sh, -c, 'echo "took: 0.5"']
metric: {kind: regex, name: took, pattern: 'took: ([0-9.]+)', unit: s}
repetitions: 1
timeout: 20
"""
BATTERY = """schema_version: 1
batteries:
  two: {seconds: 1, repetitions: 1, warmup_seconds: 0, stressors: [cpu, "null"]}
"""


def _visit(tmp_path, workdir=""):
    (tmp_path / "hosts.yml").write_text(HOSTS)
    (tmp_path / "app.yml").write_text(SPEC)
    (tmp_path / "batteries.yaml").write_text(BATTERY)
    store = open_store(tmp_path / "q.db")
    inv = load_inventory(tmp_path / "hosts.yml")
    run = open_run(store, inv, FingerprintPlan(battery="two", battery_file=tmp_path / "batteries.yaml"))
    seq = Interleaving(load_app_spec(tmp_path / "app.yml"), "v1", "v1",
                       InterleavePlan(repetitions=1, warmup=0, hosts=["vt-one"], fingerprint_run_id=run.run_id))
    jobs = run.missing(store, "vt-one")
    fp_vars, fp_budget = run.host_vars("vt-one", jobs)
    extravars = {**seq.extravars(0), **fp_vars,
                 "quiho_emulate_seconds": seq.emulate_s + int(fp_vars["quiho_emulate_seconds"])}
    if workdir:
        extravars["quiho_app"] = {**extravars["quiho_app"], "workdir": workdir}
    session = FleetSession(inv, "visit.yml", "visit-test", cgroup_prefix="qtest")
    res = session.run(["vt-one"], extravars, seq.budget_s + fp_budget)
    return store, run, seq, jobs, res, session


def test_one_visit_stores_the_fingerprint_and_both_runs(tmp_path):
    store, run, seq, jobs, res, session = _visit(tmp_path)
    got = session.host_statuses(res, ["vt-one"])
    assert got == {"vt-one": ("ok", None)}
    assert run.record(store, res, "vt-one", jobs) is False  # nothing left to rerun
    assert run.missing(store, "vt-one") == {}
    recs = seq.store(store, "visit-test", res, ["vt-one"], 0, got)
    assert [(r.version, r.status, r.value) for r in recs] == [("v1", "ok", 0.5), ("v1#2", "ok", 0.5)]
    tasks = [e["event_data"]["task"] for e in res.events if e.get("event") == "playbook_on_task_start"]
    # the jobs, then the runs, then the archive: one invocation
    assert tasks.index("quiho measure") < tasks.index("quiho app run") < tasks.index("quiho collect")
    assert run.close(store, passes=1).status == "complete"


def test_a_failed_run_task_keeps_the_visits_fingerprint(tmp_path):
    # the runs' task cannot enter its directory and fails; the archive of the jobs before it is still collected
    store, run, seq, jobs, res, session = _visit(tmp_path, workdir=str(tmp_path / "gone"))
    st, why = session.host_statuses(res, ["vt-one"])["vt-one"]
    assert st == "failed" and why is not None and why.startswith("quiho app run:")
    run.record(store, res, "vt-one", jobs)
    assert run.missing(store, "vt-one") == {}
    recs = seq.store(store, "visit-test", res, ["vt-one"], 0, {"vt-one": (st, why)})
    assert {r.status for r in recs} == {"failed"} and all("not run: host failed" in r.reason for r in recs)
