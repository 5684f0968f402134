"""``quiho history confirm``: a suspect revision and its baseline rerun in pairs, decided on the paired evidence.

The statistic (:func:`paired_change`) is checked against closed forms and slow references (scipy's exact
signed-rank test, an interval found by inverting the test over a grid of shifts); the command runs a real git
repository made here, whose ``bench.py`` is a Python loop that one commit makes 30 % longer, and prints the CPU
seconds of the loop (``--metric stdout``: the benchmark reports its own value, the convention of ``GitBench``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wilcoxon

from quiho.cli.main import main
from quiho.errors import BuildFailed, GitError, UnknownTargetError, UsageError
from quiho.history import GitBench
from quiho.history.gate import (
    Confirmation,
    ConfirmOptions,
    change_text,
    confirm_alert,
    confirm_revisions,
    min_pairs,
    paired_change,
)
from quiho.history.gate._paired import _signed_rank_p
from quiho.store import alerts as sa
from quiho.store import open_store

N = 300_000  # loop iterations: ~0.03-0.05 s of CPU on the 2-vCPU test machine
BENCH = """import os, sys, time
N = {n}
{extra}
best = float("inf")
for _ in range(3):  # the fastest of three loops: a run beside a busy sibling vCPU takes up to 2x its time
    t0 = time.process_time()
    s = 0
    for i in range(N):
        s += i
    best = min(best, time.process_time() - t0)
print(best)
"""
#: the change the tests plant: 3x, beyond what chance does to a whole run here (a run 1.2-2.4x slower on this VM,
#: docs/history-gate.md); the power at +30 % is measured by bench/confirm_power.py, not asserted
WIRED = int(N * 3)
#: the benchmark as an argv list: this interpreter, no shell
CMD = f"{sys.executable} bench.py"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, benches: list[str]) -> list[str]:
    """A repository with one commit per ``bench.py`` text (the same text twice: an identical pair); its shas."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    shas = []
    for i, text in enumerate(benches):
        (root / "bench.py").write_text(text)
        (root / "NOTES").write_text(f"commit {i}\n")  # every commit changes something
        _git(root, "add", "bench.py", "NOTES")
        _git(root, "commit", "-q", "-m", f"commit {i}")
        shas.append(_git(root, "rev-parse", "HEAD").strip())
    return shas


def bench(n: int = N, extra: str = "") -> str:
    return BENCH.format(n=n, extra=extra)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """Commits 0 and 1 run the same loop; commit 2 runs it three times as long."""
    root = tmp_path / "repo"
    return root, make_repo(root, [bench(), bench(), bench(WIRED)])


def _target(root: Path, cmd: str = CMD) -> GitBench:
    return GitBench(root, (), tuple(cmd.split()), metric="stdout", timeout=60)


def _worktrees(root: Path) -> int:
    return len(_git(root, "worktree", "list").strip().splitlines())


def _stored(db: str | Path) -> tuple[int, int]:
    with open_store(db) as st:
        n = st.conn.execute("SELECT COUNT(*) FROM history_confirmations").scalar()
        m = st.conn.execute("SELECT COUNT(*) FROM history_confirmation_pairs").scalar()
    return int(n), int(m)


# --- the statistic -------------------------------------------------------------------------------------------


def test_a_noise_free_ratio_is_recovered_exactly_with_a_degenerate_interval() -> None:
    b = np.array([1.0, 2.0, 0.5, 1.5, 3.0, 0.8, 1.1])
    c = paired_change(b, 1.3 * b)
    assert c.verdict == "confirmed" and c.n == 7
    assert c.magnitude == pytest.approx(0.3) and c.ci == pytest.approx((0.3, 0.3))
    assert c.p_value == pytest.approx(2 / 2**7)  # every pair worse: the exact two-sided signed-rank p


def test_identical_values_are_not_confirmed() -> None:
    b = np.linspace(1, 2, 10)
    c = paired_change(b, b.copy())
    assert (c.verdict, c.magnitude, c.ci, c.p_value) == ("not confirmed", 0.0, (0.0, 0.0), 1.0)


def test_too_few_pairs_for_the_level_are_not_meaningful() -> None:
    assert (min_pairs(0.95), min_pairs(0.99), min_pairs(0.999)) == (6, 8, 11)
    b = np.ones(5)
    c = paired_change(b, 2 * b)  # doubled, but 5 pairs cannot make a 95 % interval
    assert c.verdict == "not meaningful" and "at least 6" in c.reason and np.isnan(c.ci[0])
    assert paired_change(np.ones(6), 2 * np.ones(6)).verdict == "confirmed"


def test_p_value_is_scipys_exact_signed_rank_test() -> None:
    rng = np.random.default_rng(3)
    for n in (6, 9, 15, 30):
        for shift in (0.0, 0.02, 0.1):
            d = rng.normal(shift, 0.05, n)
            want = wilcoxon(d, method="exact").pvalue
            assert _signed_rank_p(d) == pytest.approx(want, rel=1e-9), (n, shift)


def test_interval_is_the_set_of_shifts_the_test_does_not_reject() -> None:
    """Slow reference: shift the log ratios by mu over a fine grid; keep mu where the exact p >= 1 - level."""
    rng = np.random.default_rng(7)
    for n, level in ((8, 0.95), (12, 0.9), (10, 0.99)):
        d = rng.normal(0.1, 0.05, n)
        c = paired_change(np.ones(n), np.exp(d), level=level)
        grid = np.linspace(d.min() - 0.01, d.max() + 0.01, 1501)
        kept = [mu for mu in grid if _signed_rank_p(d - mu) > 1 - level]
        lo, hi = np.log1p(c.ci[0]), np.log1p(c.ci[1])
        step = grid[1] - grid[0]
        assert min(kept) == pytest.approx(lo, abs=1.01 * step) and max(kept) == pytest.approx(hi, abs=1.01 * step)


def test_invariances_scale_swap_and_direction() -> None:
    rng = np.random.default_rng(11)
    b = rng.lognormal(0, 0.1, 10)
    s = b * 1.2 * rng.lognormal(0, 0.03, 10)
    c = paired_change(b, s)
    scaled = paired_change(1000 * b, 1000 * s)  # units do not matter
    assert scaled.magnitude == pytest.approx(c.magnitude) and scaled.ci == pytest.approx(c.ci)
    swapped = paired_change(s, b)  # the other way round: the reciprocal ratio, the same p
    assert swapped.magnitude == pytest.approx(1 / (1 + c.magnitude) - 1)
    assert swapped.ci == pytest.approx((1 / (1 + c.ci[1]) - 1, 1 / (1 + c.ci[0]) - 1))
    assert swapped.p_value == pytest.approx(c.p_value)
    assert c.verdict == "confirmed" and swapped.verdict == "not confirmed" and "better" in swapped.reason
    # a throughput that went up 20 % is an improvement, one that went down is the regression
    assert paired_change(b, s, higher_is_better=True).verdict == "not confirmed"
    assert paired_change(s, b, higher_is_better=True).verdict == "confirmed"


def test_one_run_hit_by_a_burst_of_load_does_not_decide() -> None:
    b = np.full(10, 1.0) + np.linspace(0, 0.01, 10)
    s = b.copy()
    s[3] *= 5  # one suspect run slowed 5x by a co-runner
    c = paired_change(b, s)
    assert c.verdict == "not confirmed" and c.ci[0] <= 0 <= c.ci[1]


def test_magnitude_floor_and_bad_values() -> None:
    b = np.ones(8)
    assert paired_change(b, 1.01 * b).verdict == "confirmed"
    floored = paired_change(b, 1.01 * b, magnitude_floor=0.02)
    assert floored.verdict == "not confirmed" and "floor" in floored.reason
    with pytest.raises(UsageError, match="positive finite"):
        paired_change(b, np.r_[b[:-1], 0.0])
    with pytest.raises(UsageError, match="as many"):
        paired_change(b, b[:-1])
    with pytest.raises(UsageError):
        ConfirmOptions(level=1.0)


# --- real reruns --------------------------------------------------------------------------------------------


def test_a_planted_slowdown_is_confirmed_with_its_paired_interval(repo, tmp_path: Path) -> None:
    root, shas = repo
    with open_store(tmp_path / "q.db") as st:
        c = confirm_revisions(st, _target(root), shas[2], shas[1], ConfirmOptions(pairs=16))
        row = sa.get_confirmation(st, c.id)
    ch = c.change
    ratios = [round(p.ratio, 3) for p in c.pairs]
    assert ch.verdict == "confirmed" and ch.n == 16 and ch.p_value < 0.05, (ch, ratios)
    lo, hi = ch.ci
    # planted: three times the loop (+200 %); the power at +30 % is bench/confirm_power.py's to measure
    assert 0 < lo <= ch.magnitude <= hi and 1.0 < ch.magnitude < 4.0, (ch, ratios)
    assert [p.first for p in c.pairs] == ["baseline", "suspect"] * 8  # the order alternates within pairs
    assert row is not None and row.status == "complete" and row.verdict == "confirmed"
    assert row.suspect == shas[2] and row.baseline == shas[1] and row.alert_id is None
    assert [(p[1], p[2]) for p in row.pairs] == [(p.baseline, p.suspect) for p in c.pairs]
    assert row.ci_low == pytest.approx(lo) and row.machine  # with the machine it ran on
    assert _worktrees(root) == 1  # both worktrees are gone


def test_an_identical_pair_is_not_confirmed(repo, tmp_path: Path) -> None:
    root, shas = repo
    # level 0.999: identical code is confirmed with probability <= 0.0005 (the test's level, one side)
    c = confirm_revisions(None, _target(root), shas[1], shas[0], ConfirmOptions(pairs=12, level=0.999))
    assert c.change.verdict == "not confirmed" and c.id is None
    assert c.change.ci[0] <= 0 <= c.change.ci[1] and abs(c.change.magnitude) < 0.3


def _alert_store(tmp_path: Path, shas: list[str], gate: bool = True) -> Path:
    """A store whose gate raised an alert at the newest revision of a history of ``shas`` (values in s).

    ``gate`` False: the history only, whose next gate run raises that alert.
    """
    rng = np.random.default_rng(0)
    rows = ["revision,value"]
    for i, sha in enumerate(shas):
        level = 0.04 if i == len(shas) - 1 else 0.03
        rows += [f"{sha},{level * (1 + 0.01 * rng.standard_normal()):.6f}" for _ in range(5)]
    (tmp_path / "loop.csv").write_text("\n".join(rows) + "\n")
    db = tmp_path / "q.db"
    assert main(["history", "import", str(tmp_path / "loop.csv"), "--unit", "s", "--store", str(db)]) == 0
    if gate:
        assert main(["history", "detect", "--all", "--fail-on-change", "--store", str(db)]) == 3
    return db


def test_confirm_an_open_alert_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 7 + [bench(WIRED)])
    db = _alert_store(tmp_path, shas)
    capsys.readouterr()
    args = ["history", "confirm", "--repo", str(root), "--bench", CMD, "--metric", "stdout", "--pairs", "20",
            "--store", str(db)]
    assert main([*args, "--json"]) == 0  # the one open alert; exit 0 without --fail-on-change
    doc = json.loads(capsys.readouterr().out)
    assert doc["alert_id"] == 1 and doc["series"] == "loop" and doc["suspect"] == shas[-1]
    assert doc["baseline"] == shas[-2]  # the revision before the first bad one
    assert doc["verdict"] == "confirmed" and doc["ci"][0] > 0 and len(doc["pairs"]) == 20, doc
    assert main([*args, "1", "--fail-on-change"]) == 3
    out = capsys.readouterr().out
    assert "confirmed: +" in out and "stored as confirmation #2 of alert #1" in out
    with open_store(db) as st:
        assert [c.id for c in sa.confirmations_of(st, 1)] == [1, 2]
        assert sa.get_alert(st, 1).state == "new"  # a person decides the alert's state


def test_confirm_an_alert_from_the_library(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 7 + [bench()])  # the alert was a busy runner: the code did not change
    db = _alert_store(tmp_path, shas)
    with open_store(db) as st:
        c = confirm_alert(st, 1, _target(root), ConfirmOptions(pairs=11, level=0.999))
        assert c.change.verdict == "not confirmed" and not c.higher_is_better  # seconds: lower is better
        assert sa.confirmations_of(st, 1)[0].verdict == "not confirmed"
        with pytest.raises(UnknownTargetError, match="no alert #7"):
            confirm_alert(st, 7, _target(root))


# --- bad input: one line, exit 1 or 2, nothing stored --------------------------------------------------------


def _one_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("quiho: "), cap.err
    assert cap.out == ""
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_a_revision_missing_at_rerun(repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, shas = repo
    db = tmp_path / "q.db"
    code = main(["history", "confirm", "--repo", str(root), "--bench", CMD, "--suspect", "deadbeef" * 5,
                 "--baseline", shas[0], "--store", str(db)])
    assert code == 1
    _one_error(capsys, "suspect revision", "is not in", "fetch")
    assert _stored(db) == (0, 0) and _worktrees(root) == 1
    with pytest.raises(GitError, match="not a git repository"):
        confirm_revisions(None, _target(tmp_path), "HEAD", "HEAD~1")


def test_an_alert_of_another_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _alert_store(tmp_path, [f"{i:040x}" for i in range(1, 9)])  # revisions no repository here has
    root = tmp_path / "repo"
    make_repo(root, [bench(), bench()])
    capsys.readouterr()
    assert main(["history", "confirm", "1", "--repo", str(root), "--bench", CMD, "--store", str(db)]) == 1
    _one_error(capsys, "revision", "is not in")
    assert _stored(db) == (0, 0)


def test_a_failing_benchmark_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench(), bench(extra="raise SystemExit('error: the suspect crashed')")])
    db = tmp_path / "q.db"
    assert main(["history", "confirm", "--repo", str(root), "--bench", CMD, "--metric", "stdout",
                 "--suspect", shas[1], "--baseline", shas[0], "--store", str(db)]) == 1
    _one_error(capsys, f"benchmark at {shas[1][:12]} exited 1", "the suspect crashed")
    assert _stored(db) == (0, 0) and _worktrees(root) == 1


def test_a_benchmark_failing_after_some_pairs_stores_nothing(tmp_path: Path, capsys) -> None:
    root = tmp_path / "repo"
    # the suspect fails on its 4th run (warm-up + 3 pairs): a counter file in its worktree
    extra = ("c = int(open('.n').read()) if os.path.exists('.n') else 0\nopen('.n', 'w').write(str(c + 1))\n"
             "if c == 3: sys.exit('error: out of memory')")
    shas = make_repo(root, [bench(), bench(extra=extra)])
    db = tmp_path / "q.db"
    assert main(["history", "confirm", "--repo", str(root), "--bench", CMD, "--metric", "stdout",
                 "--suspect", shas[1], "--baseline", shas[0], "--pairs", "6", "--store", str(db)]) == 1
    _one_error(capsys, "out of memory")
    assert _stored(db) == (0, 0) and _worktrees(root) == 1


@pytest.mark.parametrize(("printed", "needle"), [("'fast'", "is not a number"), ("float('nan')", "positive finite"),
                                                  ("0", "positive finite")])
def test_a_benchmark_printing_no_usable_number(tmp_path: Path, capsys, printed: str, needle: str) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench(), f"print({printed})\n"])
    db = tmp_path / "q.db"
    assert main(["history", "confirm", "--repo", str(root), "--bench", CMD, "--metric", "stdout",
                 "--suspect", shas[1], "--baseline", shas[0], "--store", str(db)]) == 1
    _one_error(capsys, needle)
    assert _stored(db) == (0, 0)
    with pytest.raises(BuildFailed, match=needle):
        confirm_revisions(None, _target(root), shas[1], shas[0])


@pytest.mark.parametrize(("extra", "needle"), [
    (["--suspect", "HEAD"], "--suspect needs --baseline"),
    (["1", "--suspect", "HEAD", "--baseline", "HEAD~1"], "not both"),
    (["--suspect", "HEAD", "--baseline", "HEAD", "--metric", "stdout"], "same commit"),
    (["--suspect", "HEAD", "--baseline", "HEAD~1", "--metric", "ops"], "unknown metric"),
    ([], "0 open alerts"),
])
def test_usage_errors_exit_2(repo, tmp_path: Path, capsys, extra: list[str], needle: str) -> None:
    root, _ = repo
    db = tmp_path / "q.db"
    with open_store(db):
        pass
    assert main(["history", "confirm", "--repo", str(root), "--bench", CMD, *extra, "--store", str(db)]) == 2
    _one_error(capsys, "usage error", needle)
    assert _stored(db) == (0, 0)


def test_ctrl_c_keeps_the_pairs_measured_and_exits_130(tmp_path: Path, capsys, monkeypatch) -> None:
    """The suspect sends SIGINT to quiho on its 4th run (warm-up + 3 pairs): the 2 finished pairs are stored.

    Pair 1 runs baseline then suspect, pair 2 suspect first, pair 3 baseline first: the interrupt comes in
    pair 3, after its baseline run, so pairs 1 and 2 are complete.
    """
    root = tmp_path / "repo"
    extra = ("c = int(open('.n').read()) if os.path.exists('.n') else 0\nopen('.n', 'w').write(str(c + 1))\n"
             "if c == 3:\n    import signal; os.kill(os.getppid(), signal.SIGINT); time.sleep(5)")
    shas = make_repo(root, [bench(), bench(extra=extra)])
    db = tmp_path / "q.db"
    # Ctrl-C at a terminal: Python's own handler. A pytest started as a background job (`&` without job control,
    # nohup) inherits SIGINT ignored, which quiho rightly leaves alone; that run read exit 0 here
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["history", "confirm", "--repo", str(root), "--bench", CMD, "--metric", "stdout",
                     "--suspect", shas[1], "--baseline", shas[0], "--pairs", "6", "--store", str(db)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130
    assert "stored as confirmation #1 (interrupted)" in capsys.readouterr().err
    with open_store(db) as st:
        (c,) = sa.confirmations_of(st)
    assert c.status == "interrupted" and len(c.pairs) == 2 and c.verdict == "not meaningful"
    assert _worktrees(root) == 1


# --- the store, on both backends ----------------------------------------------------------------------------


def test_confirmations_round_trip_on_each_backend(store_spec: str, repo) -> None:
    root, shas = repo
    with open_store(store_spec) as st:
        alert = sa.AlertRow(0, "loop", shas[2], shas[0], shas[2], "newest revision", 0.03, 0.04, 0.3, 0.2, 0.4,
                            1e-4, 5, "new", None, None, *[float("nan")] * 4, "", "")
        aid = sa.insert_alert(st, alert)
        c = confirm_revisions(st, _target(root), shas[2], shas[1], ConfirmOptions(pairs=6), series="loop",
                              alert_id=aid)
        (row,) = sa.confirmations_of(st, aid)
        assert sa.confirmations_of(st, aid + 1) == []
    assert row.id == c.id and row.alert_id == aid and row.series == "loop" and row.status == "complete"
    assert row.bench == tuple(CMD.split()) and row.build == () and row.metric == "stdout"
    assert row.magnitude == pytest.approx(c.change.magnitude) and row.p_value == pytest.approx(c.change.p_value)
    assert [p[0] for p in row.pairs] == ["baseline", "suspect"] * 3
    assert [p[2] / p[1] for p in row.pairs] == pytest.approx([p.ratio for p in c.pairs])


# --- the gate with --rerun: a new alert fails only when the rerun confirms it --------------------------------


def _gate(db: Path, root: Path, *extra: str) -> list[str]:
    return ["history", "detect", "--all", "--fail-on-change", "--rerun", CMD, "--repo", str(root), "--rerun-metric",
            "stdout", "--store", str(db), *extra]


def test_the_gate_with_rerun_fails_on_a_confirmed_regression(tmp_path: Path, capsys) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 7 + [bench(WIRED)])
    db = _alert_store(tmp_path, shas, gate=False)
    capsys.readouterr()
    assert main(_gate(db, root)) == 3  # raised, rerun and confirmed in one gate run
    out = capsys.readouterr().out
    with open_store(db) as st:
        (row,) = sa.confirmations_of(st, 1)
        assert sa.get_alert(st, 1).state == "new"
    assert row.verdict == "confirmed" and row.status == "complete" and len(row.pairs) == 20
    assert (row.suspect, row.baseline) == (shas[-1], shas[-2]) and row.ci_low > 0
    text = change_text(Confirmation.from_row(row).change)  # the stored numbers, as confirm prints them
    assert text.startswith("confirmed: +") and text in out and "stored as confirmation #1 of alert #1" in out
    # alert list: the same confirmation with the same numbers, in text and JSON
    assert main(["history", "alert", "list", "--store", str(db)]) == 0
    assert f"#1 {text}, 20 pairs" in capsys.readouterr().out
    assert main(["history", "alert", "list", "--json", "--store", str(db)]) == 0
    doc = json.loads(capsys.readouterr().out)["alerts"][0]["confirmation"]
    assert doc["id"] == row.id and doc["verdict"] == "confirmed" and doc["status"] == "complete"
    assert doc["magnitude"] == round(row.magnitude, 6) and doc["ci"] == [round(row.ci_low, 6), round(row.ci_high, 6)]
    assert doc["p_value"] == round(row.p_value, 6) and doc["n_pairs"] == 20 and len(doc["pairs"]) == 20
    # the next gate run reuses the stored rerun of the same revisions and command: nothing is run again
    assert main([*_gate(db, root), "--json"]) == 3
    gate = json.loads(capsys.readouterr().out)
    assert gate["rerun"] == [] and gate["failing"] and gate["alerts"][0]["confirmation"]["id"] == row.id
    assert _stored(db) == (1, 20) and _worktrees(root) == 1
    # another magnitude floor decides the same pairs again: nothing is run, the new verdict is stored with them
    from quiho.history import run_gate
    from quiho.history.gate import confirm_gate

    with open_store(db) as st:
        cg = confirm_gate(st, run_gate(st), _target(root), ConfirmOptions(magnitude_floor=10.0))
        rows = sa.confirmations_of(st, 1)
    assert cg.rerun == () and not cg.failing and [r.verdict for r in rows] == ["confirmed", "not confirmed"]
    assert rows[1].pairs == rows[0].pairs and rows[1].machine == rows[0].machine and "floor" in rows[1].reason
    assert (rows[1].magnitude, rows[1].ci_low, rows[1].p_value) == (rows[0].magnitude, rows[0].ci_low,
                                                                   rows[0].p_value)
    assert cg.gate.confirmations[1].id == rows[1].id


def test_the_gate_with_rerun_passes_an_identical_pair_not_confirmed(tmp_path: Path, capsys) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 8)  # the history's step was a busy runner: the code did not change
    db = _alert_store(tmp_path, shas, gate=False)
    capsys.readouterr()
    # level 0.999: identical code is confirmed (and the test fails) with probability <= 0.0005
    assert main([*_gate(db, root, "--pairs", "11", "--rerun-level", "0.999"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gate_failing"] and not doc["failing"] and len(doc["rerun"]) == 1
    c = doc["alerts"][0]["confirmation"]
    assert c["verdict"] == "not confirmed" and c["ci"][0] <= 0 <= c["ci"][1] and c["n_pairs"] == 11
    with open_store(db) as st:
        (row,) = sa.confirmations_of(st, 1)
        assert sa.get_alert(st, 1).state == "new"  # recorded as not confirmed; its state is a person's
    assert row.verdict == "not confirmed" and c["magnitude"] == round(row.magnitude, 6)
    # text: the paired interval is printed and stderr says why the gate passes
    assert main([*_gate(db, root, "--pairs", "11", "--rerun-level", "0.999")]) == 0
    cap = capsys.readouterr()
    assert change_text(Confirmation.from_row(row).change) in cap.out and "not confirmed by rerunning" in cap.err
    assert _stored(db) == (1, 11)  # the second run reused it
    # without --rerun the gate still fails on the new alert: a stored rerun is shown, not obeyed
    assert main(["history", "detect", "--all", "--fail-on-change", "--store", str(db)]) == 3
    assert "not confirmed: " in capsys.readouterr().out


def test_the_gate_with_rerun_when_a_revision_is_missing(tmp_path: Path, capsys) -> None:
    db = _alert_store(tmp_path, [f"{i:040x}" for i in range(1, 9)], gate=False)  # revisions no repository has
    root = tmp_path / "repo"
    make_repo(root, [bench(), bench()])
    capsys.readouterr()
    assert main(_gate(db, root, "--pairs", "6")) == 1
    _one_error(capsys, "alert #1 (loop) is kept unconfirmed", "revision", "is not in", "fetch")
    assert _stored(db) == (0, 0) and _worktrees(root) == 1
    with open_store(db) as st:
        assert [a.state for a in sa.alerts_of(st)] == ["new"]  # the gate's own verdict is kept whole


def test_the_gate_with_a_failing_rerun_command(tmp_path: Path, capsys) -> None:
    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 7 + [bench(extra="raise SystemExit('error: the suspect crashed')")])
    db = _alert_store(tmp_path, shas, gate=False)
    capsys.readouterr()
    assert main(_gate(db, root, "--pairs", "6")) == 1
    _one_error(capsys, "alert #1 (loop) is kept unconfirmed", f"benchmark at {shas[-1][:12]} exited 1", "crashed")
    assert _stored(db) == (0, 0) and _worktrees(root) == 1


@pytest.mark.parametrize(("extra", "needle"), [
    (["--pairs", "5"], "at least 6 pairs"),
    (["--base", "0000"], "without --base"),
    (["--rerun-metric", "ops"], "unknown metric"),
])
def test_the_gate_with_rerun_usage_errors(tmp_path: Path, capsys, extra: list[str], needle: str) -> None:
    db = _alert_store(tmp_path, [f"{i:040x}" for i in range(1, 9)], gate=False)
    capsys.readouterr()
    assert main(_gate(db, tmp_path, *extra)) == 2
    _one_error(capsys, "usage error", needle)
    with open_store(db) as st:
        assert sa.alerts_of(st) == []  # refused before the gate ran


@pytest.mark.parametrize("args", [["loop", "--rerun", CMD], ["--all", "--pairs", "10"]])
def test_rerun_options_without_their_partner(tmp_path: Path, capsys, args: list[str]) -> None:
    db = _alert_store(tmp_path, [f"{i:040x}" for i in range(1, 9)], gate=False)
    capsys.readouterr()
    assert main(["history", "detect", *args, "--store", str(db)]) == 2
    _one_error(capsys, "usage error", "--rerun")


def test_alerts_of_the_same_revisions_share_one_rerun_stored_with_each(tmp_path: Path) -> None:
    from quiho.history import run_gate
    from quiho.history.gate import confirm_gate

    root = tmp_path / "repo"
    shas = make_repo(root, [bench()] * 7 + [bench(int(N * 1.3))])
    db = _alert_store(tmp_path, shas, gate=False)  # series "loop"
    assert main(["history", "import", str(tmp_path / "loop.csv"), "--series", "twin", "--unit", "s", "--store",
                 str(db)]) == 0
    with open_store(db) as st:
        r = run_gate(st)
        assert [a.series for a in r.open_alerts] == ["loop", "twin"] and r.failing
        cg = confirm_gate(st, r, _target(root), ConfirmOptions(pairs=8))
        rows = sa.confirmations_of(st)
    assert len(cg.rerun) == 2 and [c.alert_id for c in rows] == [1, 2]
    assert rows[0].pairs == rows[1].pairs  # one rerun (CMD is one benchmark), its pairs stored with each alert
    assert {cg.gate.confirmations[i].id for i in (1, 2)} == {rows[0].id, rows[1].id}
    assert cg.failing == (rows[0].verdict != "not confirmed")


def test_alert_list_shows_each_alerts_newest_confirmation_interrupted_included(tmp_path: Path, capsys) -> None:
    db = _alert_store(tmp_path, [f"{i:040x}" for i in range(1, 9)])  # alert #1, never rerun
    nan = float("nan")
    with open_store(db) as st:
        a = sa.get_alert(st, 1)
        row = sa.ConfirmationRow(0, 1, a.series, a.first_bad, f"{7:040x}", str(tmp_path), (), ("b",), "wall", False,
                                 1, 0.95, 0.25, nan, nan, nan, "not meaningful", "not meaningful: 2 pairs; a 95% "
                                 "interval needs at least 6", "interrupted", {}, (("baseline", 1.0, 1.3),
                                                                                   ("suspect", 1.0, 1.2)))
        cid = sa.insert_confirmation(st, row)
    capsys.readouterr()
    assert main(["history", "alert", "list", "--store", str(db)]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert f"#{cid} interrupted, not meaningful: +25.0% [n/a, n/a] (95% interval), p = n/a, 2 pairs" in line
    assert main(["history", "alert", "list", "--format", "markdown", "--store", str(db)]) == 0
    assert "interrupted, not meaningful" in capsys.readouterr().out
    assert main(["history", "alert", "list", "--json", "--store", str(db)]) == 0
    c = json.loads(capsys.readouterr().out)["alerts"][0]["confirmation"]
    assert (c["status"], c["verdict"], c["n_pairs"], c["magnitude"], c["ci"]) == ("interrupted", "not meaningful",
                                                                                   2, 0.25, [None, None])
    # the gate without --rerun shows it too, and still fails on the new alert
    assert main(["history", "detect", "--all", "--fail-on-change", "--json", "--store", str(db)]) == 3
    assert json.loads(capsys.readouterr().out)["alerts"][0]["confirmation"]["id"] == cid
