"""Per-function traces: collectors (bpftrace, SystemTap), raw-output parsers, and the calls table.

Times are nanoseconds throughout. See :mod:`quiho.trace._events` for how entries and exits are matched and
what is counted when they cannot be.
"""

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

__all__ = [
    "CALL_COLUMNS",
    "CallStats",
    "Events",
    "RawTrace",
    "bpftrace_script",
    "events_to_calls",
    "list_functions",
    "parse_events",
    "parse_stap_record",
    "resolve_functions",
    "run_bpftrace",
    "stap_script",
]
