"""The store: a SQLite file (the embedded default) or a PostgreSQL database, with per-component schema versions.

Every subsystem (``core``, ``fleet``, ``trace``, ``history`` ...) owns its tables and registers an ordered list of
migrations with :func:`register_component`. Opening a store applies the migrations it lacks and refuses a store
whose component version is newer than this code knows, so an old quiho never misreads a newer store. Both backends
run the same schema (SQLAlchemy :class:`~sqlalchemy.Table` objects in one :data:`SCHEMA`) and the same SQL
(:mod:`quiho.store._conn`).

Writes serialise on both: SQLite's ``BEGIN IMMEDIATE`` and, on PostgreSQL, a transaction-scoped advisory lock taken
right after ``BEGIN``, so the read-then-insert steps of the store (a host's id, a series' next order) see every
committed write of other controllers and unique keys never collide between two of them.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from quiho._version import __version__
from quiho.errors import SchemaVersionError, StoreError
from quiho.store._conn import Connection, one_line, sqlite_error, translate
from quiho.store._location import DEFAULT_STORE, StoreLocation, parse_location

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow", "Tables", "SCHEMA",
           "ID", "TEXT", "FLOAT",
           "Connection", "StoreLocation", "parse_location", "DEFAULT_STORE"]

#: Largest store checked with ``quick_check`` before its first write: at 8-12 ms per MB (bench/store_check.py)
#: about 2-3 s; a larger file would make every writing command wait longer.
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024
#: The one metadata every component's tables belong to (foreign keys between components resolve in it).
SCHEMA = sa.MetaData()
#: Row ids: 64-bit serials on PostgreSQL, SQLite's rowid (an INTEGER PRIMARY KEY is its alias) on SQLite.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
#: Text compared byte by byte on both (SQLite's BINARY; PostgreSQL's "C"), so ORDER BY and UNIQUE agree.
TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
#: Measured values: 64-bit floats on both (PostgreSQL's REAL would be 32-bit).
FLOAT: sa.Double[float] = sa.Double()
#: Advisory lock key of the store's writers on PostgreSQL ("quiho" in ASCII).
WRITE_LOCK_KEY = 0x717569686F
#: Seconds a writer waits for another one (SQLite's busy timeout, PostgreSQL's lock_timeout).
WRITE_WAIT_S = 30


@dataclass(frozen=True)
class Tables:
    """A migration step that creates tables of :data:`SCHEMA` (DDL rendered by SQLAlchemy for each backend)."""

    tables: tuple[sa.Table, ...]

    def __init__(self, *tables: sa.Table) -> None:
        object.__setattr__(self, "tables", tuple(tables))


Migration = str | Tables | Callable[[Connection], None]


@dataclass(frozen=True)
class _Component:
    name: str
    migrations: tuple[Migration, ...]


_COMPONENTS: dict[str, _Component] = {}


def register_component(name: str, migrations: Sequence[Migration]) -> None:
    """Declare the tables of one subsystem.

    Parameters
    ----------
    name : str
        Component name, e.g. ``"fleet"``. Its version is ``len(migrations)``.
    migrations : sequence of Tables, str or callable
        Applied in order. :class:`Tables` creates tables defined on :data:`SCHEMA` (the way to create a table:
        SQLAlchemy renders the ids, floats and collations of each backend). A string is split on ``;`` and each
        statement run as it is: portable SQL only (``ALTER TABLE ... ADD COLUMN``, ``CREATE INDEX``; floats as
        ``DOUBLE PRECISION``). A callable is called with the open :class:`Connection`. Append new migrations,
        never edit old ones.
    """
    _COMPONENTS[name] = _Component(name, tuple(migrations))


def utcnow() -> str:
    """ISO-8601 UTC timestamp with seconds, the format every table uses."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def default_store_path() -> Path:
    """``$QUIHO_STORE`` if set, else ``./.quiho/quiho.db`` (for a URL: its place in the files directory)."""
    return parse_location(None).path


_VERSIONS = sa.Table(
    "schema_versions", sa.MetaData(),
    sa.Column("component", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("quiho_version", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
)


class Store:
    """An open quiho store.

    Use :func:`open_store` to create one. ``store.conn`` is a :class:`Connection` (``execute``/``executemany``
    with ``?`` or ``:name`` parameters, rows by index or name); write inside ``with store.transaction():`` so a
    failure rolls back and leaves the store as it was. ``str(store)`` names it without its password.
    """

    def __init__(self, location: StoreLocation, conn: Connection) -> None:
        self.location = location
        self.path = location.path
        self.files_dir = location.files_dir
        self.backend = location.backend
        self.conn = conn
        self._checked = location.backend != "sqlite"

    def __str__(self) -> str:
        return self.location.label

    def __repr__(self) -> str:
        return f"Store({self.location.label!r})"

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """Run a block as one transaction that waits for other writers (see the module docstring).

        On SQLite the first write through a :class:`Store` runs ``quick_check`` (linear in the file, 8-12 ms per
        MB in ``bench/store_check.py``), so a damaged file is refused before anything is written into it; files
        above :data:`QUICK_CHECK_MAX_BYTES` skip it (call :meth:`check` explicitly).

        Raises
        ------
        StoreError
            The store is read-only, unreachable, locked past the wait, or damaged.
        """
        if not self._checked and self._size() <= QUICK_CHECK_MAX_BYTES:
            self.check()
        _begin(self.conn)
        try:
            yield self.conn
        except BaseException:
            _rollback(self.conn)
            raise
        else:
            self.conn.execute("COMMIT")

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def check(self) -> None:
        """Refuse a damaged SQLite file: raise :class:`StoreError` unless ``PRAGMA quick_check`` says ``ok``."""
        if self.backend == "sqlite":
            rows = self.conn.execute("PRAGMA quick_check(5)").fetchall()
            problems = [str(r[0]) for r in rows if r[0] != "ok"]
            if problems:
                raise StoreError(f"store {self} is damaged ({'; '.join(problems)[:300]}): restore it from a "
                                 "backup or use another --store; nothing was written")
        self._checked = True

    def versions(self) -> dict[str, int]:
        """Schema version of every component present in the store."""
        rows = self.conn.execute("SELECT component, version FROM schema_versions").fetchall()
        return {r["component"]: int(r["version"]) for r in rows}

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _begin(conn: Connection) -> None:
    """Start a writing transaction: one writer at a time on both backends."""
    if conn.backend == "sqlite":
        conn.execute("BEGIN IMMEDIATE")
        return
    conn.execute("BEGIN")
    try:
        conn.execute(f"SET LOCAL lock_timeout = '{WRITE_WAIT_S}s'")
        conn.execute("SELECT pg_advisory_xact_lock(:k)", {"k": WRITE_LOCK_KEY})
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: Connection) -> None:
    """Roll back; a connection the server dropped has nothing left to roll back."""
    try:
        conn.execute("ROLLBACK")
    except Exception:  # noqa: BLE001  (the original error is the one to report)
        pass


def _migrate(conn: Connection, location: StoreLocation) -> None:
    """Bring every registered component to its latest version.

    Versions are read once without a lock (the common case: nothing to do, nothing written) and, when
    something is missing, read again inside a writing transaction and migrated in that one transaction (DDL is
    transactional on both backends), so two processes creating or upgrading a store at once serialise instead of
    both creating the tables.
    """
    have = _read_versions(conn)
    if have is not None and not _pending(have, location):
        return
    _begin(conn)
    try:
        _VERSIONS.create(conn.sa, checkfirst=True)
        have = _read_versions(conn) or {}
        for comp in _pending(have, location):
            for step in comp.migrations[have.get(comp.name, 0):]:
                _apply(conn, step)
            conn.execute(
                "INSERT INTO schema_versions(component, version, quiho_version, updated_at) "
                "VALUES (:c, :v, :q, :t) ON CONFLICT(component) DO UPDATE SET "
                "version=excluded.version, quiho_version=excluded.quiho_version, updated_at=excluded.updated_at",
                {"c": comp.name, "v": len(comp.migrations), "q": __version__, "t": utcnow()},
            )
    except BaseException as exc:
        _rollback(conn)
        if isinstance(exc, Exception):
            raise translate(exc, location) from None
        raise
    conn.execute("COMMIT")


def _apply(conn: Connection, step: Migration) -> None:
    if isinstance(step, Tables):
        SCHEMA.create_all(conn.sa, tables=list(step.tables), checkfirst=False)
    elif isinstance(step, str):
        for stmt in _split_sql(step):
            conn.sa.exec_driver_sql(stmt)
    else:
        step(conn)


def _table_names(conn: Connection) -> set[str]:
    return set(sa.inspect(conn.sa).get_table_names())


def _read_versions(conn: Connection) -> dict[str, int] | None:
    """Component versions, or None when the store has no ``schema_versions`` table yet."""
    if "schema_versions" not in _table_names(conn):
        return None
    return {r[0]: int(r[1]) for r in conn.execute("SELECT component, version FROM schema_versions")}


def _pending(have: dict[str, int], location: StoreLocation) -> list[_Component]:
    """Components whose stored version is behind this code's; a newer one raises :class:`SchemaVersionError`."""
    out = []
    for name, comp in _COMPONENTS.items():
        current, target = have.get(name, 0), len(comp.migrations)
        if current > target:
            raise SchemaVersionError(
                f"store {location} has '{name}' schema v{current} but this quiho ({__version__}) "
                f"knows v{target}: upgrade quiho, or use another --store"
            )
        if current < target:
            out.append(comp)
    return out


_CREATED = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_DROPPED = re.compile(r"DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


def expected_tables(versions: dict[str, int]) -> set[str]:
    """Tables the recorded schema versions promise (created and not dropped by the applied migrations)."""
    want: set[str] = set()
    for name, comp in _COMPONENTS.items():
        for step in comp.migrations[:versions.get(name, 0)]:
            if isinstance(step, Tables):
                want |= {t.name for t in step.tables}
            elif isinstance(step, str):  # in order: a later migration may drop what an earlier one created
                want |= set(_CREATED.findall(step))
                want -= set(_DROPPED.findall(step))
    return want


def _check_tables(conn: Connection, location: StoreLocation) -> None:
    """Refuse a store that lacks a table its recorded schema versions promise (dropped or damaged)."""
    missing = sorted(expected_tables(_read_versions(conn) or {}) - _table_names(conn))
    if missing:
        raise StoreError(f"store {location} lacks table(s) {', '.join(missing)}: it is damaged or was edited by "
                         "hand; restore it from a backup or use another --store")


def _split_sql(script: str) -> list[str]:
    # one statement at a time inside our open transaction (executescript() would COMMIT it);
    # our migration scripts contain no ';' inside literals or triggers.
    return [s.strip() for s in script.split(";") if s.strip()]


#: Modules whose import registers a store component; add a line for a new subsystem.
COMPONENT_MODULES = (
    "quiho.store._schema",
    "quiho.store.alerts",
    "quiho.store._schema_machines",
    "quiho.store.site_cache",
)


def _load_components() -> None:
    import importlib

    for mod in COMPONENT_MODULES:
        importlib.import_module(mod)


def open_store(path: str | os.PathLike[str] | None = None, *, create: bool = True) -> Store:
    """Open (and if needed create and migrate) the store.

    Parameters
    ----------
    path : str or path-like, optional
        A SQLite file or a ``postgresql://`` URL (see :mod:`quiho.store._location`); default ``$QUIHO_STORE``, else
        ``./.quiho/quiho.db``.
    create : bool, default True
        If False, a missing store (file, or a database without quiho's tables) raises :class:`StoreError`
        instead of being made. A PostgreSQL database itself is never created: an administrator makes it.

    Raises
    ------
    StoreError
        The store cannot be opened or reached, or is not a quiho store (one line, never the password).
    SchemaVersionError
        The store was written by a newer quiho.
    """
    _load_components()
    loc = parse_location(path)
    conn = _open_sqlite(loc, create) if loc.backend == "sqlite" else _open_postgres(loc, create)
    try:
        _migrate(conn, loc)
        _check_tables(conn, loc)
    except BaseException:
        conn.close()
        raise
    return Store(loc, conn)


def _open_sqlite(loc: StoreLocation, create: bool) -> Connection:
    import sqlite3

    p = loc.path
    if not p.exists():
        if not create:
            raise StoreError(f"no store at {p}: run an import or a fingerprint first, or pass --store")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            blocker = next((a for a in p.parents if a.exists() and not a.is_dir()), None)
            why = f"{blocker} is a file, not a directory" if blocker else (exc.strerror or str(exc))
            raise StoreError(f"cannot create store {p}: {why}") from exc
    elif p.is_dir():
        raise StoreError(f"store {p} is a directory: pass a file path with --store")
    engine = sa.create_engine(
        "sqlite+pysqlite://", poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT",
        creator=lambda: sqlite3.connect(p, timeout=float(WRITE_WAIT_S), isolation_level=None,
                                        check_same_thread=False),
    )
    conn: Connection | None = None
    try:
        conn = Connection(engine.connect(), loc)
        conn.execute(f"PRAGMA busy_timeout={WRITE_WAIT_S * 1000}")
        # "not a database" shows here, before anything is written
        if not create:
            _require_store(conn, loc)
        else:
            _read_versions(conn)
        _set_wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
    except Exception as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, StoreError):
            raise
        orig = getattr(exc, "orig", exc)
        if isinstance(orig, sqlite3.DatabaseError) and "not a database" in str(orig):
            raise sqlite_error(str(p), orig) from None
        raise StoreError(f"cannot open store {p}: {orig}") from exc
    return conn


def _open_postgres(loc: StoreLocation, create: bool) -> Connection:
    """Connect (``connect_timeout`` 10 s); a refused, unknown or unreachable database is one password-free line.

    psycopg's own log records (e.g. "error ignored terminating Pipeline" when the server goes away mid-batch)
    are dropped: the same failure arrives as the command's one-line :class:`StoreError`.
    """
    import logging

    psycopg_log = logging.getLogger("psycopg")
    psycopg_log.propagate = False
    if not psycopg_log.handlers:
        psycopg_log.addHandler(logging.NullHandler())
    engine = sa.create_engine(
        loc.url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT", hide_parameters=True,
        connect_args={"connect_timeout": 10, "application_name": "quiho"},
    )
    try:
        conn = Connection(engine.connect(), loc)
    except Exception as exc:
        raise StoreError(f"cannot open store {loc}: {one_line(getattr(exc, 'orig', None) or exc, loc)}") from None
    try:
        if not create:
            _require_store(conn, loc)
    except BaseException:
        conn.close()
        raise
    return conn


def _require_store(conn: Connection, loc: StoreLocation) -> None:
    """Refuse a database without quiho's tables: opened without create, it must not be made a store."""
    if _read_versions(conn) is None:
        raise StoreError(f"no quiho store in {loc}: run an import or a fingerprint first, or pass --store")


def _set_wal(conn: Connection) -> None:
    """Switch to WAL; while another process creates the same new file this can report "locked": retry."""
    deadline = time.monotonic() + float(WRITE_WAIT_S)
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except StoreError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def dumps(obj: object) -> str:
    """JSON for a TEXT column (sorted keys, so equal content compares equal)."""
    return json.dumps(obj, sort_keys=True, default=str)


def insert_id(conn: Connection, sql: str, params: Any) -> int:
    """Run ``INSERT ... RETURNING id`` and return the id (both backends; psycopg has no ``lastrowid``)."""
    return int(conn.execute(sql, params).scalar())
