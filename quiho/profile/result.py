"""What ``quiho profile`` found: :class:`ProfileResult`, its schema-versioned JSON document, and its save/load.

A stored document of another schema version is refused on load with what to do (rerun the profile).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quiho._version import __version__
from quiho.design import DesignAnalysis
from quiho.errors import UsageError
from quiho.irup import Advice, Comparison, Irup
from quiho.profile.hints import Hint
from quiho.profile.stats import MetricChange
from quiho.store import Store
from quiho.store.profiles import ProfileRow, profile_row, save_profile_row

__all__ = ["REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "HostStatus", "ProfileResult", "save_profile", "load_profile"]


REPORT_SCHEMA = "quiho.profile"
REPORT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class HostStatus:
    """What one host contributed: fingerprint present (or left out on purpose), runs ok per version, and why not."""

    host: str
    fingerprinted: bool
    ok_a: int
    ok_b: int
    failed_a: int
    failed_b: int
    reasons: tuple[str, ...] = ()
    fingerprint_skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {**self.__dict__, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class ProfileResult:
    """Everything ``quiho profile`` found, with the evidence (see :meth:`to_dict` for the JSON contract)."""

    application: str
    version_a: str
    version_b: str
    label_b: str
    batch: str
    verdict: str
    metric: MetricChange
    irup_a: Irup | None
    irup_b: Irup | None
    comparison: Comparison | None
    hints: tuple[Hint, ...]
    advice: dict[str, Advice]
    hosts: tuple[HostStatus, ...]
    partial: tuple[str, ...]
    irup_errors: dict[str, str]
    runs: pd.DataFrame = field(repr=False)
    fingerprints: pd.DataFrame = field(repr=False)
    fingerprint_run_id: int | None = None
    fingerprint_batch: str | None = None
    fingerprint_age_s: float | None = None
    fingerprinted_now: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    notes: tuple[str, ...] = ()
    traces: Any = field(default=None, repr=False)  # quiho.profile.traces.FleetTraces of --trace, or None
    design: DesignAnalysis | None = None

    @property
    def status(self) -> str:
        """``complete``, ``partial`` (some hosts, runs or fingerprints missing) or ``failed`` (no usable runs)."""
        if self.metric.hosts_used == 0:
            return "failed"
        return "partial" if self.partial else "complete"

    @property
    def profile_source(self) -> str:
        """What the resource-profile verdict rests on: ``design`` (factor effects) or ``irup`` (the paper's view).

        On a designed fleet whose analysis can answer, the factors quiho set are the direct evidence; the IRUPs
        stay beside it.
        """
        return "design" if self.design is not None and self.design.verdict != "not-meaningful" else "irup"

    @property
    def profile_verdict(self) -> str:
        """The resource-profile verdict of :attr:`profile_source`."""
        return self.design.verdict if self.design is not None and self.profile_source == "design" \
            else self.irup_verdict

    @property
    def irup_verdict(self) -> str:
        """Verdict of the IRUP comparison (``different``/``equivalent``/``inconclusive``), or ``unavailable``."""
        return self.comparison.verdict if self.comparison else "unavailable"

    def to_dict(self) -> dict[str, Any]:
        """The schema-versioned JSON document (``report.json`` and ``--json``)."""
        return {
            "schema": REPORT_SCHEMA, "schema_version": REPORT_SCHEMA_VERSION, "quiho_version": __version__,
            "created_at": self.created_at, "application": self.application,
            "version_a": self.version_a, "version_b": self.version_b, "label_b": self.label_b, "batch": self.batch,
            "verdict": self.verdict, "status": self.status, "partial": list(self.partial), "notes": list(self.notes),
            "metric": self.metric.to_dict(),
            "irup": {
                "verdict": self.irup_verdict,
                "a": self.irup_a.to_dict() if self.irup_a else None,
                "b": self.irup_b.to_dict() if self.irup_b else None,
                "comparison": self.comparison.to_dict() if self.comparison else None,
                "errors": dict(self.irup_errors),
            },
            "resource_profile": {"source": self.profile_source, "verdict": self.profile_verdict},
            "design": self.design.to_dict() if self.design is not None else None,
            "hints": [h.to_dict() for h in self.hints],
            "advice": {k: v.to_dict() for k, v in self.advice.items()},
            "hosts": [h.to_dict() for h in self.hosts],
            "fingerprint": {"run_id": self.fingerprint_run_id, "batch": self.fingerprint_batch,
                            "age_s": None if self.fingerprint_age_s is None else round(self.fingerprint_age_s, 1),
                            "fresh": self.fingerprinted_now},
            "runs": _records(self.runs),
            "params": self.params,
            "traces": self.traces.to_dict() if self.traces is not None else None,
        }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in rec.items()})
    return out


def save_profile(store: Store, result: ProfileResult) -> int:
    """Record a profile (verdict, status, partial reasons, full result) in the store; returns its id."""
    return save_profile_row(store, ProfileRow(
        batch=result.batch, application=result.application, version_a=result.version_a,
        version_b=result.version_b, status=result.status, verdict=result.verdict, irup_verdict=result.irup_verdict,
        partial=list(result.partial), fingerprint_run_id=result.fingerprint_run_id, document=result.to_dict(),
        schema_version=REPORT_SCHEMA_VERSION, quiho_version=__version__,
    ))


def load_profile(store: Store, batch: str) -> dict[str, Any]:
    """The stored JSON document of profile ``batch``.

    Raises
    ------
    UsageError
        Unknown batch, or a document of a schema version this quiho does not read.
    """
    row = profile_row(store, batch)
    if row is None:
        raise UsageError(f"no profile {batch!r} in {store}")
    if int(row["schema_version"]) != REPORT_SCHEMA_VERSION:
        raise UsageError(f"profile {batch!r} has schema v{row['schema_version']}; this quiho reads "
                         f"v{REPORT_SCHEMA_VERSION}: rerun 'quiho profile'")
    doc: dict[str, Any] = json.loads(row["result_json"])
    return doc
