"""The application on the local fleet runs in the caller's environment: the caller's PATH (not quiho's scripts
directory first) and none of Ansible's variables."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sysconfig
from pathlib import Path

import pytest

from quiho.app import load_app_spec, run_app
from quiho.store import open_store


def test_setup_and_runs_find_the_callers_python3_not_quihos(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = "/usr/local/bin:/usr/bin:/bin"
    want = shutil.which("python3", path=path)
    if want is None:
        pytest.skip("no python3 on /usr/local/bin:/usr/bin:/bin")
    scripts = sysconfig.get_path("scripts")
    if os.path.dirname(want) == scripts:
        pytest.skip(f"quiho's scripts directory is {scripts}, where the caller's python3 is: nothing to tell apart")
    monkeypatch.setenv("PATH", path)  # the caller's PATH: quiho started as .venv/bin/quiho, venv not activated
    monkeypatch.setenv("ANSIBLE_NOCOLOR", "0")  # the caller's own; ansible-playbook runs with quiho's "1"
    inv = tmp_path / "one.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local}\n  hosts:\n    env-host: {}\n")
    spec = tmp_path / "env.yml"
    spec.write_text(
        "schema_version: 1\nname: env\nversions:\n"
        "  v1: {command: [sh, -c, 'command -v python3 > run.txt; printf %s \"$PATH\" > path.txt; env > env.txt'],\n"
        f"       setup: [sh, -c, 'command -v python3 > setup.txt'], workdir: {tmp_path}}}\n"
        "repetitions: 1\ntimeout: 60\n"
    )
    with open_store(tmp_path / "q.db") as st:
        run = run_app(load_app_spec(spec), "v1", inv, store=st)
    assert run.status == "complete", json.dumps(run.to_dict())
    assert sqlite3.connect(tmp_path / "q.db").execute("SELECT status FROM app_runs").fetchall() == [("ok",)]
    assert (tmp_path / "setup.txt").read_text().strip() == want
    assert (tmp_path / "run.txt").read_text().strip() == want
    assert (tmp_path / "path.txt").read_text() == path  # the caller's PATH, without Ansible's links first
    env = dict(ln.split("=", 1) for ln in (tmp_path / "env.txt").read_text().splitlines() if "=" in ln)
    assert env["ANSIBLE_NOCOLOR"] == "0"  # what the caller had, not what Ansible ran with
    assert not {k for k in env if k.startswith(("ANSIBLE_", "AWX_", "RUNNER_", "QUIHO_CALLER"))} - {"ANSIBLE_NOCOLOR"}


def test_kept_artifacts_hold_the_events_not_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An Invocation's keep_dir gets the job events, not ansible-runner's file of the whole environment."""
    import functools

    from quiho.fleet import runner, session

    secret = "quiho-test-secret-4711"
    monkeypatch.setenv("PGPASSWORD", secret)
    keep = tmp_path / "kept"
    monkeypatch.setattr(session, "Invocation", functools.partial(runner.Invocation, keep_dir=keep))
    inv = tmp_path / "one.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local}\n  hosts:\n    env-host: {}\n")
    spec = tmp_path / "true.yml"
    spec.write_text("schema_version: 1\nname: t\nversions:\n  v1: {command: ['true']}\nrepetitions: 1\ntimeout: 60\n")
    with open_store(tmp_path / "q.db") as st:
        run = run_app(load_app_spec(spec), "v1", inv, store=st)
    assert run.status == "complete", json.dumps(run.to_dict())
    files = [p for p in keep.rglob("*") if p.is_file()]
    assert any(p.parent.name == "job_events" for p in files)
    assert not [p for p in files if secret in p.read_text(errors="replace")]
