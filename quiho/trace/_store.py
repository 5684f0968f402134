"""Save traced runs: a ``trace_runs`` row in the store and the calls table as Parquet next to the store file.

A stored run is :class:`quiho.store.traces.TraceRun`, the one record of a traced run; this module adds its calls.

The Parquet file carries ``quiho.calls_schema`` (currently 1) and ``quiho.version`` in its metadata; the loader
refuses unknown schema versions with a message saying what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from quiho._version import __version__
from quiho.errors import SchemaVersionError, StoreError, UnknownTargetError, UsageError
from quiho.store import Store
from quiho.store.traces import TraceRun, TraceSource, insert_trace_run, latest_trace_run, trace_run, trace_run_ids
from quiho.trace._events import CALL_COLUMNS, CallStats

__all__ = ["save_trace", "load_trace", "find_trace_run", "parse_app_version", "CALLS_SCHEMA",
           "load_version_calls", "load_trace_profile", "perun_file", "read_calls", "tracer_ns_of"]

CALLS_SCHEMA = 1


def parse_app_version(ref: str) -> tuple[str, str]:
    """Split ``APP@VERSION``."""
    app, sep, ver = ref.partition("@")
    if not sep or not app or not ver:
        raise UsageError(f"expected APP@VERSION, got {ref!r}")
    return app, ver


def save_trace(
    store: Store, application: str, version: str, calls: pd.DataFrame, stats: CallStats, source: TraceSource,
) -> TraceRun:
    """Write the calls to Parquet under ``<store dir>/traces/`` and record the run; returns the stored run.

    The file is named after the store file and the run id (``traces/<store file>-run-<id>.parquet``): run ids
    count per store, so two stores in one directory would otherwise overwrite each other's calls. ``source`` says
    how the run was traced (its ``batch`` ties a run traced by ``quiho profile --trace`` to its profile).
    """
    missing = [c for c in CALL_COLUMNS if c not in calls.columns]
    if missing:
        raise UsageError(f"calls table lacks columns: {', '.join(missing)}")
    tdir = store.files_dir / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(calls[list(CALL_COLUMNS)], preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta.update({b"quiho.calls_schema": str(CALLS_SCHEMA).encode(), b"quiho.version": __version__.encode(),
                 b"quiho.unit": b"ns"})

    def write_calls(run_id: int) -> str:
        rel = f"traces/{store.path.name}-run-{run_id}.parquet"
        try:
            pq.write_table(table.replace_schema_metadata(meta), store.files_dir / rel)
        except OSError as exc:
            raise StoreError(f"cannot write {store.files_dir / rel}: {exc}") from exc
        return rel

    run_id = insert_trace_run(store, application, version, source, tuple(stats.to_dict().values()), write_calls)
    return find_trace_run(store, str(run_id))


def find_trace_run(store: Store, ref: str) -> TraceRun:
    """A stored run by numeric id or ``APP@VERSION`` (the latest such run)."""
    run = trace_run(store, int(ref)) if ref.isdigit() else latest_trace_run(store, *parse_app_version(ref))
    if run is None:
        raise UnknownTargetError(f"no stored trace run {ref!r} in {store}: run 'quiho trace' first")
    return run


def load_trace(store: Store, ref: str) -> tuple[TraceRun, pd.DataFrame]:
    """The run and its calls table."""
    run = find_trace_run(store, ref)
    return run, _read_calls(run)


def load_version_calls(store: Store, ref: str) -> tuple[list[TraceRun], pd.DataFrame]:
    """Every stored run of ``APP@VERSION`` (or the one run of a numeric id), calls concatenated.

    Repeated runs of a version are repetitions: each keeps its own per-function ``order``, so with
    ``x = order`` every call index has one point per run. A ``run`` column tells them apart.
    """
    if ref.isdigit():
        runs = [find_trace_run(store, ref)]
    else:
        app, ver = parse_app_version(ref)
        ids = trace_run_ids(store, app, ver)
        if not ids:
            raise UnknownTargetError(f"no stored trace run {ref!r} in {store}: run 'quiho trace' first")
        runs = [find_trace_run(store, str(i)) for i in ids]
    frames = []
    for r in runs:
        df = _read_calls(r)
        df["run"] = r.id
        frames.append(df)
    calls = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        calls["function"] = calls["function"].astype("category")
    return runs, calls


def perun_file(ref: str) -> Path | None:
    """``ref`` as a Perun profile file, or None when it names a stored run (id or ``APP@VERSION``)."""
    p = Path(ref)
    return p if p.suffix in (".perf", ".json") or p.is_file() else None


def load_trace_profile(store: Store, ref: str, x: str = "order", amount: str = "inclusive_ns") -> Any:
    """The :class:`~quiho.detect.Profile` of a Perun file, a stored run id or ``APP@VERSION`` (its runs pooled)."""
    from quiho.trace._profile import load_perun_profile, profile_from_calls

    if (p := perun_file(ref)) is not None:
        return load_perun_profile(p)
    runs, calls = load_version_calls(store, ref)
    ids = ", ".join(str(r.id) for r in runs)
    label = f"{runs[0].application}@{runs[0].version} (run{'s' if len(runs) > 1 else ''} {ids})"
    return profile_from_calls(calls, x=x, amount=amount, source=label, tracer_ns=tracer_ns_of(runs))


def tracer_ns_of(runs: Sequence[TraceRun]) -> float | None:
    """The median tracer time per call over ``runs`` (None when any of them was traced without measuring it)."""
    got = [r.probe_ns for r in runs]
    return None if not got or any(v is None for v in got) else float(np.median(np.asarray(got, dtype=float)))


def read_calls(run: TraceRun) -> pd.DataFrame:
    """The calls table of one stored run (schema version checked)."""
    return _read_calls(run)


def _read_calls(run: TraceRun) -> pd.DataFrame:
    try:
        table = pq.read_table(run.calls_path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise StoreError(f"cannot read calls of run {run.id} from {run.calls_path}: {exc}") from exc
    meta = table.schema.metadata or {}
    ver = int(meta.get(b"quiho.calls_schema", b"0"))
    if ver != CALLS_SCHEMA:
        raise SchemaVersionError(
            f"{run.calls_path} has calls schema v{ver}; this quiho ({__version__}) reads v{CALLS_SCHEMA}: "
            "upgrade quiho or re-trace"
        )
    return table.to_pandas()


def trace_command(
    store: Store, target: str, command: list[str], *, binary: Path | None = None,
    functions: list[str] | None = None, matching: str | None = None, sample: int = 1, timeout: float = 600.0,
) -> TraceRun:
    """Trace ``command`` locally with bpftrace and store the calls as ``target`` (``APP@VERSION``; root, bpftrace).

    ``binary`` defaults to the command's executable. Raises :class:`~quiho.errors.RunFailed` when bpftrace
    cannot run, :class:`~quiho.errors.UsageError` for unknown functions.
    """
    import shutil

    from quiho.trace._collect import measure_tracer_cost, resolve_functions, run_bpftrace
    from quiho.trace._events import events_to_calls
    from quiho.trace._parse import parse_events

    application, version = parse_app_version(target)
    if not command:
        raise UsageError("give the command to trace after --")
    exe = binary or Path(shutil.which(command[0]) or command[0])
    if not exe.exists():
        raise UsageError(f"binary {exe} not found")
    fns = resolve_functions(exe.resolve(), functions, matching)
    probe_ns = measure_tracer_cost()
    raw = run_bpftrace(command, exe, fns, sample=sample, timeout=timeout)
    calls, stats = events_to_calls(parse_events(raw.text, raw.functions))
    return save_trace(store, application, version, calls, stats,
                      TraceSource(" ".join(command), "bpftrace", tuple(fns), sample, probe_ns=probe_ns))
