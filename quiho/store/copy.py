"""``quiho store copy SRC DST``: every row and every trace file of one store into another, on either backend.

Rows keep their ids (profiles, IRUPs and trace files refer to them), so the destination must be empty. The copy
is one transaction on the destination; afterwards the rows of every table are counted on both sides and any
difference is an error, so a copy that returns is complete.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import sqlalchemy as sa

from quiho.errors import StoreError
from quiho.store._db import Store

__all__ = ["CopySummary", "copy_store", "table_counts"]

#: Rows read and written per batch (bounded memory for a store of millions of points).
CHUNK = 20_000


@dataclass(frozen=True)
class CopySummary:
    """What ``copy_store`` copied: rows per table (checked equal on both sides) and trace files."""

    source: str
    destination: str
    rows: dict[str, int]
    files: int

    def to_dict(self) -> dict[str, object]:
        """The ``--json`` document (with ``total_rows``)."""
        return {"source": self.source, "destination": self.destination, "rows": self.rows, "files": self.files,
                "total_rows": sum(self.rows.values())}


def _tables(store: Store) -> list[sa.Table]:
    """The store's tables in foreign-key order (parents first), without ``schema_versions``."""
    meta = sa.MetaData()
    meta.reflect(bind=store.conn.sa)
    return [t for t in meta.sorted_tables if t.name != "schema_versions"]


def table_counts(store: Store) -> dict[str, int]:
    """Rows per table (``schema_versions`` aside), by table name."""
    return {t.name: int(store.conn.execute(f"SELECT COUNT(*) FROM {t.name}").scalar()) for t in _tables(store)}


def copy_store(src: Store, dst: Store) -> CopySummary:
    """Copy every row of ``src`` into the empty store ``dst``, and the trace files into ``dst``'s files directory.

    Raises
    ------
    StoreError
        ``dst`` holds rows already, lacks a table of ``src`` (a newer or extended source), has other schema
        versions, or the counts differ after the copy (nothing is kept then: one transaction).
    """
    if src.versions() != dst.versions():
        raise StoreError(f"store {src} has schema versions {src.versions()} but {dst} has {dst.versions()}: "
                         "open both with the same quiho")
    have = table_counts(dst)
    full = sorted(t for t, n in have.items() if n)
    if full:
        raise StoreError(f"store {dst} is not empty ({', '.join(full)} hold rows): copy into a new store")
    tables = _tables(src)
    missing = [t.name for t in tables if t.name not in have]
    if missing:
        raise StoreError(f"store {dst} lacks table(s) {', '.join(missing)} of {src}")
    dst_tables = {t.name: t for t in _tables(dst)}
    with dst.transaction():
        for t in tables:
            _copy_table(src, dst, t, dst_tables[t.name])
        if dst.backend == "postgresql":
            _reset_sequences(dst, list(dst_tables.values()))
    rows = table_counts(src)
    after = table_counts(dst)
    bad = {t: (n, after.get(t)) for t, n in rows.items() if after.get(t) != n}
    if bad:
        raise StoreError(f"copy from {src} to {dst} is incomplete (source, destination rows): {bad}")
    return CopySummary(str(src), str(dst), rows, _copy_files(src, dst))


def _copy_table(src: Store, dst: Store, table: sa.Table, target: sa.Table) -> None:
    cols = [c.name for c in table.columns if c.name in target.columns]
    order = ", ".join(c.name for c in table.primary_key.columns) or cols[0]
    insert = target.insert()
    result = src.conn.sa.execute(sa.text(f"SELECT {', '.join(cols)} FROM {table.name} ORDER BY {order}"))
    while True:
        chunk = result.fetchmany(CHUNK)
        if not chunk:
            break
        dst.conn.sa.execute(insert, [dict(zip(cols, r, strict=True)) for r in chunk])


def _reset_sequences(dst: Store, tables: list[sa.Table]) -> None:
    """Move each serial id's sequence past the copied ids (PostgreSQL; SQLite's rowid follows by itself)."""
    for t in tables:
        if "id" in t.columns and t.columns["id"].primary_key:
            dst.conn.execute(f"SELECT setval(pg_get_serial_sequence('{t.name}', 'id'), "
                             f"COALESCE(MAX(id), 1), MAX(id) IS NOT NULL) FROM {t.name}")


def _copy_files(src: Store, dst: Store) -> int:
    """Copy the trace files the rows refer to (``calls_path`` relative to the files directory); return how many."""
    if src.files_dir.resolve() == dst.files_dir.resolve():
        return 0
    n = 0
    for (rel,) in dst.conn.execute("SELECT calls_path FROM trace_runs WHERE calls_path != ''"):
        source, target = src.files_dir / rel, dst.files_dir / rel
        if not source.exists():
            continue  # the row's file was lost before the copy; quiho says so when it is read
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        except OSError as exc:
            raise StoreError(f"cannot copy {source} to {target}: {exc}") from exc
        n += 1
    return n
