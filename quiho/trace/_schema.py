"""The ``trace`` store component: one row per traced run; the calls themselves live in Parquet beside the store."""

from __future__ import annotations

from quiho.store._db import register_component

TRACE_V1 = """
CREATE TABLE trace_runs (
    id                 INTEGER PRIMARY KEY,
    application        TEXT NOT NULL,
    version            TEXT NOT NULL,
    host               TEXT NOT NULL,
    command            TEXT NOT NULL,
    engine             TEXT NOT NULL,
    functions_json     TEXT NOT NULL,
    sample             INTEGER NOT NULL DEFAULT 1,
    calls_path         TEXT NOT NULL,
    unit               TEXT NOT NULL DEFAULT 'ns',
    n_events           INTEGER NOT NULL,
    n_calls            INTEGER NOT NULL,
    unmatched_entries  INTEGER NOT NULL,
    unmatched_exits    INTEGER NOT NULL,
    mismatched         INTEGER NOT NULL,
    bad_lines          INTEGER NOT NULL,
    skipped_records    INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    quiho_version      TEXT NOT NULL
);
CREATE INDEX trace_runs_app ON trace_runs(application, version)
"""

register_component("trace", [TRACE_V1])
