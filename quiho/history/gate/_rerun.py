"""The gate with a rerun: a ``new`` alert fails the gate only while rerunning its revisions does not clear it.

:func:`confirm_gate` takes :func:`~quiho.history.gate.run_gate`'s result and confirms every ``new`` alert as
``quiho history confirm`` does (:func:`~quiho.history.gate.confirm_revisions` on the revisions
:func:`~quiho.history.gate.alert_revisions` names: its first bad revision against the revision before it), so
a regression the history shows only because the runner was busy when one of its revisions ran stops failing CI,
while the alert and its confirmation stay stored for a person.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from quiho.errors import BuildFailed, GitError
from quiho.history.gate._alerts import GateResult
from quiho.history.gate._confirm import Confirmation, ConfirmOptions, _stored, alert_revisions, confirm_revisions
from quiho.history.gate._paired import paired_change
from quiho.history.sources import GitBench
from quiho.store import Store
from quiho.store import alerts as sa
from quiho.store.alerts import AlertRow, ConfirmationRow

__all__ = ["ConfirmedGate", "confirm_gate"]


def _cleared(c: Confirmation | None) -> bool:
    """A rerun that ran all its pairs and did not confirm the regression; anything else leaves the alert failing."""
    return c is not None and not c.interrupted and c.change.verdict == "not confirmed"


@dataclass(frozen=True)
class ConfirmedGate:
    """The gate's result after its ``new`` alerts were rerun; ``rerun`` are the confirmations measured now.

    Every ``new`` alert's confirmation is ``gate.confirmations[alert id]`` (measured now, or an earlier one of the
    same revisions, command and settings read back from the store).
    """

    gate: GateResult
    rerun: tuple[int, ...] = ()

    @property
    def failing(self) -> bool:
        """Any ``new`` alert that its confirmation does not clear: confirmed, or too few pairs to decide.

        "Not meaningful" fails: the rerun could not overrule the gate's evidence, so the gate's verdict stands. A
        PR's check (``gate.base``) raises no alert and is rerun by nothing: its own verdict.
        """
        if self.gate.base is not None:
            return self.gate.failing
        conf = self.gate.confirmations
        return any(a.state == "new" and not _cleared(conf.get(a.id)) for a in self.gate.open_alerts)

    def to_dict(self, now: datetime | None = None) -> dict[str, object]:
        """The JSON document of ``quiho history detect --all --rerun CMD --json``."""
        return {**self.gate.to_dict(now), "failing": self.failing, "gate_failing": self.gate.failing,
                "rerun": list(self.rerun)}


def _same_rerun(row: ConfirmationRow, target: GitBench, options: ConfirmOptions, revs: tuple[str, str]) -> bool:
    """Whether stored ``row`` is a complete rerun of ``revs`` (suspect, baseline) as ``target``/``options`` ask."""
    return (row.status == "complete" and (row.suspect, row.baseline) == revs and row.bench == target.bench
            and row.build == target.build and row.metric == target.metric and len(row.pairs) == options.pairs
            and row.level == options.level and row.warmup == options.warmup)


def confirm_gate(store: Store, result: GateResult, target: GitBench, options: ConfirmOptions = ConfirmOptions(), *,
                 log: Callable[[str], None] = lambda _m: None) -> ConfirmedGate:
    """Confirm every ``new`` alert of ``result`` by rerunning its revisions in pairs; the gate fails on the rest.

    Each ``new`` alert is rerun as :func:`~quiho.history.gate.confirm_alert` reruns it (the same code: its first
    bad revision against the revision before it, the direction of its series) and the confirmation is stored with
    it. ``target.bench`` is one benchmark: alerts of the same revisions and direction share one rerun (run once,
    stored with each), and an alert that already has a complete rerun of the same revisions, command and settings
    is not rerun (its stored confirmation decides), so a later CI run on an alert still open costs nothing. An
    acknowledged alert does not fail the gate and is not rerun; with ``result.base`` (a PR's check) nothing is
    rerun: such a check raises no alert to store the evidence with.

    Returns
    -------
    ConfirmedGate
        ``failing``: a ``new`` alert that was confirmed, or whose rerun could not decide (too few pairs).

    Raises
    ------
    GitError
        The repository lacks a revision to rerun (a shallow clone); the alert stays stored, unconfirmed.
    BuildFailed
        A build or benchmark run failed; the alert stays stored, unconfirmed, and no pair of that rerun is stored.
    """
    if result.base is not None:
        return ConfirmedGate(result)
    conf = dict(result.confirmations)
    shared: dict[tuple[str, str, bool], Confirmation] = {}
    rerun: list[int] = []
    for a in (a for a in result.open_alerts if a.state == "new"):
        _alert, baseline, hib = alert_revisions(store, a.id, None, options.higher_is_better)
        stored = [r for r in sa.confirmations_of(store, a.id) if _same_rerun(r, target, options, (a.first_bad,
                                                                                                 baseline))]
        if stored and stored[-1].higher_is_better == hib:
            conf[a.id] = _reused(store, a, stored[-1], target, replace(options, higher_is_better=hib), log)
            continue
        key = (a.first_bad, baseline, hib)
        c = _rerun(store, a, key, target, replace(options, higher_is_better=hib), shared.get(key), log)
        shared.setdefault(key, c)
        conf[a.id] = c
        rerun.append(int(c.id or 0))
    return ConfirmedGate(replace(result, confirmations=conf), tuple(rerun))


def _reused(store: Store, a: AlertRow, row: ConfirmationRow, target: GitBench, options: ConfirmOptions,
            log: Callable[[str], None]) -> Confirmation:
    """A stored rerun of the same revisions and settings: its pairs decided by today's magnitude floor.

    The floor is not part of what was run, so the pairs stand; a verdict the floor changes is stored anew with
    them (what the gate decides is what ``alert list`` shows).
    """
    c = Confirmation.from_row(row)
    b, s = [p.baseline for p in c.pairs], [p.suspect for p in c.pairs]
    again = paired_change(b, s, level=options.level, higher_is_better=c.higher_is_better,
                          magnitude_floor=options.magnitude_floor)
    if again.verdict == c.change.verdict:
        log(f"alert #{a.id} ({a.series}): confirmation #{c.id} of the same rerun is reused")
        return c
    log(f"alert #{a.id} ({a.series}): the pairs of confirmation #{c.id} decided again at magnitude floor "
        f"{options.magnitude_floor:.1%}: {again.verdict} (was {c.change.verdict})")
    return _stored(store, target, options, replace(c, id=None, change=again), row.machine)


def _rerun(store: Store, a: AlertRow, revs: tuple[str, str, bool], target: GitBench, options: ConfirmOptions,
           done: Confirmation | None, log: Callable[[str], None]) -> Confirmation:
    """Alert ``a``'s confirmation: ``done``'s pairs stored with it, or a rerun of ``revs``, stored with it."""
    if done is not None:
        log(f"alert #{a.id} ({a.series}): the pairs of confirmation #{done.id} (same revisions) are stored with it")
        return _stored(store, target, options, replace(done, id=None, alert_id=a.id, series=a.series))
    log(f"alert #{a.id} ({a.series}): rerunning suspect {revs[0][:12]} against baseline {revs[1][:12]}")
    try:
        return confirm_revisions(store, target, revs[0], revs[1], options, series=a.series, alert_id=a.id, log=log)
    except (GitError, BuildFailed) as exc:
        raise type(exc)(f"alert #{a.id} ({a.series}) is kept unconfirmed: {exc}") from None
