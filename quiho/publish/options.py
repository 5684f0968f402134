"""Settings and result of :func:`quiho.publish.publish`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["PublishOptions", "PublishResult", "IrupSettings"]


@dataclass(frozen=True)
class IrupSettings:
    """How the site computes each target's IRUP: ``quiho irup``'s options, with its defaults.

    ``model`` is a :meth:`quiho.irup.ModelParams.preset` name; ``n_jobs`` does not change the result (seeds are
    drawn up front), so it is not part of what a cached IRUP is keyed by. ``enabled=False`` publishes no target pages.
    """

    model: str = "quiho"
    importance: str = "classic"
    seeds: int = 10
    random_state: int = 0
    resample: str = "groups"
    n_jobs: int = -1
    enabled: bool = True

    def key(self) -> tuple[object, ...]:
        """What a result depends on (every field but ``n_jobs`` and ``enabled``)."""
        return (self.model, self.importance, self.seeds, self.random_state, self.resample)


@dataclass(frozen=True)
class PublishOptions:
    """How the site judges what it shows (built once at the CLI; defaults are ``quiho history detect``'s).

    ``method``, ``alpha``, ``min_size``, ``magnitude_floor``: the change-point detector and the newest-revision
    check of every series (:func:`quiho.history.verdict_of`). ``recent``: a change point within this many
    newest revisions of its series is listed on the index page. ``drift_alpha``, ``drift_min_change``: the fleet's
    drift alerts (:func:`quiho.schedule.drift.detect_drift`, family-wise α over every host × stressor).
    ``fingerprints``: the one source of fingerprint runs the fleet pages show (``fleet``: ``quiho fingerprint``'s;
    ``quiho-popper``: the imported data set of the quiho paper); None, the default: every source the store holds,
    ``fleet`` always among them. ``title``: the site's name in every page title. ``irup``: how each target's IRUP is
    computed (``quiho irup``'s defaults). ``stale_after_hours``: a ``fleet`` host whose newest fingerprint is older
    than this is marked stale (24: the scheduled fingerprint's default period, ``quiho schedule install --every
    daily``); None: no mark. ``now``: the time staleness is judged at (None: the clock).
    """

    method: str = "auto"
    alpha: float = 0.01
    min_size: int = 5
    magnitude_floor: float = 0.0
    recent: int = 10
    drift_alpha: float = 0.05
    drift_min_change: float = 0.05
    fingerprints: str | None = None
    title: str = "quiho"
    irup: IrupSettings = field(default_factory=lambda: IrupSettings())
    stale_after_hours: float | None = 24.0
    now: datetime | None = None


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: counts of what the site shows, and which files it wrote, kept or removed.

    ``targets``: targets with a page; ``irups_computed``: how many of their IRUPs this publish computed (the others
    were read from the store's cache, their input unchanged). ``written`` and ``removed`` are paths relative to
    ``directory``; ``unchanged`` counts pages whose bytes were already there (a republish without new data writes
    nothing).
    """

    directory: Path
    series: int
    hosts: int
    profiles: int
    pages: int
    written: tuple[str, ...]
    unchanged: int
    removed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    targets: int = 0
    irups_computed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``quiho publish --json``)."""
        return {"directory": str(self.directory), "series": self.series, "hosts": self.hosts,
                "profiles": self.profiles, "targets": self.targets,
                "irups_computed": self.irups_computed, "pages": self.pages, "written": list(self.written),
                "unchanged": self.unchanged, "removed": list(self.removed), "warnings": list(self.warnings)}
