"""Store queries of traced runs: one ``trace_runs`` row per traced run, read as one :class:`TraceRun`.

The calls themselves are Parquet files beside the store (written by :mod:`quiho.trace`); a row's ``calls_path``
is stored relative to the store's files directory (so a copied store keeps working) and read back as a full path.
``APP@VERSION`` lookups see only standalone runs (``quiho trace``); runs a profile traced on the fleet (``batch``
set) belong to that profile, one per host, and are read through :func:`batch_trace_runs` (pooling them across
hosts would mix machines).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quiho._version import __version__
from quiho.store._db import Store, insert_id, utcnow

__all__ = ["TraceRun", "TraceSource", "insert_trace_run", "trace_run", "latest_trace_run", "trace_run_ids",
           "has_trace_run", "batch_trace_runs", "untraced_walls"]

#: ``trace_runs`` columns holding the counters of :class:`quiho.trace.CallStats`, in its field order.
STATS_COLUMNS = ("n_events", "n_calls", "unmatched_entries", "unmatched_exits", "mismatched", "bad_lines",
                 "skipped_records")


@dataclass(frozen=True)
class TraceRun:
    """One stored traced run: ``calls_path`` is where its calls are, ``stats`` in the order of :data:`STATS_COLUMNS`."""

    id: int
    application: str
    version: str
    host: str
    command: str
    engine: str
    functions: tuple[str, ...]
    sample: int
    calls_path: Path
    stats: tuple[int, ...]
    created_at: str
    batch: str | None = None
    wall_s: float | None = None
    probe_ns: float | None = None


@dataclass(frozen=True)
class TraceSource:
    """How a run was traced: its command line, the tracer, the functions, the sampling, where and for what.

    ``host`` None is this machine; ``batch`` names the profile a fleet-traced run belongs to, ``wall_s`` its traced
    wall time, ``probe_ns`` the tracer's own time per traced call on that host (its tracer-cost run).
    """

    command: str
    engine: str
    functions: tuple[str, ...]
    sample: int = 1
    host: str | None = None
    batch: str | None = None
    wall_s: float | None = None
    probe_ns: float | None = None


def insert_trace_run(store: Store, application: str, version: str, source: TraceSource, stats: Sequence[int],
                     write_calls: Callable[[int], str]) -> int:
    """Record a traced run; ``write_calls(run_id)`` writes its calls and returns their path relative to the store.

    One transaction: when ``write_calls`` raises, no row is left behind.
    """
    s = source
    with store.transaction() as conn:
        run_id = insert_id(
            conn, "INSERT INTO trace_runs(application, version, host, command, engine, functions_json, sample, "
            "calls_path, "
            f"{', '.join(STATS_COLUMNS)}, created_at, quiho_version, batch, wall_s, probe_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (application, version, s.host or socket.gethostname(), s.command, s.engine, json.dumps(list(s.functions)),
             s.sample, *stats, utcnow(), __version__, s.batch, s.wall_s, s.probe_ns),
        )
        conn.execute("UPDATE trace_runs SET calls_path = ? WHERE id = ?", (write_calls(run_id), run_id))
    return run_id


def _row(store: Store, r: Any) -> TraceRun:
    return TraceRun(r["id"], r["application"], r["version"], r["host"], r["command"], r["engine"],
                    tuple(json.loads(r["functions_json"])), r["sample"], store.files_dir / r["calls_path"],
                    tuple(int(r[c]) for c in STATS_COLUMNS), r["created_at"], r["batch"], r["wall_s"],
                    r["probe_ns"])


def trace_run(store: Store, run_id: int) -> TraceRun | None:
    """The run with id ``run_id``, or None."""
    row = store.conn.execute("SELECT * FROM trace_runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _row(store, row)


def latest_trace_run(store: Store, application: str, version: str) -> TraceRun | None:
    """The latest run of ``application`` at ``version``, or None."""
    row = store.conn.execute("SELECT * FROM trace_runs WHERE application = ? AND version = ? AND batch IS NULL "
                             "ORDER BY id DESC LIMIT 1", (application, version)).fetchone()
    return None if row is None else _row(store, row)


def trace_run_ids(store: Store, application: str, version: str) -> list[int]:
    """Ids of every run of ``application`` at ``version``, oldest first."""
    return [int(r[0]) for r in store.conn.execute(
        "SELECT id FROM trace_runs WHERE application = ? AND version = ? AND batch IS NULL ORDER BY id",
        (application, version))]


def has_trace_run(store: Store, application: str, version: str) -> bool:
    """Whether any run of ``application`` at ``version`` is stored."""
    return store.conn.execute("SELECT 1 FROM trace_runs WHERE application = ? AND version = ? AND batch IS NULL "
                              "LIMIT 1", (application, version)).fetchone() is not None


def batch_trace_runs(store: Store, application: str, batch: str) -> list[TraceRun]:
    """Every traced run of ``application`` that profile ``batch`` made, oldest first."""
    return [_row(store, r) for r in store.conn.execute(
        "SELECT * FROM trace_runs WHERE application = ? AND batch = ? ORDER BY id", (application, batch))]


def untraced_walls(store: Store, application: str, batch: str) -> list[tuple[str, str, float]]:
    """(host, version, wall seconds) of the successful measured (untraced) runs of profile ``batch``."""
    out = []
    for r in store.conn.execute(
        "SELECT h.name AS host, a.version, a.extra_json FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.status = 'ok' ORDER BY a.id", (batch, application)):
        wall = json.loads(r["extra_json"] or "{}").get("wall_s")
        if isinstance(wall, int | float):
            out.append((str(r["host"]), str(r["version"]), float(wall)))
    return out
