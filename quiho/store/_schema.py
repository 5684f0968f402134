"""The ``core`` component: hosts, fingerprints, application runs, IRUPs.

Other subsystems register their own components next to this one (see
:func:`quiho.store.register_component`); they may reference these tables.
"""

from __future__ import annotations

from quiho.store._db import register_component

CORE_V1 = """
CREATE TABLE hosts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    facts_json  TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL
);
CREATE TABLE fingerprint_runs (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,
    batch         TEXT,
    battery       TEXT,
    status        TEXT NOT NULL CHECK (status IN ('running','complete','partial','failed')),
    duplicate_of  INTEGER REFERENCES fingerprint_runs(id),
    params_json   TEXT NOT NULL DEFAULT '{}',
    started_at    TEXT NOT NULL,
    finished_at   TEXT,
    quiho_version TEXT NOT NULL,
    UNIQUE (source, batch)
);
CREATE TABLE measurements (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES fingerprint_runs(id) ON DELETE CASCADE,
    host_id     INTEGER NOT NULL REFERENCES hosts(id),
    repetition  INTEGER NOT NULL,
    stressor    TEXT NOT NULL,
    value       REAL,
    unit        TEXT NOT NULL DEFAULT 'bogo-ops/s',
    status      TEXT NOT NULL CHECK (status IN ('ok','failed')),
    reason      TEXT,
    extra_json  TEXT NOT NULL DEFAULT '{}',
    UNIQUE (run_id, host_id, repetition, stressor),
    CHECK (status = 'failed' OR value IS NOT NULL)
);
CREATE INDEX measurements_host ON measurements(host_id, stressor);
CREATE TABLE app_runs (
    id                  INTEGER PRIMARY KEY,
    source              TEXT NOT NULL,
    batch               TEXT,
    fingerprint_run_id  INTEGER REFERENCES fingerprint_runs(id),
    host_id             INTEGER NOT NULL REFERENCES hosts(id),
    application         TEXT NOT NULL,
    version             TEXT NOT NULL DEFAULT '',
    test                TEXT NOT NULL,
    repetition          INTEGER NOT NULL,
    value               REAL,
    unit                TEXT NOT NULL DEFAULT '',
    higher_is_better    INTEGER NOT NULL DEFAULT 0,
    status              TEXT NOT NULL CHECK (status IN ('ok','failed')),
    reason              TEXT,
    stderr_tail         TEXT,
    started_at          TEXT,
    extra_json          TEXT NOT NULL DEFAULT '{}',
    UNIQUE (source, batch, host_id, application, version, test, repetition),
    CHECK (status = 'failed' OR value IS NOT NULL)
);
CREATE INDEX app_runs_target ON app_runs(application, test, version);
CREATE TABLE irups (
    id            INTEGER PRIMARY KEY,
    target        TEXT NOT NULL,
    importance    TEXT NOT NULL,
    seeds         INTEGER NOT NULL,
    random_state  INTEGER NOT NULL,
    params_json   TEXT NOT NULL,
    result_json   TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    quiho_version TEXT NOT NULL
);
"""

register_component("core", [CORE_V1])
