"""From a calls table or a Perun profile file to a detector :class:`~quiho.detect.Profile`.

Independent variable (``x``) choices for trace data:

* ``order``: the call's rank by start time among the function's calls (Perun's ``call-order``; note that this
  is time order, not input size, so "complexity" models of it describe drift over a run);
* ``arg``: the captured first argument (e.g. a size passed to the function);
* ``sort-order``: the rank of the call's duration (Perun's clusterizer default);
* ``sliding-window``: Perun's sliding-window clusterizer over sorted durations (window width 1 % of the calls,
  height 1 % of the window's first duration; both relative).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quiho.detect import Profile, Samples
from quiho.errors import ImportDataError, UsageError

__all__ = ["X_MODES", "profile_from_calls", "load_perun_profile", "sliding_window_clusters"]

X_MODES = ("order", "arg", "sort-order", "sliding-window")


def sliding_window_clusters(amounts: np.ndarray, width: float = 0.01, height: float = 0.01) -> np.ndarray:
    """Cluster index of each amount (Perun's sliding window, relative width and height).

    A cluster starts at the smallest unassigned amount and takes the following sorted amounts while it has
    fewer than ``max(1, width·n)`` members and they are ≤ first·(1 + height).
    """
    a = np.asarray(amounts, dtype=float)
    n = a.size
    order = np.argsort(a, kind="stable")
    s = a[order]
    cap = max(1, int(width * n))
    out = np.empty(n, dtype=np.int64)
    i = c = 0
    while i < n:
        lim = s[i] * (1 + height) if s[i] >= 0 else s[i] * (1 - height)
        j = min(i + cap, int(np.searchsorted(s, lim, side="right")))
        j = max(j, i + 1)
        out[order[i:j]] = c
        c += 1
        i = j
    return out


def profile_from_calls(calls: pd.DataFrame, x: str = "order", amount: str = "inclusive_ns",
                       source: str = "") -> Profile:
    """Group a calls table by function into :class:`~quiho.detect.Samples`.

    Parameters
    ----------
    calls : DataFrame
        Columns of :data:`quiho.trace.CALL_COLUMNS`.
    x : str, default "order"
        One of :data:`X_MODES`.
    amount : {"inclusive_ns", "exclusive_ns"}
        The duration to model; the exclusive duration is always attached for exclusive-time detectors.
    """
    if x not in X_MODES:
        raise UsageError(f"unknown independent variable {x!r}; choose from {', '.join(X_MODES)}")
    if amount not in ("inclusive_ns", "exclusive_ns"):
        raise UsageError(f"amount must be inclusive_ns or exclusive_ns, not {amount!r}")
    funcs: dict[str, Samples] = {}
    for name, g in calls.groupby("function", observed=True, sort=True):
        y = g[amount].to_numpy(dtype=float)
        if x == "order":
            xv = g["order"].to_numpy(dtype=float)
        elif x == "arg":
            xv = g["arg"].to_numpy(dtype=float)
        elif x == "sort-order":
            xv = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(float)
        else:
            xv = sliding_window_clusters(y).astype(float)
        funcs[str(name)] = Samples.of(xv, y, g["exclusive_ns"].to_numpy(dtype=float))
    return Profile(funcs, "ns", source)


def load_perun_profile(path: Path, x_key: str | None = None) -> Profile:
    """Read a Perun ``.perf`` JSON profile (resources, not its stored models).

    ``amount`` becomes ``y``; ``x`` is ``x_key`` if given, else ``structure-unit-size``, else ``call-order``,
    else the position. ``exclusive`` is used when present. The unit is taken from the header but Perun's trace
    profiles label nanoseconds as ``us`` (notes §2.1.3); that label is passed through unchanged.

    Raises
    ------
    ImportDataError
        The file is missing, not JSON, or not a Perun profile.
    """
    try:
        doc: dict[str, Any] = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ImportDataError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ImportDataError(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(doc, dict) or "resources" not in doc or "resource_type_map" not in doc:
        raise ImportDataError(f"{path} is not a Perun profile (no 'resources' / 'resource_type_map')")
    units = doc.get("header", {}).get("units", {})
    unit = next(iter(units.values()), "") if isinstance(units, dict) and units else ""
    acc: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = {}
    for key, res in doc["resources"].items():
        meta = doc["resource_type_map"].get(key, {})
        uid = str(meta.get("uid", key.rsplit("#", 1)[0]))
        if uid.startswith("!"):  # Perun's !ProcessResource! / !ThreadResource! lifetimes
            continue
        y = np.asarray(res.get("amount", []), dtype=float)
        keys = [x_key] if x_key else ["structure-unit-size", "call-order"]
        xs = next((res[k] for k in keys if k and k in res), None)
        if x_key and xs is None:
            raise ImportDataError(f"{path}: resource {key} has no {x_key!r}")
        xv = np.arange(y.size, dtype=float) if xs is None else np.asarray(xs, dtype=float)
        ex = np.asarray(res["exclusive"], dtype=float) if "exclusive" in res else None
        if xv.size != y.size:
            raise ImportDataError(f"{path}: resource {key} has {xv.size} x values for {y.size} amounts")
        acc.setdefault(uid, []).append((xv, y, ex))
    funcs = {}
    for uid, parts in acc.items():
        xv = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        exl = [p[2] for p in parts]
        ex = np.concatenate([e for e in exl if e is not None]) if all(e is not None for e in exl) else None
        funcs[uid] = Samples.of(xv, y, ex)
    return Profile(funcs, unit or "?", str(path))
