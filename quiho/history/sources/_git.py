"""Measuring revisions of a real git repository in throw-away worktrees."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quiho.errors import BuildFailed, GitError, UsageError
from quiho.history.sampling import BisectPlan, BisectResult, SamplingPlan, gp_bisect, sample_revisions
from quiho.history.sources._io import (
    add_revisions,
    ensure_series,
    load_state,
    local_facts_dict,
    record_failure,
    record_measurement,
)
from quiho.store import Store

__all__ = ["list_revisions", "GitBench", "WorktreeBench", "GitSampleReport",
           "sample_git_history", "bisect_git_history", "METRICS"]

METRICS = ("wall", "cpu", "stdout")


def _git(repo: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if out.returncode != 0:
        msg = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GitError(f"git {' '.join(args[:2])} in {repo} failed: {msg}")
    return out.stdout


def list_revisions(repo: str | Path, rev_range: str = "HEAD") -> list[str]:
    """Commits of ``rev_range`` oldest first, following first parents (``git rev-list --first-parent``)."""
    revs = _git(Path(repo), "rev-list", "--first-parent", "--reverse", rev_range).split()
    if not revs:
        raise GitError(f"{rev_range!r} selects no commits in {repo}")
    return revs


def _run_child(argv: list[str], cwd: Path, timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)`` and the child's CPU seconds.

    The CPU time is the child's own rusage from ``wait4`` (user + system, its waited-for descendants included),
    not a difference of ``RUSAGE_CHILDREN``, which also counts any other child this process reaps meanwhile.
    """
    with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=fout, stderr=ferr)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        stdout, stderr = fout.read().decode(errors="replace"), ferr.read().decode(errors="replace")
    if expired.is_set() and proc.returncode == -signal.SIGKILL:
        raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr), usage.ru_utime + usage.ru_stime


def _tail(text: str | bytes | None, lines: int = 20) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join(text.strip().splitlines()[-lines:])


class WorktreeBench:
    """``measure(commit) -> repetitions``: check out, build, benchmark, clean up.

    Each call adds a detached ``git worktree`` under a temporary directory,
    runs ``build`` there, then ``bench`` ``repetitions`` times, and removes the
    worktree whatever happens. The metric is the wall-clock seconds of each
    bench run (``metric="wall"``), its CPU seconds, user + system, of the
    process and its children (``metric="cpu"``: much less disturbed by other
    load on a shared machine, blind to time spent waiting), or the number on
    the last line of its stdout (``metric="stdout"``). A non-zero exit, a timeout or an unparsable
    number raises :class:`~quiho.errors.BuildFailed` (with ``stderr_tail``).

    Parameters
    ----------
    repo : path
    build, bench : sequence of str
        argv, run with the worktree as working directory (no shell).
    repetitions : int, default 3
    metric : {"wall", "cpu", "stdout"}
    timeout : float, default 600
        Seconds per build or bench run.
    """

    def __init__(self, repo: str | Path, build: Sequence[str], bench: Sequence[str], *, repetitions: int = 3,
                 metric: str = "wall", timeout: float = 600.0) -> None:
        self.repo = Path(repo)
        self.build = list(build)
        self.bench = list(bench)
        self.repetitions = repetitions
        self.metric = metric
        self.timeout = timeout
        if metric not in METRICS:
            raise UsageError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        if repetitions < 1:
            raise UsageError("repetitions must be at least 1")
        if not bench:
            raise UsageError("--bench needs a command")

    def _run(self, argv: list[str], cwd: Path, what: str, commit: str
             ) -> tuple[subprocess.CompletedProcess[str], float]:
        """Run ``argv`` to completion: its output and the CPU seconds of its process tree."""
        try:
            out, cpu = _run_child(argv, cwd, self.timeout)
        except FileNotFoundError:
            raise BuildFailed(f"{what} at {commit[:12]}: command not found: {argv[0]}") from None
        except subprocess.TimeoutExpired as exc:
            err = BuildFailed(f"{what} at {commit[:12]} timed out after {self.timeout:g} s")
            err.stderr_tail = _tail(exc.stderr)  # type: ignore[attr-defined]
            raise err from None
        if out.returncode != 0:
            errs = [ln.strip() for ln in (out.stderr or "").splitlines() if "error" in ln.lower()]
            last = errs[0] if errs else (_tail(out.stderr, 1) or _tail(out.stdout, 1) or "no output")
            err = BuildFailed(f"{what} at {commit[:12]} exited {out.returncode}: {last}")
            err.stderr_tail = _tail(out.stderr)  # type: ignore[attr-defined]
            raise err
        return out, cpu

    def __call__(self, commit: str) -> np.ndarray:
        """Build and benchmark ``commit``; returns the ``repetitions`` values."""
        with self.checkout(commit) as wt:
            return np.array([self.measure_in(wt, commit) for _ in range(self.repetitions)])

    @contextmanager
    def checkout(self, commit: str) -> Iterator[Path]:
        """A detached worktree of ``commit``, built once; removed on exit whatever happens."""
        tmp = Path(tempfile.mkdtemp(prefix="quiho-wt-"))
        wt = tmp / "wt"
        try:
            _git(self.repo, "worktree", "add", "--detach", "--force", str(wt), commit)
            if self.build:
                self._run(self.build, wt, "build", commit)
            yield wt
        finally:
            try:
                _git(self.repo, "worktree", "remove", "--force", str(wt))
            except GitError:
                pass
            shutil.rmtree(tmp, ignore_errors=True)
            subprocess.run(["git", "-C", str(self.repo), "worktree", "prune"], capture_output=True, check=False)

    def measure_in(self, wt: Path, commit: str) -> float:
        """One benchmark run in ``wt`` (the worktree of ``commit``): its value by ``metric``."""
        t0 = time.perf_counter()
        out, cpu = self._run(self.bench, wt, "benchmark", commit)
        elapsed = time.perf_counter() - t0
        if self.metric == "wall":
            return elapsed
        if self.metric == "cpu":
            return cpu
        last = (out.stdout.strip().splitlines() or [""])[-1].strip()
        try:
            return float(last.split()[0])
        except (ValueError, IndexError):
            raise BuildFailed(f"benchmark at {commit[:12]}: last stdout line {last!r} is not a number") from None


@dataclass(frozen=True)
class GitBench:
    """What to measure in a git repository: which revisions, how to build and benchmark each, which metric.

    Checked when measuring starts (by :class:`WorktreeBench`).

    Parameters
    ----------
    repo : Path
    build, bench : tuple of str
        argv run in each revision's worktree (no shell); ``build`` may be empty.
    rev_range : str, default "HEAD"
        git revision range, oldest first, following first parents.
    repetitions : int, default 3
    metric : {"wall", "cpu", "stdout"}, default "wall"
    timeout : float, default 600
        Seconds per build or bench run.
    """

    repo: Path
    build: tuple[str, ...]
    bench: tuple[str, ...]
    rev_range: str = "HEAD"
    repetitions: int = 3
    metric: str = "wall"
    timeout: float = 600.0

    def __post_init__(self) -> None:
        # argv given as lists still make a hashable, immutable object
        object.__setattr__(self, "repo", Path(self.repo))
        object.__setattr__(self, "build", tuple(self.build))
        object.__setattr__(self, "bench", tuple(self.bench))

    def runner(self) -> WorktreeBench:
        """The :class:`WorktreeBench` that builds and measures one revision."""
        return WorktreeBench(self.repo, self.build, self.bench, repetitions=self.repetitions, metric=self.metric,
                             timeout=self.timeout)


@dataclass(frozen=True)
class GitSampleReport:
    """Result of :func:`sample_git_history`.

    ``measured``/``failed`` cover all runs of the series so far; ``unstable``
    lists revisions built in this run whose repetitions failed the
    :func:`unstable` check; ``loo_mape`` is the GP's leave-one-out MAPE (%)
    at the measured revisions.
    """

    series: str
    n_revisions: int
    measured: tuple[tuple[str, int, float], ...]
    failed: tuple[tuple[str, int, str], ...]
    new_builds: int
    max_sigma: float
    stop_reason: str
    mean: tuple[float, ...]
    sigma: tuple[float, ...]
    unstable: tuple[str, ...] = ()
    loo_mape: float = float("nan")


def unstable(values: np.ndarray, spread: float = 0.10) -> bool:
    """pyperf-style stability check: repetitions whose range is at least ``spread`` of their mean.

    References
    ----------
    .. [1] pyperf, "pyperf check" (standard deviation or range >= 10 % of the mean is flagged),
       https://pyperf.readthedocs.io/en/latest/cli.html#check-cmd
    """
    m = float(np.mean(values))
    return values.size > 1 and m != 0 and float(np.ptp(values)) >= spread * abs(m)


def _recording_measure(store: Store, sid: int, revs: Sequence[str], bench: Callable[[str], np.ndarray],
                       log: Callable[[str], None], flagged: list[str] | None = None,
                       stored: Iterable[int] = ()) -> Callable[[int], np.ndarray]:
    """A measure that stores what it measures; a position stored before gets its new repetitions appended.

    A position is stored before when it is in ``stored`` or this measure measured it; a failed rebuild of such a
    position is not recorded over its measurement.
    """
    done = set(stored)

    def measure(pos: int) -> np.ndarray:
        rev = revs[pos]
        facts = local_facts_dict()
        again = pos in done
        try:
            values = bench(rev)
        except BuildFailed as exc:
            if not again:
                record_failure(store, sid, rev, str(exc), getattr(exc, "stderr_tail", ""), facts)
            log(f"  [{pos}] {rev[:12]} skipped: {exc}")
            raise
        record_measurement(store, sid, rev, values.tolist(), facts, append=again)
        done.add(pos)
        log(f"  [{pos}] {rev[:12]} {'measured again: ' if again else ''}mean {values.mean():.4g} over "
            f"{values.size} repetitions")
        if unstable(values):
            log(f"  warning: [{pos}] {rev[:12]} is unstable: repetitions span {np.ptp(values) / values.mean():.0%} "
                "of their mean (machine busy? more --repetitions, or --metric cpu)")
            if flagged is not None:
                flagged.append(rev)
        return values

    return measure


def _prepare(store: Store, target: GitBench, series: str
             ) -> tuple[int, list[str], dict[int, np.ndarray], dict[int, str]]:
    revs = list_revisions(target.repo, target.rev_range)
    sid = ensure_series(store, series, f"git:{target.repo.resolve()}", "s")
    add_revisions(store, sid, revs)
    pos = {r: i for i, r in enumerate(revs)}
    known: dict[int, np.ndarray] = {}
    failed: dict[int, str] = {}
    for s in load_state(store, series):
        if s.revision not in pos:
            continue
        if s.status == "ok" and s.values.size:
            known[pos[s.revision]] = s.values
        elif s.status == "failed":
            failed[pos[s.revision]] = s.reason or "failed"
    return sid, revs, known, failed


def sample_git_history(store: Store, target: GitBench, plan: SamplingPlan, *, series: str,
                       log: Callable[[str], None] = lambda _m: None) -> GitSampleReport:
    """Measure revisions of ``target.repo`` chosen by :func:`~quiho.history.sample_revisions`, saving each at once.

    Resumable: revisions already measured or failed for ``series`` are reused
    and count towards ``plan.budget``; a revision whose build or benchmark fails is
    recorded ``failed`` with the reason and skipped.

    Raises
    ------
    GitError
        ``target.repo`` is not a git repository or ``target.rev_range`` selects nothing.
    """
    runner = target.runner()
    sid, revs, known, failed = _prepare(store, target, series)
    log(f"{series}: {len(revs)} revisions, {len(known)} measured and {len(failed)} failed before this run")
    flagged: list[str] = []
    res = sample_revisions(_recording_measure(store, sid, revs, runner, log, flagged), len(revs), plan,
                           known=known, failed=failed)
    return GitSampleReport(
        series, len(revs),
        tuple((revs[p], p, v) for p, v in sorted(res.measured.items())),
        tuple((revs[p], p, why) for p, why in sorted(res.failed.items())),
        res.new_builds, res.max_sigma, res.stop_reason,
        tuple(float(x) for x in res.mean), tuple(float(x) for x in res.sigma), tuple(flagged), res.loo_mape)


def bisect_git_history(store: Store, target: GitBench, plan: BisectPlan = BisectPlan(), *, series: str,
                       log: Callable[[str], None] = lambda _m: None) -> BisectResult[str]:
    """Find the commit that introduced the largest change, reusing what ``series`` already measured.

    See :func:`~quiho.history.gp_bisect`; every build is saved to the store
    like :func:`sample_git_history` does.
    """
    runner = target.runner()
    sid, revs, known, failed = _prepare(store, target, series)
    log(f"{series}: bisecting {len(revs)} revisions, reusing {len(known)} measured")
    r = gp_bisect(_recording_measure(store, sid, revs, runner, log, stored=known), len(revs), plan, known=known,
                  failed=failed)
    return r.named(series, revs)
