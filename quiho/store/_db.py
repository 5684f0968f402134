"""SQLite store: one file, WAL mode, per-component schema versions.

Every subsystem (``core``, ``fleet``, ``trace``, ``history`` ...) owns its
tables and registers an ordered list of migrations with
:func:`register_component`. Opening a store applies the migrations it lacks and
refuses a store whose component version is newer than this code knows, so an
old quiho never misreads a newer file.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quiho._version import __version__
from quiho.errors import SchemaVersionError, StoreError

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow"]

DEFAULT_STORE = Path(".quiho") / "quiho.db"
#: Largest store checked with ``quick_check`` before its first write: at 8-12 ms per MB (bench/store_check.py)
#: about 2-3 s; a larger file would make every writing command wait longer.
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024

Migration = str | Callable[[sqlite3.Connection], None]


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
    migrations : sequence of str or callable
        Applied in order; a string is run with ``executescript``, a callable is
        called with the open connection. Append new migrations, never edit old ones.
    """
    _COMPONENTS[name] = _Component(name, tuple(migrations))


def utcnow() -> str:
    """ISO-8601 UTC timestamp with seconds, the format every table uses."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def default_store_path() -> Path:
    """``$QUIHO_STORE`` if set, else ``./.quiho/quiho.db``."""
    env = os.environ.get("QUIHO_STORE")
    return Path(env) if env else DEFAULT_STORE


_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS schema_versions (
    component     TEXT PRIMARY KEY,
    version       INTEGER NOT NULL,
    quiho_version TEXT NOT NULL,
    updated_at    TEXT NOT NULL
)
"""


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """One readable line for a SQLite failure on ``path``, saying what to do where we know it."""
    msg = str(exc)
    if "readonly" in msg or "read-only" in msg:
        return StoreError(f"store {path} is read-only ({msg}): use a writable copy or another --store")
    if "malformed" in msg or "not a database" in msg or "corrupt" in msg:
        return StoreError(f"store {path} is damaged ({msg}): restore it from a backup or use another --store")
    if "no such table" in msg or "no such column" in msg:
        return StoreError(f"store {path} lacks part of its schema ({msg}): it is damaged or not a quiho store")
    if "locked" in msg or "busy" in msg:
        return StoreError(f"store {path} is busy or locked ({msg}): another quiho is writing; retry later")
    return StoreError(f"store {path}: {msg}")


def _is_store_problem(exc: sqlite3.Error) -> bool:
    """A problem of the file or its use (read-only, locked, damaged, missing table), not a bug in a query.

    Programming errors (wrong bindings, closed cursors) and constraint violations stay as they are: a
    traceback points at the code that needs fixing.
    """
    return isinstance(exc, sqlite3.OperationalError | sqlite3.DataError | sqlite3.InternalError) or (
        type(exc) is sqlite3.DatabaseError)


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a :class:`sqlite3.Cursor` method so store problems arrive as :class:`StoreError`."""

    def wrapper(self: sqlite3.Cursor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except sqlite3.Error as exc:
            if not _is_store_problem(exc):
                raise
            raise _store_error(self.connection.path, exc) from exc  # type: ignore[attr-defined]

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class _Cursor(sqlite3.Cursor):
    """A cursor whose SQLite errors arrive as :class:`StoreError` (one line at the CLI, never a traceback)."""

    execute = _translating(sqlite3.Cursor.execute)
    executemany = _translating(sqlite3.Cursor.executemany)
    fetchone = _translating(sqlite3.Cursor.fetchone)
    fetchmany = _translating(sqlite3.Cursor.fetchmany)
    fetchall = _translating(sqlite3.Cursor.fetchall)
    __next__ = _translating(sqlite3.Cursor.__next__)


class _Connection(sqlite3.Connection):
    """The store's connection: every statement goes through :class:`_Cursor`."""

    path: Path

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)


class Store:
    """An open quiho store.

    Use :func:`open_store` to create one. ``store.conn`` is a plain
    :class:`sqlite3.Connection` with ``row_factory = sqlite3.Row`` and foreign
    keys on; write inside ``with store.transaction():`` so a failure rolls back
    and leaves the file as it was.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        self._checked = False

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run a block as one transaction (BEGIN IMMEDIATE: waits for other writers).

        The first write through a :class:`Store` runs SQLite's ``quick_check`` (linear in the file, 8-12 ms
        per MB in ``bench/store_check.py``; no index cross-checks), so a damaged file is refused before
        anything is written into it. Files above :data:`QUICK_CHECK_MAX_BYTES` skip it on write (call
        :meth:`check` explicitly).

        Raises
        ------
        StoreError
            The store is read-only, locked past the busy timeout, or damaged.
        """
        if not self._checked and self._size() <= QUICK_CHECK_MAX_BYTES:
            self.check()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.rollback()
            raise
        else:
            self.conn.commit()

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def check(self) -> None:
        """Refuse a damaged file: raise :class:`StoreError` unless ``PRAGMA quick_check`` says ``ok``."""
        rows = self.conn.execute("PRAGMA quick_check(5)").fetchall()
        problems = [str(r[0]) for r in rows if r[0] != "ok"]
        if problems:
            raise StoreError(f"store {self.path} is damaged ({'; '.join(problems)[:300]}): restore it from a "
                             "backup or use another --store; nothing was written")
        self._checked = True

    def versions(self) -> dict[str, int]:
        """Schema version of every component present in the file."""
        rows = self.conn.execute("SELECT component, version FROM schema_versions").fetchall()
        return {r["component"]: int(r["version"]) for r in rows}

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring every registered component to its latest version.

    Versions are read once without a lock (the common case: nothing to do, nothing written) and, when
    something is missing, read again under ``BEGIN IMMEDIATE`` and migrated in that one transaction, so
    two processes creating or upgrading a store at once serialise instead of both creating the tables.
    """
    have = _read_versions(conn)
    if have is not None and not _pending(have, path):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_BOOTSTRAP)
        have = _read_versions(conn) or {}
        for comp in _pending(have, path):
            name = comp.name
            for step in comp.migrations[have.get(name, 0):]:
                if isinstance(step, str):
                    for stmt in _split_sql(step):
                        conn.execute(stmt)
                else:
                    step(conn)
            conn.execute(
                "INSERT INTO schema_versions(component, version, quiho_version, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(component) DO UPDATE SET "
                "version=excluded.version, quiho_version=excluded.quiho_version, "
                "updated_at=excluded.updated_at",
                (name, len(comp.migrations), __version__, utcnow()),
            )
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _read_versions(conn: sqlite3.Connection) -> dict[str, int] | None:
    """Component versions, or None when the file has no ``schema_versions`` table yet."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_versions'").fetchone() \
            is None:
        return None
    return {r[0]: int(r[1]) for r in conn.execute("SELECT component, version FROM schema_versions")}


def _pending(have: dict[str, int], path: Path) -> list[_Component]:
    """Components whose stored version is behind this code's; a newer one raises :class:`SchemaVersionError`."""
    out = []
    for name, comp in _COMPONENTS.items():
        current, target = have.get(name, 0), len(comp.migrations)
        if current > target:
            raise SchemaVersionError(
                f"store {path} has '{name}' schema v{current} but this quiho ({__version__}) "
                f"knows v{target}: upgrade quiho, or use another --store"
            )
        if current < target:
            out.append(comp)
    return out


_CREATED = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_DROPPED = re.compile(r"DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


def _check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a store that lacks a table its recorded schema versions promise (dropped or damaged)."""
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    versions = _read_versions(conn) or {}
    want: set[str] = set()
    for name, comp in _COMPONENTS.items():
        for step in comp.migrations[:versions.get(name, 0)]:
            if isinstance(step, str):  # in order: a later migration may drop what an earlier one created
                want |= set(_CREATED.findall(step))
                want -= set(_DROPPED.findall(step))
    missing = sorted(want - have)
    if missing:
        raise StoreError(f"store {path} lacks table(s) {', '.join(missing)}: it is damaged or was edited by "
                         "hand; restore it from a backup or use another --store")


def _split_sql(script: str) -> list[str]:
    # executescript() would COMMIT our open transaction; split on ';' instead
    # (our migration scripts contain no ';' inside literals or triggers).
    return [s.strip() for s in script.split(";") if s.strip()]


#: Modules whose import registers a store component; add a line for a new subsystem.
COMPONENT_MODULES = (
    "quiho.store._schema",
    "quiho.store.alerts",
    "quiho.store._schema_machines",
)


def _load_components() -> None:
    import importlib

    for mod in COMPONENT_MODULES:
        importlib.import_module(mod)


def open_store(path: str | os.PathLike[str] | None = None, *, create: bool = True) -> Store:
    """Open (and if needed create and migrate) the store.

    Parameters
    ----------
    path : path-like, optional
        Store file; default :func:`default_store_path`.
    create : bool, default True
        If False, a missing file raises :class:`StoreError` instead of being made.

    Raises
    ------
    StoreError
        The file cannot be opened or is not a SQLite database.
    SchemaVersionError
        The file was written by a newer quiho.
    """
    _load_components()

    p = Path(path) if path is not None else default_store_path()
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
    conn: _Connection | None = None
    try:
        conn = sqlite3.connect(p, timeout=30.0, isolation_level=None, factory=_Connection)
        conn.path = p
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=30000")
        _set_wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
        _migrate(conn, p)
        _check_tables(conn, p)
    except (sqlite3.Error, StoreError) as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"cannot open store {p}: {exc}") from exc
    return Store(p, conn)


def _set_wal(conn: _Connection) -> None:
    """Switch to WAL; while another process creates the same new file this can report "locked": retry."""
    import time

    deadline = time.monotonic() + 30.0
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
