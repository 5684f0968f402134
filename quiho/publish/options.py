"""Settings and result of :func:`quiho.publish.publish`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PublishOptions", "PublishResult"]


@dataclass(frozen=True)
class PublishOptions:
    """How the site judges what it shows (built once at the CLI; defaults are ``quiho history detect``'s).

    ``method``, ``alpha``, ``min_size``, ``magnitude_floor``: the change-point detector and the newest-revision
    check of every series (:func:`quiho.history.verdict_of`). ``recent``: a change point within this many
    newest revisions of its series is listed on the index page. ``drift_alpha``, ``drift_min_change``: the fleet's
    drift alerts (:func:`quiho.schedule.drift.detect_drift`, family-wise α over every host × stressor).
    ``fingerprints``: the source of the fingerprint runs the fleet pages show (``fleet``: ``quiho fingerprint``'s;
    ``quiho-popper``: the imported data set of the quiho paper). ``title``: the site's name in every page title.
    """

    method: str = "auto"
    alpha: float = 0.01
    min_size: int = 5
    magnitude_floor: float = 0.0
    recent: int = 10
    drift_alpha: float = 0.05
    drift_min_change: float = 0.05
    fingerprints: str = "fleet"
    title: str = "quiho"


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: counts of what the site shows, and which files it wrote, kept or removed.

    ``written`` and ``removed`` are paths relative to ``directory``; ``unchanged`` counts pages whose bytes were
    already there (a republish without new data writes nothing).
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``quiho publish --json``)."""
        return {"directory": str(self.directory), "series": self.series, "hosts": self.hosts,
                "profiles": self.profiles, "pages": self.pages, "written": list(self.written),
                "unchanged": self.unchanged, "removed": list(self.removed), "warnings": list(self.warnings)}
