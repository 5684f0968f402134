"""Bulk writes of fingerprint runs that arrive whole: imported result files and generated data sets.

Fleet runs, which are written host by host while they happen, live in :mod:`quiho.store.fleet`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from quiho._version import __version__
from quiho.store._db import Connection, Store, dumps, insert_id, utcnow

__all__ = ["ensure_hosts", "insert_complete_run", "insert_ok_measurements", "delete_batches", "write_complete_runs"]

#: (run id, host id, repetition, stressor, value)
MeasurementRow = tuple[int, int, int, str, float]


def ensure_hosts(conn: Connection, facts: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Ids of the named hosts; a new host is created with its facts, a known one is left as it is."""
    now = utcnow()
    ids: dict[str, int] = {}
    for name in sorted(facts):
        conn.execute("INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
                     (name, dumps(dict(facts[name])), now))
        ids[name] = int(conn.execute("SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()[0])
    return ids


def insert_complete_run(conn: Connection, source: str, batch: str, battery: str,
                        params: Mapping[str, Any], started_at: str, finished_at: str) -> int:
    """A ``complete`` fingerprint run; returns its id."""
    return insert_id(
        conn, "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, finished_at, "
        "quiho_version) VALUES (?, ?, ?, 'complete', ?, ?, ?, ?) RETURNING id",
        (source, batch, battery, dumps(dict(params)), started_at, finished_at, __version__),
    )


def insert_ok_measurements(conn: Connection, rows: Iterable[MeasurementRow]) -> None:
    """Successful stress-ng measurements in bogo-ops/s."""
    conn.executemany("INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, "
                     "extra_json) VALUES (?, ?, ?, ?, ?, 'bogo-ops/s', 'ok', '{}')", rows)


def delete_batches(conn: Connection, source: str, batches: Sequence[str]) -> None:
    """Forget the fingerprint and application runs of ``batches`` from ``source`` (a re-import replaces them)."""
    marks = ",".join("?" * len(batches))
    conn.execute(f"DELETE FROM app_runs WHERE source = ? AND batch IN ({marks})", (source, *batches))
    conn.execute(f"DELETE FROM fingerprint_runs WHERE source = ? AND batch IN ({marks})", (source, *batches))


def write_complete_runs(store: Store, source: str, battery: str,
                        runs: Iterable[tuple[str, str, Sequence[tuple[str, int, str, float]]]]) -> list[int]:
    """Write whole fingerprint runs ``(batch, started_at, [(host, repetition, stressor, value), ...])``.

    One transaction; hosts are created as needed. Returns the run ids in the given order.
    """
    runs = list(runs)
    ids = []
    with store.transaction() as c:
        host_ids = ensure_hosts(c, {h: {} for _, _, rows in runs for h, _, _, _ in rows})
        for batch, started, rows in runs:
            rid = insert_complete_run(c, source, batch, battery, {}, started, started)
            ids.append(rid)
            insert_ok_measurements(c, [(rid, host_ids[h], int(rep), s, float(v)) for h, rep, s, v in rows])
    return ids
