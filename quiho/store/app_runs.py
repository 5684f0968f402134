"""Store queries of application runs: one ``app_runs`` row per host, version, test and repetition.

Fleet runners and profiles write them through :func:`insert_app_runs`, which also records each host's status,
so a resume (:func:`hosts_with_runs`, :func:`visits_with_runs`) sees exactly what was stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from quiho.store._db import Store, dumps
from quiho.store.hosts import host_id, set_host_status

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AppRunRow", "AppRunBatch", "insert_app_runs", "hosts_with_runs", "visits_with_runs", "profile_runs",
           "profile_tests"]


@dataclass(frozen=True)
class AppRunRow:
    """One ``app_runs`` row as the fleet runners produce it."""

    host: str
    version: str
    repetition: int
    status: str
    value: float | None
    reason: str | None
    stderr_tail: str | None
    extra: dict[str, Any]


@dataclass(frozen=True)
class AppRunBatch:
    """What the ``app_runs`` rows of one insert share: where they come from and what they measure."""

    source: str
    batch: str
    fingerprint_run_id: int | None
    application: str
    test: str
    unit: str
    higher_is_better: bool
    started_at: str


def insert_app_runs(
    store: Store,
    head: AppRunBatch,
    rows: Sequence[AppRunRow],
    host_statuses: dict[str, tuple[str, str | None]] | None = None,
) -> None:
    """Insert application runs (and, for ``source='fleet'``, each host's status) in one transaction.

    A row that is already there (same batch, host, version, test, repetition) is kept as it was.
    """
    h = head
    with store.transaction() as conn:
        for r in rows:
            conn.execute(
                "INSERT INTO app_runs(source, batch, fingerprint_run_id, host_id, application, version, test, "
                "repetition, value, unit, higher_is_better, status, reason, stderr_tail, started_at, extra_json) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                (h.source, h.batch, h.fingerprint_run_id, host_id(conn, r.host), h.application, r.version, h.test,
                 r.repetition, r.value, h.unit, int(h.higher_is_better), r.status, r.reason, r.stderr_tail,
                 h.started_at, dumps(r.extra)),
            )
        for host, (st, reason) in (host_statuses or {}).items():
            st = st if st in ("ok", "failed", "unreachable", "timeout") else "failed"
            set_host_status(conn, "app", h.batch, host_id(conn, host), st, reason)


def hosts_with_runs(store: Store, batch: str, application: str) -> set[str]:
    """Hosts that have at least one ``ok`` application run in ``batch`` (what a resume need not rerun)."""
    rows = store.conn.execute(
        "SELECT DISTINCT h.name FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.status = 'ok'", (batch, application),
    ).fetchall()
    return {str(r["name"]) for r in rows}


def visits_with_runs(store: Store, batch: str, application: str) -> set[tuple[str, int]]:
    """(host, round) visits of a blocked design with at least one ``ok`` run in ``batch`` (a resume skips them)."""
    rows = store.conn.execute(
        "SELECT DISTINCT h.name, a.extra_json FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.status = 'ok'", (batch, application),
    ).fetchall()
    return {(str(r["name"]), int(json.loads(r["extra_json"] or "{}").get("round", 0))) for r in rows}


def profile_tests(store: Store) -> dict[str, set[tuple[str, str, str]]]:
    """Profile batch → the (application, version, test) its stored runs are of (the targets it measured)."""
    out: dict[str, set[tuple[str, str, str]]] = {}
    for r in store.conn.execute("SELECT DISTINCT batch, application, version, test FROM app_runs "
                                "WHERE source = 'profile'").fetchall():
        out.setdefault(str(r[0]), set()).add((str(r[1]), str(r[2]), str(r[3])))
    return out


def profile_runs(store: Store, application: str, labels: tuple[str, str], batch: str) -> pd.DataFrame:
    """The runs of one profile batch: host, version, repetition, status, value, unit, ..., ``order``, ``round``."""
    q = (
        "SELECT h.name AS host, a.version, a.repetition, a.status, a.value, a.unit, a.higher_is_better, a.reason, "
        "a.fingerprint_run_id, a.extra_json FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.version IN (?, ?) ORDER BY h.name, a.id"
    )
    df = store.conn.frame(q, [batch, application, *labels])
    extra = [json.loads(x or "{}") for x in df.pop("extra_json")]
    df["order"] = [e.get("order") for e in extra]
    df["round"] = [e.get("round", 0) for e in extra]  # measurement round of a blocked design (0: one visit)
    return df
