"""``quiho profile``: did performance change between two versions, how much, how sure, and why.

Flow (:func:`run_profile`): fingerprints (reused if young enough) → both versions run
interleaved on every host → metric change per host and across hosts → IRUP per
version and their comparison → root-cause hints from the stressor catalog.
"""

from quiho.profile.flow import (
    REPORT_SCHEMA,
    REPORT_SCHEMA_VERSION,
    HostStatus,
    ProfileResult,
    analyse_data,
    analyse_profile,
    find_fingerprint_run,
    load_profile,
    parse_age,
    run_profile,
    save_profile,
)
from quiho.profile.hints import Hint, root_cause_hints, trace_hints
from quiho.profile.interleave import InterleavedRun, RunRecord, run_interleaved, store_label
from quiho.profile.project import ProjectFile, load_project, resolve_spec
from quiho.profile.stats import VERDICTS, HostChange, MetricChange, cliffs_delta, metric_change

__all__ = [
    "REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "HostStatus", "ProfileResult", "analyse_data", "analyse_profile",
    "find_fingerprint_run", "load_profile", "parse_age", "run_profile", "save_profile", "Hint", "root_cause_hints",
    "trace_hints", "InterleavedRun", "RunRecord", "run_interleaved", "store_label", "ProjectFile", "load_project",
    "resolve_spec", "VERDICTS", "HostChange", "MetricChange", "cliffs_delta", "metric_change",
]
