"""Store queries of the ``alerts`` component: regressions of history series, kept until a person or the data acts.

One row per alert: the series (by name: series are replaced by CSV imports, an alert outlives that), the first bad
revision, the first revision of the last good level before it, the evidence that raised it (magnitude, interval,
p, the baseline level), its state and, once fixed, the evidence that closed it. The table is declared for
SQLAlchemy and the queries are plain SQL (ids are allocated as ``MAX(id) + 1`` inside the writing transaction),
so the same schema and statements run on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa

from quiho._version import __version__
from quiho.store._db import FLOAT, ID, SCHEMA, TEXT, Store, Tables, register_component, utcnow

__all__ = ["ALERT_STATES", "AlertRow", "insert_alert", "get_alert", "alerts_of", "update_alert"]

#: ``new`` fails the CI gate; ``acknowledged`` is still open (compared, may close as fixed) but no longer fails it
ALERT_STATES = ("new", "acknowledged", "fixed", "invalid")

def _col(name: str, kind: Any, nullable: bool = True) -> sa.Column:
    return sa.Column(name, kind, nullable=nullable)


#: Declared as SQLAlchemy tables: the same schema on SQLite and PostgreSQL (64-bit floats, byte-order text).
HISTORY_ALERTS = sa.Table(
    "history_alerts", SCHEMA,
    sa.Column("id", ID, primary_key=True, autoincrement=False),  # MAX(id) + 1 inside the writing transaction
    *(_col(n, TEXT, False) for n in ("series", "first_bad", "baseline_from", "last_revision", "found_by")),
    *(_col(n, FLOAT) for n in ("baseline", "level", "magnitude", "ci_low", "ci_high", "p_value")),
    _col("n_baseline", sa.Integer, False), _col("state", TEXT, False),
    _col("fixed_at", TEXT), _col("fixed_by", TEXT),
    *(_col(n, FLOAT) for n in ("fix_magnitude", "fix_ci_low", "fix_ci_high", "fix_p_value")),
    *(_col(n, TEXT, False) for n in ("created_at", "updated_at", "quiho_version")),
    sa.CheckConstraint("state IN ('new','acknowledged','fixed','invalid')"),
    sa.UniqueConstraint("series", "first_bad"),
    sa.Index("history_alerts_series", "series", "state"),
)

register_component("alerts", [Tables(HISTORY_ALERTS)])


@dataclass(frozen=True)
class AlertRow:
    """One row of ``history_alerts`` (non-finite numbers are stored as NULL and read back as NaN)."""

    id: int
    series: str
    first_bad: str
    baseline_from: str
    last_revision: str
    found_by: str
    baseline: float
    level: float
    magnitude: float
    ci_low: float
    ci_high: float
    p_value: float
    n_baseline: int
    state: str
    fixed_at: str | None
    fixed_by: str | None
    fix_magnitude: float
    fix_ci_low: float
    fix_ci_high: float
    fix_p_value: float
    created_at: str
    updated_at: str


_COLS = [f.name for f in fields(AlertRow)]
_REAL = {f.name for f in fields(AlertRow) if f.type == "float"}


def _db(x: object) -> object:
    """NaN/inf become NULL (a REAL column of PostgreSQL rejects neither, but JSON and sorting would)."""
    return None if isinstance(x, float) and not (x == x and abs(x) != float("inf")) else x


def _row(r: Any) -> AlertRow:
    vals: dict[str, Any] = {c: r[c] for c in _COLS}
    for c in _REAL:
        vals[c] = float("nan") if vals[c] is None else float(vals[c])
    return AlertRow(**vals)


def insert_alert(store: Store, row: AlertRow) -> int:
    """Store a new alert (``row.id``, ``created_at`` and ``updated_at`` are assigned here); its id."""
    now = utcnow()
    cols = [c for c in _COLS if c != "id"]
    with store.transaction() as c:
        new_id = int(c.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM history_alerts").fetchone()[0])
        vals = {**{k: _db(getattr(row, k)) for k in cols}, "created_at": now, "updated_at": now}
        c.execute(f"INSERT INTO history_alerts(id, {', '.join(cols)}, quiho_version) "
                  f"VALUES (?, {', '.join('?' for _ in cols)}, ?)", (new_id, *(vals[k] for k in cols), __version__))
    return new_id


def get_alert(store: Store, alert_id: int) -> AlertRow | None:
    """Alert ``alert_id``, or None."""
    r = store.conn.execute(f"SELECT {', '.join(_COLS)} FROM history_alerts WHERE id = ?", (alert_id,)).fetchone()
    return None if r is None else _row(r)


def alerts_of(store: Store, series: str | None = None, states: Sequence[str] = ALERT_STATES) -> list[AlertRow]:
    """Alerts in ``states`` (of one ``series``, or all), oldest first."""
    marks = ", ".join("?" for _ in states)
    where, args = f"state IN ({marks})", list(states)
    if series is not None:
        where, args = f"series = ? AND {where}", [series, *args]
    rows = store.conn.execute(f"SELECT {', '.join(_COLS)} FROM history_alerts WHERE {where} ORDER BY id",
                              args).fetchall()
    return [_row(r) for r in rows]


def update_alert(store: Store, alert_id: int, **changes: object) -> None:
    """Set the named columns of alert ``alert_id`` (and ``updated_at``); unknown names are a programming error."""
    bad = set(changes) - set(_COLS) | ({"id", "created_at", "updated_at"} & set(changes))
    if bad:
        raise ValueError(f"cannot set {sorted(bad)} of an alert")
    sets = ", ".join(f"{k} = ?" for k in changes)
    with store.transaction() as c:
        c.execute(f"UPDATE history_alerts SET {sets}, updated_at = ? WHERE id = ?",
                  (*(_db(v) for v in changes.values()), utcnow(), alert_id))
