"""Reading histories from CSV and quiho runs, and keeping them in the store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quiho._facts import local_facts
from quiho.errors import HistoryError, ImportDataError, UnknownTargetError
from quiho.history._model import History, Summary
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
    "local_facts_dict",
]


def _series_name(base: str, config: Mapping[str, str]) -> str:
    if not config:
        return base
    return base + "[" + ",".join(f"{k}={v}" for k, v in config.items()) + "]"


#: cell texts that mean "no value" (compared case-insensitively); such values are skipped and counted
MISSING = frozenset({"", "nan", "null", "none", "na", "n/a"})


def _read_csv_frame(p: Path, needed: Sequence[str]) -> Any:
    """The CSV as a DataFrame of strings, after checking the header (duplicates, needed columns)."""
    import csv

    import pandas as pd

    if p.is_dir():
        raise ImportDataError(f"{p} is a directory: name a file")
    if not p.is_file():
        raise ImportDataError(f"no such file: {p}")
    try:
        with p.open(newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f), [])
    except PermissionError:
        raise ImportDataError(f"{p}: permission denied") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportDataError(f"{p}: not a readable CSV file: {str(exc).splitlines()[0]}") from None
    names = [h.strip() for h in header]
    seen: set[str] = set()
    dup = next((h for h in names if h in seen or seen.add(h)), None)  # type: ignore[func-returns-value]
    if dup is not None:
        raise ImportDataError(f"{p}: column {dup!r} appears twice in the header; which one is meant is ambiguous")
    missing = [c for c in needed if c not in names]
    if missing:
        from quiho._text import printable  # a header cell may hold a newline: the error stays one line

        raise ImportDataError(f"{p}: no column {missing[0]!r}; columns are: {printable(', '.join(names))}")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, skipinitialspace=True, encoding="utf-8-sig")
    except PermissionError:
        raise ImportDataError(f"{p}: permission denied") from None
    except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as exc:
        raise ImportDataError(f"{p}: not a readable CSV file: {str(exc).splitlines()[0]}") from None
    df.columns = [str(c).strip() for c in df.columns]
    if df.empty:
        raise ImportDataError(f"{p}: no rows")
    return df


def read_history_csv(path: str | Path, *, revision_col: str = "revision", value_col: str = "value",
                     order_col: str | None = None, config_cols: Sequence[str] = (), name: str | None = None,
                     unit: str = "") -> list[History]:
    """Read one history per combination of ``config_cols`` from a CSV file.

    Rows with the same revision (within a series) are repetitions. The order
    of revisions is ``order_col`` (integers) if given, else the order in
    which revisions first appear in the file. Empty, ``NaN``, ``null``,
    ``None``, ``NA`` and ``N/A`` values are skipped and counted in
    :attr:`History.missing` (a revision left without values is dropped).
    Linear in the number of rows.

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
    unit : str
        Unit of the values.

    Returns
    -------
    list of History
        In order of first appearance.

    Raises
    ------
    ImportDataError
        The file is missing or unreadable, lacks a named column or names a
        column twice.
    HistoryError
        A row has no revision, a value that is not a number (``1_000``
        included) or not finite, a non-integer or out-of-range order, or two
        revisions share an order (one-line message with the CSV line number).
    """
    import pandas as pd

    p = Path(path)
    df = _read_csv_frame(p, [revision_col, value_col, *([order_col] if order_col else []), *config_cols])
    # vectorised (pandas) so 200 k rows take a fraction of a second; errors name the first offending line
    rev = df[revision_col].str.strip()
    _first_bad(rev.eq(""), p, lambda i: f"missing revision in column {revision_col!r}")
    raw = df[value_col].str.strip()
    missing = raw.str.lower().isin(MISSING)
    values = pd.to_numeric(raw.where(~missing & ~raw.str.contains("_", regex=False), "x"), errors="coerce")
    _first_bad(values.isna() & ~missing, p, lambda i: f"value {raw.iloc[i]!r} in column {value_col!r} is not a number")
    _first_bad(~np.isfinite(values.fillna(0.0)), p,
               lambda i: f"value {raw.iloc[i]!r} in column {value_col!r} is not finite")
    keys = [df[c].str.strip() for c in config_cols]
    group_id = pd.MultiIndex.from_arrays(keys).factorize()[0] if keys else np.zeros(len(df), dtype=np.int64)
    orders = _orders(df[order_col].str.strip(), rev, group_id, p, str(order_col)) if order_col else None
    base = name or p.stem
    out = []
    for g in pd.unique(group_id):
        rows = np.flatnonzero(group_id == g)
        config = {c: str(k.iloc[rows[0]]) for c, k in zip(config_cols, keys, strict=True)}
        out.append(_group_history(rev.iloc[rows], values.iloc[rows], None if orders is None else orders[rows],
                                  _series_name(base, config), unit, config))
    return out


def _first_bad(mask: Any, p: Path, what: Any) -> None:
    """Raise a one-line HistoryError for the first True row of ``mask`` (line = row + 2: header, 1-based)."""
    bad = np.flatnonzero(np.asarray(mask, dtype=bool))
    if bad.size:
        i = int(bad[0])
        raise HistoryError(f"{p} line {i + 2}: {what(i)}")


def _orders(raw: Any, rev: Any, group_id: np.ndarray, p: Path, col: str) -> np.ndarray:
    """Integer orders of every row, checked: integers within ±2**53, one order per revision, one revision per order."""
    import pandas as pd

    ok = raw.str.fullmatch(r"[+-]?\d{1,16}")
    _first_bad(~ok, p, lambda i: f"order {raw.iloc[i]!r} in column {col!r} is not an integer"
               + (" within ±2**53" if str(raw.iloc[i]).lstrip("+-").isdigit() else ""))
    o = raw.astype(np.int64).to_numpy()
    _first_bad(np.abs(o) > 2**53, p, lambda i: f"order {raw.iloc[i]!r} in column {col!r} is beyond ±2**53")
    frame = pd.DataFrame({"g": group_id, "r": rev.to_numpy(), "o": o})
    first_o = frame.groupby(["g", "r"], sort=False)["o"].transform("first").to_numpy()
    _first_bad(first_o != o, p, lambda i: f"revision {rev.iloc[i]!r} has order {o[i]} but earlier {first_o[i]}")
    first_r = frame.groupby(["g", "o"], sort=False)["r"].transform("first").to_numpy()
    _first_bad(first_r != frame["r"].to_numpy(), p,
               lambda i: f"duplicate order {o[i]}: revisions {first_r[i]!r} and {rev.iloc[i]!r}")
    return o


def _group_history(rev: Any, values: Any, orders: np.ndarray | None, name: str, unit: str,
                   config: Mapping[str, str]) -> History:
    """One series from its rows: repetitions grouped by revision, missing values dropped and counted."""
    import pandas as pd

    codes, uniq = pd.factorize(rev, sort=False)  # revisions in order of first appearance
    pos = np.arange(len(uniq)) if orders is None else \
        pd.Series(orders).groupby(codes, sort=True).first().to_numpy()
    v = values.to_numpy(dtype=float)
    keep = ~np.isnan(v)
    codes_k, v_k = codes[keep], v[keep]
    by = np.argsort(codes_k, kind="stable")  # repetitions of a revision stay in file order
    counts = np.bincount(codes_k, minlength=len(uniq))
    present = np.flatnonzero(counts)  # a revision whose values are all missing is dropped
    parts = np.split(v_k[by], np.cumsum(counts)[:-1])
    sel = present[np.argsort(pos[present], kind="stable")]
    names = uniq.tolist()  # indexing a pandas Index per element costs ~10 us
    return History(name, tuple(str(names[i]) for i in sel), pos[sel], tuple(parts[i] for i in sel), unit, config,
                   int((~keep).sum()))


@dataclass(frozen=True)
class HistoryImport:
    """What an import wrote: series names, revisions and values per series."""

    path: str
    series: tuple[str, ...]
    revisions: tuple[int, ...]
    values: tuple[int, ...]


@dataclass(frozen=True)
class RevisionState:
    """One revision of a stored series: position, build status, repetitions (empty unless ``ok``) and summary.

    ``summary`` is what the harness reported of rounds it did not save (``values`` is then its centre), else None.
    """

    revision: str
    order: int
    status: str
    reason: str | None
    values: np.ndarray
    summary: Summary | None = None


def _series_id(store: Store, name: str) -> int:
    sid = _sq.series_id(store, name)
    if sid is None:
        names = _sq.series_names(store, 20)
        hint = f"; stored series: {', '.join(names)}" if names else "; import one with 'quiho history import'"
        raise UnknownTargetError(f"no history series {name!r} in {store}{hint}")
    return sid


def local_facts_dict() -> dict[str, object]:
    """The facts of this machine, load included, as a dict for a record (:class:`quiho._facts.MachineFacts`)."""
    return local_facts().to_dict()


def load_state(store: Store, name: str) -> list[RevisionState]:
    """Every revision of series ``name`` in order, measured or not."""
    return [RevisionState(r.revision, r.order, r.status, r.reason, np.array(r.values),
                          None if r.summary is None else Summary.from_dict(r.summary))
            for r in _sq.revisions(store, _series_id(store, name))]


def save_history(store: Store, history: History, source: str) -> int:
    """Write ``history`` as series ``history.name``, replacing a stored series of that name."""
    summaries = history.summaries or (None,) * len(history.revisions)
    rows = [_sq.StoredRevision(r, int(o), "ok", None, tuple(map(float, v)), None if x is None else x.to_dict())
            for r, o, v, x in zip(history.revisions, history.orders, history.samples, summaries, strict=True)]
    return _sq.replace_series(store, history.name, history.unit, source, history.config, rows)


def load_history(store: Store, name: str) -> History:
    """The measured (``ok``) revisions of series ``name`` as a :class:`History`.

    Raises
    ------
    UnknownTargetError
        No such series.
    """
    return _load_with_state(store, name)[0]


def _load_with_state(store: Store, name: str) -> tuple[History, list[RevisionState]]:
    """The history of series ``name`` and the state of all its revisions, read once."""
    unit, config = _sq.series_meta(store, _series_id(store, name))
    state = load_state(store, name)
    ok = [s for s in state if s.status == "ok" and s.values.size]
    return History(name, tuple(s.revision for s in ok), np.array([s.order for s in ok], dtype=np.int64),
                   tuple(s.values for s in ok), unit, config, summaries=tuple(s.summary for s in ok)), state


def import_history_csv(store: Store, path: str | Path, histories: Sequence[History] | None = None,
                       **kwargs: object) -> HistoryImport:
    """Read ``path`` with :func:`read_history_csv` (same keyword arguments) and store every series.

    Validation happens before the store is touched, so a bad file changes nothing; a series whose values are
    all missing is refused (:class:`~quiho.errors.ImportDataError`). ``histories``, if
    given, are what :func:`read_history_csv` already returned for ``path`` (not read twice).
    """
    hs = list(histories) if histories is not None else read_history_csv(path, **kwargs)  # type: ignore[arg-type]
    for h in hs:  # an empty series would be stored as a history without revisions: refuse before writing
        if not len(h):
            raise ImportDataError(f"{path}: series {h.name!r} has no values ({h.missing} missing skipped); "
                                  "nothing stored")
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
        raise UnknownTargetError(f"no successful runs of {application}/{test} in {store}")
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
    ImportDataError
        The file's series has no values (all missing).
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
        elif len(hs) > 1:
            raise UsageError(f"{p} holds {len(hs)} series; pick one with --series: {', '.join(h.name for h in hs)}")
        h = pick[0] if series is not None else hs[0]
        if not len(h):
            raise ImportDataError(f"{p}: series {h.name!r} has no values ({h.missing} missing skipped)")
        return h, []
    from quiho.errors import StoreError

    try:
        st = open_store(store_path, create=False)
    except StoreError as exc:
        raise UnknownTargetError(f"{target} is not a file, and there is no store to look it up in ({exc})") from None
    with st:
        return _load_with_state(st, str(target))
