"""Store queries of the ``machines`` component: host fingerprints, quick local fingerprints, history machines.

A fingerprint is read as the long table ``(repetition, stressor, value)`` of one host in one fingerprint run.
A quick local fingerprint is a fingerprint run of source ``quick-local`` plus one ``machine_fingerprints`` row
keyed by the machine's facts, so a later call on the same machine state reuses it. A history revision's machine
is one ``history_revision_machines`` row (host, fingerprint run, facts) beside the revision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from quiho._version import __version__
from quiho.store._db import Store, dumps, utcnow

__all__ = ["LOCAL_SOURCE", "MachineRecord", "StoredFingerprint", "host_fingerprint", "fingerprinted_hosts",
           "reusable_local_fingerprint", "write_local_fingerprint", "fingerprint_by_id", "set_revision_machine",
           "revision_machines", "host_names_like"]

#: ``fingerprint_runs.source`` of a quick fingerprint of the machine quiho runs on.
LOCAL_SOURCE = "quick-local"


@dataclass(frozen=True)
class StoredFingerprint:
    """One host's measurements in one fingerprint run: ``values`` has columns repetition, stressor, value, status."""

    run_id: int
    host: str
    batch: str
    created_at: str
    values: pd.DataFrame

    def medians(self) -> pd.Series:
        """Median bogo-ops/s per stressor over the ok repetitions (stressors with no ok value are absent)."""
        ok = self.values[self.values["status"] == "ok"]
        return ok.groupby("stressor")["value"].median().astype(float)

    def failed(self) -> list[str]:
        """Stressors with no ok repetition in this run."""
        st = self.values.groupby("stressor")["status"].apply(lambda s: bool((s == "ok").any()))
        return sorted(str(k) for k, ok in st.items() if not ok)


@dataclass(frozen=True)
class MachineRecord:
    """The machine that measured one history revision: host name, fingerprint run (or None) and facts."""

    host: str | None
    fingerprint_run_id: int | None
    facts: dict[str, Any]


def _values(store: Store, run_id: int, host_id: int) -> pd.DataFrame:
    return pd.read_sql_query(
        "SELECT repetition, stressor, value, status FROM measurements WHERE run_id = ? AND host_id = ? "
        "ORDER BY stressor, repetition", store.conn, params=[run_id, host_id])


def host_fingerprint(store: Store, host: str, batch: str | None = None) -> StoredFingerprint | None:
    """The newest fingerprint of ``host`` (in ``batch`` if given), or None when it has none."""
    q = ("SELECT r.id, r.batch, COALESCE(r.finished_at, r.started_at) AS t, h.id AS hid FROM fingerprint_runs r "
         "JOIN measurements m ON m.run_id = r.id JOIN hosts h ON h.id = m.host_id WHERE h.name = ?")
    params: list[object] = [host]
    if batch is not None:
        q += " AND r.batch = ?"
        params.append(batch)
    row = store.conn.execute(q + " GROUP BY r.id, h.id ORDER BY t DESC, r.id DESC LIMIT 1", params).fetchone()
    if row is None:
        return None
    return StoredFingerprint(int(row["id"]), host, str(row["batch"]), str(row["t"] or ""),
                             _values(store, int(row["id"]), int(row["hid"])))


def fingerprint_by_id(store: Store, run_id: int, host: str | None = None) -> StoredFingerprint | None:
    """Host ``host``'s part of fingerprint run ``run_id`` (None: its only or first host, as in a quick local run)."""
    q = ("SELECT r.batch, COALESCE(r.finished_at, r.started_at) AS t, h.id AS hid, h.name FROM fingerprint_runs r "
         "JOIN measurements m ON m.run_id = r.id JOIN hosts h ON h.id = m.host_id WHERE r.id = ?")
    params: list[object] = [run_id]
    if host is not None:
        q += " AND h.name = ?"
        params.append(host)
    row = store.conn.execute(q + " ORDER BY h.name LIMIT 1", params).fetchone()
    if row is None:
        return None
    return StoredFingerprint(run_id, str(row["name"]), str(row["batch"]), str(row["t"] or ""),
                             _values(store, run_id, int(row["hid"])))


def fingerprinted_hosts(store: Store, batch: str | None = None) -> list[str]:
    """Names of the hosts with at least one ok measurement (in ``batch`` if given), sorted."""
    q = ("SELECT DISTINCT h.name FROM hosts h JOIN measurements m ON m.host_id = h.id "
         "JOIN fingerprint_runs r ON r.id = m.run_id WHERE m.status = 'ok'")
    params: list[object] = []
    if batch is not None:
        q += " AND r.batch = ?"
        params.append(batch)
    return [str(r[0]) for r in store.conn.execute(q + " ORDER BY h.name", params)]


def host_names_like(store: Store, text: str, limit: int = 8) -> list[str]:
    """Up to ``limit`` host names containing ``text`` (for 'did you mean' messages)."""
    return [str(r[0]) for r in store.conn.execute(
        "SELECT name FROM hosts WHERE name LIKE '%' || ? || '%' ORDER BY name LIMIT ?", (text, limit))]


def reusable_local_fingerprint(store: Store, facts_key: str, max_age_s: float) -> tuple[int, float] | None:
    """(run id, age in seconds) of the newest quick fingerprint of this machine state younger than ``max_age_s``."""
    row = store.conn.execute(
        "SELECT run_id, created_at FROM machine_fingerprints WHERE facts_key = ? ORDER BY created_at DESC, "
        "run_id DESC LIMIT 1", (facts_key,)).fetchone()
    if row is None:
        return None
    age = (datetime.now(UTC) - datetime.fromisoformat(row["created_at"])).total_seconds()
    return (int(row["run_id"]), age) if age <= max_age_s else None


def write_local_fingerprint(store: Store, host: str, facts: Mapping[str, Any], facts_key: str,
                            params: Mapping[str, Any],
                            rows: Sequence[tuple[int, str, float | None, str, str | None]]) -> int:
    """Store one quick local fingerprint ``rows = (repetition, stressor, value, status, reason)``; its run id.

    One transaction: the host (created with its facts if new), a ``complete`` run (``partial`` when a stressor
    failed), the measurements and the ``machine_fingerprints`` row that lets the next call reuse it.
    """
    now = utcnow()
    status = "partial" if any(r[3] != "ok" for r in rows) else "complete"
    with store.transaction() as c:
        c.execute("INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
                  (host, dumps(dict(facts)), now))
        hid = int(c.execute("SELECT id FROM hosts WHERE name = ?", (host,)).fetchone()[0])
        batch = f"{LOCAL_SOURCE}-{facts_key[:12]}-{now}"
        cur = c.execute(
            "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, finished_at, "
            "quiho_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (LOCAL_SOURCE, batch, str(params.get("battery", "")), status, dumps(dict(params)), now, now, __version__))
        run_id = int(cur.lastrowid or 0)
        c.executemany("INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                      "extra_json) VALUES (?, ?, ?, ?, ?, 'bogo-ops/s', ?, ?, '{}')",
                      [(run_id, hid, rep, s, v, st, why) for rep, s, v, st, why in rows])
        c.execute("INSERT INTO machine_fingerprints(run_id, host_id, facts_key, facts_json, created_at) "
                  "VALUES (?, ?, ?, ?, ?)", (run_id, hid, facts_key, dumps(dict(facts)), now))
    return run_id


def set_revision_machine(store: Store, series_id: int, revision: str, host: str | None,
                         fingerprint_run_id: int | None, facts: Mapping[str, Any]) -> None:
    """Record which machine measured ``revision`` of series ``series_id`` (replacing an earlier record)."""
    with store.transaction() as c:
        row = c.execute("SELECT id FROM history_revisions WHERE series_id = ? AND revision = ?",
                        (series_id, revision)).fetchone()
        if row is None:
            return
        hid = None
        if host is not None:
            c.execute("INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
                      (host, dumps(dict(facts)), utcnow()))
            hid = int(c.execute("SELECT id FROM hosts WHERE name = ?", (host,)).fetchone()[0])
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
