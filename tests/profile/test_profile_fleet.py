"""quiho profile on a real (small) local fleet: stress-ng, ansible-runner, cgroups, the example C apps.

Kept short for CI: 3 emulated hosts, quick battery with 1 repetition, 2 runs per version per host,
3 seeds. The ≥6-host figures (and ≥5 self-comparisons) are in bench/profile_false_positives.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from quiho.cli.main import main

pytestmark = [pytest.mark.root, pytest.mark.stressng, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HOSTS = """all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    pf-plain: {}
    pf-q40-stream: {quiho_cpu_quota_pct: 40, quiho_corunner: stream}
    pf-q100-vm: {quiho_cpu_quota_pct: 100, quiho_corunner: vm}
"""
# v2 fails on the host whose cgroup names it (the local fleet puts each emulated host in its own cgroup).
# v1's setup counts its calls in the workdir (a copy of examples/cpuloop).
FLAKY = """schema_version: 1
name: flaky
versions:
  v1:
    setup: [sh, -c, 'echo built >> setup.log && exec gcc -O2 -o cpuloop cpuloop.c']
    command: [./cpuloop, "3000000"]
    workdir: {workdir}
  v2:
    command: [sh, -c, 'grep -q pf-q40 /proc/self/cgroup && {{ echo "flaky: <boom> on $(hostname)" >&2; exit 7; }};
              exec ./cpuloop 3000000']
    workdir: {workdir}
metric: {{kind: regex, name: loop-time, pattern: 'time_s: ([0-9.]+)', unit: s}}
repetitions: 2
timeout: 30
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("pf")
    (d / "hosts.yml").write_text(HOSTS)
    (d / "more.yml").write_text(HOSTS + "    pf-new: {}\n")
    (d / "app").mkdir()
    shutil.copy(REPO / "examples" / "cpuloop" / "cpuloop.c", d / "app")
    (d / "flaky.yml").write_text(FLAKY.format(workdir=d / "app"))
    # the example's spec with 3 passes instead of 5: nadds30 is still ~8x nadds1, in less time
    example = (REPO / "examples" / "stream" / "stream.yml").read_text()
    assert example.count('"5"]') == 2 and example.count("workdir: .") == 2
    (d / "stream.yml").write_text(example.replace('"5"]', '"3"]')
                                  .replace("workdir: .", f"workdir: {REPO / 'examples' / 'stream'}"))
    return d


def _run(capsys, *args):
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_nadds1_vs_nadds30_is_a_regression_with_its_size(fleet, capsys):
    rc, out, err = _run(
        capsys, "profile", "stream@nadds1", "stream@nadds30", "--spec", str(fleet / "stream.yml"),
        "-i", str(fleet / "hosts.yml"), "--max-age", "0", "--fingerprint-repetitions", "1", "--repetitions", "2",
        "--seeds", "2",
        "--store", str(fleet / "q.db"), "--report", str(fleet / "report"), "--json", "--fail-on-change",
    )
    assert rc == 3, err  # --fail-on-change and a regression
    doc = json.loads(out)
    assert doc["schema"] == "quiho.profile" and doc["verdict"] == "regression"
    m = doc["metric"]
    assert m["hosts_used"] == 3 and m["hosts_worse"] == 3
    assert m["change"] > 1.0  # nadds30 does 30 dependent adds per element: several times slower
    assert m["ci"][0] > 0.5
    assert doc["fingerprint"]["fresh"] is True
    assert "fingerprinting 3 host(s)" in err and "in 2 blocked rounds" in err
    rounds = {(r["host"], r["round"]) for r in doc["runs"]}
    assert rounds == {(h, r) for h in ("pf-plain", "pf-q40-stream", "pf-q100-vm") for r in (0, 1)}
    _assert_each_host_ran_right_after_its_fingerprint(fleet / "q.db", doc)
    irup = doc["irup"]
    # 3 hosts x 2 repetitions are 6 training rows per version: below what an IRUP needs, and the report says so
    # (the metric verdict stands on its own)
    from quiho.irup.engine import MIN_GROUPS, MIN_ROWS

    assert 3 * 2 < MIN_ROWS and MIN_GROUPS <= 3
    for key in ("a", "b"):
        assert irup[key] is None and f"has 6 rows; an IRUP needs at least {MIN_ROWS}" in irup["errors"][key]
    assert irup["verdict"] == "unavailable" and any(h["kind"] == "validity" for h in doc["hints"])
    for name in ("report.html", "report.json", "metric.png", "fingerprints.png"):
        assert (fleet / "report" / name).exists()
    assert json.loads((fleet / "report" / "report.json").read_text())["batch"] == doc["batch"]


def _assert_each_host_ran_right_after_its_fingerprint(db, doc):
    """One fingerprint run, complete; host i's runs start after its fingerprint ends and before host i+1's does."""
    import sqlite3
    from datetime import datetime

    con = sqlite3.connect(db)
    runs = con.execute("SELECT id, batch, status FROM fingerprint_runs").fetchall()
    assert len(runs) == 1 and runs[0][2] == "complete" and doc["fingerprint"]["run_id"] == runs[0][0]
    assert doc["params"]["fingerprint_rows"].startswith("host median (each host fingerprinted right before")
    fp_done = dict(con.execute("SELECT h.name, s.updated_at FROM fleet_host_status s JOIN hosts h ON h.id = s.host_id "
                               "WHERE s.kind = 'fingerprint' AND s.batch = ?", (runs[0][1],)).fetchall())
    app_start = dict(con.execute("SELECT h.name, MIN(r.started_at) FROM app_runs r JOIN hosts h ON h.id = r.host_id "
                                 "WHERE r.batch = ? GROUP BY h.name", (doc["batch"],)).fetchall())
    ts = datetime.fromisoformat
    order = ["pf-plain", "pf-q40-stream", "pf-q100-vm"]  # inventory order
    assert set(fp_done) == set(app_start) == set(order)
    for i, host in enumerate(order):
        assert ts(fp_done[host]) <= ts(app_start[host])
        if i + 1 < len(order):
            assert ts(app_start[host]) < ts(fp_done[order[i + 1]])


def test_bad_input_unknown_version_runs_nothing(fleet, capsys):
    rc, out, err = _run(capsys, "profile", "stream@nadds1", "stream@nadds99", "--spec",
                        str(REPO / "examples/stream/stream.yml"), "-i", str(fleet / "hosts.yml"),
                        "--store", str(fleet / "bad.db"))
    assert rc == 1 and out == ""
    assert "has no version 'nadds99'" in err and "nadds1, nadds30" in err
    rc, _, err = _run(capsys, "profile", "stream@nadds1", "pchase@short", "--store", str(fleet / "bad.db"))
    assert rc == 2 and "one application" in err
    rc, _, err = _run(capsys, "profile", "stream", "stream@nadds1", "--store", str(fleet / "bad.db"))
    assert rc == 2 and "APP@VERSION" in err


def test_failing_host_and_missing_fingerprint_are_kept_and_marked(fleet, capsys):
    # Reuses the fingerprint of the first test (3 hosts); pf-new has none.
    rc, out, err = _run(
        capsys, "profile", "flaky@v1", "flaky@v2", "--spec", str(fleet / "flaky.yml"), "-i", str(fleet / "more.yml"),
        "--max-age", "1h", "--warmup", "0", "--seeds", "2", "--store", str(fleet / "q.db"),
        "--report", str(fleet / "flaky"), "--json",
    )
    assert rc == 0, err  # a partial profile is a result, not an error (the verdict is not what this test is about)
    doc = json.loads(out)
    assert doc["status"] == "partial"
    assert doc["fingerprint"]["fresh"] is False and "reusing fingerprint run" in err
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert hosts["pf-q40-stream"]["ok_b"] == 0 and hosts["pf-q40-stream"]["failed_b"] == 2
    # the hosts' knobs make a design; a pass with failed runs is not visited again, and says why
    if doc["design"] and doc["design"]["verdict"] == "inconclusive":
        assert doc["params"]["design_stage"] == 1
        assert any("not visited again because some of its runs failed" in n for n in doc["notes"]), doc["notes"]
    assert any("exit code 7" in r and "<boom>" in r for r in hosts["pf-q40-stream"]["reasons"])
    assert hosts["pf-q40-stream"]["ok_a"] == 2  # the host's other version is kept
    assert hosts["pf-new"]["fingerprinted"] is False and hosts["pf-new"]["ok_a"] == 2
    notes = " ".join(doc["partial"])
    assert "pf-new has no fingerprint" in notes and "pf-q40-stream" in notes
    assert doc["metric"]["hosts_used"] == 3  # pf-q40-stream has no run of v2 to pair with
    assert doc["metric"]["excluded_hosts"] == {"pf-q40-stream": "no successful run of v2"}
    page = (fleet / "flaky" / "report.html").read_text()
    assert "Partial result" in page and "MISSING" in page and "&lt;boom&gt;" in page and "<boom>" not in page
    row = __import__("sqlite3").connect(fleet / "q.db").execute(
        "SELECT status FROM profiles WHERE batch = ?", (doc["batch"],)).fetchone()
    assert row == ("partial",)
    # 4 hosts x 2 rounds are 8 visits of this one machine: the first visit's build serves the others
    assert (fleet / "app" / "setup.log").read_text() == "built\n"


def test_stored_traces_of_both_versions_are_joined_into_the_hints(fleet, capsys, synthetic_calls):
    from quiho.store import open_store
    from quiho.trace import CallStats, TraceSource, save_trace

    db = fleet / "q.db"
    with open_store(db) as st:
        batch = st.conn.execute("SELECT batch FROM profiles WHERE application = 'stream' ORDER BY id DESC"
                                ).fetchone()[0]
        stats = CallStats(4 * 200, 400, 0, 0, 0, 0, 0)
        for version, scale, seed in (("nadds1", 1.0, 1), ("nadds30", 1.4, 2)):
            calls = synthetic_calls(200, scale, seed, functions=("init", "kernel"))
            save_trace(st, "stream", version, calls, stats,
                       TraceSource(command="stream", engine="bpftrace", functions=("init", "kernel")))
    # a bad trace reference is refused before anything is run or re-analysed
    rc, out, err = _run(capsys, "profile", "stream@nadds1", "stream@nadds30", "--batch", batch,
                        "--trace-baseline", "stream@nadds7", "--store", str(db))
    assert rc == 1 and out == "" and "no stored trace run 'stream@nadds7'" in err
    rc, out, err = _run(capsys, "profile", "stream@nadds1", "stream@nadds30", "--batch", batch, "--seeds", "2",
                        "--store", str(db), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    traced = [h for h in doc["hints"] if h["kind"] == "trace"]
    assert traced and {h["subject"] for h in traced} == {"kernel"}  # only the slowed function
    assert traced[0]["evidence"]["magnitude"] > 0.3
    assert any(n.startswith("per-function traces joined: stream@nadds1") for n in doc["notes"])
    rc, out, _ = _run(capsys, "profile", "stream@nadds1", "stream@nadds30", "--batch", batch, "--seeds", "2",
                      "--store", str(db), "--json", "--no-traces")
    assert rc == 0 and not [h for h in json.loads(out)["hints"] if h["kind"] == "trace"]
