"""Where histories come from: result files, CSV, quiho runs and a git repository, kept in the store.

``_formats`` reads the result files of common benchmark harnesses (:data:`FORMATS`, recognised by content);
``_io`` reads CSV and quiho runs and saves and loads series in the store; ``_git`` builds and measures
revisions of a git repository in throw-away worktrees, with :mod:`quiho.history.sampling` choosing which.
"""

from quiho.history.sources._formats import (
    FORMATS,
    GZIP_MAGIC,
    Measurement,
    ResultFile,
    ResultImport,
    detect_format,
    direction_of_unit,
    git_revision,
    import_results,
    read_results,
)
from quiho.history.sources._git import (
    METRICS,
    GitBench,
    GitSampleReport,
    WorktreeBench,
    bisect_git_history,
    list_revisions,
    sample_git_history,
)
from quiho.history.sources._io import (
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

__all__ = [
    # result files of benchmark harnesses
    "FORMATS",
    "GZIP_MAGIC",
    "Measurement",
    "ResultFile",
    "ResultImport",
    "detect_format",
    "direction_of_unit",
    "git_revision",
    "read_results",
    "import_results",
    # CSV, quiho runs and the store
    "HistoryImport",
    "RevisionState",
    "read_history_csv",
    "import_history_csv",
    "import_history_from_runs",
    "save_history",
    "load_history",
    "load_state",
    "list_series",
    "open_history",
    # a git repository
    "METRICS",
    "GitBench",
    "WorktreeBench",
    "GitSampleReport",
    "list_revisions",
    "sample_git_history",
    "bisect_git_history",
]
