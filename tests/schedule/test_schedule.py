"""Scheduled fingerprinting: timer install/fire/remove, the measurement lock, kill -9 safety."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from quiho.schedule import (
    Busy,
    fire_schedule,
    install_schedule,
    measurement_lock,
    remove_schedule,
    schedule_status,
)
from quiho.store import open_store


@pytest.fixture()
def solo_inventory(tmp_path):
    """One plain localhost host: no cgroup emulation, so no root needed."""
    inv = tmp_path / "solo.yml"
    inv.write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: "
        f"{sys.executable}\n  hosts:\n    solo: {{quiho_cpu_quota_pct: 100, quiho_corunner: none}}\n"
    )
    return inv


@pytest.fixture()
def duo_inventory(tmp_path):
    """Two emulated localhost hosts (cgroup quota: needs root): measured and written one after the other."""
    inv = tmp_path / "duo.yml"
    inv.write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: "
        f"{sys.executable}\n  hosts:\n    duo1: {{quiho_cpu_quota_pct: 90, quiho_corunner: none}}\n"
        "    duo2: {quiho_cpu_quota_pct: 80, quiho_corunner: none}\n"
    )
    return inv


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.mark.stressng
def test_cron_install_fire_remove_in_sandbox(tmp_path, solo_inventory):
    root, store = tmp_path / "root", tmp_path / "q.db"
    s = install_schedule(store=store, inventory=solo_inventory, every="6", battery="quick", root=root,
                         backend="cron", name="qh-test")
    entry = (root / "etc/cron.d/qh-test").read_text()
    assert "7 */6 * * * root " in entry and "schedule run" in entry and str(store.resolve()) in entry
    assert oct((root / "etc/cron.d/qh-test").stat().st_mode & 0o777) == "0o644"
    assert schedule_status(name="qh-test", root=root).command == s.command
    with pytest.raises(Exception, match="already installed"):
        install_schedule(store=store, root=root, backend="cron", name="qh-test")
    _fire_and_find_run(s, store)
    assert remove_schedule(name="qh-test", root=root)
    assert _files_under(root) == []
    assert schedule_status(name="qh-test", root=root) is None


def _fire_and_find_run(s, store):
    r = fire_schedule(s, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    with open_store(store) as st:
        runs = st.conn.execute("SELECT batch, status FROM fingerprint_runs WHERE source='fleet'").fetchall()
        n = st.conn.execute("SELECT COUNT(*) FROM measurements WHERE status='ok'").fetchone()[0]
    assert len(runs) == 1 and runs[0]["status"] == "complete"
    assert n >= 5  # quick battery: 5 stressors x repetitions
    log = Path(str(store) + ".qh-test.log").read_text()
    assert runs[0]["batch"] in log


def test_systemd_units_in_sandbox(tmp_path):
    root = tmp_path / "root"
    s = install_schedule(store=tmp_path / "q.db", every="daily", root=root, backend="systemd", name="qh-test")
    service = (root / "etc/systemd/system/qh-test.service").read_text()
    timer = (root / "etc/systemd/system/qh-test.timer").read_text()
    assert "Type=oneshot" in service and "ExecStart=" in service
    assert "OnCalendar=*-*-* 03:17:00" in timer and "Persistent=true" in timer
    assert schedule_status(name="qh-test", root=root).backend == "systemd"
    assert len(remove_schedule(name="qh-test", root=root)) == 2 == len(s.files)
    assert _files_under(root) == []


def test_bad_cadence_and_name(tmp_path):
    from quiho.errors import UsageError

    with pytest.raises(UsageError, match="DAILY or a number of hours"):
        install_schedule(store=tmp_path / "q.db", every="weekly", root=tmp_path, backend="cron")
    with pytest.raises(UsageError, match="may only have"):
        install_schedule(store=tmp_path / "q.db", name="a b;rm", root=tmp_path, backend="cron")


def test_busy_lock_skips_with_a_message(tmp_path, solo_inventory):
    from quiho.fingerprint import FingerprintPlan
    from quiho.schedule import scheduled_fingerprint

    store = tmp_path / "q.db"
    log = tmp_path / "sched.log"
    with measurement_lock(store, what="quiho profile (test)"):
        out = scheduled_fingerprint(store, inventory=solo_inventory, plan=FingerprintPlan(battery="quick"), wait=False,
                                    log=log)
    assert out.status == "skipped" and "quiho profile (test)" in out.message and str(os.getpid()) in out.message
    assert "skipped" in log.read_text()
    with open_store(store) as st:
        assert st.conn.execute("SELECT COUNT(*) FROM fingerprint_runs").fetchone()[0] == 0


def test_waiting_lock_gets_it_after_release(tmp_path):
    store = tmp_path / "q.db"
    released = threading.Event()

    def hold():
        with measurement_lock(store, what="holder"):
            time.sleep(1.0)
        released.set()

    t = threading.Thread(target=hold)
    t.start()
    time.sleep(0.2)
    with pytest.raises(Busy):
        with measurement_lock(store, what="impatient", wait=True, timeout=0.3):
            pass
    with measurement_lock(store, what="patient", wait=True, timeout=30):
        assert released.is_set()
    t.join()


@pytest.mark.root
@pytest.mark.stressng
def test_kill_9_during_fingerprint_leaves_consistent_resumable_store(tmp_path, duo_inventory):
    from quiho.fingerprint import FingerprintPlan, fingerprint

    store = tmp_path / "q.db"
    cmd = [sys.executable, "-m", "quiho", "schedule", "run", "--store", str(store), "-i", str(duo_inventory),
           "--battery", "quick"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait until the run is half written
        time.sleep(0.3)
        if store.exists():
            try:
                c = sqlite3.connect(store, timeout=1)
                n = c.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
                c.close()
            except sqlite3.OperationalError:
                continue
            if n > 0:
                break
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)  # the whole tree, as an OOM kill or `systemctl kill -s KILL` would
    proc.wait(timeout=30)

    c = sqlite3.connect(store)
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert c.execute("SELECT status FROM fingerprint_runs").fetchone()[0] == "running"
    c.close()
    # the lock died with its holder; taking it marks the run partial (measuring() also lets fingerprint() in)
    from quiho.fleet.session import measuring

    with open_store(store) as st, measuring(st, "next run", wait=False) as marked:
        (rid,) = marked
        row = st.conn.execute("SELECT batch, status, params_json FROM fingerprint_runs WHERE id=?", (rid,)).fetchone()
        assert row["status"] == "partial" and "interrupted" in json.loads(row["params_json"])
        have = st.conn.execute("SELECT COUNT(*) FROM measurements WHERE run_id=?", (rid,)).fetchone()[0]
        run = fingerprint(duo_inventory, store=st, resume=row["batch"], plan=FingerprintPlan(battery="quick"))
        assert run.status == "complete" and run.run_id == rid
        # Only what was missing ran again: the first host's rows are the ones written before the kill.
        after = st.conn.execute("SELECT COUNT(*) FROM measurements WHERE run_id=?", (rid,)).fetchone()[0]
        assert after > have > 0
