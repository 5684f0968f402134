"""Reading histories from CSV and quiho runs, and keeping them in the store."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quiho._version import __version__
from quiho.errors import HistoryError, ImportDataError, UnknownTargetError
from quiho.history._model import History
from quiho.store import Store, utcnow

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


def ensure_series(store: Store, name: str, source: str, unit: str = "",
                  config: Mapping[str, str] | None = None) -> int:
    """Id of series ``name``, creating it if needed."""
    with store.transaction() as c:
        row = c.execute("SELECT id FROM history_series WHERE name = ?", (name,)).fetchone()
        if row:
            return int(row[0])
        cur = c.execute("INSERT INTO history_series(name, unit, source, config_json, created_at, quiho_version) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (name, unit, source, json.dumps(dict(config or {}), sort_keys=True), utcnow(), __version__))
        return int(cur.lastrowid or 0)


def _series_id(store: Store, name: str) -> int:
    row = store.conn.execute("SELECT id FROM history_series WHERE name = ?", (name,)).fetchone()
    if row is None:
        names = [r[0] for r in store.conn.execute("SELECT name FROM history_series ORDER BY name LIMIT 20")]
        hint = f"; stored series: {', '.join(names)}" if names else "; import one with 'quiho history import'"
        raise UnknownTargetError(f"no history series {name!r} in {store.path}{hint}")
    return int(row[0])


def add_revisions(store: Store, series_id: int, revisions: Sequence[str]) -> None:
    """Declare the ordered revisions of a series as ``pending`` (existing ones keep their status).

    Raises
    ------
    HistoryError
        A stored revision now sits at a different position (the range changed):
        use another series name.
    """
    with store.transaction() as c:
        have = {r["revision"]: int(r["ord"]) for r in
                c.execute("SELECT revision, ord FROM history_revisions WHERE series_id = ?", (series_id,))}
        for o, rev in enumerate(revisions):
            if rev in have:
                if have[rev] != o:
                    raise HistoryError(f"revision {rev} was stored at position {have[rev]}, now {o}: the revision "
                                       "range changed; sample it into a new --series")
                continue
            c.execute("INSERT INTO history_revisions(series_id, revision, ord, status) VALUES (?, ?, ?, 'pending')",
                      (series_id, rev, o))


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


def record_measurement(store: Store, series_id: int, revision: str, values: Sequence[float],
                       machine: Mapping[str, object] | None = None) -> None:
    """Store the repetitions of one revision (with the machine facts) and mark it ``ok``."""
    with store.transaction() as c:
        rid = c.execute("SELECT id FROM history_revisions WHERE series_id = ? AND revision = ?",
                        (series_id, revision)).fetchone()[0]
        c.execute("DELETE FROM history_points WHERE revision_id = ?", (rid,))
        c.executemany("INSERT INTO history_points(revision_id, repetition, value) VALUES (?, ?, ?)",
                      [(rid, i, float(v)) for i, v in enumerate(values)])
        c.execute("UPDATE history_revisions SET status='ok', reason=NULL, stderr_tail=NULL, measured_at=?, "
                  "machine_json=? WHERE id = ?", (utcnow(), json.dumps(dict(machine or {}), sort_keys=True), rid))


def record_failure(store: Store, series_id: int, revision: str, reason: str, stderr_tail: str = "",
                   machine: Mapping[str, object] | None = None) -> None:
    """Mark one revision ``failed`` with the reason (samplers never retry it)."""
    with store.transaction() as c:
        c.execute("UPDATE history_revisions SET status='failed', reason=?, stderr_tail=?, measured_at=?, "
                  "machine_json=? WHERE series_id = ? AND revision = ?",
                  (reason, stderr_tail[-4000:], utcnow(), json.dumps(dict(machine or {}), sort_keys=True),
                   series_id, revision))


def load_state(store: Store, name: str) -> list[RevisionState]:
    """Every revision of series ``name`` in order, measured or not."""
    sid = _series_id(store, name)
    rows = store.conn.execute("SELECT id, revision, ord, status, reason FROM history_revisions "
                              "WHERE series_id = ? ORDER BY ord", (sid,)).fetchall()
    vals: dict[int, list[float]] = {}
    for r in store.conn.execute("SELECT p.revision_id, p.value FROM history_points p JOIN history_revisions r "
                                "ON r.id = p.revision_id WHERE r.series_id = ? ORDER BY p.repetition", (sid,)):
        vals.setdefault(int(r[0]), []).append(float(r[1]))
    return [RevisionState(r["revision"], int(r["ord"]), r["status"], r["reason"], np.array(vals.get(r["id"], [])))
            for r in rows]


def save_history(store: Store, history: History, source: str) -> int:
    """Write ``history`` as series ``history.name``, replacing a stored series of that name."""
    with store.transaction() as c:
        c.execute("DELETE FROM history_series WHERE name = ?", (history.name,))
        cur = c.execute("INSERT INTO history_series(name, unit, source, config_json, created_at, quiho_version) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (history.name, history.unit, source, json.dumps(dict(history.config), sort_keys=True),
                         utcnow(), __version__))
        sid = int(cur.lastrowid or 0)
        now = utcnow()
        for rev, o, s in zip(history.revisions, history.orders, history.samples, strict=True):
            rid = c.execute("INSERT INTO history_revisions(series_id, revision, ord, status, measured_at) "
                            "VALUES (?, ?, ?, 'ok', ?)", (sid, rev, int(o), now)).lastrowid
            c.executemany("INSERT INTO history_points(revision_id, repetition, value) VALUES (?, ?, ?)",
                          [(rid, i, float(v)) for i, v in enumerate(s)])
    return sid


def load_history(store: Store, name: str) -> History:
    """The measured (``ok``) revisions of series ``name`` as a :class:`History`.

    Raises
    ------
    UnknownTargetError
        No such series.
    """
    sid = _series_id(store, name)
    row = store.conn.execute("SELECT unit, config_json FROM history_series WHERE id = ?", (sid,)).fetchone()
    ok = [s for s in load_state(store, name) if s.status == "ok" and s.values.size]
    return History(name, tuple(s.revision for s in ok), np.array([s.order for s in ok], dtype=np.int64),
                   tuple(s.values for s in ok), row["unit"], json.loads(row["config_json"]))


def list_series(store: Store) -> list[dict[str, object]]:
    """Name, unit, source and revision counts of every stored series."""
    rows = store.conn.execute(
        "SELECT s.name, s.unit, s.source, "
        "SUM(r.status = 'ok') AS ok, SUM(r.status = 'failed') AS failed, SUM(r.status = 'pending') AS pending "
        "FROM history_series s LEFT JOIN history_revisions r ON r.series_id = s.id GROUP BY s.id ORDER BY s.name")
    return [dict(r) for r in rows]


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
    rows = store.conn.execute(
        "SELECT version, value, unit, started_at, id FROM app_runs WHERE application = ? AND test = ? "
        "AND status = 'ok' ORDER BY COALESCE(started_at, ''), id", (application, test)).fetchall()
    if not rows:
        raise UnknownTargetError(f"no successful runs of {application}/{test} in {store.path}")
    revs: dict[str, list[float]] = {}
    for r in rows:
        revs.setdefault(r["version"], []).append(float(r["value"]))
    h = History(name or f"{application}/{test}", tuple(revs), np.arange(len(revs)),
                tuple(np.array(v) for v in revs.values()), rows[0]["unit"] or "")
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
