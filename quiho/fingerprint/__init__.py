"""Fingerprints: the stressor catalog, batteries and stress-ng results."""

from quiho.fingerprint.catalog import ANALYSIS_CLASSES, Catalog, Stressor, load_catalog

__all__ = ["ANALYSIS_CLASSES", "Catalog", "Stressor", "load_catalog"]
