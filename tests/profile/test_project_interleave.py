"""The project file, --max-age parsing, and the interleaving/setup shell scripts (run for real with sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from quiho.errors import AppSpecError, UsageError
from quiho.profile import load_project, parse_age, resolve_spec
from quiho.profile.interleave import INTERLEAVE_SH, SETUP_SH, store_label

REPO = Path(__file__).resolve().parents[2]


def test_repo_project_file_names_the_examples():
    proj = load_project(REPO / "quiho.yml")
    assert proj is not None and proj.profile.battery == "quick"
    spec = resolve_spec("stream", project=proj)
    assert set(spec.versions) == {"nadds1", "nadds30"} and spec.metric.unit == "s"
    assert not spec.metric.higher_is_better
    with pytest.raises(AppSpecError, match="no application spec for 'nope'.*stream"):
        resolve_spec("nope", project=proj)
    with pytest.raises(AppSpecError, match="describes application 'pchase'"):
        resolve_spec("stream", spec=REPO / "examples/pchase/pchase.yml")


def test_project_file_errors(tmp_path):
    bad = tmp_path / "quiho.yml"
    bad.write_text("schema_version: 9\n")
    with pytest.raises(AppSpecError, match="schema_version 9"):
        load_project(bad)
    bad.write_text("applications: {a: x.yml}\nprofile: {min_change: 3}\n")
    with pytest.raises(AppSpecError, match="min_change"):
        load_project(bad)
    bad.write_text("[1, 2")
    with pytest.raises(AppSpecError, match="not valid YAML"):
        load_project(bad)


@pytest.mark.parametrize(("text", "secs"), [("90", 90), ("30m", 1800), ("6h", 21600), ("2d", 172800), ("0", 0)])
def test_parse_age(text, secs):
    assert parse_age(text) == secs


def test_parse_age_rejects_garbage():
    for bad in ("six hours", "-1h", "h"):
        with pytest.raises(UsageError):
            parse_age(bad)


def test_store_label_separates_a_self_comparison():
    assert store_label("v1", "v2") == "v2"
    assert store_label("v1", "v1") == "v1#2"


def _interleave(cwd: Path, first: int, argv1: list[str], argv2: list[str], d1: str = "", d2: str = "") -> str:
    cmd = ["sh", "-c", INTERLEAVE_SH, "sh", str(first), str(len(argv1)), d1, d2, *argv1, *argv2]
    # Ansible's chdir leaves $PWD naming the controller's directory: the counter must not follow it
    env = {"PATH": "/usr/bin:/bin", "PWD": str(cwd.parent)}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout


def test_interleave_alternates_and_passes_arguments_verbatim(tmp_path):
    tricky = ["printf", "%s|", "a b", "$HOME", "'; rm -rf /'", "*"]
    outs = [_interleave(tmp_path, 0, tricky, ["echo", "two"]) for _ in range(4)]
    assert [o.splitlines()[0] for o in outs] == ["quiho-version: 1", "quiho-version: 2"] * 2
    assert outs[0].splitlines()[1] == "a b|$HOME|'; rm -rf /'|*|"  # no shell expansion of user data
    assert outs[1].splitlines()[1] == "two"
    assert (tmp_path / ".quiho-interleave").read_text().strip() == "4"
    assert not (tmp_path.parent / ".quiho-interleave").exists()
    other = tmp_path / "other"
    other.mkdir()
    outs = [_interleave(other, 1, ["pwd"], ["pwd"], d1=str(tmp_path), d2="/") for _ in range(2)]
    assert outs[0].splitlines() == ["quiho-version: 2", "/"]
    assert outs[1].splitlines() == ["quiho-version: 1", str(tmp_path)]


def test_setup_runs_both_and_stops_on_failure(tmp_path):
    (tmp_path / "x").mkdir()
    cmd = ["sh", "-c", SETUP_SH, "sh", "2", str(tmp_path / "x"), str(tmp_path), "touch", "one", "touch", "two"]
    subprocess.run(cmd, cwd=tmp_path, check=True)
    assert (tmp_path / "x" / "one").exists() and (tmp_path / "two").exists()
    fail = ["sh", "-c", SETUP_SH, "sh", "1", "", "", "false", "touch", "never"]
    assert subprocess.run(fail, cwd=tmp_path).returncode != 0
    assert not (tmp_path / "never").exists()
    none_first = ["sh", "-c", SETUP_SH, "sh", "0", "", "", "touch", "only"]
    subprocess.run(none_first, cwd=tmp_path, check=True)
    assert (tmp_path / "only").exists()


def test_fingerprint_run_choice_prefers_coverage_then_age(tmp_path):
    from quiho.profile import find_fingerprint_run
    from quiho.store import open_store

    st = open_store(tmp_path / "q.db")
    with st.transaction() as c:
        for name in ("h1", "h2", "h3"):
            c.execute("INSERT INTO hosts(name, created_at) VALUES (?, '2026-01-01T00:00:00+00:00')", (name,))
        runs = [("old-full", "2000-01-01T00:00:00+00:00", ["h1", "h2", "h3"]),
                ("recent-full", None, ["h1", "h2", "h3"]), ("newest-one", None, ["h1"])]
        from quiho.store import utcnow

        for batch, t, hosts in runs:
            rid = c.execute("INSERT INTO fingerprint_runs(source, batch, status, started_at, finished_at, "
                            "quiho_version) VALUES ('fleet', ?, 'complete', ?, ?, 'x')",
                            (batch, t or utcnow(), t or utcnow())).lastrowid
            for h in hosts:
                hid = c.execute("SELECT id FROM hosts WHERE name=?", (h,)).fetchone()[0]
                c.execute("INSERT INTO measurements(run_id, host_id, repetition, stressor, value, status) "
                          "VALUES (?, ?, 1, 'cpu', 1.0, 'ok')", (rid, hid))
    got = find_fingerprint_run(st, ["h1", "h2", "h3"], 3600)
    assert got is not None and got[1] == "recent-full"
    assert find_fingerprint_run(st, ["h1", "h2", "h3"], 0) is None
    assert find_fingerprint_run(st, ["h9"], 3600) is None
