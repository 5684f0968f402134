"""The one error tree of quiho.

Library code raises these; only :mod:`quiho.cli` turns them into exit codes
(0 ok, 1 error, 2 usage, 3 change found with ``--fail-on-change``).
Messages are written for people: one line saying what is wrong and, where
there is one, what to do about it.
"""

from __future__ import annotations

__all__ = [
    "QuihoError",
    "UsageError",
    "StoreError",
    "SchemaVersionError",
    "ImportDataError",
    "UnknownTargetError",
    "NotEnoughData",
    "NotEnoughMachines",
    "NoCommonHosts",
    "PredictionRefused",
    "CatalogError",
    "InventoryError",
    "FingerprintParseError",
    "RunFailed",
    "AppSpecError",
    "TraceParseError",
    "ModelError",
    "HistoryError",
    "BuildFailed",
    "GitError",
]


class QuihoError(Exception):
    """Base class of every error quiho raises on purpose."""


class UsageError(QuihoError):
    """The request itself is malformed (bad option value, contradictory flags)."""


class StoreError(QuihoError):
    """The SQLite store cannot be opened, read or written."""


class SchemaVersionError(StoreError):
    """A store or file was written by a quiho whose schema this one does not know."""


class ImportDataError(QuihoError):
    """An input file is missing, has the wrong columns or unusable values."""


class UnknownTargetError(QuihoError):
    """A target (``BENCHMARK/TEST``) has no data in the store."""


class NotEnoughData(QuihoError):
    """There are too few rows for the requested analysis to mean anything."""


class NotEnoughMachines(NotEnoughData):
    """There are too few distinct hardware groups for a cross-validated IRUP."""


class NoCommonHosts(NotEnoughData):
    """Two data sets share no host, so a within-host comparison (the calibrated IRUP-shift test) cannot apply."""


class PredictionRefused(NotEnoughData):
    """A prediction would be noise: the IRUP is not meaningful, or no machine has the fingerprint it needs."""


class CatalogError(QuihoError):
    """The stressor catalog or a battery definition is malformed."""


class InventoryError(QuihoError):
    """An Ansible inventory or fleet definition is malformed."""


class FingerprintParseError(QuihoError):
    """A stress-ng result file is malformed, truncated or lacks metrics."""


class RunFailed(QuihoError):
    """A playbook or application run failed as a whole."""


class AppSpecError(QuihoError):
    """An application spec (YAML) is malformed or names an unknown version."""


class TraceParseError(QuihoError):
    """A trace file cannot be parsed at all (partial damage is counted, not raised)."""


class ModelError(QuihoError):
    """A model cannot be fitted to the given data."""


class HistoryError(QuihoError):
    """A performance history is malformed (non-numeric values, duplicate orders...)."""


class BuildFailed(HistoryError):
    """Building or benchmarking one revision failed; samplers skip it and record why."""


class GitError(HistoryError):
    """A git command on the sampled repository failed (not a repository, unknown revision...)."""
