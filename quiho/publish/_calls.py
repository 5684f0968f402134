"""A traced profile's calls for the site's functions figure, read from the store's Parquet files once per change.

The samples (:func:`quiho.profile.traces.trace_samples`) are thinned calls read back from every traced run of
the profile's batch; a republish of an unchanged store should not read those files again, so the thinned samples
are kept in the store's site cache (:mod:`quiho.store.site_cache`) under the hash of the batch's traced runs
(ids, hosts, versions and each calls file's path, size and modification time): a re-traced or rewritten file has
a new key. A file that is gone is never served from the cache: the page then says the calls cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from quiho._version import __version__
from quiho.errors import QuihoError
from quiho.store import Store
from quiho.store.site_cache import cached_results, prune_results, save_results

__all__ = ["cached_calls", "prune_calls"]

#: Bumped when the stored document changes shape.
CACHE_VERSION = 1
_KIND = "calls"


def _key(store: Store, application: str, version_a: str, label_b: str, batch: str) -> str | None:
    """The hash of what the batch's samples are read from; None when a run's calls file is gone."""
    from quiho.store.traces import batch_trace_runs

    h = hashlib.sha256(json.dumps([CACHE_VERSION, __version__, application, version_a, label_b, batch]).encode())
    for run in batch_trace_runs(store, application, batch):
        try:
            st = os.stat(run.calls_path)
        except OSError:
            return None
        h.update(json.dumps([run.id, run.host, run.version, str(run.calls_path), st.st_size,
                             st.st_mtime_ns]).encode())
    return h.hexdigest()


def cached_calls(store: Store, row: dict[str, Any], doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A traced profile's calls for its functions figure, or why they cannot be shown (``{}``, ``""``: untraced).

    The samples are returned as the cache gives them back (lists, not arrays), so a first publish and a republish
    render the same bytes.
    """
    from quiho.profile.traces import trace_samples

    if not doc.get("traces"):
        return {}, ""
    args = (str(row["application"]), str(doc.get("version_a") or row["version_a"]),
            str(doc.get("label_b") or row["version_b"]), str(row["batch"]))
    key = _key(store, *args)
    if key is not None:
        hit = cached_results(store, [key]).get(key)
        if hit is not None:
            return hit["samples"], ""
    try:
        samples = trace_samples(store, *args)
    except QuihoError as exc:
        return {}, f"the traced calls cannot be read: {exc}"
    plain = json.loads(json.dumps(samples, default=lambda a: a.tolist()))
    if key is not None:
        save_results(store, _KIND, {key: (args[3], {"samples": plain})})
    return plain, ""


def prune_calls(store: Store, batches: Sequence[str]) -> None:
    """Drop the cached samples of profiles the store no longer holds (``batches``: every stored profile's)."""
    prune_results(store, _KIND, batches)
