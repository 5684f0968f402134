"""Confirm a regression by rerunning: the suspect and its baseline revision in pairs on this machine.

A history's values of two revisions were measured at different times, often on different runners; on a busy shared
runner their difference holds whatever else ran then. :func:`confirm_revisions` builds both revisions once, each in
its own git worktree, and runs the benchmark in pairs, alternating which of the two runs first (baseline, suspect;
suspect, baseline; ...: an ABBA order, so a drift within a pair or a first-run effect cancels over the pairs
instead of always favouring one side). A pair's two runs are seconds apart on the same machine, so their log ratio
cancels what the machine was doing; :func:`paired_change` decides on those log ratios. :func:`confirm_alert` takes
the revisions from a stored alert (its first bad revision and the revision before it in its series) and stores the
evidence with the alert.

Measuring is ``GitBench``'s: the same ``build``/``bench`` argv (no shell), metric (``wall``, ``cpu`` or the last
number on stdout) and timeout, through :meth:`~quiho.history.sources.WorktreeBench.checkout` and
:meth:`~quiho.history.sources.WorktreeBench.measure_in`.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from quiho._facts import local_facts
from quiho._text import json_number
from quiho.errors import BuildFailed, GitError, UnknownTargetError, UsageError
from quiho.history.gate._paired import PairedChange, paired_change
from quiho.history.sources import GitBench, direction_of_unit, load_history
from quiho.store import Store
from quiho.store import alerts as sa
from quiho.store.alerts import CONFIRM_VERDICTS, AlertRow, ConfirmationRow

__all__ = ["CONFIRM_VERDICTS", "ConfirmOptions", "RerunPair", "Confirmation", "confirm_revisions", "confirm_alert",
           "confirmation_lines", "change_text", "latest_confirmations", "alert_revisions"]

#: pairs' ratios whose range spans this much are flagged (pyperf's check flags a 10 % spread of repetitions)
_SPREAD = 0.10


@dataclass(frozen=True)
class ConfirmOptions:
    """How many pairs to run and how to decide on them.

    Parameters
    ----------
    pairs : int, default 20
        Pairs of runs (each revision runs once per pair); at least :func:`min_pairs` (``level``) for a verdict. 20
        because single runs here take 1x to 2.5x their time by chance: 8 pairs confirm +30 % about half the time,
        20 pairs every time (``bench/confirm_power.py``).
    warmup : int, default 1
        Runs of each revision before the pairs, discarded (cold page cache, compiled bytecode, CPU frequency).
    level : float, default 0.95
        Confidence of the paired interval; ``1 - level`` is the test's level.
    magnitude_floor : float, default 0
        A regression smaller than this relative change (0.02 = 2 %) is not confirmed.
    higher_is_better : bool or None, default None
        Direction of the metric; None: from the alert's series unit (:func:`direction_of_unit`), else lower is
        better (times).
    """

    pairs: int = 20
    warmup: int = 1
    level: float = 0.95
    magnitude_floor: float = 0.0
    higher_is_better: bool | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.pairs <= 10_000:
            raise UsageError(f"pairs must be 1 to 10000, not {self.pairs}")
        if not 0 <= self.warmup <= 1000:
            raise UsageError(f"warmup must be 0 to 1000, not {self.warmup}")
        if not 0.5 <= self.level < 1:
            raise UsageError(f"level must be in [0.5, 1), not {self.level}")
        if not (self.magnitude_floor >= 0 and math.isfinite(self.magnitude_floor)):
            raise UsageError(f"magnitude_floor must be a finite number >= 0, not {self.magnitude_floor}")


@dataclass(frozen=True)
class RerunPair:
    """One pair of runs: which revision ran first, and each revision's value."""

    first: str
    baseline: float
    suspect: float

    @property
    def ratio(self) -> float:
        """Suspect / baseline."""
        return self.suspect / self.baseline


@dataclass(frozen=True)
class Confirmation:
    """A rerun's pairs, the paired evidence, and where it is stored.

    ``interrupted``: stopped (Ctrl-C) before all pairs ran; the evidence is that of the pairs that did.
    """

    id: int | None
    alert_id: int | None
    series: str | None
    suspect: str
    baseline: str
    metric: str
    higher_is_better: bool
    pairs: tuple[RerunPair, ...]
    change: PairedChange
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``quiho history confirm --json``."""
        return {"id": self.id, "alert_id": self.alert_id, "series": self.series, "suspect": self.suspect,
                "baseline": self.baseline, "metric": self.metric, "higher_is_better": self.higher_is_better,
                "status": "interrupted" if self.interrupted else "complete", **self.change.to_dict(),
                "pairs": [{"first": p.first, "baseline": p.baseline, "suspect": p.suspect,
                           "ratio": json_number(p.ratio, 6)} for p in self.pairs]}

    @classmethod
    def from_row(cls, row: ConfirmationRow) -> Confirmation:
        """A stored confirmation with the numbers it was stored with (never recomputed: one estimate per claim)."""
        ch = PairedChange(len(row.pairs), row.magnitude, (row.ci_low, row.ci_high), row.p_value, row.level,
                          row.verdict, row.reason)
        return cls(row.id, row.alert_id, row.series, row.suspect, row.baseline, row.metric, row.higher_is_better,
                   tuple(RerunPair(*p) for p in row.pairs), ch, row.status == "interrupted")


def latest_confirmations(store: Store, alert_ids: Sequence[int]) -> dict[int, Confirmation]:
    """The newest stored confirmation of each alert of ``alert_ids`` that has one (complete or interrupted)."""
    out: dict[int, Confirmation] = {}
    for aid in alert_ids:
        rows = sa.confirmations_of(store, aid)
        if rows:
            out[aid] = Confirmation.from_row(rows[-1])
    return out


def _commit(repo: Path, rev: str, what: str) -> str:
    """The full commit id ``rev`` names in ``repo``."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                             capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if out.returncode != 0 or not out.stdout.strip():
        inside = subprocess.run(["git", "-C", str(repo), "rev-parse", "--git-dir"], capture_output=True, check=False)
        if inside.returncode != 0:
            raise GitError(f"{repo.resolve()} is not a git repository")
        raise GitError(f"the {what} revision {rev!r} is not in {repo.resolve()} (fetch it first, e.g. git fetch "
                       "origin; a shallow CI clone needs fetch-depth: 0)")
    return out.stdout.strip()


def _value(x: float, rev: str) -> float:
    if not (math.isfinite(x) and x > 0):
        raise BuildFailed(f"benchmark at {rev[:12]} gave {x!r}: a ratio of runs needs a positive finite number")
    return x


def _run_pairs(target: GitBench, suspect: str, baseline: str, options: ConfirmOptions,
               log: Callable[[str], None], done: list[RerunPair]) -> None:
    """Build both revisions once and append each pair of runs to ``done`` as it completes."""
    runner = target.runner()
    with ExitStack() as stack:
        log(f"building baseline {baseline[:12]} and suspect {suspect[:12]} in their worktrees")
        wt = {"baseline": stack.enter_context(runner.checkout(baseline)),
              "suspect": stack.enter_context(runner.checkout(suspect))}
        rev = {"baseline": baseline, "suspect": suspect}
        for _ in range(options.warmup):
            for side in ("baseline", "suspect"):
                _value(runner.measure_in(wt[side], rev[side]), rev[side])
        for i in range(options.pairs):
            order = ("baseline", "suspect") if i % 2 == 0 else ("suspect", "baseline")
            got = {side: _value(runner.measure_in(wt[side], rev[side]), rev[side]) for side in order}
            done.append(RerunPair(order[0], got["baseline"], got["suspect"]))
            log(f"  pair {i + 1}/{options.pairs} ({order[0]} first): baseline {got['baseline']:.4g}, suspect "
                f"{got['suspect']:.4g}, ratio {got['suspect'] / got['baseline']:.3f}")


def confirm_revisions(store: Store | None, target: GitBench, suspect: str, baseline: str,
                      options: ConfirmOptions = ConfirmOptions(), *, series: str | None = None,
                      alert_id: int | None = None, log: Callable[[str], None] = lambda _m: None) -> Confirmation:
    """Rerun ``suspect`` and ``baseline`` of ``target.repo`` in pairs and decide on the paired evidence.

    Both revisions are built once (``target.build``, each in its own worktree, removed afterwards); then
    ``options.warmup`` discarded runs of each, then ``options.pairs`` pairs of ``target.bench`` runs, the order
    within a pair alternating. Each value is ``target.metric`` of one run (``target.repetitions`` and
    ``target.rev_range`` are not used). The result is stored with its pairs in one transaction when ``store`` is
    given: a failure stores nothing; a Ctrl-C stores the pairs that completed (``status`` ``interrupted``) and
    re-raises ``KeyboardInterrupt``.

    Parameters
    ----------
    store : Store or None
    target : GitBench
    suspect, baseline : str
        Revisions of ``target.repo`` (anything ``git rev-parse`` takes); stored as full commit ids.
    options : ConfirmOptions
    series, alert_id
        What the confirmation is stored against (``alert_id`` must be an alert of ``store``).
    log : callable
        Progress lines.

    Returns
    -------
    Confirmation

    Raises
    ------
    GitError
        ``target.repo`` is not a git repository or lacks a revision.
    BuildFailed
        A build or benchmark run failed, timed out or printed no positive number; nothing is stored.
    UsageError
        ``suspect`` and ``baseline`` are the same commit.
    """
    s_rev, b_rev = _commit(target.repo, suspect, "suspect"), _commit(target.repo, baseline, "baseline")
    if s_rev == b_rev:
        raise UsageError(f"suspect and baseline are the same commit {s_rev[:12]}: nothing to compare")
    hib = bool(options.higher_is_better)
    done: list[RerunPair] = []

    def decided(interrupted: bool) -> Confirmation:
        ch = paired_change([p.baseline for p in done], [p.suspect for p in done], level=options.level,
                           higher_is_better=hib, magnitude_floor=options.magnitude_floor)
        return _stored(store, target, options, Confirmation(None, alert_id, series, s_rev, b_rev, target.metric, hib,
                                                            tuple(done), ch, interrupted))

    try:
        _run_pairs(target, s_rev, b_rev, options, log, done)
    except KeyboardInterrupt:
        if store is not None and done:
            c = decided(interrupted=True)
            log(f"interrupted after {len(done)} pair{'s' * (len(done) != 1)}: stored as confirmation #{c.id} "
                "(interrupted)")
        raise
    ratios = np.array([p.ratio for p in done])
    if ratios.size > 1 and ratios.max() / ratios.min() - 1 >= _SPREAD:
        log(f"warning: the pairs' ratios span {ratios.max() / ratios.min() - 1:.0%} (machine busy?); the pairs "
            "cancel slow drift, not bursts within a pair: more --pairs")
    return decided(interrupted=False)


def _stored(store: Store | None, target: GitBench, options: ConfirmOptions, c: Confirmation,
            machine: dict[str, Any] | None = None) -> Confirmation:
    """``c`` with its id once written to ``store`` with its pairs (one transaction); unchanged without a store.

    ``machine``: the facts of the machine the pairs ran on (default: this one, where they just ran).
    """
    if store is None:
        return c
    ch = c.change
    cid = sa.insert_confirmation(store, ConfirmationRow(
        0, c.alert_id, c.series, c.suspect, c.baseline, str(target.repo.resolve()), target.build, target.bench,
        target.metric, c.higher_is_better, options.warmup, options.level, ch.magnitude, ch.ci[0], ch.ci[1],
        ch.p_value, ch.verdict, ch.reason, "interrupted" if c.interrupted else "complete",
        local_facts().to_dict() if machine is None else machine,
        tuple((p.first, p.baseline, p.suspect) for p in c.pairs)))
    return replace(c, id=cid)


def alert_revisions(store: Store, alert_id: int, baseline: str | None = None,
                    higher_is_better: bool | None = None) -> tuple[AlertRow, str, bool]:
    """Alert ``alert_id``, the baseline its rerun compares with, and the direction of its metric.

    The baseline is the revision before the first bad one in the alert's series (the last good build: the
    closest code without the change), unless ``baseline`` names another. The direction is ``higher_is_better``
    when given, else the series' (its unit), else lower is better (times).

    Raises
    ------
    UnknownTargetError
        No alert ``alert_id``, or its series is no longer stored (give ``baseline`` then).
    """
    a = sa.get_alert(store, alert_id) if 0 < alert_id < 2**63 else None
    if a is None:
        raise UnknownTargetError(f"no alert #{alert_id} in {store}; see 'quiho history alert list --all'")
    try:
        h = load_history(store, a.series)
    except UnknownTargetError:
        if baseline is None:
            raise UnknownTargetError(f"alert #{alert_id}'s series {a.series!r} is no longer stored: give the "
                                     "baseline revision") from None
        h = None
    if baseline is None:
        assert h is not None
        revs = list(h.revisions)
        if a.first_bad not in revs or revs.index(a.first_bad) == 0:
            raise UnknownTargetError(f"alert #{alert_id}'s series {a.series!r} has no revision before "
                                     f"{a.first_bad[:12]}: give the baseline revision")
        baseline = revs[revs.index(a.first_bad) - 1]
    if higher_is_better is None and h is not None:
        higher_is_better = direction_of_unit(h.unit) == "higher"
    return a, baseline, bool(higher_is_better)


def confirm_alert(store: Store, alert_id: int, target: GitBench, options: ConfirmOptions = ConfirmOptions(), *,
                  baseline: str | None = None, log: Callable[[str], None] = lambda _m: None) -> Confirmation:
    """Confirm alert ``alert_id`` by rerunning its first bad revision against the revision before it.

    Which revisions and direction: :func:`alert_revisions` (``options.higher_is_better`` overrides the series'
    unit). The confirmation is stored with the alert; the alert's state is left to a person
    (``quiho history alert ack|invalid``).

    Raises
    ------
    UnknownTargetError
        No alert ``alert_id``, or its series is no longer stored (give ``baseline`` then).
    GitError, BuildFailed, UsageError
        As :func:`confirm_revisions`.
    """
    a, baseline, hib = alert_revisions(store, alert_id, baseline, options.higher_is_better)
    log(f"alert #{alert_id} ({a.series}): suspect {a.first_bad[:12]}, baseline {baseline[:12]}")
    return confirm_revisions(store, target, a.first_bad, baseline, replace(options, higher_is_better=hib),
                             series=a.series, alert_id=alert_id, log=log)


def _pct(x: float) -> str:
    return f"{x:+.1%}" if math.isfinite(x) else "n/a"


def change_text(ch: PairedChange) -> str:
    """``confirmed: +33.6% [+26.5%, +52.2%] (95% interval), p = 1.9e-06``: every place a verdict is printed."""
    p = f"{ch.p_value:.2g}" if math.isfinite(ch.p_value) else "n/a"
    return (f"{ch.verdict}: {_pct(ch.magnitude)} [{_pct(ch.ci[0])}, {_pct(ch.ci[1])}] ({100 * ch.level:.4g}% "
            f"interval), p = {p}")


def confirmation_lines(c: Confirmation) -> list[str]:
    """Plain-text report of a confirmation: the verdict with its paired evidence, then every pair (escaped)."""
    from quiho._text import printable

    ch = c.change
    what = f"{printable(c.series)}: " if c.series else ""
    head = (f"{what}suspect {printable(c.suspect)[:12]} against baseline {printable(c.baseline)[:12]}, {ch.n} "
            f"pair{'s' * (ch.n != 1)} ({c.metric}, {'higher' if c.higher_is_better else 'lower'} is better)"
            + (", interrupted" if c.interrupted else ""))
    lines = [head, f"  {change_text(ch)}; {ch.reason}"]
    lines.append("  pair  first     baseline    suspect     ratio")
    lines += [f"  {i:<4}  {pr.first:<8}  {pr.baseline:<10.4g}  {pr.suspect:<10.4g}  {pr.ratio:.3f}"
              for i, pr in enumerate(c.pairs, 1)]
    if c.id is not None:
        lines.append(f"  stored as confirmation #{c.id}" + (f" of alert #{c.alert_id}" if c.alert_id else ""))
    return lines
