"""The store's tables, one component per subsystem (see :func:`quiho.store.register_component`).

``core``: hosts, fingerprints, application runs, IRUPs. ``fleet``: per-host statuses of fleet runs. ``profile``: one
row per ``quiho profile``. ``history``: series, their revisions (with build
status) and measured values. ``trace``: one row per traced run; the calls themselves live in Parquet beside
the store. A component may reference the tables of ``core``.
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

# --- history ------------------------------------------------------------------------------

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

# --- trace --------------------------------------------------------------------------------

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

# v2: traced runs made by ``quiho profile --trace`` belong to the profile's batch, with their wall time
# (the tracing overhead is traced wall / untraced wall per host)
TRACE_V2 = """
ALTER TABLE trace_runs ADD COLUMN batch TEXT;
ALTER TABLE trace_runs ADD COLUMN wall_s REAL;
CREATE INDEX trace_runs_batch ON trace_runs(batch, application)
"""

register_component("trace", [TRACE_V1, TRACE_V2])

# --- fleet ---------------------------------------------------------------------------------
# The ``fleet`` store component: per-host statuses of fleet runs, host groups, fingerprint summaries.
#
# Fingerprint values and application results live in the ``core`` tables
# (``measurements``, ``app_runs``); these tables say how each host's part of a
# fleet run went, so a resume knows what to rerun and ``quiho fleet show`` what to print.

FLEET_V1 = """
CREATE TABLE fleet_host_status (
    kind        TEXT NOT NULL CHECK (kind IN ('fingerprint','app')),
    batch       TEXT NOT NULL,
    host_id     INTEGER NOT NULL REFERENCES hosts(id),
    status      TEXT NOT NULL CHECK (status IN ('running','ok','partial','failed','unreachable','timeout')),
    reason      TEXT,
    attempts    INTEGER NOT NULL DEFAULT 1,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (kind, batch, host_id)
);
CREATE TABLE fleet_hosts (
    host_id     INTEGER PRIMARY KEY REFERENCES hosts(id),
    inventory   TEXT NOT NULL,
    groups_json TEXT NOT NULL DEFAULT '[]',
    vars_json   TEXT NOT NULL DEFAULT '{}',
    updated_at  TEXT NOT NULL
);
CREATE TABLE fleet_fingerprint_summary (
    run_id      INTEGER NOT NULL REFERENCES fingerprint_runs(id) ON DELETE CASCADE,
    host_id     INTEGER NOT NULL REFERENCES hosts(id),
    stressor    TEXT NOT NULL,
    n_ok        INTEGER NOT NULL,
    n_failed    INTEGER NOT NULL,
    median      REAL,
    cov         REAL,
    min         REAL,
    max         REAL,
    unstable    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, host_id, stressor)
);
"""

# v2: the local fleet's calibration (quiho.fleet.local.calibrate): one row per probing, keyed by the machine facts.
FLEET_V2 = """
CREATE TABLE fleet_calibrations (
    id             INTEGER PRIMARY KEY,
    facts_key      TEXT NOT NULL,
    facts_json     TEXT NOT NULL,
    result_json    TEXT NOT NULL,
    inventory      TEXT NOT NULL,
    elapsed_s      REAL NOT NULL,
    schema_version INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    quiho_version  TEXT NOT NULL
);
CREATE INDEX fleet_calibrations_key ON fleet_calibrations(facts_key)
"""

register_component("fleet", [FLEET_V1, FLEET_V2])

# --- profile -------------------------------------------------------------------------------
# The ``profile`` store component: one row per ``quiho profile`` with its verdict and full result.

PROFILE_V1 = """
CREATE TABLE profiles (
    id                  INTEGER PRIMARY KEY,
    batch               TEXT NOT NULL UNIQUE,
    application         TEXT NOT NULL,
    version_a           TEXT NOT NULL,
    version_b           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('complete','partial','failed')),
    verdict             TEXT NOT NULL CHECK (verdict IN ('regression','improvement','no-change','inconclusive')),
    irup_verdict        TEXT,
    partial_json        TEXT NOT NULL DEFAULT '[]',
    fingerprint_run_id  INTEGER REFERENCES fingerprint_runs(id),
    result_json         TEXT NOT NULL,
    schema_version      INTEGER NOT NULL,
    created_at          TEXT NOT NULL,
    quiho_version       TEXT NOT NULL
);
CREATE INDEX profiles_app ON profiles(application, version_a, version_b)
"""

register_component("profile", [PROFILE_V1])
