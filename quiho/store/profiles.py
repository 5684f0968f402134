"""Store queries of profiles: one ``profiles`` row per ``quiho profile`` batch, its verdicts and its whole document.

The verdict columns are copies of the document's, so listing profiles never parses their JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from quiho.store._db import Store, dumps, insert_id, utcnow

__all__ = ["ProfileRow", "save_profile_row", "profile_row", "list_profiles"]


@dataclass(frozen=True)
class ProfileRow:
    """One ``profiles`` row: a profile's identity, its verdicts and its whole JSON document."""

    batch: str
    application: str
    version_a: str
    version_b: str
    status: str
    verdict: str
    irup_verdict: str
    partial: list[str]
    fingerprint_run_id: int | None
    document: dict[str, Any]
    schema_version: int
    quiho_version: str


def save_profile_row(store: Store, row: ProfileRow) -> int:
    """Insert (or replace, same batch) one ``profiles`` row; return its id."""
    r = row
    with store.transaction() as c:
        pid = insert_id(
            c, "INSERT INTO profiles(batch, application, version_a, version_b, status, verdict, irup_verdict, "
            "partial_json, fingerprint_run_id, result_json, schema_version, created_at, quiho_version) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(batch) DO UPDATE SET status=excluded.status, "
            "verdict=excluded.verdict, irup_verdict=excluded.irup_verdict, partial_json=excluded.partial_json, "
            "result_json=excluded.result_json, created_at=excluded.created_at RETURNING id",
            (r.batch, r.application, r.version_a, r.version_b, r.status, r.verdict, r.irup_verdict, dumps(r.partial),
             r.fingerprint_run_id, dumps(r.document), r.schema_version, utcnow(), r.quiho_version),
        )
    return pid


def profile_row(store: Store, batch: str) -> dict[str, Any] | None:
    """``result_json`` and ``schema_version`` of profile ``batch``, or None."""
    row = store.conn.execute("SELECT result_json, schema_version FROM profiles WHERE batch = ?", (batch,)).fetchone()
    return dict(row) if row else None


def list_profiles(store: Store) -> list[dict[str, Any]]:
    """Every stored profile's identity and verdicts, newest first (its document: :func:`profile_row`).

    Keys: batch, application, version_a, version_b, status, verdict, irup_verdict, created_at, schema_version.
    """
    rows = store.conn.execute(
        "SELECT batch, application, version_a, version_b, status, verdict, irup_verdict, created_at, schema_version "
        "FROM profiles ORDER BY created_at DESC, id DESC").fetchall()
    return [dict(r) for r in rows]
