"""Retention: compact old fingerprint runs to one median per (host, stressor).

A compacted run keeps its history value (the median over repetitions, which
is what drift detection and the IRUP engine's host-median pairing use) and a
summary of what was folded (count, min, max, CoV); the raw repetitions and
failed attempts are deleted. Application runs are never touched.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from quiho.errors import UsageError
from quiho.store._db import Store, dumps, utcnow

__all__ = ["CompactSummary", "compact_runs", "older_than_days"]


@dataclass(frozen=True)
class CompactSummary:
    """What ``compact_runs`` did."""

    runs: int
    rows_before: int
    rows_after: int


#: Longest retention accepted (days): a century; beyond it the cut-off date leaves the calendar.
MAX_DAYS = 36_525.0


def older_than_days(days: float) -> timedelta:
    """``--older-than`` in days as a :class:`~datetime.timedelta`.

    Raises
    ------
    UsageError
        ``days`` is NaN, infinite, negative or more than :data:`MAX_DAYS`.
    """
    if not math.isfinite(days) or not 0 <= days <= MAX_DAYS:
        raise UsageError(f"--older-than must be a number of days from 0 to {MAX_DAYS:g}, got {days!r}")
    return timedelta(days=days)


def compact_runs(store: Store, *, older_than: timedelta | float, now: datetime | None = None,
                 source: str = "fleet") -> CompactSummary:
    """Fold every repetition of fingerprint runs started before ``now - older_than`` into medians.

    ``older_than`` is a :class:`~datetime.timedelta` or a number of days (see :func:`older_than_days`).
    Only finished runs (complete, partial, failed) are compacted; a run is
    compacted once (marked in its ``params_json``). One transaction: an
    interruption leaves the store as it was.
    """
    if not isinstance(older_than, timedelta):
        older_than = older_than_days(older_than)
    if older_than < timedelta(0) or older_than > timedelta(days=MAX_DAYS):
        raise UsageError(f"--older-than must be from 0 to {MAX_DAYS:g} days")
    cutoff = ((now or datetime.now(UTC)) - older_than).isoformat()
    runs = store.conn.execute(
        "SELECT id, params_json FROM fingerprint_runs WHERE source = ? AND status != 'running' AND started_at < ?",
        (source, cutoff),
    ).fetchall()
    todo = [r for r in runs if not json.loads(r["params_json"] or "{}").get("compacted")]
    before = after = 0
    with store.transaction() as c:
        for r in todo:
            rows = c.execute(
                "SELECT host_id, stressor, repetition, value, status, unit FROM measurements WHERE run_id = ?",
                (r["id"],),
            ).fetchall()
            before += len(rows)
            cells: dict[tuple[int, str], list] = {}
            for m in rows:
                cells.setdefault((m["host_id"], m["stressor"]), []).append(m)
            c.execute("DELETE FROM measurements WHERE run_id = ?", (r["id"],))
            new: list[tuple[object, ...]] = []
            for (hid, stressor), ms in sorted(cells.items()):
                ok = np.array([m["value"] for m in ms if m["status"] == "ok"], dtype=float)
                failed = sum(1 for m in ms if m["status"] != "ok")
                extra: dict[str, float | int | None] = {"compacted_from": len(ok), "failed_folded": failed}
                if len(ok):
                    extra |= {"min": float(ok.min()), "max": float(ok.max()),
                              "cov": float(ok.std() / ok.mean()) if ok.mean() else None}
                    new.append((r["id"], hid, 0, stressor, float(np.median(ok)), ms[0]["unit"], "ok", None,
                                dumps(extra)))
                else:
                    new.append((r["id"], hid, 0, stressor, None, ms[0]["unit"], "failed",
                                f"all {failed} attempt(s) failed (compacted)", dumps(extra)))
            c.executemany(
                "INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                "extra_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                new,
            )
            after += len(new)
            params = json.loads(r["params_json"] or "{}") | {"compacted": utcnow()}
            c.execute("UPDATE fingerprint_runs SET params_json = ? WHERE id = ?", (dumps(params), r["id"]))
    return CompactSummary(len(todo), before, after)
