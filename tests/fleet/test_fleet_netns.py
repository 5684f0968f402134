"""Real multi-host: 3 network namespaces, each with its own sshd (key auth, generated known_hosts,
host-key checking on), fingerprinted and running an app through the same playbooks over SSH; faults.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from quiho.app import load_app_spec, run_app
from quiho.fingerprint import FingerprintPlan, fingerprint
from quiho.fingerprint.battery import load_battery
from quiho.store import Store, open_store
from quiho.testing.netns import NetnsFleet

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.stressng]

REPO = Path(__file__).resolve().parents[2]
QUICK = len(load_battery("quick").stressors)  # stressors per repetition of the quick battery


@pytest.fixture(scope="module")
def fleet() -> Iterator[NetnsFleet]:
    with NetnsFleet(3, prefix="qtest") as f:
        yield f
    # teardown removed namespaces and links even if a test failed
    import subprocess

    assert not any(h.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
                   for h in f.hosts)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(tmp_path / "q.db")
    yield s
    s.close()


def _in_host_dir(host: str):
    return lambda p: p.comm.startswith("stress-ng") and "/quiho-remote/" in p.cwd and p.cwd.endswith("/" + host)


def _rows(store: Store, run_id: int, host: str) -> list[tuple]:
    return [
        tuple(r)
        for r in store.conn.execute(
            "SELECT m.id, m.repetition, m.stressor, m.value, m.status FROM measurements m JOIN hosts h "
            "ON h.id=m.host_id WHERE m.run_id=? AND h.name=? ORDER BY m.id",
            (run_id, host),
        )
    ]


def test_fingerprint_three_ssh_hosts(
    fleet: NetnsFleet, store: Store, ptools: SimpleNamespace, run_dir: Path
) -> None:
    run = fingerprint(fleet.inventory, store=store,
                      plan=FingerprintPlan(battery="quick", repetitions=1, warmup_seconds=0))
    assert run.status == "complete", run
    assert sorted(h.name for h in run.hosts) == sorted(h.name for h in fleet.hosts)
    assert all(h.status == "ok" and h.ok + h.failed == QUICK and h.missing == 0 for h in run.hosts)
    for h in fleet.hosts:
        facts = json.loads(store.conn.execute("SELECT facts_json FROM hosts WHERE name=?", (h.name,)).fetchone()[0])
        assert "stress-ng" in facts["stress_ng_version"] and facts["memtotal_mb"] > 0
    assert ptools.live(ptools.ours(run_dir)) == []  # no ansible-playbook or ssh mux left


def test_host_key_checking_is_on(fleet: NetnsFleet, store: Store, tmp_path: Path) -> None:
    # Same hosts, but a known_hosts with other keys: every host must be refused, nothing measured.
    wrong = tmp_path / "known_hosts"
    lines = []
    for i, h in enumerate(fleet.hosts, 1):
        key = tmp_path / f"k{i}"
        import subprocess

        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        lines.append(f"{h.address} {' '.join(key.with_suffix('.pub').read_text().split()[:2])}")
    wrong.write_text("\n".join(lines) + "\n")
    inv = tmp_path / "inv.yml"
    inv.write_text(fleet.inventory.read_text().replace(str(fleet.known_hosts), str(wrong)))
    run = fingerprint(inv, store=store, plan=FingerprintPlan(battery="quick", repetitions=1, warmup_seconds=0))
    assert run.status == "failed"
    assert all(h.status == "unreachable" and h.ok == 0 for h in run.hosts), run
    assert any("host key" in (h.reason or "").lower() or "verification failed" in (h.reason or "").lower()
               for h in run.hosts), [h.reason for h in run.hosts]


def test_killed_host_leaves_run_partial_and_resume_completes_it(
    fleet: NetnsFleet, store: Store, ptools: SimpleNamespace
) -> None:
    victim = fleet.hosts[1]
    w = ptools.start_watcher(_in_host_dir(victim.name), lambda _ps: fleet.kill_all(victim))
    try:
        run = fingerprint(fleet.inventory, store=store,
                          plan=FingerprintPlan(battery="quick", repetitions=2, warmup_seconds=0))
    finally:
        w.stop()
    assert w.fired_at is not None
    by = {h.name: h for h in run.hosts}
    assert run.status == "partial"
    assert by[victim.name].status == "unreachable" and by[victim.name].missing > 0
    others = [h for h in fleet.hosts if h is not victim]
    assert all(by[h.name].missing == 0 and by[h.name].status == "ok" for h in others)
    before = {h.name: _rows(store, run.run_id, h.name) for h in others}
    assert all(len(v) == 2 * QUICK for v in before.values())

    fleet.restart_sshd(victim)
    again = fingerprint(store=store, resume=run.batch)
    assert again.run_id == run.run_id and again.status == "complete", again
    # only the victim ran again: the others' rows are untouched, their attempt count is still 1
    assert {h.name: _rows(store, run.run_id, h.name) for h in others} == before
    assert len(_rows(store, run.run_id, victim.name)) == 2 * QUICK
    attempts = dict(
        store.conn.execute(
            "SELECT h.name, s.attempts FROM fleet_host_status s JOIN hosts h ON h.id=s.host_id WHERE s.batch=?",
            (run.batch,),
        ).fetchall()
    )
    assert attempts[victim.name] == 2 and all(attempts[h.name] == 1 for h in others)
    status = store.conn.execute("SELECT status FROM fingerprint_runs WHERE id=?", (run.run_id,)).fetchone()[0]
    assert status == "complete"


def test_link_down_ends_in_bounded_time_without_orphans(
    fleet: NetnsFleet, store: Store, ptools: SimpleNamespace, run_dir: Path
) -> None:
    victim = fleet.hosts[2]
    w = ptools.start_watcher(_in_host_dir(victim.name), lambda _ps: fleet.link(victim, up=False))
    t0 = time.monotonic()
    try:
        run = fingerprint(fleet.inventory, store=store,
                          plan=FingerprintPlan(battery="quick", repetitions=1, warmup_seconds=0))
    finally:
        w.stop()
        fleet.link(victim, up=True)
    took = time.monotonic() - t0
    assert w.fired_at is not None
    # ServerAlive 2 s x 3 detects the dead link; the rest is the other hosts' own work
    assert took - (w.fired_at - t0) < 60, f"{took:.0f} s in total, link cut at {w.fired_at - t0:.0f} s"
    by = {h.name: h for h in run.hosts}
    assert by[victim.name].status in ("unreachable", "failed") and by[victim.name].missing > 0
    assert all(by[h.name].missing == 0 for h in fleet.hosts if h is not victim)
    assert run.status == "partial"
    assert ptools.live(ptools.ours(run_dir)) == []  # no orphan ansible-playbook or ssh


def test_app_over_ssh_failure_keeps_stderr(fleet: NetnsFleet, store: Store, tmp_path: Path) -> None:
    spec_file = tmp_path / "app.yml"
    spec_file.write_text(
        "schema_version: 1\nname: toy\n"
        f"versions:\n  spin: {{command: [python3, spin.py, '0.3'], workdir: {REPO / 'examples/apps'}}}\n"
        "  broken: {command: [python3, -c, 'import sys; sys.stderr.write(\"toy: broken\\n\"); sys.exit(3)']}\n"
        "repetitions: 1\ntimeout: 60\n"
    )
    spec = load_app_spec(spec_file)
    ok = run_app(spec, "spin", fleet.inventory, store=store)
    assert ok.status == "complete" and all(r.value and r.value > 0 for r in ok.results)
    bad = run_app(spec, "broken", fleet.inventory, store=store)
    assert bad.status == "failed" and len(bad.results) == 3
    assert all(r.reason == "exit code 3" and "toy: broken" in (r.stderr_tail or "") for r in bad.results)
    n = store.conn.execute("SELECT COUNT(*) FROM app_runs WHERE application='toy'").fetchone()[0]
    assert n == 6  # the failed version did not replace the good one
