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
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from quiho._version import __version__
from quiho.errors import SchemaVersionError, StoreError

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow"]

DEFAULT_STORE = Path(".quiho") / "quiho.db"

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
);
"""


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

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run a block as one transaction (BEGIN IMMEDIATE: waits for other writers)."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"store {self.path} is busy or locked: {exc}") from exc
        try:
            yield self.conn
        except BaseException:
            self.conn.rollback()
            raise
        else:
            self.conn.commit()

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
    conn.executescript(_BOOTSTRAP)
    have = {r[0]: int(r[1]) for r in conn.execute("SELECT component, version FROM schema_versions")}
    for name, comp in _COMPONENTS.items():
        current = have.get(name, 0)
        target = len(comp.migrations)
        if current > target:
            raise SchemaVersionError(
                f"store {path} has '{name}' schema v{current} but this quiho ({__version__}) "
                f"knows v{target}: upgrade quiho, or use another --store"
            )
        if current == target:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for step in comp.migrations[current:]:
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
                (name, target, __version__, utcnow()),
            )
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _split_sql(script: str) -> list[str]:
    # executescript() would COMMIT our open transaction; split on ';' instead
    # (our migration scripts contain no ';' inside literals or triggers).
    return [s.strip() for s in script.split(";") if s.strip()]


#: Modules whose import registers a store component; add a line for a new subsystem.
COMPONENT_MODULES = (
    "quiho.store._schema",
    "quiho.history._schema",
    "quiho.trace._schema",
    "quiho.fleet._schema",
    "quiho.profile._schema",
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
        p.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(p, timeout=30.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        _migrate(conn, p)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open store {p}: {exc}") from exc
    return Store(p, conn)


def dumps(obj: object) -> str:
    """JSON for a TEXT column (sorted keys, so equal content compares equal)."""
    return json.dumps(obj, sort_keys=True, default=str)
