"""Store queries of histories: series, their revisions, measured points and the machine that measured a revision.

The history package turns these rows into :class:`~quiho.history.History` objects; nothing outside
``quiho.store`` writes SQL on these tables. A revision's machine is one ``history_revision_machines`` row (host,
fingerprint run, facts) beside the revision, so a history without machines reads as it always did. A revision
known only by a harness's summary of its rounds keeps that summary (``summary_json``, a mapping of statistic
names to values) beside its one point.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quiho._version import __version__
from quiho.errors import HistoryError
from quiho.store._db import Store, dumps, insert_id, utcnow
from quiho.store.hosts import ensure_hosts

__all__ = ["StoredRevision", "ensure_series", "series_id", "series_names", "series_meta", "add_revisions",
           "record_measurement", "record_failure", "revisions", "replace_series", "list_series",
           "ok_app_run_values", "append_revision", "summary_only", "MachineRecord", "set_revision_machine",
           "revision_machines"]


#: Revision ids per query when reading a series' points (well under SQLite's 32,766 parameters).
POINTS_CHUNK = 2000


@dataclass(frozen=True)
class StoredRevision:
    """One row of ``history_revisions`` with its points in repetition order and its summary (None: none)."""

    revision: str
    order: int
    status: str
    reason: str | None
    values: tuple[float, ...]
    summary: dict[str, float] | None = None


def _config_json(config: Mapping[str, object] | None) -> str:
    return json.dumps(dict(config or {}), sort_keys=True)


def ensure_series(store: Store, name: str, source: str, unit: str = "",
                  config: Mapping[str, str] | None = None) -> int:
    """Id of series ``name``, creating it if needed."""
    with store.transaction() as c:
        row = c.execute("SELECT id FROM history_series WHERE name = ?", (name,)).fetchone()
        if row:
            return int(row[0])
        return insert_id(c, "INSERT INTO history_series(name, unit, source, config_json, created_at, quiho_version) "
                         "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                         (name, unit, source, _config_json(config), utcnow(), __version__))


def series_id(store: Store, name: str) -> int | None:
    """Id of series ``name``, or None."""
    row = store.conn.execute("SELECT id FROM history_series WHERE name = ?", (name,)).fetchone()
    return None if row is None else int(row[0])


def series_names(store: Store, limit: int = 20) -> list[str]:
    """The first ``limit`` stored series names, sorted."""
    return [r[0] for r in store.conn.execute("SELECT name FROM history_series ORDER BY name LIMIT ?", (limit,))]


def series_meta(store: Store, sid: int) -> tuple[str, dict[str, str]]:
    """Unit and configuration of series ``sid``."""
    row = store.conn.execute("SELECT unit, config_json FROM history_series WHERE id = ?", (sid,)).fetchone()
    return row["unit"], json.loads(row["config_json"])


def add_revisions(store: Store, series_id: int, revisions: Sequence[str]) -> None:
    """Declare the ordered revisions of a series as ``pending`` (existing ones keep their status).

    Raises
    ------
    HistoryError
        A stored revision now sits at a different position (the range changed):
        use another series name.
    """
    with store.transaction() as c:
        have = {r["revision"]: int(r["ord"]) for r in
                c.execute("SELECT revision, ord FROM history_revisions WHERE series_id = ?", (series_id,))}
        for o, rev in enumerate(revisions):
            if rev in have:
                if have[rev] != o:
                    raise HistoryError(f"revision {rev} was stored at position {have[rev]}, now {o}: the revision "
                                       "range changed; sample it into a new --series")
                continue
            c.execute("INSERT INTO history_revisions(series_id, revision, ord, status) VALUES (?, ?, ?, 'pending')",
                      (series_id, rev, o))


def _summary_json(summary: Mapping[str, float] | None) -> str | None:
    return None if summary is None else json.dumps({k: float(v) for k, v in summary.items()}, sort_keys=True)


def record_measurement(store: Store, series_id: int, revision: str, values: Sequence[float],
                       machine: Mapping[str, object] | None = None,
                       summary: Mapping[str, float] | None = None, append: bool = False) -> None:
    """Store the repetitions of one revision (with the machine facts and its summary, if any) and mark it ``ok``.

    ``append`` adds ``values`` after the revision's stored repetitions (another run of it) instead of replacing
    them; both must be rounds, since two harness summaries do not make one.

    Raises
    ------
    HistoryError
        ``append`` where this import or the stored revision has only a summary.
    """
    with store.transaction() as c:
        row = c.execute("SELECT id, summary_json FROM history_revisions WHERE series_id = ? AND revision = ?",
                        (series_id, revision)).fetchone()
        rid = row[0]
        first = 0
        if append:
            if summary is not None or row[1] is not None:
                raise HistoryError(f"revision {revision}: a summary cannot be appended to or appended with")
            last = c.execute("SELECT MAX(repetition) FROM history_points WHERE revision_id = ?", (rid,)).fetchone()[0]
            first = 0 if last is None else int(last) + 1
        else:
            c.execute("DELETE FROM history_points WHERE revision_id = ?", (rid,))
        c.executemany("INSERT INTO history_points(revision_id, repetition, value) VALUES (?, ?, ?)",
                      [(rid, first + i, float(v)) for i, v in enumerate(values)])
        c.execute("UPDATE history_revisions SET status='ok', reason=NULL, stderr_tail=NULL, measured_at=?, "
                  "machine_json=?, summary_json=? WHERE id = ?",
                  (utcnow(), _config_json(machine), _summary_json(summary), rid))


def summary_only(store: Store, series_id: int, revision: str) -> bool:
    """Whether ``revision`` of series ``series_id`` is stored with only its harness's summary (False: not stored)."""
    row = store.conn.execute("SELECT summary_json FROM history_revisions WHERE series_id = ? AND revision = ?",
                             (series_id, revision)).fetchone()
    return row is not None and row[0] is not None


def record_failure(store: Store, series_id: int, revision: str, reason: str, stderr_tail: str = "",
                   machine: Mapping[str, object] | None = None) -> None:
    """Mark one revision ``failed`` with the reason (samplers never retry it)."""
    with store.transaction() as c:
        c.execute("UPDATE history_revisions SET status='failed', reason=?, stderr_tail=?, measured_at=?, "
                  "machine_json=? WHERE series_id = ? AND revision = ?",
                  (reason, stderr_tail[-4000:], utcnow(), _config_json(machine), series_id, revision))


def revisions(store: Store, sid: int) -> list[StoredRevision]:
    """Every revision of series ``sid`` in order, with its points (empty unless measured)."""
    rows = store.conn.execute("SELECT id, revision, ord, status, reason, summary_json FROM history_revisions "
                              "WHERE series_id = ? ORDER BY ord", (sid,)).fetchall()
    vals: dict[int, list[float]] = {}
    ids = [int(r["id"]) for r in rows]
    # points by revision ids, not a join: PostgreSQL without fresh statistics hash-joins the whole points table
    # for every series (detect --all over 1,000 series took 3.3x SQLite's time); an id list always uses the index
    for k in range(0, len(ids), POINTS_CHUNK):
        chunk = ids[k:k + POINTS_CHUNK]
        for rid, v in store.conn.execute("SELECT revision_id, value FROM history_points WHERE revision_id IN "
                                         f"({','.join('?' * len(chunk))}) ORDER BY revision_id, repetition", chunk):
            vals.setdefault(int(rid), []).append(float(v))
    return [StoredRevision(r["revision"], int(r["ord"]), r["status"], r["reason"], tuple(vals.get(r["id"], ())),
                           None if r["summary_json"] is None else json.loads(r["summary_json"]))
            for r in rows]


def replace_series(store: Store, name: str, unit: str, source: str, config: Mapping[str, str],
                   rows: Sequence[StoredRevision]) -> int:
    """Write series ``name`` as ``rows`` (status, reason, points, summary), replacing one of that name; its id."""
    with store.transaction() as c:
        c.execute("DELETE FROM history_series WHERE name = ?", (name,))
        sid = insert_id(c, "INSERT INTO history_series(name, unit, source, config_json, created_at, quiho_version) "
                        "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                        (name, unit, source, _config_json(config), utcnow(), __version__))
        now = utcnow()
        # two bulk inserts, not one INSERT per revision: 200 k revisions in about a second
        c.insert_rows("history_revisions",
                      ("series_id", "revision", "ord", "status", "reason", "measured_at", "summary_json"),
                      [(sid, r.revision, int(r.order), r.status, r.reason, now, _summary_json(r.summary))
                       for r in rows])
        rid: dict[int, int] = dict(
            c.execute("SELECT ord, id FROM history_revisions WHERE series_id = ?", (sid,)).fetchall())
        c.insert_rows("history_points", ("revision_id", "repetition", "value"),
                      [(rid[int(r.order)], i, float(v)) for r in rows for i, v in enumerate(r.values)])
    return sid


def list_series(store: Store) -> list[dict[str, object]]:
    """Name, unit, source and revision counts of every stored series."""
    rows = store.conn.execute(
        "SELECT s.name, s.unit, s.source, "
        "SUM(CASE WHEN r.status = 'ok' THEN 1 ELSE 0 END) AS ok, "
        "SUM(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END) AS failed, "
        "SUM(CASE WHEN r.status = 'pending' THEN 1 ELSE 0 END) AS pending "
        "FROM history_series s LEFT JOIN history_revisions r ON r.series_id = s.id GROUP BY s.id ORDER BY s.name")
    return [dict(r) for r in rows.fetchall()]


def ok_app_run_values(store: Store, application: str, test: str) -> list[tuple[str, float, str]]:
    """(version, value, unit) of every ``ok`` application run of ``application``/``test``, first run first.

    Versions are ordered by their first run (``started_at``, then insertion).
    """
    rows = store.conn.execute(
        "SELECT version, value, unit FROM app_runs WHERE application = ? AND test = ? "
        "AND status = 'ok' ORDER BY COALESCE(started_at, ''), id", (application, test)).fetchall()
    return [(r["version"], float(r["value"]), r["unit"] or "") for r in rows]


def append_revision(store: Store, sid: int, revision: str) -> int:
    """Order of ``revision`` in series ``sid``: its stored one, else one past the last (added as ``pending``)."""
    with store.transaction() as c:
        row = c.execute("SELECT ord FROM history_revisions WHERE series_id = ? AND revision = ?",
                        (sid, revision)).fetchone()
        if row is not None:
            return int(row[0])
        last = c.execute("SELECT MAX(ord) FROM history_revisions WHERE series_id = ?", (sid,)).fetchone()[0]
        o = 0 if last is None else int(last) + 1
        c.execute("INSERT INTO history_revisions(series_id, revision, ord, status) VALUES (?, ?, ?, 'pending')",
                  (sid, revision, o))
        return o


@dataclass(frozen=True)
class MachineRecord:
    """The machine that measured one history revision: host name, fingerprint run (or None) and facts."""

    host: str | None
    fingerprint_run_id: int | None
    facts: dict[str, Any]


def set_revision_machine(store: Store, series_id: int, revision: str, host: str | None,
                         fingerprint_run_id: int | None, facts: Mapping[str, Any]) -> None:
    """Record which machine measured ``revision`` of series ``series_id`` (replacing an earlier record)."""
    with store.transaction() as c:
        row = c.execute("SELECT id FROM history_revisions WHERE series_id = ? AND revision = ?",
                        (series_id, revision)).fetchone()
        if row is None:
            return
        hid = None if host is None else ensure_hosts(c, {host: facts})[host]
        c.execute("DELETE FROM history_revision_machines WHERE revision_id = ?", (int(row[0]),))
        c.execute("INSERT INTO history_revision_machines(revision_id, host_id, fingerprint_run_id, facts_json, "
                  "created_at) VALUES (?, ?, ?, ?, ?)", (int(row[0]), hid, fingerprint_run_id, dumps(dict(facts)),
                                                         utcnow()))


def revision_machines(store: Store, series_id: int) -> dict[str, MachineRecord]:
    """Revision → the machine that measured it, for the revisions of ``series_id`` that have one."""
    rows = store.conn.execute(
        "SELECT r.revision, h.name, m.fingerprint_run_id, m.facts_json FROM history_revision_machines m "
        "JOIN history_revisions r ON r.id = m.revision_id LEFT JOIN hosts h ON h.id = m.host_id "
        "WHERE r.series_id = ?", (series_id,)).fetchall()
    return {str(r[0]): MachineRecord(None if r[1] is None else str(r[1]),
                                     None if r[2] is None else int(r[2]), json.loads(r[3] or "{}"))
            for r in rows}
