"""The package's layering rules, checked on the source (AST, not regular expressions).

1. **One store query layer.** Only modules in ``quiho/store/`` talk SQL: nothing else imports ``sqlite3`` or a
   private store module (``quiho.store._db``), calls ``.execute`` / ``.executemany`` / ``.executescript``,
   reads ``pd.read_sql*``, or touches ``Store.conn``. Other packages call the typed query functions of
   ``quiho.store.<family>`` (``history``, ``traces``, ``irup``, ``imports``, ``fleet`` ...).
2. **Schemas live in the store.** ``CREATE TABLE`` appears only under ``quiho/store/``.
3. **One naming rule for private modules.** A module whose name starts with ``_`` is private to its package:
   ``quiho/<pkg>/_x.py`` is imported only by modules of ``quiho/<pkg>/``; other packages import from
   ``quiho.<pkg>`` (its ``__init__``) or from its public (un-prefixed) modules. Top-level ``quiho/_x.py``
   modules (``_text``, ``_stats``, ``_version`` ...) are shared internals of the whole library.
   ``quiho.cli`` is exempt as an importer only in the sense that its own ``_x`` modules are the commands.

Each test lists every violation as ``path:line: what``; an empty list is the pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

QUIHO = Path(__file__).resolve().parents[2] / "quiho"
SQL_CALLS = {"execute", "executemany", "executescript"}
SQL_READS = {"read_sql", "read_sql_query", "read_sql_table"}


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(QUIHO.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _package(path: Path) -> str:
    """``store`` for ``quiho/store/x.py``; ``""`` for a top-level ``quiho/x.py``."""
    rel = path.relative_to(QUIHO).parts
    return rel[0] if len(rel) > 1 else ""


def _imported(node: ast.AST) -> list[str]:
    """Dotted module names an import statement brings in.

    ``from a import b`` yields ``a``, and ``a.b`` too when ``b`` is ``_``-prefixed (then it is a private module
    or a private name, both off limits to other packages).
    """
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                if a.name.startswith("_") and not a.name.startswith("__")]
    return []


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(QUIHO.parent)}:{getattr(node, 'lineno', 0)}"


def test_nothing_outside_the_store_talks_sql() -> None:
    bad = []
    for path, tree in _modules():
        if _package(path) == "store":
            continue
        for node in ast.walk(tree):
            for name in _imported(node):
                if name == "sqlite3" or name.startswith("sqlite3."):
                    bad.append(f"{_where(path, node)}: imports sqlite3")
                elif name.startswith("quiho.store._"):
                    bad.append(f"{_where(path, node)}: imports private {name}")
            if isinstance(node, ast.Attribute):
                if node.attr in SQL_CALLS:
                    bad.append(f"{_where(path, node)}: calls .{node.attr}(")
                elif node.attr in SQL_READS:
                    bad.append(f"{_where(path, node)}: reads SQL with {node.attr}")
                elif node.attr == "conn":
                    bad.append(f"{_where(path, node)}: uses Store.conn")
    assert not bad, "SQL outside quiho/store/:\n" + "\n".join(sorted(set(bad)))


def test_schemas_live_in_the_store() -> None:
    bad = [str(p.relative_to(QUIHO.parent)) for p, _ in _modules()
           if _package(p) != "store" and "CREATE TABLE" in p.read_text().upper()]
    assert not bad, "CREATE TABLE outside quiho/store/ (move the schema into store/_schema.py):\n" + "\n".join(bad)


def test_private_modules_are_imported_only_by_their_package() -> None:
    bad = []
    for path, tree in _modules():
        own = _package(path)
        for node in ast.walk(tree):
            for name in _imported(node):
                parts = name.split(".")
                if parts[0] != "quiho" or len(parts) < 3:
                    continue
                pkg = parts[1]
                private = [p for p in parts[2:] if p.startswith("_") and not p.startswith("__")]
                if private and pkg != own:
                    bad.append(f"{_where(path, node)}: imports {name}, private to quiho.{pkg}")
                    break
    assert not bad, "private modules imported from another package:\n" + "\n".join(sorted(set(bad)))


def test_the_rules_catch_what_they_claim(tmp_path: Path) -> None:
    """The checks themselves can fail: each rule flags a planted violation."""
    src = ("import sqlite3\nfrom quiho.store._db import Store\nfrom quiho.history._io import x\n"
           "from quiho.trace import _store\ndef f(store):\n    store.conn.execute('SELECT 1')\n")
    tree = ast.parse(src)
    names = [n for node in ast.walk(tree) for n in _imported(node)]
    attrs = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert {"sqlite3", "quiho.store._db", "quiho.history._io", "quiho.trace._store"} <= set(names)
    assert {"conn", "execute"} <= attrs
