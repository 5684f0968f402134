"""Fingerprints: the stressor catalog, batteries, stress-ng results, and running a battery on a fleet.

Drift over a fingerprint history is :mod:`quiho.schedule.drift` (it calls history and irup, which import this).
"""

from quiho.fingerprint.battery import Battery, battery_names, load_battery, render_job
from quiho.fingerprint.catalog import ANALYSIS_CLASSES, Catalog, Stressor, load_catalog
from quiho.fingerprint.parse import ResultStatus, StressorResult, parse_stressng_yaml, running_stressor
from quiho.fingerprint.run import FingerprintPlan, FingerprintRun, HostReport, fingerprint

__all__ = [
    "ANALYSIS_CLASSES",
    "Battery",
    "Catalog",
    "FingerprintPlan",
    "FingerprintRun",
    "HostReport",
    "ResultStatus",
    "Stressor",
    "StressorResult",
    "battery_names",
    "fingerprint",
    "load_battery",
    "load_catalog",
    "parse_stressng_yaml",
    "render_job",
    "running_stressor",
]
