"""The ``machines`` store component: which machine measured what, and quick fingerprints of the local machine.

A separate component (not a migration of ``history``) so that the history tables stay as they are: a history
point's machine is an optional fact added beside it. Plain portable SQL (no SQLite-only types or clauses).
"""

from __future__ import annotations

from quiho.store._db import register_component

MACHINES_V1 = """
CREATE TABLE machine_fingerprints (
    run_id       INTEGER PRIMARY KEY REFERENCES fingerprint_runs(id) ON DELETE CASCADE,
    host_id      INTEGER NOT NULL REFERENCES hosts(id),
    facts_key    TEXT NOT NULL,
    facts_json   TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX machine_fingerprints_key ON machine_fingerprints(facts_key, created_at);
CREATE TABLE history_revision_machines (
    revision_id         INTEGER PRIMARY KEY REFERENCES history_revisions(id) ON DELETE CASCADE,
    host_id             INTEGER REFERENCES hosts(id),
    fingerprint_run_id  INTEGER REFERENCES fingerprint_runs(id) ON DELETE SET NULL,
    facts_json          TEXT NOT NULL DEFAULT '{}',
    created_at          TEXT NOT NULL
)
"""

register_component("machines", [MACHINES_V1])
