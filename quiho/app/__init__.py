"""Applications: the spec (versions, metric, repetitions) and running a version on a fleet."""

from quiho.app.run import AppRepResult, AppRun, app_records, command_wall, run_app, strip_markers
from quiho.app.spec import AppSpec, AppVersion, Metric, TraceSpec, extract_metric, load_app_spec

__all__ = [
    "AppRepResult",
    "AppRun",
    "AppSpec",
    "AppVersion",
    "Metric",
    "TraceSpec",
    "app_records",
    "command_wall",
    "extract_metric",
    "load_app_spec",
    "run_app",
    "strip_markers",
]
