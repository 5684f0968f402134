"""The store's connection on either backend: SQLAlchemy Core over sqlite3 or psycopg 3.

SQL is written once, in the portable subset both databases run (``ON CONFLICT``, ``RETURNING``, ``CASE``), and
bound by SQLAlchemy's :func:`~sqlalchemy.text` so each driver gets its own parameter style. Statements take named
parameters (a mapping) or DB-API ``?`` placeholders (a sequence): ``?`` becomes a SQLAlchemy named bind, nothing
else in the SQL is touched, so the component code written for sqlite3 (``conn.execute(sql, (a, b))``) runs
unchanged. Rows answer ``row[0]``, ``row["name"]`` and ``dict(row)`` like :class:`sqlite3.Row`.

Every driver failure that is a problem of the store (unreachable, refused, read-only, damaged, busy) arrives as a
one-line :class:`~quiho.errors.StoreError` naming the store by its password-free label; programming errors and
constraint violations stay as they are, so a traceback points at the code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from quiho.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd
    import sqlalchemy as sa

    from quiho.store._location import StoreLocation

__all__ = ["Connection", "Result", "Row"]

#: Rows after which a bulk insert refreshes PostgreSQL's planner statistics of its table.
ANALYZE_AFTER_ROWS = 10_000
_QMARK = re.compile(r"'(?:[^']|'')*'|\?|:(?=\w)")


@lru_cache(maxsize=1024)
def _statement(sql: str) -> tuple[Any, int]:
    """``sql`` as a :func:`sqlalchemy.text` and the number of its ``?`` placeholders (``:_1``, ``:_2`` ...)."""
    from sqlalchemy import text

    n = 0
    qmarks = "?" in sql

    def repl(m: re.Match[str]) -> str:
        nonlocal n
        s = m.group(0)
        if s == "?":
            n += 1
            return f":_{n}"
        if s == ":" and qmarks:
            return "\\:"  # a colon beside ? placeholders is literal text, not a bind
        return s.replace(":", "\\:") if s.startswith("'") else s

    return text(_QMARK.sub(repl, sql) if qmarks or "'" in sql else sql), n


def _bind(sql: str, params: Any) -> tuple[Any, dict[str, Any]]:
    stmt, n = _statement(sql)
    if isinstance(params, Mapping):
        return stmt, dict(params)
    params = tuple(params)
    if len(params) != n:
        raise ValueError(f"statement has {n} '?' placeholder(s) but {len(params)} value(s) were given: {sql[:80]}")
    return stmt, {f"_{i}": v for i, v in enumerate(params, 1)}


@lru_cache(maxsize=256)
def _row_class(keys: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"_index": {k: i for i, k in reversed(list(enumerate(keys)))}, "__slots__": ()})


class Row(tuple[Any, ...]):
    """A result row: a tuple that also answers ``row["column"]`` and ``keys()`` (so ``dict(row)`` works)."""

    __slots__ = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                key = self._index[key]
            except KeyError:
                raise IndexError(f"no column {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


class Result:
    """Rows of one statement, read at once (statements in the store are small or read whole anyway)."""

    def __init__(self, rows: list[Row], rowcount: int = -1, lastrowid: int | None = None) -> None:
        self._rows = rows
        self._pos = 0
        self.rowcount = rowcount
        self._lastrowid = lastrowid

    @property
    def lastrowid(self) -> int | None:
        """SQLite's id of the row just inserted; PostgreSQL has none (a silent 0 would be a wrong id): it raises."""
        if self._lastrowid is None:
            raise TypeError("lastrowid exists on SQLite only: insert with 'RETURNING id' "
                            "(quiho.store._db.insert_id) so the id comes back on both backends")
        return self._lastrowid

    def fetchone(self) -> Any:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchall(self) -> list[Row]:
        out, self._pos = self._rows[self._pos:], len(self._rows)
        return out

    def scalar(self) -> Any:
        row = self.fetchone()
        return None if row is None else row[0]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class Connection:
    """One open connection: ``execute``/``executemany``/``frame`` plus the transaction statements of the store."""

    def __init__(self, sa_conn: sa.Connection, location: StoreLocation) -> None:
        self.sa = sa_conn
        self.location = location
        self.backend = location.backend
        self.path = location.path

    def execute(self, sql: str, parameters: Any = (), /) -> Result:
        """Run one statement; ``parameters`` is a mapping (``:name``) or a sequence (``?``)."""
        try:
            if not parameters and "?" not in sql and ":" not in sql:
                res = self.sa.exec_driver_sql(sql)
            else:
                res = self.sa.execute(*_bind(sql, parameters))
            return _result(res)
        except Exception as exc:
            raise translate(exc, self.location) from _cause(exc)

    def executemany(self, sql: str, seq: Sequence[Any] | Any, /) -> Result:
        """Run one statement for every parameter set of ``seq`` (mappings or sequences)."""
        rows = list(seq)
        if not rows:
            return Result([], 0)
        stmt, _ = _statement(sql)
        params = [_bind(sql, p)[1] for p in rows]
        try:
            res = self.sa.execute(stmt, params)
            return Result([], res.rowcount)
        except Exception as exc:
            raise translate(exc, self.location) from _cause(exc)

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Bulk insert (inside the caller's transaction): PostgreSQL's ``COPY``, SQLite's ``executemany``.

        ``COPY`` because row-by-row inserts cost PostgreSQL a round trip each even pipelined: 200 k points took
        2.2x SQLite's time that way (bench/store_backends.py). After a large insert PostgreSQL's statistics of
        ``table`` are refreshed (``ANALYZE``): with none, its planner scans whole tables for one series' points.
        """
        cols = ", ".join(columns)
        if self.backend != "postgresql":  # sqlite3's own ? style straight to the driver: no per-row dicts
            batch = [tuple(r) for r in rows]
            if not batch:
                return
            try:
                self.sa.exec_driver_sql(f"INSERT INTO {table}({cols}) VALUES ({', '.join('?' * len(columns))})",
                                        batch)
            except Exception as exc:
                raise translate(exc, self.location) from _cause(exc)
            return
        n = 0
        try:
            cur = self.sa.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row(r)
                    n += 1
            if n >= ANALYZE_AFTER_ROWS:
                cur.execute(f"ANALYZE {table}")
        except Exception as exc:
            raise translate(exc, self.location) from _cause(exc)

    def frame(self, sql: str, parameters: Any = ()) -> pd.DataFrame:
        """The rows of a query as a DataFrame, built as :func:`pandas.read_sql_query` builds it (``coerce_float``)."""
        import pandas as pd

        res = self.execute(sql, parameters)
        cols = list(getattr(res, "columns", []))
        return pd.DataFrame.from_records(res.fetchall(), columns=cols, coerce_float=True)

    def close(self) -> None:
        try:
            self.sa.close()
        except Exception:  # noqa: BLE001  (closing a connection the server already dropped)
            pass


def _result(res: Any) -> Result:
    if not res.returns_rows:
        return Result([], res.rowcount, _lastrowid(res) if res.dialect.name == "sqlite" else None)
    keys = tuple(res.keys())
    cls = _row_class(keys)
    out = Result([cls(r) for r in res.fetchall()], res.rowcount)
    out.columns = keys  # type: ignore[attr-defined]
    return out


def _lastrowid(res: Any) -> int | None:
    try:
        return res.lastrowid
    except Exception:  # noqa: BLE001  (psycopg has none: the store's inserts use RETURNING id)
        return None


def _cause(exc: BaseException) -> BaseException | None:
    """What a translated error chains to: the driver's own error, never SQLAlchemy's (it quotes the statement)."""
    return getattr(exc, "orig", None) or exc


# --- errors ----------------------------------------------------------------------------------------------------

#: PostgreSQL SQLSTATE classes and codes that are problems of the store, not of quiho's SQL, with what to say.
_PG_STATES: dict[str, str] = {
    "08": "cannot reach the server", "28": "access refused", "3D": "no such database",
    "42501": "read-only for this role", "25006": "read-only", "42P01": "lacks part of its schema",
    "42703": "lacks part of its schema", "40001": "busy (serialization failure)", "40P01": "busy (deadlock)",
    "55P03": "busy or locked", "57": "the server stopped", "53": "the server is out of resources",
    "58": "the server failed", "XX": "the server failed", "57014": "statement cancelled",
}


def translate(exc: BaseException, location: StoreLocation) -> BaseException:
    """A :class:`StoreError` (one line, password-free) for a store problem; any other error as it is."""
    if isinstance(exc, StoreError):
        return exc
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error; a COPY raises it bare
    if location.backend == "postgresql":
        what = _pg_problem(orig, getattr(orig, "sqlstate", None))
        if what is None:
            return exc
        return StoreError(f"store {location.label}: {what} ({one_line(orig, location)})")
    import sqlite3

    if isinstance(orig, sqlite3.Error) and _is_sqlite_problem(orig):
        return sqlite_error(location.label, orig)
    return exc


def _pg_problem(orig: BaseException, state: str | None) -> str | None:
    import psycopg

    if state:
        return _PG_STATES.get(state) or _PG_STATES.get(state[:2])
    if isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError):  # connection lost: no SQLSTATE
        return "lost the connection to the server"
    return None


def one_line(exc: BaseException, location: StoreLocation) -> str:
    """The driver's message on one line, without the password or libpq's hints."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(("HINT:", "DETAIL:", "(Background", "[SQL", "[parameters"))]
    msg = "; ".join(keep or lines)[:400]
    return location.redact(msg)


def _is_sqlite_problem(exc: Exception) -> bool:
    """A problem of the file or its use (read-only, locked, damaged, missing table), not a bug in a query."""
    import sqlite3

    return isinstance(exc, sqlite3.OperationalError | sqlite3.DataError | sqlite3.InternalError) or (
        type(exc) is sqlite3.DatabaseError)


def sqlite_error(label: str, exc: Exception) -> StoreError:
    """One readable line for a SQLite failure on ``label``, saying what to do where we know it."""
    msg = str(exc)
    if "readonly" in msg or "read-only" in msg:
        return StoreError(f"store {label} is read-only ({msg}): use a writable copy or another --store")
    if "malformed" in msg or "not a database" in msg or "corrupt" in msg:
        return StoreError(f"store {label} is damaged ({msg}): restore it from a backup or use another --store")
    if "no such table" in msg or "no such column" in msg:
        return StoreError(f"store {label} lacks part of its schema ({msg}): it is damaged or not a quiho store")
    if "locked" in msg or "busy" in msg:
        return StoreError(f"store {label} is busy or locked ({msg}): another quiho is writing; retry later")
    return StoreError(f"store {label}: {msg}")
