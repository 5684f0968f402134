"""The ``profile`` store component: one row per ``quiho profile`` with its verdict and full result."""

from __future__ import annotations

from quiho.store._db import register_component

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
