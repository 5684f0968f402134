"""Performance histories: change points, bimodal-aware alerts, GP revision sampling.

Detectors are chosen by name from :data:`DETECTORS` (``auto``, ``cusum``,
``binseg``, ``bottomup``, ``gmm``, ``ttest``, ``mannwhitney``); each returns a
:class:`Detection` of typed :class:`ChangePoint` s. :class:`HistoryGP` models a
history over revision order (Brownian kernel by default);
:func:`sample_revisions` and :func:`gp_bisect` choose what to measure, and
:func:`sample_git_history` / :func:`bisect_git_history` do it on a git repository.
:func:`read_results` / :func:`import_results` read the result files of common benchmark
harnesses (:data:`FORMATS`); :func:`verdict_of` and :func:`verdict_markdown` answer the CI
question (does the newest revision regress?) per series, and :func:`run_gate` keeps
every regression as a stored alert until it is fixed, acknowledged or marked invalid.
"""

from quiho.history import _auto, _combo, _cusum, _pelt, _segment, _talos, _window  # noqa: F401  (register)
from quiho.history._alerts import (
    ALERT_STATES,
    OPEN_STATES,
    SPIKE_FILTERS,
    STACK_RULES,
    STACK_VARIANCES,
    GateOptions,
    GateResult,
    alert_lines,
    alert_markdown,
    alert_to_dict,
    list_alerts,
    run_gate,
    set_alert_state,
)
from quiho.history._base import (
    DETECTORS,
    Detector,
    as_history,
    detect,
    location_interval,
    make_detector,
    register_detector,
)
from quiho.history._ci import NewestCheck, SeriesVerdict, check_newest, verdict_lines, verdict_markdown, verdict_of
from quiho.history._formats import (
    FORMATS,
    GZIP_MAGIC,
    ResultFile,
    ResultImport,
    detect_format,
    import_results,
    read_results,
)
from quiho.history._git import (
    GitBench,
    GitBisectReport,
    GitSampleReport,
    WorktreeBench,
    bisect_git_history,
    list_revisions,
    sample_git_history,
)
from quiho.history._gp import KERNELS, HistoryGP, mape
from quiho.history._io import (
    HistoryImport,
    RevisionState,
    import_history_csv,
    import_history_from_runs,
    list_series,
    load_history,
    load_state,
    open_history,
    read_history_csv,
    save_history,
)
from quiho.history._kernels import BrownianKernel
from quiho.history._levels import WITHIN_RULES
from quiho.history._model import ChangePoint, Detection, History
from quiho.history._plot import plot_history
from quiho.history._sampling import (
    BisectPlan,
    BisectResult,
    SamplingPlan,
    SamplingResult,
    gp_bisect,
    plain_bisection_builds,
    sample_revisions,
)

__all__ = [
    "ALERT_STATES",
    "OPEN_STATES",
    "SPIKE_FILTERS",
    "STACK_RULES",
    "STACK_VARIANCES",
    "WITHIN_RULES",
    "GateOptions",
    "GateResult",
    "alert_lines",
    "alert_markdown",
    "alert_to_dict",
    "list_alerts",
    "run_gate",
    "set_alert_state",
    "detect_format",
    "verdict_lines",
    "History",
    "ChangePoint",
    "Detection",
    "Detector",
    "DETECTORS",
    "register_detector",
    "make_detector",
    "detect",
    "location_interval",
    "as_history",
    "BrownianKernel",
    "HistoryGP",
    "KERNELS",
    "mape",
    "SamplingPlan",
    "BisectPlan",
    "SamplingResult",
    "BisectResult",
    "sample_revisions",
    "gp_bisect",
    "plain_bisection_builds",
    "read_history_csv",
    "import_history_csv",
    "import_history_from_runs",
    "save_history",
    "load_history",
    "load_state",
    "list_series",
    "open_history",
    "HistoryImport",
    "RevisionState",
    "plot_history",
    "list_revisions",
    "GitBench",
    "WorktreeBench",
    "sample_git_history",
    "bisect_git_history",
    "GitSampleReport",
    "GitBisectReport",
    "FORMATS",
    "GZIP_MAGIC",
    "ResultFile",
    "ResultImport",
    "read_results",
    "import_results",
    "NewestCheck",
    "SeriesVerdict",
    "check_newest",
    "verdict_of",
    "verdict_markdown",
]
