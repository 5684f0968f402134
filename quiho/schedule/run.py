"""What the installed timer runs: one locked, logged fingerprint of the fleet."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quiho.fleet.lock import Busy
from quiho.store import open_store, utcnow

if TYPE_CHECKING:
    from quiho.fingerprint.run import FingerprintPlan
    from quiho.fleet.runner import FleetEvent

__all__ = ["ScheduledOutcome", "scheduled_fingerprint"]


@dataclass(frozen=True)
class ScheduledOutcome:
    """What one scheduled firing did."""

    status: str  # the run's status, or "skipped"
    run_id: int | None
    batch: str | None
    message: str
    interrupted_marked: tuple[int, ...] = ()


def _log(log: Path | None, line: str) -> None:
    if log is None:
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(f"{utcnow()} pid={os.getpid()} {line}\n")


def scheduled_fingerprint(
    store_path: Path,
    *,
    inventory: Path | None = None,
    plan: FingerprintPlan | None = None,
    wait: bool = False,
    log: Path | None = None,
    on_event: Callable[[FleetEvent], None] | None = None,
) -> ScheduledOutcome:
    """Fingerprint the fleet under the measurement lock.

    With ``wait=False`` a held lock makes this a no-op that says who holds it
    (outcome ``skipped``): a scheduled fingerprint must not measure while a
    profile does.
    """
    from quiho.fingerprint.run import FingerprintPlan, fingerprint
    from quiho.fleet.session import measuring

    try:
        with open_store(store_path) as st, measuring(st, "scheduled fingerprint", wait=wait) as marked_ids:
            marked = tuple(marked_ids)
            if marked:
                _log(log, f"marked interrupted run(s) {list(marked)} partial")
            run = fingerprint(inventory, store=st, plan=plan or FingerprintPlan(), on_event=on_event)
    except Busy as exc:
        _log(log, f"skipped: {exc}")
        return ScheduledOutcome("skipped", None, None, f"skipped: {exc}")
    msg = f"fingerprint {run.batch} (run {run.run_id}): {run.status}"
    _log(log, msg)
    return ScheduledOutcome(run.status, run.run_id, run.batch, msg, marked)
