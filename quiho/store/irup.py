"""Store queries behind IRUPs: stored targets, their metric values, fingerprints, and recorded IRUPs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from quiho._version import __version__
from quiho.store._db import Store, dumps, insert_id, utcnow

__all__ = ["target_counts", "fingerprint_values", "app_values", "insert_irup"]

FINGERPRINT_COLUMNS = ["run_id", "batch", "host", "repetition", "stressor", "value"]


def target_counts(store: Store) -> pd.DataFrame:
    """One row per (application, version, test) with ``ok`` runs: runs, hosts, unit."""
    return store.conn.frame(
        "SELECT a.application, a.version, a.test, COUNT(*) AS runs, COUNT(DISTINCT a.host_id) AS hosts, "
        "MIN(a.unit) AS unit FROM app_runs a WHERE a.status = 'ok' GROUP BY a.application, a.version, a.test "
        "ORDER BY a.application, a.version, a.test")


def fingerprint_values(store: Store, run_ids: Sequence[int]) -> pd.DataFrame:
    """Long table of ``ok`` measurements of the given runs: :data:`FINGERPRINT_COLUMNS`."""
    if not run_ids:
        return pd.DataFrame(columns=FINGERPRINT_COLUMNS)
    marks = ",".join("?" * len(run_ids))
    return store.conn.frame(
        "SELECT m.run_id, r.batch, h.name AS host, m.repetition, m.stressor, m.value "
        "FROM measurements m JOIN hosts h ON h.id = m.host_id JOIN fingerprint_runs r ON r.id = m.run_id "
        f"WHERE m.status = 'ok' AND m.run_id IN ({marks})", list(run_ids))


def app_values(store: Store, application: str, version: str, test: str = "", batch: str | None = None) -> pd.DataFrame:
    """``ok`` application runs of a target: batch, run_id, host, repetition, test, value, unit, higher_is_better.

    An empty ``test`` means every test of the application at that version.
    """
    params: list[object] = [application, version]
    q = ("SELECT a.batch, a.fingerprint_run_id AS run_id, h.name AS host, a.repetition, a.test, a.value, a.unit, "
         "a.higher_is_better FROM app_runs a JOIN hosts h ON h.id = a.host_id "
         "WHERE a.status = 'ok' AND a.application = ? AND a.version = ?")
    if test:
        q += " AND a.test = ?"
        params.append(test)
    if batch is not None:
        q += " AND a.batch = ?"
        params.append(batch)
    return store.conn.frame(q, params)


def insert_irup(store: Store, target: str, importance: str, seeds: int, random_state: int,
                params: Mapping[str, Any], result: Mapping[str, Any]) -> int:
    """Record a computed IRUP; returns its id."""
    with store.transaction() as c:
        return insert_id(
            c, "INSERT INTO irups(target, importance, seeds, random_state, params_json, result_json, created_at, "
            "quiho_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (target, importance, seeds, random_state, dumps(params), dumps(result), utcnow(), __version__),
        )
