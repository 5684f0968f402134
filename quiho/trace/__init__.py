"""Per-function traces: collectors (bpftrace, SystemTap), raw-output parsers, and the calls table.

Times are nanoseconds throughout. See :mod:`quiho.trace._events` for how entries and exits are matched and
what is counted when they cannot be.
"""

from quiho.store.traces import TraceRun, TraceSource
from quiho.trace._collect import (
    RawTrace,
    bpftrace_script,
    list_functions,
    resolve_functions,
    run_bpftrace,
    stap_script,
)
from quiho.trace._events import CALL_COLUMNS, CallStats, Events, events_to_calls
from quiho.trace._parse import parse_events, parse_stap_record
from quiho.trace._profile import X_MODES, load_perun_profile, profile_from_calls, sliding_window_clusters
from quiho.trace._store import (
    find_trace_run,
    load_trace,
    load_trace_profile,
    load_version_calls,
    parse_app_version,
    perun_file,
    read_calls,
    save_trace,
    trace_command,
    tracer_ns_of,
)

__all__ = [
    "CALL_COLUMNS",
    "CallStats",
    "TraceRun",
    "TraceSource",
    "X_MODES",
    "Events",
    "RawTrace",
    "bpftrace_script",
    "events_to_calls",
    "find_trace_run",
    "load_perun_profile",
    "load_trace",
    "load_trace_profile",
    "load_version_calls",
    "parse_app_version",
    "perun_file",
    "read_calls",
    "profile_from_calls",
    "save_trace",
    "sliding_window_clusters",
    "trace_command",
    "tracer_ns_of",
    "list_functions",
    "parse_events",
    "parse_stap_record",
    "resolve_functions",
    "run_bpftrace",
    "stap_script",
]
