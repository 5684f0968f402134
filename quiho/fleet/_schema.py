"""The ``fleet`` store component: per-host statuses of fleet runs, host groups, fingerprint summaries.

Fingerprint values and application results live in the ``core`` tables
(``measurements``, ``app_runs``); these tables say how each host's part of a
fleet run went, so a resume knows what to rerun and ``quiho fleet show`` what to print.
"""

from __future__ import annotations

from quiho.store._db import register_component

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

register_component("fleet", [FLEET_V1])
