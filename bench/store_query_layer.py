"""What the store's query layer costs: SQLAlchemy Core ``text()`` (quiho.store's Connection) against the bare driver.

Usage:  python bench/store_query_layer.py --url postgresql://USER@HOST:PORT/DB [--rows 200000] [--selects 2000]

On one SQLite file and one (empty, scratch) PostgreSQL database, times the two shapes of store traffic:

* ``executemany`` of ``--rows`` three-column INSERTs in one transaction (an import's points);
* ``--selects`` single-row SELECTs by key (what ``detect --all`` does per series);

once through the bare driver (sqlite3 / psycopg 3, each with its own placeholder style) and once through
:class:`quiho.store._conn.Connection` (SQLAlchemy 2 ``text()``, one SQL text for both). Prints CPU seconds of this
process and wall seconds (the PostgreSQL server's work shows in wall only). The table backs the choice of
SQLAlchemy Core over driver-specific SQL in docs/design.md.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import sqlalchemy as sa

from quiho.store._conn import Connection
from quiho.store._location import parse_location

DDL = "CREATE TABLE pts (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v DOUBLE PRECISION NOT NULL)"


def clock(fn: Callable[[], None]) -> tuple[float, float]:
    c, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - w


def bare(kind: str, target: str, rows: list[tuple[int, int, float]], n_sel: int) -> list[tuple[float, float]]:
    if kind == "sqlite":
        conn: object = sqlite3.connect(target, isolation_level=None)
        mark, begin = "?", "BEGIN IMMEDIATE"
    else:
        conn = psycopg.connect(target, autocommit=True)
        mark, begin = "%s", "BEGIN"
    c = conn.cursor()  # type: ignore[attr-defined]
    c.execute("DROP TABLE IF EXISTS pts")
    c.execute(DDL)

    def insert() -> None:
        c.execute(begin)
        c.executemany(f"INSERT INTO pts(id, k, v) VALUES ({mark}, {mark}, {mark})", rows)
        c.execute("COMMIT")

    def select() -> None:
        for i in range(n_sel):
            c.execute(f"SELECT v FROM pts WHERE id = {mark}", (i * 7 + 1,))
            c.fetchone()

    out = [clock(insert), clock(select)]
    conn.close()  # type: ignore[attr-defined]
    return out


def layer(target: str, rows: list[tuple[int, int, float]], n_sel: int) -> list[tuple[float, float]]:
    loc = parse_location(target)
    url = f"sqlite:///{target}" if loc.backend == "sqlite" else loc.url
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    conn = Connection(engine.connect(), loc)
    conn.execute("DROP TABLE IF EXISTS pts")
    conn.execute(DDL)

    def insert() -> None:
        conn.execute("BEGIN IMMEDIATE" if loc.backend == "sqlite" else "BEGIN")
        conn.executemany("INSERT INTO pts(id, k, v) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")

    def select() -> None:
        for i in range(n_sel):
            conn.execute("SELECT v FROM pts WHERE id = ?", (i * 7 + 1,)).fetchone()

    out = [clock(insert), clock(select)]
    conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="a scratch PostgreSQL database (a table 'pts' is made and dropped)")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--selects", type=int, default=2000)
    args = ap.parse_args()
    rows = [(i + 1, i % 50, float(i) / 3) for i in range(args.rows)]
    pg_bare = args.url.split("://", 1)[1]
    with tempfile.TemporaryDirectory() as d:
        res = {
            ("sqlite", "sqlite3"): bare("sqlite", str(Path(d) / "a.db"), rows, args.selects),
            ("sqlite", "SQLAlchemy text()"): layer(str(Path(d) / "b.db"), rows, args.selects),
            ("postgresql", "psycopg 3"): bare("pg", "postgresql://" + pg_bare, rows, args.selects),
            ("postgresql", "SQLAlchemy text()"): layer(args.url, rows, args.selects),
        }
    print(f"{'backend':<11} {'layer':<18} {'insert CPU s':>12} {'insert wall s':>13} {'selects CPU s':>13} "
          f"{'selects wall s':>14}")
    print(f"{'-' * 11} {'-' * 18} {'-' * 12} {'-' * 13} {'-' * 13} {'-' * 14}")
    for (backend, name), ((ic, iw), (sc, sw)) in res.items():
        print(f"{backend:<11} {name:<18} {ic:>12.2f} {iw:>13.2f} {sc:>13.2f} {sw:>14.2f}")
    print(f"({args.rows:,} rows inserted in one transaction; {args.selects:,} single-row selects)")


if __name__ == "__main__":
    main()
