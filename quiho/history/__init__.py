"""Performance histories: change points, the CI gate with stored alerts, GP revision sampling.

A :class:`History` is one metric measured at ordered revisions; the package is split into wings by the job a
reader comes for, each with its own public face (``__all__``):

``quiho.history.detectors``
    Change-point detectors chosen by name from :data:`DETECTORS` (one per file); :func:`detect` returns a
    :class:`Detection` of typed :class:`ChangePoint` s. ``detectors.metrics`` scores them against truth.
``quiho.history.sources``
    Where histories come from: result files of benchmark harnesses (:func:`read_results`, :data:`FORMATS`), CSV
    and quiho runs, the store (:func:`save_history`, :func:`load_history`), and a git repository measured in
    worktrees (:func:`sample_git_history`, :func:`bisect_git_history`).
``quiho.history.sampling``
    Which revisions to measure: :class:`HistoryGP` over revision order, :func:`sample_revisions`,
    :func:`gp_bisect`.
``quiho.history.gate``
    The CI question (does the newest revision regress?): :func:`check_newest`, :func:`verdict_of`, and
    :func:`run_gate`, which keeps every regression as a stored alert until it is fixed, acknowledged or marked
    invalid.
``quiho.history.normalise``
    Hardware-normalised detection for histories measured on rotating machines.

The data model (:class:`History`, :class:`ChangePoint`, :class:`Detection`) and :func:`plot_history` sit at the
top, shared by the wings. This face re-exports what a user of one workflow needs; the rest is on the wings' faces.
"""

from quiho.history._model import ChangePoint, Detection, History
from quiho.history._plot import plot_history
from quiho.history.detectors import DETECTORS, Detector, detect, location_interval, make_detector, register_detector
from quiho.history.gate import (
    GateOptions,
    NewestCheck,
    SeriesVerdict,
    check_newest,
    list_alerts,
    run_gate,
    set_alert_state,
    verdict_of,
)
from quiho.history.sampling import KERNELS, BisectPlan, HistoryGP, SamplingPlan, gp_bisect, sample_revisions
from quiho.history.sources import (
    FORMATS,
    GitBench,
    bisect_git_history,
    import_history_csv,
    import_history_from_runs,
    import_results,
    list_series,
    load_history,
    load_state,
    open_history,
    read_history_csv,
    read_results,
    sample_git_history,
    save_history,
)

__all__ = [
    # the data model
    "History",
    "ChangePoint",
    "Detection",
    # detectors
    "DETECTORS",
    "Detector",
    "register_detector",
    "make_detector",
    "detect",
    "location_interval",
    # reading and importing: harness result files, CSV, quiho runs
    "FORMATS",
    "read_results",
    "read_history_csv",
    "import_results",
    "import_history_csv",
    "import_history_from_runs",
    # the store
    "list_series",
    "load_history",
    "load_state",
    "open_history",
    "save_history",
    # measuring a git repository
    "GitBench",
    "sample_git_history",
    "bisect_git_history",
    # sampling
    "HistoryGP",
    "KERNELS",
    "SamplingPlan",
    "BisectPlan",
    "sample_revisions",
    "gp_bisect",
    # the CI gate
    "check_newest",
    "NewestCheck",
    "verdict_of",
    "SeriesVerdict",
    "GateOptions",
    "run_gate",
    "list_alerts",
    "set_alert_state",
    # pictures
    "plot_history",
]
