"""A real history: a git repository whose commit 15 makes a C program 10x slower.

``quiho history sample`` measures a few commits (wall-clock seconds of the
program, 3 repetitions each) and ``quiho history bisect`` then finds commit
15, counting builds; commit 6 does not compile and must be skipped and recorded.
"""

import json
import sqlite3
import statistics
import subprocess
import tempfile
from pathlib import Path

from quiho.cli.main import main
from quiho.history import load_state
from quiho.history.sampling import plain_bisection_builds
from quiho.store import open_store

BUILD = "gcc -O1 -o prog prog.c"
# CPU seconds, not wall time: the test machine is shared (stress-ng at times) and CPU time barely notices
METRIC = ["--metric", "cpu"]


def _worktrees(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()


def _leftover_tmp() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("quiho-wt-*")}


def test_sample_then_bisect_find_the_slow_commit(slowdown_repo, tmp_path, capsys, monkeypatch):
    repo, shas = slowdown_repo
    db = str(tmp_path / "q.db")
    # a temporary directory of this test's own: a test on another worker makes worktrees too
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    before_tmp = _leftover_tmp()
    args = ["history", "sample", "--repo", str(repo), "--build", BUILD, "--bench", "./prog", "--budget", "8",
            "--series", "prog", "--store", db, "--json", *METRIC]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_revisions"] == 24 and doc["new_builds"] == 8 and doc["stop_reason"] == "budget"
    measured = {m["index"]: m["mean"] for m in doc["measured"]}
    fast = [v for i, v in measured.items() if i < 15]
    slow = [v for i, v in measured.items() if i >= 15]
    # 10x more loop iterations in the code. Medians, not min/max: on a loaded machine one fast commit once took
    # 2x the others, which failed "min(slow) > 2 max(fast)" in CI
    assert fast and slow and statistics.median(slow) > 4 * statistics.median(fast)

    # --confirm: the two revisions around the change are built and measured again, their repetitions appended
    assert main(["history", "bisect", "--repo", str(repo), "--build", BUILD, "--bench", "./prog", "--confirm",
                 "--series", "prog", "--store", db, "--json", *METRIC]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["meaningful"] and res["first_bad"] == shas[15] and res["last_good"] == shas[14]
    assert res["magnitude"] > 0.5 and res["p_value"] < 0.01  # planted +900 %; margin for a noisy commit
    assert res["reused"] == len(doc["measured"]) == 8 - len(doc["failed"])  # commit 6 may be among the 8 tried
    assert all(f["index"] == 6 for f in doc["failed"])
    assert res["new_builds"] - res["confirm_builds"] < plain_bisection_builds(24) == 7
    assert res["confirm_builds"] == 2
    points = sqlite3.connect(db).execute(
        "SELECT r.revision, COUNT(*) FROM history_points p JOIN history_revisions r ON r.id = p.revision_id "
        "GROUP BY r.revision").fetchall()
    assert dict(points)[shas[15]] == dict(points)[shas[14]] == 6
    assert main(["history", "bisect", "--repo", str(repo), "--build", BUILD, "--bench", "./prog", "--confirm",
                 "--series", "prog", "--store", db, *METRIC]) == 0
    out = capsys.readouterr().out
    assert f"first changed revision {shas[15]}" in out and "(2 of them measuring the change's revisions again)" in out

    # resumable: the same command with the same budget builds nothing new
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["new_builds"] == 0
    assert len(_worktrees(repo)) == 1  # only the main checkout: every sampling worktree was removed
    assert _leftover_tmp() <= before_tmp


def test_bisect_confirm_keeps_a_revision_whose_rebuild_fails(tmp_path, capsys, make_repo):
    # every commit builds once; a second build of the same commit fails, so --confirm cannot measure the change's
    # revisions again: the verdict says so, and their first measurements stay stored as they were (not failed)
    repo = tmp_path / "repo"
    shas = make_repo(repo, n_commits=12, slow_at=8, broken_at=None)
    marks = tmp_path / "built"
    marks.mkdir()
    build = ("sh -c 'm=$0/$(git rev-parse HEAD); if [ -e $m ]; then echo built before >&2; exit 1; fi; touch $m; "
             f"exec gcc -O1 -o prog prog.c' {marks}")
    db = str(tmp_path / "q.db")
    assert main(["history", "bisect", "--repo", str(repo), "--build", build, "--bench", "./prog", "--confirm",
                 "--series", "p", "--store", db, "--json", *METRIC]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["meaningful"] and res["first_bad"] == shas[8] and res["confirm_builds"] == 2
    assert res["reason"] == "not confirmed: revisions 7 and 8 could not be built and measured again"
    with open_store(db) as st:
        state = {s.revision: s for s in load_state(st, "p")}
    assert state[shas[7]].status == state[shas[8]].status == "ok"
    assert state[shas[7]].values.size == state[shas[8]].values.size == 3


def test_failing_build_is_skipped_and_recorded(tmp_path, capsys, make_repo):
    repo = tmp_path / "repo"
    shas = make_repo(repo, n_commits=12, slow_at=8, broken_at=5)
    db = str(tmp_path / "q.db")
    # budget 12 of 12: every commit is tried, so the broken one certainly is
    assert main(["history", "sample", "--repo", str(repo), "--build", BUILD, "--bench", "./prog", "--budget", "12",
                 "--repetitions", "1", "--series", "p", "--store", db, "--json", *METRIC]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["index"] for f in doc["failed"]] == [5]
    reason = doc["failed"][0]["reason"]
    assert "build at" in reason and "exited 1" in reason and "error" in reason
    assert len(doc["measured"]) == 11
    with open_store(db) as st:
        state = {s.revision: s for s in load_state(st, "p")}
    assert state[shas[5]].status == "failed" and state[shas[4]].status == "ok"
    with open_store(db) as st:
        facts = json.loads(st.conn.execute("SELECT machine_json FROM history_revisions WHERE revision = ?",
                                           (shas[4],)).fetchone()[0])
    assert facts["host"] and facts["vcpus"] >= 1 and "load1" in facts
    # plot shows it (and the GP over all 12 positions)
    assert main(["history", "plot", "p", "--store", db, "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_bad_repo_is_a_one_line_error(tmp_path, capsys):
    assert main(["history", "sample", "--repo", str(tmp_path), "--build", "", "--bench", "true", "--budget", "3",
                 "--store", str(tmp_path / "q.db")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("quiho: error: git rev-list") and "\n" not in err


def test_worktree_bench_metrics_and_errors(tmp_path, make_repo):
    import numpy as np
    import pytest

    from quiho.errors import BuildFailed, UsageError
    from quiho.history.sources import WorktreeBench
    from quiho.history.sources._git import unstable

    repo = tmp_path / "repo"
    shas = make_repo(repo, n_commits=2, slow_at=5, broken_at=None)
    out = WorktreeBench(repo, [], ["sh", "-c", "echo warming up; echo 42.5 ms"], repetitions=2, metric="stdout")
    assert out(shas[0]).tolist() == [42.5, 42.5]
    with pytest.raises(BuildFailed, match="last stdout line 'hello' is not a number"):
        WorktreeBench(repo, [], ["sh", "-c", "echo hello"], metric="stdout")(shas[0])
    with pytest.raises(BuildFailed, match="command not found: no-such-tool"):
        WorktreeBench(repo, ["no-such-tool"], ["true"])(shas[0])
    with pytest.raises(BuildFailed, match="timed out"):
        WorktreeBench(repo, [], ["sleep", "5"], timeout=0.2)(shas[0])
    with pytest.raises(UsageError):
        WorktreeBench(repo, [], ["true"], metric="joules")
    assert len(_worktrees(repo)) == 1
    assert unstable(np.array([1.0, 1.2])) and not unstable(np.array([1.0, 1.05])) and not unstable(np.array([1.0]))


def test_cpu_metric_counts_the_benchmark_alone(tmp_path, make_repo):
    """Another child of the calling process, reaped while the benchmark runs, adds nothing to its CPU seconds."""
    import os
    import sys
    import threading

    from quiho.history.sources import WorktreeBench

    repo = tmp_path / "repo"
    shas = make_repo(repo, n_commits=2, slow_at=5, broken_at=None)
    burner = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.5: pass"])
    os.waitid(os.P_PID, burner.pid, os.WEXITED | os.WNOWAIT)  # it has exited; it is reaped below, not yet
    reaper = threading.Timer(0.2, burner.wait)  # in the middle of the benchmark's 0.6 s
    reaper.start()
    try:
        cpu = WorktreeBench(repo, [], ["sleep", "0.6"], repetitions=1, metric="cpu")(shas[0])
    finally:
        reaper.join()
    assert burner.returncode == 0
    assert cpu[0] < 0.25  # sleep uses ~1 ms; the burner's 0.5 s would be counted by a RUSAGE_CHILDREN difference
