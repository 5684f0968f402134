"""Importer for the quiho paper's ``results.csv`` (ivotron/quiho-popper).

One fingerprint run per batch (the ``timestamp`` column is a batch id, not a
time); stress-ng rows become measurements, every other benchmark becomes
application runs addressed as ``BENCHMARK/TEST``. Batches whose stress-ng
values are identical to an earlier batch's (the paper copied one run into two
batches) are kept but marked ``duplicate_of`` so analyses can skip them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from quiho.errors import ImportDataError
from quiho.store._db import Connection, Store, dumps, utcnow
from quiho.store.fingerprints import insert_complete_run, insert_ok_measurements
from quiho.store.hosts import ensure_hosts
from quiho.store.imports import delete_batches

__all__ = ["ImportSummary", "import_quiho_popper", "read_quiho_popper", "SOURCE"]

SOURCE = "quiho-popper"
REQUIRED = ("timestamp", "benchmark", "machine", "repetition", "test", "result")
STRESSNG = "stressng"
#: Benchmarks whose metric is a rate (higher is better); the others are runtimes in seconds.
_HIGHER_IS_BETTER = {"redisbench": "requests/s", "stream": "MB/s", "fio": "IOPS"}


@dataclass(frozen=True)
class ImportSummary:
    """What an import wrote."""

    path: str
    batches: int
    duplicate_batches: dict[str, str]
    hosts: int
    measurements: int
    app_runs: int
    targets: int
    merged_duplicate_rows: int


def read_quiho_popper(path: str | Path) -> pd.DataFrame:
    """Read and validate ``results.csv`` without touching any store.

    Raises
    ------
    ImportDataError
        Missing or unreadable file, missing columns, or non-numeric values.
    """
    p = Path(path)
    if p.is_dir():
        raise ImportDataError(f"{p} is a directory: name a file")
    if not p.is_file():
        raise ImportDataError(f"no such file: {p}")
    try:
        # `null` is a stressor name: never let pandas turn it into NaN.
        df = pd.read_csv(p, keep_default_na=False, na_values=[""], dtype={"test": str, "machine": str})
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise ImportDataError(f"{p} is not a readable CSV: {str(exc).splitlines()[0]}") from exc
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ImportDataError(
            f"{p} lacks column(s) {', '.join(missing)}; a quiho-popper results.csv has {', '.join(REQUIRED)}"
        )
    df = df.loc[:, list(REQUIRED)].copy()
    for col in ("timestamp", "repetition", "result"):
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna() & df[col].notna()
        if bad.any():
            i = int(bad.idxmax())
            raise ImportDataError(f"{p} line {i + 2}: column {col!r} is not a number: {df.loc[i, col]!r}")
        _refuse_out_of_range(p, df[col], num, col)
        df[col] = num
    # The original harness keyed stress-ng results by the YAML `stressor:` field, which
    # YAML reads as None for the stressor called `null`: its rows have an empty test name.
    empty_null = (df["benchmark"] == STRESSNG) & df["test"].isna()
    df.loc[empty_null, "test"] = "null"
    nulls = df[["timestamp", "benchmark", "machine", "repetition", "test"]].isna().any(axis=1)
    if nulls.any():
        i = int(nulls.idxmax())
        raise ImportDataError(f"{p} line {i + 2}: empty key field")
    df = df.dropna(subset=["result"])
    df["timestamp"] = df["timestamp"].astype("int64").astype(str)
    df["repetition"] = df["repetition"].astype("int64")
    if df.empty:
        raise ImportDataError(f"{p} has no data rows")
    return df


#: Largest magnitude accepted in ``result``: far above any benchmark rate or runtime, and small enough that
#: squares and sums of a few thousand such values stay finite in the IRUP engine.
MAX_RESULT = 1e12
#: ``timestamp`` (a batch id) and ``repetition`` are integers; beyond 2**53 a float cannot hold them exactly.
MAX_INTEGER = 2.0**53


def _refuse_out_of_range(p: Path, raw: pd.Series, num: pd.Series, col: str) -> None:
    """Raise :class:`ImportDataError` naming the first line whose number would be stored altered or breaks analyses."""
    if col == "result":
        bad = num.notna() & ~(num.abs() <= MAX_RESULT)
        why = f"is not a finite number within ±{MAX_RESULT:g}"
    else:
        bad = num.notna() & ~((num.abs() < MAX_INTEGER) & (num == num.round()))
        why = "is not an integer (it would be stored altered)"
    if bad.any():
        i = int(bad.idxmax())
        raise ImportDataError(f"{p} line {i + 2}: column {col!r} value {raw.loc[i]!r} {why}")


def _merge_duplicates(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    # fio 'rw' writes read and write IOPS as two rows with one test name; the
    # paper's pivot averaged them. Keep the mean and the raw values.
    keys = ["timestamp", "benchmark", "machine", "repetition", "test"]
    g = df.groupby(keys, sort=False)["result"]
    out = g.agg(result="mean", n="size", values=list).reset_index()
    return out, int((out["n"] > 1).sum())


def _duplicate_batches(stress: pd.DataFrame) -> dict[str, str]:
    # Two batches are duplicates when their stress-ng tables are identical.
    sig: dict[str, str] = {}
    first_of: dict[int, str] = {}
    for batch in sorted(stress["timestamp"].unique(), key=int):
        t = stress[stress["timestamp"] == batch].sort_values(["machine", "repetition", "test"])
        h = hash(tuple(zip(t["machine"], t["repetition"], t["test"], t["result"].round(9), strict=True)))
        if h in first_of:
            sig[batch] = first_of[h]
        else:
            first_of[h] = batch
    return sig


def import_quiho_popper(store: Store, path: str | Path) -> ImportSummary:
    """Load a quiho-popper ``results.csv`` into ``store``.

    Idempotent: batches already imported from this source are replaced. The
    file is fully validated before the store is written, and the write is one
    transaction, so bad input leaves the store as it was.

    Parameters
    ----------
    store : Store
        Open store.
    path : path-like
        ``results.csv``.

    Returns
    -------
    ImportSummary

    Raises
    ------
    ImportDataError
        See :func:`read_quiho_popper`; also when the file has no stress-ng rows.
    """
    raw = read_quiho_popper(path)
    df, merged = _merge_duplicates(raw)
    stress = df[df["benchmark"] == STRESSNG]
    apps = df[df["benchmark"] != STRESSNG]
    if stress.empty:
        raise ImportDataError(f"{path} has no '{STRESSNG}' rows: nothing to fingerprint with")
    dups = _duplicate_batches(stress)
    batches = sorted(df["timestamp"].unique(), key=int)
    with store.transaction() as c:
        delete_batches(c, SOURCE, batches)
        host_ids = ensure_hosts(c, {m: {"label": m.split(".")[0], "source": SOURCE} for m in df["machine"].unique()})
        run_ids = _write_fingerprints(c, stress, dups, host_ids, str(path))
        _write_app_runs(c, apps, run_ids, host_ids)
    n_targets = apps.groupby(["benchmark", "test"]).ngroups
    return ImportSummary(
        path=str(path), batches=len(batches), duplicate_batches=dups, hosts=len(host_ids),
        measurements=len(stress), app_runs=len(apps), targets=n_targets, merged_duplicate_rows=merged,
    )


def _write_fingerprints(c: Connection, stress: pd.DataFrame, dups: dict[str, str], host_ids: dict[str, int],
                        path: str) -> dict[str, int]:
    """One ``complete`` run per batch with its measurements; duplicates point at their original. Batch → run id."""
    now = utcnow()
    params = {"file": path, "stressng": "0.07.29", "seconds": 10}
    run_ids = {b: insert_complete_run(c, SOURCE, b, "paper", params, now, now)
               for b in sorted(stress["timestamp"].unique(), key=int)}
    for batch, orig in dups.items():
        c.execute("UPDATE fingerprint_runs SET duplicate_of = ? WHERE id = ?", (run_ids[orig], run_ids[batch]))
    insert_ok_measurements(c, [
        (run_ids[b], host_ids[m], int(r), t, float(v))
        for b, m, r, t, v in zip(stress["timestamp"], stress["machine"], stress["repetition"], stress["test"],
                                 stress["result"], strict=True)
    ])
    return run_ids


def _write_app_runs(c: Connection, apps: pd.DataFrame, run_ids: dict[str, int],
                    host_ids: dict[str, int]) -> None:
    """Every non-stress-ng row as an ``ok`` application run ``BENCHMARK/TEST`` tied to its batch's fingerprint."""
    rows = []
    for rec in apps.itertuples(index=False):
        unit = _HIGHER_IS_BETTER.get(rec.benchmark, "s")
        extra = {"values": rec.values} if rec.n > 1 else {}
        rows.append((
            SOURCE, rec.timestamp, run_ids.get(rec.timestamp), host_ids[rec.machine], rec.benchmark,
            rec.test, int(rec.repetition), float(rec.result), unit,
            int(rec.benchmark in _HIGHER_IS_BETTER), dumps(extra),
        ))
    c.executemany(
        "INSERT INTO app_runs(source, batch, fingerprint_run_id, host_id, application, version, test, "
        "repetition, value, unit, higher_is_better, status, extra_json) "
        "VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, 'ok', ?)",
        rows,
    )
