"""Scheduled fleet fingerprinting: timers, the measurement lock, the scheduled run, and drift over its history.

Drift (:mod:`quiho.schedule.drift`) is imported on use, not here: it loads the history and IRUP analyses.
"""

from quiho.schedule.lock import Busy, lock_path, mark_interrupted_runs, measurement_lock
from quiho.schedule.run import ScheduledOutcome, scheduled_fingerprint
from quiho.schedule.timer import (
    Schedule,
    ScheduleError,
    fire_schedule,
    install_schedule,
    parse_every,
    remove_schedule,
    schedule_status,
)

__all__ = [
    "Busy", "lock_path", "mark_interrupted_runs", "measurement_lock", "ScheduledOutcome", "scheduled_fingerprint",
    "Schedule", "ScheduleError", "fire_schedule", "install_schedule", "parse_every", "remove_schedule",
    "schedule_status",
]
