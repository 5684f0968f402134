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
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from quiho._text import printable
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
                       source: str = "", tracer_ns: float | None = None) -> Profile:
    """Group a calls table by function into :class:`~quiho.detect.Samples`.

    Parameters
    ----------
    calls : DataFrame
        Columns of :data:`quiho.trace.CALL_COLUMNS`.
    x : str, default "order"
        One of :data:`X_MODES`.
    amount : {"inclusive_ns", "exclusive_ns"}
        The duration to model; the exclusive duration is always attached for exclusive-time detectors.

    A ``run`` column (repeated runs pooled, :func:`~quiho.trace.load_version_calls`) becomes the samples' run
    labels, so that :func:`quiho.detect.detect` checks a flagged change across the runs. ``tracer_ns`` (the
    tracer's time per call where the calls were traced) lets it leave out functions whose calls are mostly that.
    """
    if x not in X_MODES:
        raise UsageError(f"unknown independent variable {x!r}; choose from {', '.join(X_MODES)}")
    if amount not in ("inclusive_ns", "exclusive_ns"):
        raise UsageError(f"amount must be inclusive_ns or exclusive_ns, not {amount!r}")
    amounts = calls[amount].to_numpy(dtype=float)
    exclusive = calls["exclusive_ns"].to_numpy(dtype=float)
    xcol = calls[x].to_numpy(dtype=float) if x in ("order", "arg") else None
    runs = calls["run"].to_numpy(dtype=np.int64) if "run" in calls.columns else None
    funcs: dict[str, Samples] = {}
    for name, rows in _function_rows(calls["function"]):
        y = amounts[rows]
        if xcol is not None:
            xv = xcol[rows]
        elif x == "sort-order":
            xv = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(float)
        else:
            xv = sliding_window_clusters(y).astype(float)
        funcs[str(name)] = Samples.of(xv, y, exclusive[rows], None if runs is None else runs[rows])
    return Profile(funcs, "ns", source, tracer_ns)


def _function_rows(function: pd.Series) -> list[tuple[Any, slice | np.ndarray]]:
    """Each function's rows (positions, in table order), functions as ``groupby(sort=True, observed=True)``.

    A categorical column (what :func:`~quiho.trace.events_to_calls` and the store give) is split by its codes:
    slices when the table is sorted by function, as it comes from ``events_to_calls``, else one stable sort,
    instead of pandas materialising a sub-frame of every column per group. Other columns become categorical
    first (sorted categories, missing names dropped: groupby's order and ``dropna``).
    """
    if not isinstance(function.dtype, pd.CategoricalDtype):
        function = function.astype("category")
    codes = function.cat.codes.to_numpy()
    order: np.ndarray | None = None
    if codes.size > 1 and bool((codes[1:] < codes[:-1]).any()):
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
    present = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(function.cat.categories)))
    lo = np.searchsorted(codes, present, side="left")
    hi = np.searchsorted(codes, present, side="right")
    cats = function.cat.categories
    return [(cats[c], slice(a, b) if order is None else order[a:b])
            for c, a, b in zip(present.tolist(), lo.tolist(), hi.tolist(), strict=True)]


_Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]


class _PerunResource(BaseModel):
    """One ``resources`` entry: lists of numbers keyed by what they measure (other keys are kept unchecked)."""

    model_config = ConfigDict(extra="allow")

    amount: list[_Number] = []
    exclusive: list[_Number] | None = None


class _PerunResourceType(BaseModel):
    model_config = ConfigDict(extra="allow")

    uid: str | int | None = None


class _PerunHeader(BaseModel):
    model_config = ConfigDict(extra="allow")

    units: dict[str, str] = {}


class _PerunDocument(BaseModel):
    """The parts of a Perun ``.perf`` document quiho reads; the shape is checked here, once, at the boundary."""

    model_config = ConfigDict(extra="allow")

    header: _PerunHeader = _PerunHeader()
    resources: dict[str, _PerunResource]
    resource_type_map: dict[str, _PerunResourceType]


_NUMBERS = TypeAdapter(list[_Number])
#: Pydantic error types in JSON words (its own messages name Python classes).
_JSON_KINDS = {"model_type": "should be a JSON object", "dict_type": "should be a JSON object",
               "list_type": "should be a JSON array", "float_type": "should be a number",
               "finite_number": "should be a finite number", "string_type": "should be a string"}


def _validation_line(exc: ValidationError) -> str:
    """First problem of a validation error as ``where: what`` (plus how many more), on one line."""
    errs = exc.errors()
    first = errs[0]
    where = ".".join(str(x) for x in first["loc"]) or "value"
    what = _JSON_KINDS.get(first["type"], first["msg"])
    more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
    return printable(f"{where}: {what}{more}")


def load_perun_profile(path: Path, x_key: str | None = None) -> Profile:
    """Read a Perun ``.perf`` JSON profile (resources, not its stored models).

    ``amount`` becomes ``y``; ``x`` is ``x_key`` if given, else ``structure-unit-size``, else ``call-order``,
    else the position. ``exclusive`` is used when present. The unit is taken from the header but Perun's trace
    profiles label nanoseconds as ``us``; that label is passed through unchanged. The document's
    shape (objects where objects belong, finite numbers in the value lists) is validated before anything is read.

    Raises
    ------
    ImportDataError
        The file is missing, not JSON, or not a Perun profile of the expected shape.
    """
    try:
        raw: Any = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ImportDataError(f"cannot read {path}: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ImportDataError(f"{path} is not JSON ({_json_reason(exc)})") from exc
    except RecursionError as exc:
        raise ImportDataError(f"{path} is not a Perun profile (JSON nested too deeply)") from exc
    if not isinstance(raw, dict) or "resources" not in raw or "resource_type_map" not in raw:
        raise ImportDataError(f"{path} is not a Perun profile (no 'resources' / 'resource_type_map')")
    try:
        doc = _PerunDocument.model_validate(raw)
    except ValidationError as exc:
        raise ImportDataError(f"{path} is not a Perun profile of the expected shape: {_validation_line(exc)}") from exc
    unit = next(iter(doc.header.units.values()), "")
    acc: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = {}
    for key, res in doc.resources.items():
        meta = doc.resource_type_map.get(key)
        uid = str(meta.uid if meta is not None and meta.uid is not None else key.rsplit("#", 1)[0])
        if uid.startswith("!"):  # Perun's !ProcessResource! / !ThreadResource! lifetimes
            continue
        y = np.asarray(res.amount, dtype=float)
        xs = _x_values(path, key, res, x_key)
        xv = np.arange(y.size, dtype=float) if xs is None else xs
        ex = np.asarray(res.exclusive, dtype=float) if res.exclusive is not None else None
        if xv.size != y.size or (ex is not None and ex.size != y.size):
            raise ImportDataError(f"{path}: resource {printable(key)} has {xv.size} x values and "
                                  f"{'no' if ex is None else ex.size} exclusive values for {y.size} amounts")
        acc.setdefault(uid, []).append((xv, y, ex))
    funcs = {}
    for uid, parts in acc.items():
        xv = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        exl = [p[2] for p in parts]
        ex = np.concatenate([e for e in exl if e is not None]) if all(e is not None for e in exl) else None
        funcs[uid] = Samples.of(xv, y, ex)
    return Profile(funcs, unit or "?", str(path))


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}"
    return "not UTF-8 text"


def _x_values(path: Path, key: str, res: _PerunResource, x_key: str | None) -> np.ndarray | None:
    """The resource's x values: ``x_key``, else the first of Perun's x keys present, else None (positions)."""
    keys = [x_key] if x_key else ["structure-unit-size", "call-order"]
    extra = res.model_extra or {}
    k = next((k for k in keys if k in extra), None)
    if k is None:
        if x_key:
            raise ImportDataError(f"{path}: resource {printable(key)} has no {x_key!r}")
        return None
    try:
        return np.asarray(_NUMBERS.validate_python(extra[k]), dtype=float)
    except ValidationError as exc:
        raise ImportDataError(f"{path}: resource {printable(key)}, {printable(k)}: {_validation_line(exc)}") from exc
