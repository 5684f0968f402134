"""Store queries of the ``alerts`` component: regressions of history series, kept until a person or the data acts.

One row per alert: the series (by name: series are replaced by CSV imports, an alert outlives that), the first bad
revision, the first revision of the last good level before it, the evidence that raised it (magnitude, interval,
p, the baseline level), its state and, once fixed, the evidence that closed it. The tables are declared for
SQLAlchemy and the queries are plain SQL (ids are allocated as ``MAX(id) + 1`` inside the writing transaction),
so the same schema and statements run on SQLite and PostgreSQL.

v2: an alert's confirmations (``quiho history confirm``): the suspect and baseline revisions rerun in pairs on one
machine, one row per rerun with its paired evidence (``history_confirmations``) and one per pair of runs
(``history_confirmation_pairs``). A confirmation of two revisions named by hand has no alert.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa

from quiho._version import __version__
from quiho.store._db import FLOAT, ID, SCHEMA, TEXT, Store, Tables, register_component, utcnow

__all__ = ["ALERT_STATES", "AlertRow", "insert_alert", "get_alert", "alerts_of", "update_alert",
           "CONFIRM_VERDICTS", "ConfirmationRow", "insert_confirmation", "get_confirmation", "confirmations_of"]

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

#: verdicts of a confirmation (``quiho history confirm``)
CONFIRM_VERDICTS = ("confirmed", "not confirmed", "not meaningful")

HISTORY_CONFIRMATIONS = sa.Table(
    "history_confirmations", SCHEMA,
    sa.Column("id", ID, primary_key=True, autoincrement=False),  # MAX(id) + 1 inside the writing transaction
    sa.Column("alert_id", ID, sa.ForeignKey("history_alerts.id", ondelete="CASCADE"), nullable=True),
    _col("series", TEXT),
    *(_col(n, TEXT, False) for n in ("suspect", "baseline", "repo", "build_json", "bench_json", "metric")),
    _col("higher_is_better", sa.Integer, False), _col("n_pairs", sa.Integer, False), _col("warmup", sa.Integer, False),
    _col("level", FLOAT, False),
    *(_col(n, FLOAT) for n in ("magnitude", "ci_low", "ci_high", "p_value")),
    *(_col(n, TEXT, False) for n in ("verdict", "reason", "status", "machine_json", "created_at", "quiho_version")),
    sa.CheckConstraint("verdict IN ('confirmed','not confirmed','not meaningful')"),
    sa.CheckConstraint("status IN ('complete','interrupted')"),
    sa.Index("history_confirmations_alert", "alert_id"),
)
#: one row per pair of runs, in the order they ran; ``ran_first`` says which revision ran first in the pair
HISTORY_CONFIRMATION_PAIRS = sa.Table(
    "history_confirmation_pairs", SCHEMA,
    sa.Column("confirmation_id", ID, sa.ForeignKey("history_confirmations.id", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("pair", sa.Integer, primary_key=True, autoincrement=False),
    _col("ran_first", TEXT, False), _col("baseline_value", FLOAT, False), _col("suspect_value", FLOAT, False),
    sa.CheckConstraint("ran_first IN ('baseline','suspect')"),
)

register_component("alerts", [Tables(HISTORY_ALERTS), Tables(HISTORY_CONFIRMATIONS, HISTORY_CONFIRMATION_PAIRS)])


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


@dataclass(frozen=True)
class ConfirmationRow:
    """One row of ``history_confirmations`` with its pairs ``(first, baseline value, suspect value)`` in run order.

    Non-finite numbers are stored as NULL and read back as NaN; ``build``/``bench`` are the argv lists run.
    """

    id: int
    alert_id: int | None
    series: str | None
    suspect: str
    baseline: str
    repo: str
    build: tuple[str, ...]
    bench: tuple[str, ...]
    metric: str
    higher_is_better: bool
    warmup: int
    level: float
    magnitude: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str
    reason: str
    status: str
    machine: dict[str, Any]
    pairs: tuple[tuple[str, float, float], ...]
    created_at: str = ""


_CONF_COLS = ("alert_id", "series", "suspect", "baseline", "repo", "build_json", "bench_json", "metric",
              "higher_is_better", "n_pairs", "warmup", "level", "magnitude", "ci_low", "ci_high", "p_value",
              "verdict", "reason", "status", "machine_json", "created_at", "quiho_version")


def insert_confirmation(store: Store, row: ConfirmationRow) -> int:
    """Store a confirmation and its pairs in one transaction (``row.id`` and ``created_at`` are assigned); its id."""
    plain = ("alert_id", "series", "suspect", "baseline", "repo", "metric", "warmup", "level", "verdict",
             "reason", "status")
    vals: dict[str, Any] = {k: getattr(row, k) for k in plain}
    vals.update({k: _db(getattr(row, k)) for k in ("magnitude", "ci_low", "ci_high", "p_value")})
    vals.update(build_json=json.dumps(list(row.build)), bench_json=json.dumps(list(row.bench)),
                higher_is_better=int(row.higher_is_better), n_pairs=len(row.pairs),
                machine_json=json.dumps(row.machine, sort_keys=True, default=str), created_at=utcnow(),
                quiho_version=__version__)
    with store.transaction() as c:
        new_id = int(c.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM history_confirmations").fetchone()[0])
        c.execute(f"INSERT INTO history_confirmations(id, {', '.join(_CONF_COLS)}) "
                  f"VALUES (?, {', '.join('?' for _ in _CONF_COLS)})", (new_id, *(vals[k] for k in _CONF_COLS)))
        c.executemany("INSERT INTO history_confirmation_pairs(confirmation_id, pair, ran_first, baseline_value, "
                      "suspect_value) VALUES (?, ?, ?, ?, ?)",
                      [(new_id, i, first, float(b), float(s)) for i, (first, b, s) in enumerate(row.pairs)])
    return new_id


def _confirmation(store: Store, r: Any) -> ConfirmationRow:
    pairs = store.conn.execute("SELECT ran_first, baseline_value, suspect_value FROM history_confirmation_pairs "
                               "WHERE confirmation_id = ? ORDER BY pair", (r["id"],)).fetchall()

    def num(x: object) -> float:
        return float("nan") if x is None else float(x)  # type: ignore[arg-type]

    return ConfirmationRow(
        int(r["id"]), None if r["alert_id"] is None else int(r["alert_id"]), r["series"], r["suspect"],
        r["baseline"], r["repo"], tuple(json.loads(r["build_json"])), tuple(json.loads(r["bench_json"])),
        r["metric"], bool(r["higher_is_better"]), int(r["warmup"]), float(r["level"]),
        num(r["magnitude"]), num(r["ci_low"]), num(r["ci_high"]), num(r["p_value"]), r["verdict"], r["reason"],
        r["status"], json.loads(r["machine_json"]), tuple((str(p[0]), float(p[1]), float(p[2])) for p in pairs),
        r["created_at"])


def get_confirmation(store: Store, confirmation_id: int) -> ConfirmationRow | None:
    """Confirmation ``confirmation_id`` with its pairs, or None."""
    r = store.conn.execute(f"SELECT id, {', '.join(_CONF_COLS)} FROM history_confirmations WHERE id = ?",
                           (confirmation_id,)).fetchone()
    return None if r is None else _confirmation(store, r)


def confirmations_of(store: Store, alert_id: int | None = None) -> list[ConfirmationRow]:
    """The confirmations of alert ``alert_id`` (or all of them), oldest first."""
    where, args = ("WHERE alert_id = ?", (alert_id,)) if alert_id is not None else ("", ())
    rows = store.conn.execute(f"SELECT id, {', '.join(_CONF_COLS)} FROM history_confirmations {where} ORDER BY id",
                              args).fetchall()
    return [_confirmation(store, r) for r in rows]
