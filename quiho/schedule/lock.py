"""The measurement lock (now :mod:`quiho.fleet.lock`, where fingerprints, runs and profiles take it)."""

from __future__ import annotations

from quiho.fleet.lock import Busy, lock_path, measurement_lock
from quiho.store.fingerprints import mark_interrupted_runs

__all__ = ["Busy", "measurement_lock", "lock_path", "mark_interrupted_runs"]
