"""A fingerprint source's drift report for the site, computed once per changed fingerprint history.

The drift check runs thousands of permutations per host × stressor series (seconds on a fleet of 8 hosts × 30
runs, most of an unchanged republish); its answer depends only on the source's fingerprint history and the drift
options, so it is kept in the store's site cache (:mod:`quiho.store.site_cache`) under their hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from quiho._version import __version__
from quiho.errors import NotEnoughData
from quiho.publish.options import PublishOptions
from quiho.store import Store
from quiho.store.site_cache import cached_results, prune_results, save_results

__all__ = ["cached_drift"]

#: Bumped when the stored document changes shape.
CACHE_VERSION = 1
_KIND = "drift"


def _key(hist: pd.DataFrame, options: PublishOptions, source: str) -> str:
    h = hashlib.sha256(json.dumps([CACHE_VERSION, __version__, source, options.drift_alpha,
                                   options.drift_min_change]).encode())
    if not hist.empty:
        rows = hist.sort_values(list(hist.columns), kind="stable").reset_index(drop=True)
        h.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _report(doc: dict[str, Any]) -> Any:
    """The DriftReport a stored document holds (every field is a plain value or a tuple of small records)."""
    from quiho.schedule.drift import DriftReport, GroupChange, StaleHost, StressorDrift

    return DriftReport(**{**doc, "drifts": tuple(StressorDrift(**d) for d in doc["drifts"]),
                          "group_changes": tuple(GroupChange(g["host"], g["kind"], tuple(g["others"]))
                                                 for g in doc["group_changes"]),
                          "stale": tuple(StaleHost(**s) for s in doc["stale"]),
                          "not_meaningful": tuple(doc["not_meaningful"])})


def cached_drift(store: Store, hist: pd.DataFrame, options: PublishOptions, source: str) -> tuple[Any, str]:
    """(DriftReport or None, why none) of ``source`` whose history is ``hist``; computed only on a changed input.

    No staleness check inside: it depends on the clock, and the report is kept for as long as the data is.
    """
    from quiho.schedule.drift import detect_drift

    key = _key(hist, options, source)
    doc = cached_results(store, [key]).get(key)
    if doc is None:
        try:
            report = detect_drift(store, alpha=options.drift_alpha, min_change=options.drift_min_change,
                                  source=source)
            doc = {"report": json.loads(json.dumps(dataclasses.asdict(report)))}
        except NotEnoughData as exc:
            doc = {"note": str(exc)}
        save_results(store, _KIND, {key: (source, doc)})
    return (_report(doc["report"]), "") if "report" in doc else (None, str(doc["note"]))


def prune_drift(store: Store, sources: Sequence[str]) -> None:
    """Drop the cached drift reports of fingerprint sources the store no longer holds (``sources``: all it holds)."""
    prune_results(store, _KIND, sources)
