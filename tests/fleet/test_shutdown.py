"""Clean shutdown, for real: SIGTERM mid-fingerprint and mid-profile, Ctrl-C while waiting on a lock, zombies.

Real ``quiho`` processes (``python -m quiho``), real ansible-runner, stress-ng and cgroups on the local fleet.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from quiho.fleet.local.emulate import CGROUP_CPU, THP_PATH, THP_SAVE
from quiho.testing.procs import has_open

REPO = Path(__file__).resolve().parents[2]
EMULATED = """all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    sd-a: {quiho_cpu_quota_pct: 60, quiho_corunner: stream, quiho_thp: always}
    sd-b: {quiho_cpu_quota_pct: 80, quiho_thp: never}
"""
ONE = "all:\n  vars: {ansible_connection: local}\n  hosts:\n    sd-one: {}\n"


def _thp() -> str:
    text = THP_PATH.read_text()
    return text[text.index("[") + 1:text.index("]")]


def _quiho(args: list[str], run_dir: Path, **kw: object) -> subprocess.Popen[str]:
    env = dict(os.environ, QUIHO_RUN_DIR=str(run_dir), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    return subprocess.Popen([sys.executable, "-m", "quiho", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, **kw)  # type: ignore[call-overload]


def _wait_for(pred: Callable[[], bool], proc: subprocess.Popen[str], what: str, limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while not pred():
        if proc.poll() is not None:
            tail = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"quiho ended ({proc.returncode}) before {what}: {tail}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"never saw {what}")
        time.sleep(0.1)


def _proc_cwds(prefix: str) -> list[tuple[int, str, str]]:
    """(pid, comm, cwd) of live processes whose working directory is under ``prefix``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(f"/proc/{entry}/cwd")
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
        except (OSError, IndexError):
            continue
        if state != "Z" and cwd.startswith(prefix):
            out.append((int(entry), comm, cwd))
    return out


def _nothing_left(batch: str, thp_before: str, ptools: object, run_dir: Path) -> None:
    assert sorted(d.name for d in CGROUP_CPU.glob(f"*{batch}*")) == []  # quota groups and the co-runner's
    assert _thp() == thp_before and not THP_SAVE.exists()
    assert _proc_cwds(f"/tmp/quiho-remote/{batch}") == []  # no stressor, co-runner or app
    assert not Path(f"/tmp/quiho-remote/{batch}").exists()  # the remote run dir the playbook never removed
    assert ptools.live(ptools.ours(run_dir)) == []  # type: ignore[attr-defined]  # no ansible-playbook or ssh


@pytest.mark.root
@pytest.mark.stressng
def test_sigterm_mid_fingerprint_cleans_up_marks_partial_and_resumes(tmp_path: Path, ptools: object) -> None:
    inv, db, run_dir = tmp_path / "inv.yml", tmp_path / "q.db", tmp_path / "runs"
    inv.write_text(EMULATED)
    thp_before = _thp()
    assert thp_before != "always", "the test needs the emulated host to change the THP policy"
    proc = _quiho(["fingerprint", "-i", str(inv), "--battery", "quick", "--repetitions", "1", "--seconds", "2",
                   "--warmup", "0", "--store", str(db)], run_dir)
    # mid-measurement on the emulated host: its stressors run in its cgroup with THP switched
    _wait_for(lambda: _thp() == "always" and any(c.startswith("stress-ng") and c != "stress-ng" and w.endswith("/sd-a")
                                                 for _, c, w in _proc_cwds("/tmp/quiho-remote/fp-")),
              proc, "a stressor of sd-a")
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 130 and "interrupted" in err, err
    conn = sqlite3.connect(db)
    batch, status, params = conn.execute("SELECT batch, status, params_json FROM fingerprint_runs").fetchone()
    conn.close()
    assert status == "partial" and "interrupted (SIGTERM)" in json.loads(params)["interrupted"]
    _nothing_left(batch, thp_before, ptools, run_dir)
    proc = _quiho(["fingerprint", "--resume", batch, "--store", str(db), "--json"], run_dir)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["batch"] == batch and doc["status"] == "complete"
    assert {h["name"]: h["missing"] for h in doc["hosts"]} == {"sd-a": 0, "sd-b": 0}
    _nothing_left(batch, thp_before, ptools, run_dir)


@pytest.mark.root
@pytest.mark.stressng
@pytest.mark.slow
def test_sigterm_mid_profile_keeps_measured_hosts_cleans_up_and_resumes(tmp_path: Path, ptools: object) -> None:
    inv, db, run_dir, spec = tmp_path / "inv.yml", tmp_path / "q.db", tmp_path / "runs", tmp_path / "nap.yml"
    inv.write_text(EMULATED)
    spec.write_text("schema_version: 1\nname: nap\nversions:\n  v1: {command: [sleep, '1']}\n"
                    "  v2: {command: [sleep, '1.2']}\nmetric: {kind: runtime, unit: s}\nrepetitions: 2\ntimeout: 60\n")
    thp_before = _thp()
    args = ["profile", "nap@v1", "nap@v2", "--spec", str(spec), "-i", str(inv), "--warmup", "0", "--seeds", "2",
            "--fingerprint-repetitions", "1", "--fingerprint-seconds", "1", "--store", str(db), "--json",
            "--rounds", "1"]  # host by host: sd-a's runs are all stored when sd-b's start
    proc = _quiho([*args, "--max-age", "0"], run_dir)
    # the second host's interleaved runs: sd-a is done and stored, sd-b is mid-run
    _wait_for(lambda: any(c == "sleep" and w.endswith("/sd-b") for _, c, w in _proc_cwds("/tmp/quiho-remote/profile-")),
              proc, "the app running on sd-b", limit=600)
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 130, err
    batch = next(w for w in err.split() if w.startswith("profile-"))
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT h.name, a.version, a.status FROM app_runs a JOIN hosts h ON h.id = a.host_id "
                        "WHERE a.batch = ?", (batch,)).fetchall()
    assert sorted(rows) == sorted([("sd-a", v, "ok") for v in ("v1", "v1", "v2", "v2")])
    assert conn.execute("SELECT COUNT(*) FROM profiles").fetchone()[0] == 0
    conn.close()
    _nothing_left(batch, thp_before, ptools, run_dir)
    proc = _quiho([*args, "--max-age", "1h", "--resume", batch], run_dir)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "on 1 host(s)" in err  # only sd-b ran again
    doc = json.loads(out)
    assert doc["batch"] == batch
    assert {h["host"]: (h["ok_a"], h["ok_b"]) for h in doc["hosts"]} == {"sd-a": (2, 2), "sd-b": (2, 2)}
    _nothing_left(batch, thp_before, ptools, run_dir)


def _ignore_sigint() -> None:  # as a background job of a non-interactive shell starts
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_while_waiting_on_the_measurement_lock_exits_at_once(tmp_path: Path) -> None:
    from quiho.fleet.lock import lock_path, measurement_lock

    inv, db = tmp_path / "one.yml", tmp_path / "q.db"
    inv.write_text(ONE)
    with measurement_lock(db, what="test holder"):
        proc = _quiho(["fingerprint", "-i", str(inv), "--battery", "quick", "--store", str(db)], tmp_path / "runs",
                      preexec_fn=_ignore_sigint)
        # the child opens the lock file inside its interruptible block, right before it polls: waiting from then on
        _wait_for(lambda: has_open(proc.pid, lock_path(db)), proc, "the wait on the measurement lock")
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=15)  # the holder still holds the lock: only the interrupt can end the wait
    assert rc == 130 and "interrupted" in (proc.stderr.read() if proc.stderr else "")
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM fingerprint_runs").fetchone()[0] == 0


@pytest.mark.root
def test_ctrl_c_while_waiting_on_the_local_fleet_lock_exits_at_once(tmp_path: Path) -> None:
    from quiho.fleet.local.emulate import local_fleet_lock

    inv, db, spec = tmp_path / "one.yml", tmp_path / "q.db", tmp_path / "t.yml"
    inv.write_text(ONE)
    spec.write_text("schema_version: 1\nname: t\nversions:\n  v1: {command: ['true']}\n")
    with local_fleet_lock():
        proc = _quiho(["run", str(spec), "--version", "v1", "-i", str(inv), "--store", str(db)], tmp_path / "runs")

        def hosts_known() -> bool:  # the run records the inventory just before it queues on the machine lock
            try:
                return sqlite3.connect(db).execute("SELECT COUNT(*) FROM fleet_hosts").fetchone()[0] == 1
            except sqlite3.Error:
                return False

        _wait_for(hosts_known, proc, "the inventory being recorded")
        time.sleep(1.0)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=15)
    assert rc == 130
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM app_runs").fetchone()[0] == 0


def test_orphans_are_reaped_where_pid_1_does_not(tmp_path: Path) -> None:
    # An 'ssh' that daemonises (as ControlPersist masters do) is re-parented to the subreaper and reaped there;
    # another orphan ('other') is left to reap_all_children, which the CLI calls when a fleet command ends.
    for name in ("ssh", "other"):
        (tmp_path / name).symlink_to("/bin/sleep")  # comm is the link's name
    script = f"""
import os, subprocess, time
from pathlib import Path
from quiho.fleet.shutdown import become_subreaper, reap_all_children, reap_children
def zombies():
    return [p for p in os.listdir("/proc") if p.isdigit() and Path(f"/proc/{{p}}/stat").exists()
            and Path(f"/proc/{{p}}/stat").read_text().rsplit(")", 1)[1].split()[:2] == ["Z", str(os.getpid())]]
assert become_subreaper()
subprocess.run(["sh", "-c", "{tmp_path}/ssh 0.3 & {tmp_path}/other 0.3 &"], check=True)  # sh exits: orphans
time.sleep(1.0)
print(len(zombies()), reap_children(), len(zombies()), reap_all_children(), len(zombies()))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2", "1", "1", "1", "0"]  # two zombie children of ours: ssh reaped first, then the other
