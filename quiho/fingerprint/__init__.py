"""Fingerprints: the stressor catalog, batteries and stress-ng results."""

from quiho.fingerprint.battery import Battery, battery_names, load_battery, render_job
from quiho.fingerprint.catalog import ANALYSIS_CLASSES, Catalog, Stressor, load_catalog
from quiho.fingerprint.parse import ResultStatus, StressorResult, parse_stressng_yaml, running_stressor

__all__ = [
    "ANALYSIS_CLASSES",
    "Battery",
    "Catalog",
    "ResultStatus",
    "Stressor",
    "StressorResult",
    "battery_names",
    "load_battery",
    "load_catalog",
    "parse_stressng_yaml",
    "render_job",
    "running_stressor",
]
