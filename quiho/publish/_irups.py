"""Every target's IRUP for the site: computed as ``quiho irup`` computes it, once per changed input.

The key of a target's IRUP is the SHA-256 of the rows it is computed from (its ``ok`` application runs, the
``ok`` measurements of the fingerprint runs they pair with), the model options, the quiho version and the IRUP
package's source; a result
found under its key in the store (:mod:`quiho.store.site_cache`) is shown as stored, any other is computed and
stored. Hashing every input costs a few hundred milliseconds on the quiho paper's data, against about a second per
computed IRUP.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quiho._version import __version__
from quiho.errors import QuihoError, UsageError
from quiho.publish.options import IrupSettings
from quiho.store import Store
from quiho.store.site_cache import cached_results, fingerprint_inputs, prune_results, save_results, target_inputs

__all__ = ["TargetView", "check_settings", "read_targets", "save_advice", "CACHE_VERSION"]

#: Bumped when what a cached document holds changes: every older result is then recomputed.
CACHE_VERSION = 1
_KIND = "irup"
#: The kind of a stored ``quiho advise`` answer.
ADVICE_KIND = "advice"
#: Computed results are stored in batches of this many.
_SAVE_EVERY = 8


@dataclass(frozen=True)
class TargetView:
    """One target: its counts, and its IRUP document (``quiho irup --json``'s) or why it has none.

    ``class_shares``: share of the total importance per primary stressor class
    (:func:`quiho.irup.class_shares`). ``computed``: this publish computed it (False: read from the cache).
    ``designed``: the profiles on a designed fleet that measured it (:func:`quiho.publish._collect.designed_targets`).
    """

    name: str
    runs: int
    hosts: int
    unit: str
    irup: dict[str, Any] | None
    class_shares: dict[str, float]
    error: str = ""
    computed: bool = False
    #: stored profiles on a designed fleet that measured this target, each with the target's side ("a" or "b")
    designed: tuple[tuple[Any, str], ...] = ()
    #: ``quiho advise --json``'s answer when it was computed on the target's current inputs (else None)
    advice: dict[str, Any] | None = None


def _run_digests(store: Store, run_ids: list[int]) -> dict[int, str]:
    """Fingerprint run id → SHA-256 of its ``ok`` measurements."""
    m = fingerprint_inputs(store, run_ids)
    if m.empty:
        return {}
    m = m.sort_values(["run_id", "host_id", "repetition", "stressor", "value"], kind="stable")
    h = pd.util.hash_pandas_object(m, index=False).to_numpy()
    ids = m["run_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    return {int(ids[a]): hashlib.sha256(h[a:b].tobytes()).hexdigest() for a, b in zip(starts, ends, strict=True)}


@functools.cache
def _engine() -> str:
    """SHA-256 of the IRUP package's source: an IRUP computed by other code is computed again."""
    import quiho.irup

    h = hashlib.sha256()
    for p in sorted(Path(quiho.irup.__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()


def target_digests(store: Store, targets: pd.DataFrame) -> list[str]:
    """SHA-256 of each row of ``targets``' inputs (:func:`quiho.irup.list_targets`' table), in its order.

    Every row is hashed once, in one fixed order (SQL returns rows in any); a target's digest covers its name, its
    rows' hashes and the digests of the fingerprint runs they pair with: whatever its IRUP and its advice read.
    """
    apps = target_inputs(store)
    runs = apps["fingerprint_run_id"].dropna().astype(int).unique().tolist()
    digests = _run_digests(store, runs)
    apps = apps.sort_values(list(apps.columns), kind="stable", na_position="first").reset_index(drop=True)
    hashes = pd.util.hash_pandas_object(apps, index=False).to_numpy() if len(apps) else np.zeros(0, np.uint64)
    run_col = apps["fingerprint_run_id"].to_numpy()
    where = apps.groupby(["application", "version", "test"], sort=False, dropna=False).indices
    out = []
    for t in targets.itertuples(index=False):
        pos = where.get((t.application, t.version, t.test), np.zeros(0, dtype=np.int64))
        h = hashlib.sha256(str(t.target).encode("utf-8", "surrogatepass") + b"\0")
        h.update(hashes[pos].tobytes())
        for r in sorted({int(x) for x in run_col[pos] if pd.notna(x)}):  # NaN/None: a run without fingerprint
            h.update(f"{r}:{digests.get(r, '')};".encode())
        out.append(h.hexdigest())
    return out


def _keyed(head: list[Any], digests: list[str]) -> list[str]:
    """``sha256(head, digest)`` per digest: a result's key is its kind and options with its inputs' digest."""
    pre = json.dumps([CACHE_VERSION, __version__, _engine(), *head]).encode()
    return [hashlib.sha256(pre + b"\0" + d.encode()).hexdigest() for d in digests]


def advice_keys(digests: list[str]) -> list[str]:
    """The key of each target's stored fleet-size advice (``quiho advise`` saves it, a publish shows it)."""
    return _keyed([ADVICE_KIND], digests)


def save_advice(store: Store, target: str, advice: dict[str, Any]) -> None:
    """Keep ``quiho advise``'s answer for ``target`` under its inputs' key, so a publish can show it unrecomputed.

    Raises
    ------
    UsageError
        ``target`` is not a target of the store.
    """
    from quiho.irup import list_targets

    targets = list_targets(store)
    row = targets[targets["target"].astype(str) == target]
    if row.empty:
        raise UsageError(f"no target {target!r} in the store (quiho targets lists them)")
    key = advice_keys(target_digests(store, row))[0]
    save_results(store, ADVICE_KIND, {key: (target, json.loads(json.dumps(advice, default=str, sort_keys=True)))})


def check_settings(settings: IrupSettings) -> Any:
    """The model parameters of ``settings``; a bad option is a usage error before any target is computed."""
    from quiho.irup import FORMULAS, ModelParams

    if settings.importance not in FORMULAS:
        raise UsageError(f"unknown importance formula {settings.importance!r}; choose one of {', '.join(FORMULAS)}")
    if settings.resample not in ("groups", "none"):
        raise UsageError(f"unknown resample mode {settings.resample!r}; choose 'groups' or 'none'")
    return ModelParams.preset(settings.model)


def compute_document(store: Store, target: str, settings: IrupSettings, params: Any) -> dict[str, Any]:
    """``{"irup": quiho irup --json's document, "class_shares": ...}``, or ``{"error": why}`` for a target without one.

    The same calls as ``quiho irup TARGET`` (:func:`quiho.irup.load_target`, :func:`quiho.irup.compute_irup`), so
    the site shows the numbers the command prints.
    """
    from quiho.irup import class_shares, compute_irup, load_target

    try:
        irup = compute_irup(load_target(store, target), importance=settings.importance, seeds=settings.seeds,
                            random_state=settings.random_state, resample=settings.resample, params=params,
                            n_jobs=settings.n_jobs)
    except UsageError:
        raise
    except QuihoError as exc:  # too few rows or machines, a constant metric: the page says why
        return {"error": str(exc)}
    # as the cache will give it back (tuples as lists, keys as text): a republish renders the very same bytes
    return json.loads(json.dumps({"irup": irup.to_dict(), "class_shares": class_shares(irup)}, default=str,
                                 sort_keys=True))


def read_targets(store: Store, settings: IrupSettings) -> list[TargetView]:
    """Every target with ``ok`` runs and its IRUP, computed only where no result of the same input is stored.

    Raises
    ------
    UsageError
        An unknown model preset, importance formula or resample mode.
    """
    from quiho.irup import list_targets

    if not settings.enabled:
        return []
    params = check_settings(settings)
    targets = list_targets(store)
    for kind in (_KIND, ADVICE_KIND):
        prune_results(store, kind, [str(t) for t in targets["target"]])
    if targets.empty:
        return []
    digests = target_digests(store, targets)
    keys = _keyed([list(settings.key())], digests)
    have = cached_results(store, keys)
    a_keys = advice_keys(digests)
    advice = cached_results(store, a_keys)
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for t, key, a_key in zip(targets.itertuples(index=False), keys, a_keys, strict=True):
        name = str(t.target)
        doc = have.get(key)
        if doc is None:
            doc = compute_document(store, name, settings, params)
            pending[key] = (name, doc)
            if len(pending) >= _SAVE_EVERY:  # an interrupted publish keeps what it computed
                save_results(store, _KIND, pending)
                pending = {}
        out.append(TargetView(name, int(t.runs), int(t.hosts), str(t.unit or ""), doc.get("irup"),
                              dict(doc.get("class_shares") or {}), str(doc.get("error", "")), key not in have,
                              advice=advice.get(a_key)))
    save_results(store, _KIND, pending)
    return out
