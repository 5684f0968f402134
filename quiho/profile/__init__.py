"""``quiho profile``: did performance change between two versions, how much, how sure, and why.

Settings travel as one :class:`ProfileOptions` (what is measured, how it is analysed).
Flow (:func:`run_profile`): fingerprints (reused if young enough) → both versions run
interleaved on every host → metric change per host and across hosts → IRUP per
version and their comparison → root-cause hints from the stressor catalog.

Modules by the job a reader comes for: :mod:`~quiho.profile.measurement` (steps 1-2 and the whole
:func:`run_profile`), :mod:`~quiho.profile.analysis` (steps 3-5 on stored runs: :func:`analyse_profile`,
:func:`analyse_data`), :mod:`~quiho.profile.result` (:class:`ProfileResult`, its JSON document, save/load);
beside them the options, interleaved runs, metric statistics, hints, traces and text.
"""

from quiho.profile.analysis import Measured, ProfileData, analyse_data, analyse_profile, host_fingerprints
from quiho.profile.hints import Hint, root_cause_hints, trace_hints
from quiho.profile.interleave import InterleavedRun, InterleavePlan, RunRecord, run_interleaved, store_label
from quiho.profile.measurement import find_fingerprint_run, run_profile
from quiho.profile.options import AnalysisOptions, MeasureOptions, ProfileOptions, parse_age
from quiho.profile.project import ProjectFile, load_project, resolve_spec
from quiho.profile.result import (
    REPORT_SCHEMA,
    REPORT_SCHEMA_VERSION,
    HostStatus,
    ProfileResult,
    load_profile,
    save_profile,
)
from quiho.profile.stats import VERDICTS, HostChange, MetricChange, cliffs_delta, metric_change

__all__ = [
    "REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "HostStatus", "Measured", "ProfileData", "ProfileResult",
    "AnalysisOptions", "MeasureOptions", "ProfileOptions", "InterleavePlan", "analyse_data", "analyse_profile",
    "host_fingerprints",
    "find_fingerprint_run", "load_profile", "parse_age", "run_profile", "save_profile", "Hint", "root_cause_hints",
    "trace_hints", "InterleavedRun", "RunRecord", "run_interleaved", "store_label", "ProjectFile", "load_project",
    "resolve_spec", "VERDICTS", "HostChange", "MetricChange", "cliffs_delta", "metric_change",
]
