"""The ``machines`` store component: which machine measured what, and quick fingerprints of the local machine.

A separate component (not a migration of ``history``) so that the history tables stay as they are: a history
point's machine is an optional fact added beside it. Declared as SQLAlchemy tables, so the same schema is made on
SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlalchemy as sa

from quiho.store._db import ID, SCHEMA, TEXT, Tables, register_component

MACHINE_FINGERPRINTS = sa.Table(
    "machine_fingerprints", SCHEMA,
    sa.Column("run_id", ID, sa.ForeignKey("fingerprint_runs.id", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("host_id", ID, sa.ForeignKey("hosts.id"), nullable=False),
    sa.Column("facts_key", TEXT, nullable=False), sa.Column("facts_json", TEXT, nullable=False),
    sa.Column("created_at", TEXT, nullable=False),
    sa.Index("machine_fingerprints_key", "facts_key", "created_at"),
)
HISTORY_REVISION_MACHINES = sa.Table(
    "history_revision_machines", SCHEMA,
    sa.Column("revision_id", ID, sa.ForeignKey("history_revisions.id", ondelete="CASCADE"), primary_key=True,
              autoincrement=False),
    sa.Column("host_id", ID, sa.ForeignKey("hosts.id")),
    sa.Column("fingerprint_run_id", ID, sa.ForeignKey("fingerprint_runs.id", ondelete="SET NULL")),
    sa.Column("facts_json", TEXT, nullable=False, server_default=sa.text("'{}'")),
    sa.Column("created_at", TEXT, nullable=False),
)

register_component("machines", [Tables(MACHINE_FINGERPRINTS, HISTORY_REVISION_MACHINES)])
