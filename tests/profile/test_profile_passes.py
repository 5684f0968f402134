"""A designed local fleet visited a second time when the first pass cannot answer: real stress-ng, cgroups, runs.

Four hosts on this machine (a CPU quota and a host label: two factors), a version against itself with no floor,
so no factor can read ``equivalent`` and the first pass is ``inconclusive`` unless the test falsely says
``different`` (at most 2.5 %). Kept short: the quick battery at 1 s, one run a visit, no warm-up.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
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
    pp-q100-one: {quiho_cpu_quota_pct: 100, quiho_factors: {label: one}}
    pp-q60-one: {quiho_cpu_quota_pct: 60, quiho_factors: {label: one}}
    pp-q100-two: {quiho_cpu_quota_pct: 100, quiho_factors: {label: two}}
    pp-q60-two: {quiho_cpu_quota_pct: 60, quiho_factors: {label: two}}
"""
SPEC = """schema_version: 1
name: loop
versions:
  v1:
    setup: [gcc, -O2, -o, cpuloop, cpuloop.c]
    command: [./cpuloop, "3000000"]
    workdir: {workdir}
metric: {{kind: regex, name: loop-time, pattern: 'time_s: ([0-9.]+)', unit: s}}
repetitions: 2
timeout: 30
"""


def _loop_profile(tmp_path: Path, hosts: str) -> tuple[list[str], Path]:
    """The argv of a short self-profile of the loop on the fleet ``hosts`` (inventory text), and its store."""
    (tmp_path / "hosts.yml").write_text(hosts)
    (tmp_path / "app").mkdir()
    shutil.copy(REPO / "examples" / "cpuloop" / "cpuloop.c", tmp_path / "app")
    (tmp_path / "loop.yml").write_text(SPEC.format(workdir=tmp_path / "app"))
    store = tmp_path / "q.db"
    return ["profile", "loop@v1", "loop@v1", "--spec", str(tmp_path / "loop.yml"), "-i", str(tmp_path / "hosts.yml"),
            "--battery", "quick", "--fingerprint-seconds", "1", "--fingerprint-repetitions", "1", "--warmup", "0",
            "--seeds", "2", "--store", str(store), "--json"], store


def test_an_inconclusive_first_pass_visits_every_host_again_and_decides_on_both(tmp_path, capsys):
    argv, store = _loop_profile(tmp_path, HOSTS)
    argv += ["--rounds", "2", "--min-change", "0"]
    rc = main(argv)
    out = capsys.readouterr()
    assert rc in (0, 3), out.err
    doc = json.loads(out.out)
    d = doc["design"]
    assert d["settings"]["looks"] == 2 and d["settings"]["level"] == pytest.approx(0.025)
    assert {f["name"] for f in doc["design"]["factors"]["factors"]} == {"cpu-quota", "label"}
    con = sqlite3.connect(store)
    rounds = {(json.loads(x)["round"], json.loads(x)["stage"]) for (x,) in con.execute(
        "SELECT extra_json FROM app_runs WHERE source = 'profile'")}
    fingerprints = con.execute("SELECT COUNT(*) FROM fingerprint_runs").fetchone()[0]
    con.close()
    assert fingerprints == 1  # the second pass reuses the hosts' fingerprints
    if doc["params"]["design_stage"] == 1:  # the first pass said "different": a false claim, at most 2.5 %
        assert d["verdict"] == "different" and d["visits"] == 8 and rounds == {(0, 1), (1, 1)}
        return
    assert rounds == {(0, 1), (1, 1), (2, 2), (3, 2)}
    assert d["visits"] == 16 and d["verdict"] != "equivalent"
    assert any(n.startswith("pass 2 of 2: the first 8 visits were inconclusive at Holm level 0.025")
               for n in doc["notes"]), doc["notes"]
    assert "split over 2 looks" in d["reason"] or d["verdict"] == "not-meaningful"
    assert "visiting every host again (pass 2 of 2)" in out.err

    # cut off in its second pass (round 3's runs gone), a resume finishes that pass without judging the first
    # pass again with part of the second (a third look)
    con = sqlite3.connect(store)
    with con:
        con.execute("DELETE FROM app_runs WHERE batch = ? AND json_extract(extra_json, '$.round') = 3", (doc["batch"],))
    con.close()
    rc = main([*argv, "--resume", doc["batch"]])
    out = capsys.readouterr()
    assert rc in (0, 3), out.err
    again = json.loads(out.out)
    assert "resuming the second pass over the hosts (pass 2 of 2; the first 8 visits were inconclusive)" in out.err
    assert out.err.count("computing the metric change") == 1 and "visiting every host again" not in out.err
    assert again["design"]["visits"] == 16 and again["params"]["design_stage"] == 2
    con = sqlite3.connect(store)
    assert con.execute("SELECT COUNT(DISTINCT host_id) FROM app_runs WHERE batch = ? AND "
                       "json_extract(extra_json, '$.round') = 3", (doc["batch"],)).fetchone()[0] == 4
    con.close()


def test_first_round_fingerprints_leave_the_fold_over_out_on_purpose(tmp_path, capsys):
    """``--fingerprint-hosts first-round``: round 2's hosts run but are not fingerprinted, and nothing calls them
    missing (the profile, a re-analysis, the run's status); a later default profile fingerprints every host."""
    rounds = {"pp-q100-one": 0, "pp-q60-two": 0, "pp-q60-one": 1, "pp-q100-two": 1}
    hosts = HOSTS
    for name, r in rounds.items():
        hosts = hosts.replace(f"{name}: {{", f"{name}: {{quiho_design_rounds: [{r}], ")
    argv, store = _loop_profile(tmp_path, hosts)
    argv += ["--stages", "1"]
    rc = main([*argv, "--fingerprint-hosts", "first-round"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    doc = json.loads(out.out)
    assert "fingerprinting 2 of 4 host(s) (the first round's)" in out.err
    by_host = {h["host"]: (h["fingerprinted"], h["fingerprint_skipped"]) for h in doc["hosts"]}
    assert by_host == {h: (r == 0, r == 1) for h, r in rounds.items()}
    assert not any("fingerprint" in p for p in doc["partial"]), doc["partial"]  # (2 rows: no IRUP is partial)
    assert any(n.startswith("2 of 4 hosts not fingerprinted on purpose (--fingerprint-hosts first-round")
               for n in doc["notes"]), doc["notes"]
    con = sqlite3.connect(store)
    fp_hosts = {h for (h,) in con.execute("SELECT DISTINCT h.name FROM measurements m JOIN hosts h ON h.id = "
                                          "m.host_id")}
    runs = con.execute("SELECT status FROM fingerprint_runs").fetchall()
    visited = {h for (h,) in con.execute("SELECT DISTINCT h.name FROM app_runs a JOIN hosts h ON h.id = a.host_id")}
    con.close()
    assert fp_hosts == {"pp-q100-one", "pp-q60-two"} and visited == set(rounds) and runs == [("complete",)]

    # a re-analysis reads the same from the store
    rc = main(["profile", "loop@v1", "loop@v1", "--batch", doc["batch"], "--seeds", "2", "--store", str(store),
               "--json"])
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and again["hosts"] == doc["hosts"] and again["partial"] == doc["partial"]

    # asked for every host, a profile does not reuse a run that left hosts out on purpose
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "left hosts out on purpose (--fingerprint-hosts first-round); fingerprinting every host" in out.err
    full = json.loads(out.out)
    assert all(h["fingerprinted"] for h in full["hosts"]) and not any("fingerprint" in p for p in full["partial"])
