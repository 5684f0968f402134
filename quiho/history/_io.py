"""Reading histories from CSV and quiho runs, and keeping them in the store."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quiho.errors import HistoryError, ImportDataError, UnknownTargetError
from quiho.history._model import History
from quiho.store import Store
from quiho.store import history as _sq
from quiho.store.history import add_revisions, ensure_series, list_series, record_failure, record_measurement

__all__ = [
    "read_history_csv",
    "save_history",
    "load_history",
    "list_series",
    "import_history_csv",
    "import_history_from_runs",
    "HistoryImport",
    "RevisionState",
    "ensure_series",
    "add_revisions",
    "record_measurement",
    "record_failure",
    "load_state",
    "open_history",
    "machine_facts",
]


def _series_name(base: str, config: Mapping[str, str]) -> str:
    if not config:
        return base
    return base + "[" + ",".join(f"{k}={v}" for k, v in config.items()) + "]"


def read_history_csv(path: str | Path, *, revision_col: str = "revision", value_col: str = "value",
                     order_col: str | None = None, config_cols: Sequence[str] = (), name: str | None = None,
                     unit: str = "") -> list[History]:
    """Read one history per combination of ``config_cols`` from a CSV file.

    Rows with the same revision (within a series) are repetitions. The order
    of revisions is ``order_col`` (integers) if given, else the order in
    which revisions first appear in the file.

    Parameters
    ----------
    path : path-like
    revision_col, value_col : str
        Column names of the revision identifier and the metric.
    order_col : str, optional
        Integer position of each revision (gaps allowed: unmeasured revisions).
    config_cols : sequence of str
        Columns that split the file into series named ``name[col=value,...]``.
    name : str, optional
        Base series name; default the file stem.

    Returns
    -------
    list of History
        In order of first appearance.

    Raises
    ------
    ImportDataError
        The file is missing, unreadable, or lacks a named column.
    HistoryError
        A row has no revision, a non-numeric or non-finite value, a
        non-integer order, or two revisions share an order (one-line message
        with the CSV line number).
    """
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise ImportDataError(f"no such file: {p}")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ImportDataError(f"{p}: not a readable CSV file: {str(exc).splitlines()[0]}") from None
    needed = [revision_col, value_col, *([order_col] if order_col else []), *config_cols]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ImportDataError(f"{p}: no column {missing[0]!r}; columns are: {', '.join(map(str, df.columns))}")
    if df.empty:
        raise ImportDataError(f"{p}: no rows")
    base = name or p.stem
    groups: dict[tuple[str, ...], dict[str, object]] = {}
    for i, row in enumerate(df.itertuples(index=False)):
        line = i + 2
        rec = dict(zip(df.columns, row, strict=True))
        rev = str(rec[revision_col]).strip()
        if not rev:
            raise HistoryError(f"{p} line {line}: missing revision in column {revision_col!r}")
        raw = str(rec[value_col]).strip()
        try:
            value = float(raw)
        except ValueError:
            raise HistoryError(f"{p} line {line}: value {raw!r} in column {value_col!r} is not a number") from None
        if not math.isfinite(value):
            raise HistoryError(f"{p} line {line}: value {raw!r} in column {value_col!r} is not finite")
        key = tuple(str(rec[c]).strip() for c in config_cols)
        g = groups.setdefault(key, {"revs": {}, "orders": {}})
        revs: dict[str, list[float]] = g["revs"]  # type: ignore[assignment]
        orders: dict[str, int] = g["orders"]  # type: ignore[assignment]
        if order_col:
            raw_o = str(rec[order_col]).strip()
            try:
                o = int(raw_o)
            except ValueError:
                raise HistoryError(f"{p} line {line}: order {raw_o!r} in column {order_col!r} is not an integer") \
                    from None
            if rev in orders and orders[rev] != o:
                raise HistoryError(f"{p} line {line}: revision {rev!r} has order {o} but earlier {orders[rev]}")
            other = next((r for r, oo in orders.items() if oo == o and r != rev), None)
            if other is not None:
                raise HistoryError(f"{p} line {line}: duplicate order {o}: revisions {other!r} and {rev!r}")
            orders[rev] = o
        else:
            orders.setdefault(rev, len(orders))
        revs.setdefault(rev, []).append(value)
    out = []
    for key, g in groups.items():
        orders = g["orders"]  # type: ignore[assignment]
        revs = g["revs"]  # type: ignore[assignment]
        ordered = sorted(orders, key=lambda r: orders[r])
        config = dict(zip(config_cols, key, strict=True))
        out.append(History(_series_name(base, config), tuple(ordered), np.array([orders[r] for r in ordered]),
                           tuple(np.array(revs[r]) for r in ordered), unit, config))
    return out


@dataclass(frozen=True)
class HistoryImport:
    """What an import wrote: series names, revisions and values per series."""

    path: str
    series: tuple[str, ...]
    revisions: tuple[int, ...]
    values: tuple[int, ...]


@dataclass(frozen=True)
class RevisionState:
    """One revision of a stored series: position, build status and repetitions (empty unless ``ok``)."""

    revision: str
    order: int
    status: str
    reason: str | None
    values: np.ndarray


def _series_id(store: Store, name: str) -> int:
    sid = _sq.series_id(store, name)
    if sid is None:
        names = _sq.series_names(store, 20)
        hint = f"; stored series: {', '.join(names)}" if names else "; import one with 'quiho history import'"
        raise UnknownTargetError(f"no history series {name!r} in {store.path}{hint}")
    return sid


def machine_facts() -> dict[str, object]:
    """Host name, OS, CPU model and count, and the 1-minute load average, for the record of a measurement."""
    import os
    import platform

    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return {"host": platform.node(), "os": platform.platform(), "cpu": model, "cpus": os.cpu_count(),
            "load1": load}


def load_state(store: Store, name: str) -> list[RevisionState]:
    """Every revision of series ``name`` in order, measured or not."""
    return [RevisionState(r.revision, r.order, r.status, r.reason, np.array(r.values))
            for r in _sq.revisions(store, _series_id(store, name))]


def save_history(store: Store, history: History, source: str) -> int:
    """Write ``history`` as series ``history.name``, replacing a stored series of that name."""
    return _sq.replace_series(store, history.name, history.unit, source, history.config, history.revisions,
                              [int(o) for o in history.orders], history.samples)


def load_history(store: Store, name: str) -> History:
    """The measured (``ok``) revisions of series ``name`` as a :class:`History`.

    Raises
    ------
    UnknownTargetError
        No such series.
    """
    unit, config = _sq.series_meta(store, _series_id(store, name))
    ok = [s for s in load_state(store, name) if s.status == "ok" and s.values.size]
    return History(name, tuple(s.revision for s in ok), np.array([s.order for s in ok], dtype=np.int64),
                   tuple(s.values for s in ok), unit, config)


def import_history_csv(store: Store, path: str | Path, **kwargs: object) -> HistoryImport:
    """Read ``path`` with :func:`read_history_csv` (same keyword arguments) and store every series.

    Validation happens before the store is touched, so a bad file changes nothing.
    """
    hs = read_history_csv(path, **kwargs)  # type: ignore[arg-type]
    for h in hs:
        save_history(store, h, f"csv:{Path(path).name}")
    return HistoryImport(str(path), tuple(h.name for h in hs), tuple(len(h) for h in hs),
                         tuple(sum(s.size for s in h.samples) for h in hs))


def import_history_from_runs(store: Store, application: str, test: str, name: str | None = None) -> HistoryImport:
    """Turn the ``app_runs`` of ``application``/``test`` into a history over ``version``.

    Versions are ordered by their first run (``started_at``, then insertion);
    every ``ok`` value of a version, on any host, is a repetition.

    Raises
    ------
    UnknownTargetError
        No successful runs for the target.
    """
    rows = _sq.ok_app_run_values(store, application, test)
    if not rows:
        raise UnknownTargetError(f"no successful runs of {application}/{test} in {store.path}")
    revs: dict[str, list[float]] = {}
    for version, value, _unit in rows:
        revs.setdefault(version, []).append(value)
    h = History(name or f"{application}/{test}", tuple(revs), np.arange(len(revs)),
                tuple(np.array(v) for v in revs.values()), rows[0][2])
    save_history(store, h, "runs")
    return HistoryImport(f"runs:{application}/{test}", (h.name,), (len(h),), (len(rows),))


def open_history(target: str | Path, *, store_path: str | Path | None = None, series: str | None = None,
                 revision_col: str = "revision", value_col: str = "value", order_col: str | None = None,
                 config_cols: Sequence[str] = (), unit: str = "") -> tuple[History, list[RevisionState]]:
    """A history from a CSV file (if ``target`` is one) or a stored series named ``target``.

    Returns the history and, for a stored series, the state of every revision
    (pending and failed ones included; empty for a CSV file).

    Raises
    ------
    UsageError
        A CSV file holds several series and ``series`` does not pick one.
    UnknownTargetError
        No file and no stored series of that name.
    """
    from quiho.errors import UsageError
    from quiho.store import open_store

    p = Path(target)
    if p.is_file():
        hs = read_history_csv(p, revision_col=revision_col, value_col=value_col, order_col=order_col,
                              config_cols=config_cols, unit=unit)
        if series is not None:
            pick = [h for h in hs if h.name == series]
            if not pick:
                raise UsageError(f"{p} has no series {series!r}; it has: {', '.join(h.name for h in hs)}")
            return pick[0], []
        if len(hs) > 1:
            raise UsageError(f"{p} holds {len(hs)} series; pick one with --series: {', '.join(h.name for h in hs)}")
        return hs[0], []
    from quiho.errors import StoreError

    try:
        st = open_store(store_path, create=False)
    except StoreError as exc:
        raise UnknownTargetError(f"{target} is not a file, and there is no store to look it up in ({exc})") from None
    with st:
        return load_history(st, str(target)), load_state(st, str(target))
