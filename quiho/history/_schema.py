"""The ``history`` store component: series, their revisions (with build status) and measured values."""

from __future__ import annotations

from quiho.store._db import register_component

HISTORY_V1 = """
CREATE TABLE history_series (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    unit          TEXT NOT NULL DEFAULT '',
    source        TEXT NOT NULL,
    config_json   TEXT NOT NULL DEFAULT '{}',
    created_at    TEXT NOT NULL,
    quiho_version TEXT NOT NULL
);
CREATE TABLE history_revisions (
    id           INTEGER PRIMARY KEY,
    series_id    INTEGER NOT NULL REFERENCES history_series(id) ON DELETE CASCADE,
    revision     TEXT NOT NULL,
    ord          INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending','ok','failed')),
    reason       TEXT,
    stderr_tail  TEXT,
    measured_at  TEXT,
    UNIQUE (series_id, revision),
    UNIQUE (series_id, ord)
);
CREATE TABLE history_points (
    id           INTEGER PRIMARY KEY,
    revision_id  INTEGER NOT NULL REFERENCES history_revisions(id) ON DELETE CASCADE,
    repetition   INTEGER NOT NULL,
    value        REAL NOT NULL,
    UNIQUE (revision_id, repetition)
);
"""

# v2: where and under what load each revision was measured (STYLE: machine metadata with every result)
HISTORY_V2 = """
ALTER TABLE history_revisions ADD COLUMN machine_json TEXT NOT NULL DEFAULT '{}'
"""

register_component("history", [HISTORY_V1, HISTORY_V2])
