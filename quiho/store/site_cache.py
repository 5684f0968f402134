"""Store queries of the ``site_cache`` component: what ``quiho publish`` computed, kept under a hash of its input.

A published site shows an IRUP per target; computing one takes about a second, so a republish of an unchanged
store would spend minutes on answers it already has. Each result is stored under the SHA-256 of everything it was
computed from (the target's runs, the fingerprints they pair with, the model options, the quiho version); a changed
input has a new key, so a stale result can never be read back. The inputs are read here too, as the rows the
publish hashes (a read of ``app_runs``, ``measurements`` and the history tables for the site's own answer).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from quiho._version import __version__
from quiho.store._db import SCHEMA, TEXT, Store, Tables, register_component, utcnow

__all__ = ["SITE_RESULTS", "cached_results", "save_results", "prune_results", "target_inputs", "fingerprint_inputs",
           "fingerprint_sources", "series_digests"]

#: One row per computed answer; ``kind`` says what it is (``irup``), ``subject`` what it is about (a target).
SITE_RESULTS = sa.Table(
    "site_results", SCHEMA,
    sa.Column("input_key", TEXT, primary_key=True),
    *(sa.Column(n, TEXT, nullable=False) for n in ("kind", "subject", "result_json", "created_at", "quiho_version")),
    sa.Index("site_results_subject", "kind", "subject"),
)

register_component("site_cache", [Tables(SITE_RESULTS)])


def cached_results(store: Store, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Input key → stored result document, for the keys the store holds."""
    out: dict[str, dict[str, Any]] = {}
    for i in range(0, len(keys), 500):  # bounded IN lists on both backends
        chunk = list(keys[i:i + 500])
        marks = ",".join("?" * len(chunk))
        for r in store.conn.execute(f"SELECT input_key, result_json FROM site_results WHERE input_key IN ({marks})",
                                    chunk).fetchall():
            out[str(r[0])] = json.loads(r[1])
    return out


def save_results(store: Store, kind: str, results: Mapping[str, tuple[str, Mapping[str, Any]]]) -> None:
    """Store ``input key → (subject, document)`` in one transaction; earlier results of those subjects are dropped.

    Only the newest answer per subject is worth keeping: an older key can only come back if the input reverts.
    """
    if not results:
        return
    now = utcnow()
    with store.transaction() as c:
        for key, (subject, _doc) in results.items():
            c.execute("DELETE FROM site_results WHERE kind = ? AND subject = ? AND input_key <> ?",
                      (kind, subject, key))
        c.executemany(
            "INSERT INTO site_results(input_key, kind, subject, result_json, created_at, quiho_version) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(input_key) DO UPDATE SET result_json = excluded.result_json, "
            "created_at = excluded.created_at, quiho_version = excluded.quiho_version",
            [(key, kind, subject, json.dumps(doc, sort_keys=True, default=str), now, __version__)
             for key, (subject, doc) in results.items()])


def prune_results(store: Store, kind: str, subjects: Collection[str]) -> int:
    """Drop the results of ``kind`` whose subject is not in ``subjects`` (gone from the store); how many.

    ``save_results`` keeps one result per subject; this removes the subjects themselves once a publish has seen
    every subject of the kind (a deleted series or target, an import removed), so the table stays the size of
    the store's current answers.
    """
    keep = set(subjects)
    gone = [str(r[0]) for r in store.conn.execute("SELECT DISTINCT subject FROM site_results WHERE kind = ?",
                                                  (kind,)).fetchall() if str(r[0]) not in keep]
    if not gone:
        return 0
    n = 0
    with store.transaction() as c:
        for i in range(0, len(gone), 500):  # bounded IN lists on both backends
            chunk = gone[i:i + 500]
            n += c.execute(f"DELETE FROM site_results WHERE kind = ? AND subject IN ({','.join('?' * len(chunk))})",
                           (kind, *chunk)).rowcount
    return n


def target_inputs(store: Store) -> pd.DataFrame:
    """Every ``ok`` application run with what an IRUP reads of it (one query for all targets)."""
    return store.conn.frame(
        "SELECT application, version, test, batch, fingerprint_run_id, host_id, repetition, value, unit, "
        "higher_is_better FROM app_runs WHERE status = 'ok'")


def fingerprint_inputs(store: Store, run_ids: Sequence[int]) -> pd.DataFrame:
    """The ``ok`` measurements of the given fingerprint runs: run_id, host_id, repetition, stressor, value."""
    cols = ["run_id", "host_id", "repetition", "stressor", "value"]
    if not run_ids:
        return pd.DataFrame(columns=cols)
    parts = []
    ids = sorted(set(int(r) for r in run_ids))
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        parts.append(store.conn.frame(
            f"SELECT {', '.join(cols)} FROM measurements WHERE status = 'ok' AND run_id IN "
            f"({','.join('?' * len(chunk))})", chunk))
    return pd.concat(parts, ignore_index=True)


def series_digests(store: Store) -> dict[str, tuple[object, ...]]:
    """Series name → a digest of its stored rows: counts, sums and largest ids of its revisions and points.

    Two aggregate queries for every series at once (reading each of 300,000 points would take seconds). A change
    that keeps every count, sum, sum of squares and id alike is not seen; appending, measuring, failing, editing a
    value or replacing a series is.
    """
    rev = {str(r[0]): tuple(r[1:]) for r in store.conn.execute(
        "SELECT s.name, s.id, s.unit, s.source, s.config_json, COUNT(r.id), MAX(r.id), SUM(r.ord), "
        "SUM(CASE r.status WHEN 'ok' THEN 1 WHEN 'failed' THEN 1000003 ELSE 7 END * (r.ord + 1)), "
        "SUM(LENGTH(COALESCE(r.reason, ''))), SUM(LENGTH(COALESCE(r.summary_json, ''))), "
        "SUM(LENGTH(r.revision)) FROM history_series s LEFT JOIN history_revisions r ON r.series_id = s.id "
        "GROUP BY s.id, s.name, s.unit, s.source, s.config_json").fetchall()}
    pts = {str(r[0]): tuple(r[1:]) for r in store.conn.execute(
        "SELECT s.name, COUNT(p.id), MAX(p.id), SUM(p.value), SUM(p.value * p.value), "
        "SUM(p.value * (r.ord + 1)), SUM(p.value * (p.repetition + 1)) FROM history_series s "
        "JOIN history_revisions r ON r.series_id = s.id JOIN history_points p ON p.revision_id = r.id "
        "GROUP BY s.id, s.name").fetchall()}
    return {name: (*r, *pts.get(name, ())) for name, r in rev.items()}


def fingerprint_sources(store: Store) -> list[str]:
    """Every ``fingerprint_runs.source`` the store holds (``fleet``, an import, quick local runs), sorted."""
    return [str(r[0]) for r in store.conn.execute(
        "SELECT DISTINCT source FROM fingerprint_runs ORDER BY source").fetchall()]
