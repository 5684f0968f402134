"""``quiho profile``: did performance change between two versions, how much, how sure, and why.

Settings travel as one :class:`ProfileOptions` (what is measured, how it is analysed).
Flow (:func:`run_profile`): fingerprints (reused if young enough) → both versions run
interleaved on every host → metric change per host and across hosts → IRUP per
version and their comparison → root-cause hints from the stressor catalog.
"""

from quiho.profile.flow import (
    REPORT_SCHEMA,
    REPORT_SCHEMA_VERSION,
    HostStatus,
    Measured,
    ProfileData,
    ProfileResult,
    analyse_data,
    analyse_profile,
    find_fingerprint_run,
    host_fingerprints,
    load_profile,
    parse_age,
    run_profile,
    save_profile,
)
from quiho.profile.hints import Hint, root_cause_hints, trace_hints
from quiho.profile.interleave import InterleavedRun, InterleavePlan, RunRecord, run_interleaved, store_label
from quiho.profile.options import AnalysisOptions, MeasureOptions, ProfileOptions
from quiho.profile.project import ProjectFile, load_project, resolve_spec
from quiho.profile.stats import VERDICTS, HostChange, MetricChange, cliffs_delta, metric_change

__all__ = [
    "REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "HostStatus", "Measured", "ProfileData", "ProfileResult",
    "AnalysisOptions", "MeasureOptions", "ProfileOptions", "InterleavePlan", "analyse_data", "analyse_profile",
    "host_fingerprints",
    "find_fingerprint_run", "load_profile", "parse_age", "run_profile", "save_profile", "Hint", "root_cause_hints",
    "trace_hints", "InterleavedRun", "RunRecord", "run_interleaved", "store_label", "ProjectFile", "load_project",
    "resolve_spec", "VERDICTS", "HostChange", "MetricChange", "cliffs_delta", "metric_change",
]
