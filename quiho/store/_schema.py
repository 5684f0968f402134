"""The store's tables, one component per subsystem (see :func:`quiho.store.register_component`).

``core``: hosts, fingerprints, application runs, IRUPs. ``fleet``: per-host statuses of fleet runs. ``profile``: one
row per ``quiho profile``. ``history``: series, their revisions (with build
status) and measured values. ``trace``: one row per traced run; the calls themselves live in Parquet beside
the store. A component may reference the tables of ``core``.
"""

from __future__ import annotations

import sqlalchemy as sa

from quiho.store._db import FLOAT, ID, SCHEMA, TEXT, Tables, register_component


def _id() -> sa.Column:
    return sa.Column("id", ID, primary_key=True)


def _ref(name: str, target: str, *, nullable: bool = False, cascade: bool = False, **kw: object) -> sa.Column:
    fk = sa.ForeignKey(target, ondelete="CASCADE" if cascade else None)
    return sa.Column(name, ID, fk, nullable=nullable, **kw)  # type: ignore[arg-type]


def _text(name: str, *, nullable: bool = False, default: str | None = None, **kw: object) -> sa.Column:
    return sa.Column(name, TEXT, nullable=nullable,
                     server_default=None if default is None else sa.text(f"'{default}'"), **kw)  # type: ignore[arg-type]


def _int(name: str, *, nullable: bool = False, default: int | None = None) -> sa.Column:
    return sa.Column(name, sa.Integer, nullable=nullable,
                     server_default=None if default is None else sa.text(str(default)))


def _float(name: str, *, nullable: bool = True) -> sa.Column:
    return sa.Column(name, FLOAT, nullable=nullable)


HOSTS = sa.Table(
    "hosts", SCHEMA, _id(), _text("name", unique=True), _text("facts_json", default="{}"), _text("created_at"),
)
FINGERPRINT_RUNS = sa.Table(
    "fingerprint_runs", SCHEMA, _id(), _text("source"), _text("batch", nullable=True),
    _text("battery", nullable=True), _text("status"), _ref("duplicate_of", "fingerprint_runs.id", nullable=True),
    _text("params_json", default="{}"), _text("started_at"), _text("finished_at", nullable=True),
    _text("quiho_version"),
    sa.CheckConstraint("status IN ('running','complete','partial','failed')"),
    sa.UniqueConstraint("source", "batch"),
)
MEASUREMENTS = sa.Table(
    "measurements", SCHEMA, _id(), _ref("run_id", "fingerprint_runs.id", cascade=True), _ref("host_id", "hosts.id"),
    _int("repetition"), _text("stressor"), _float("value"), _text("unit", default="bogo-ops/s"), _text("status"),
    _text("reason", nullable=True), _text("extra_json", default="{}"),
    sa.CheckConstraint("status IN ('ok','failed')"),
    sa.UniqueConstraint("run_id", "host_id", "repetition", "stressor"),
    sa.CheckConstraint("status = 'failed' OR value IS NOT NULL"),
    sa.Index("measurements_host", "host_id", "stressor"),
)
APP_RUNS = sa.Table(
    "app_runs", SCHEMA, _id(), _text("source"), _text("batch", nullable=True),
    _ref("fingerprint_run_id", "fingerprint_runs.id", nullable=True), _ref("host_id", "hosts.id"),
    _text("application"), _text("version", default=""), _text("test"), _int("repetition"), _float("value"),
    _text("unit", default=""), _int("higher_is_better", default=0), _text("status"), _text("reason", nullable=True),
    _text("stderr_tail", nullable=True), _text("started_at", nullable=True), _text("extra_json", default="{}"),
    sa.UniqueConstraint("source", "batch", "host_id", "application", "version", "test", "repetition"),
    sa.CheckConstraint("status IN ('ok','failed')"),
    sa.CheckConstraint("status = 'failed' OR value IS NOT NULL"),
    sa.Index("app_runs_target", "application", "test", "version"),
)
IRUPS = sa.Table(
    "irups", SCHEMA, _id(), _text("target"), _text("importance"), _int("seeds"),
    sa.Column("random_state", sa.BigInteger, nullable=False), _text("params_json"), _text("result_json"),
    _text("created_at"), _text("quiho_version"),
)

register_component("core", [Tables(HOSTS, FINGERPRINT_RUNS, MEASUREMENTS, APP_RUNS, IRUPS)])

# --- history ------------------------------------------------------------------------------

HISTORY_SERIES = sa.Table(
    "history_series", SCHEMA, _id(), _text("name", unique=True), _text("unit", default=""), _text("source"),
    _text("config_json", default="{}"), _text("created_at"), _text("quiho_version"),
)
HISTORY_REVISIONS = sa.Table(
    "history_revisions", SCHEMA, _id(), _ref("series_id", "history_series.id", cascade=True), _text("revision"),
    _int("ord"), _text("status"), _text("reason", nullable=True), _text("stderr_tail", nullable=True),
    _text("measured_at", nullable=True),
    sa.CheckConstraint("status IN ('pending','ok','failed')"),
    sa.UniqueConstraint("series_id", "revision"), sa.UniqueConstraint("series_id", "ord"),
)
HISTORY_POINTS = sa.Table(
    "history_points", SCHEMA, _id(), _ref("revision_id", "history_revisions.id", cascade=True), _int("repetition"),
    _float("value", nullable=False), sa.UniqueConstraint("revision_id", "repetition"),
)

# v2: where and under what load each revision was measured (STYLE: machine metadata with every result)
HISTORY_V2 = """
ALTER TABLE history_revisions ADD COLUMN machine_json TEXT NOT NULL DEFAULT '{}'
"""

# v3: what a harness reported of a revision's rounds when it did not save them (min, quartiles, median, max, mean,
# rounds as JSON; NULL when the rounds are the points): the gate reads the minimum and low quantiles of it
HISTORY_V3 = """
ALTER TABLE history_revisions ADD COLUMN summary_json TEXT
"""

register_component("history", [Tables(HISTORY_SERIES, HISTORY_REVISIONS, HISTORY_POINTS), HISTORY_V2, HISTORY_V3])

# --- trace --------------------------------------------------------------------------------

#: The counters of a traced run (64-bit: a long trace has billions of events).
TRACE_COUNTERS = ("n_events", "n_calls", "unmatched_entries", "unmatched_exits", "mismatched", "bad_lines",
                  "skipped_records")
TRACE_RUNS = sa.Table(
    "trace_runs", SCHEMA, _id(), _text("application"), _text("version"), _text("host"), _text("command"),
    _text("engine"), _text("functions_json"), _int("sample", default=1), _text("calls_path"),
    _text("unit", default="ns"), *(sa.Column(c, sa.BigInteger, nullable=False) for c in TRACE_COUNTERS),
    _text("created_at"), _text("quiho_version"),
    sa.Index("trace_runs_app", "application", "version"),
)

# v2: traced runs made by ``quiho profile --trace`` belong to the profile's batch, with their wall time
# (the tracing overhead is traced wall / untraced wall per host)
TRACE_V2 = """
ALTER TABLE trace_runs ADD COLUMN batch TEXT;
ALTER TABLE trace_runs ADD COLUMN wall_s DOUBLE PRECISION;
CREATE INDEX trace_runs_batch ON trace_runs(batch, application)
"""

# v3: the tracer's own time per traced call on the run's host (playbooks/trace.yml's tracer-cost run), so a
# function whose calls are not clearly longer is said to be beyond what the tracer can judge
TRACE_V3 = "ALTER TABLE trace_runs ADD COLUMN probe_ns DOUBLE PRECISION"

register_component("trace", [Tables(TRACE_RUNS), TRACE_V2, TRACE_V3])

# --- fleet ---------------------------------------------------------------------------------
# The ``fleet`` store component: per-host statuses of fleet runs, host groups, fingerprint summaries.
#
# Fingerprint values and application results live in the ``core`` tables
# (``measurements``, ``app_runs``); these tables say how each host's part of a
# fleet run went, so a resume knows what to rerun and ``quiho fleet show`` what to print.

FLEET_HOST_STATUS = sa.Table(
    "fleet_host_status", SCHEMA, _text("kind", primary_key=True), _text("batch", primary_key=True),
    _ref("host_id", "hosts.id", primary_key=True, autoincrement=False), _text("status"),
    _text("reason", nullable=True), _int("attempts", default=1), _text("updated_at"),
    sa.CheckConstraint("kind IN ('fingerprint','app')"),
    sa.CheckConstraint("status IN ('running','ok','partial','failed','unreachable','timeout')"),
)
FLEET_HOSTS = sa.Table(
    "fleet_hosts", SCHEMA, _ref("host_id", "hosts.id", primary_key=True, autoincrement=False), _text("inventory"),
    _text("groups_json", default="[]"), _text("vars_json", default="{}"), _text("updated_at"),
)
FLEET_FINGERPRINT_SUMMARY = sa.Table(
    "fleet_fingerprint_summary", SCHEMA,
    _ref("run_id", "fingerprint_runs.id", cascade=True, primary_key=True, autoincrement=False),
    _ref("host_id", "hosts.id", primary_key=True, autoincrement=False), _text("stressor", primary_key=True),
    _int("n_ok"), _int("n_failed"), _float("median"), _float("cov"), _float("min"), _float("max"),
    _int("unstable", default=0),
)

# v2: the local fleet's calibration (quiho.fleet.local.calibrate): one row per probing, keyed by the machine facts.
FLEET_CALIBRATIONS = sa.Table(
    "fleet_calibrations", SCHEMA, _id(), _text("facts_key"), _text("facts_json"), _text("result_json"),
    _text("inventory"), _float("elapsed_s", nullable=False), _int("schema_version"), _text("created_at"),
    _text("quiho_version"), sa.Index("fleet_calibrations_key", "facts_key"),
)

# v3: the controller machine measuring a fleet fingerprint run: with a shared (PostgreSQL) store the measurement
# lock is per controller, so a controller may only declare its own ``running`` runs dead.
FLEET_V3 = """
ALTER TABLE fingerprint_runs ADD COLUMN controller TEXT
"""

register_component("fleet", [Tables(FLEET_HOST_STATUS, FLEET_HOSTS, FLEET_FINGERPRINT_SUMMARY),
                             Tables(FLEET_CALIBRATIONS), FLEET_V3])

# --- profile -------------------------------------------------------------------------------
# The ``profile`` store component: one row per ``quiho profile`` with its verdict and full result.

PROFILES = sa.Table(
    "profiles", SCHEMA, _id(), _text("batch", unique=True), _text("application"), _text("version_a"),
    _text("version_b"), _text("status"), _text("verdict"), _text("irup_verdict", nullable=True),
    _text("partial_json", default="[]"), _ref("fingerprint_run_id", "fingerprint_runs.id", nullable=True),
    _text("result_json"), _int("schema_version"), _text("created_at"), _text("quiho_version"),
    sa.CheckConstraint("status IN ('complete','partial','failed')"),
    sa.CheckConstraint("verdict IN ('regression','improvement','no-change','inconclusive')"),
    sa.Index("profiles_app", "application", "version_a", "version_b"),
)

register_component("profile", [Tables(PROFILES)])
