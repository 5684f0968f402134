"""The package's layering rules, checked on the source (AST, not regular expressions).

1. **One store query layer.** Only modules in ``quiho/store/`` talk SQL: nothing else imports ``sqlite3``,
   ``sqlalchemy``, ``psycopg`` or a
   private store module (``quiho.store._db``), calls ``.execute`` / ``.executemany`` / ``.executescript``,
   reads ``pd.read_sql*``, or touches ``Store.conn``. Other packages call the typed query functions of
   ``quiho.store.<family>`` (``history``, ``traces``, ``irup``, ``imports``, ``fingerprints`` ...).
2. **Schemas live in the store.** ``CREATE TABLE`` appears only under ``quiho/store/``.
3. **One naming rule for private modules.** A module whose name starts with ``_`` is private to its package:
   ``quiho/<pkg>/_x.py`` is imported only by modules of ``quiho/<pkg>/``; other packages import from
   ``quiho.<pkg>`` (its ``__init__``) or from its public (un-prefixed) modules. Top-level ``quiho/_x.py``
   modules (``_text``, ``_stats``, ``_version`` ...) are shared internals of the whole library.
   ``quiho.cli`` is exempt as an importer only in the sense that its own ``_x`` modules are the commands.
4. **No import circles** between modules (lazy and type-checking imports count too).
5. **The fleet imports no analysis package** (the execution layer stands alone).
6. **Packages stand on floors.** :data:`FLOORS` says which packages each package may import; it is an order (no
   circle), so two packages that import each other fail whatever the modules do. ``quiho.errors`` and the
   top-level ``quiho/_x.py`` helpers are shared by all and import no package; ``quiho/__init__.py`` (the public
   surface) and ``quiho/__main__.py`` sit on top. The floors are shown in ``quiho/__init__.py``'s docstring and
   ``docs/architecture.md``, and a test keeps both in step with the data.

Each test lists every violation as ``path:line: what``; an empty list is the pass.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

QUIHO = Path(__file__).resolve().parents[2] / "quiho"
SQL_CALLS = {"execute", "executemany", "executescript"}
SQL_READS = {"read_sql", "read_sql_query", "read_sql_table"}
#: Database drivers and the query layer: only the store imports them.
DRIVERS = {"sqlite3", "sqlalchemy", "psycopg"}


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
                if name.split(".")[0] in DRIVERS:
                    bad.append(f"{_where(path, node)}: imports {name.split('.')[0]}")
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
    src = ("import sqlite3\nimport sqlalchemy as sa\nfrom quiho.store._db import Store\n"
           "from quiho.history._io import x\nfrom quiho.trace import _store\n"
           "def f(store):\n    store.conn.execute('SELECT 1')\n")
    tree = ast.parse(src)
    names = [n for node in ast.walk(tree) for n in _imported(node)]
    attrs = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert {"sqlite3", "sqlalchemy", "quiho.store._db", "quiho.history._io", "quiho.trace._store"} <= set(names)
    assert {"conn", "execute"} <= attrs


# --- 4. No import circles; 5. the fleet imports no analysis package ------------------------------------------------

#: What ``quiho.fleet`` (the execution layer: playbooks on an inventory, and its local kind) may import.
FLEET_MAY_IMPORT = ("quiho.fleet", "quiho.store", "quiho.errors", "quiho._")


def _module_name(path: Path) -> str:
    rel = path.relative_to(QUIHO.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _resolve(name: str, known: set[str]) -> str | None:
    """The quiho module an imported dotted name lands in: itself if it is a module, else its longest known prefix."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, here: str, is_pkg: bool, known: set[str]) -> list[str]:
    """Modules of quiho that one import statement loads (relative imports resolved; ``from m import sub`` is m.sub)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = here.split(".") if is_pkg else here.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    else:
        return []
    found = {_resolve(n, known) for n in names if n.split(".")[0] == "quiho"}
    return sorted(m for m in found if m and m != here)


def _graph(sources: dict[str, tuple[bool, ast.Module]]) -> dict[str, dict[str, int]]:
    """module -> {imported quiho module: line}, every import statement counted (top level, lazy, type-checking)."""
    known = set(sources)
    graph: dict[str, dict[str, int]] = {}
    for mod, (is_pkg, tree) in sources.items():
        edges = graph.setdefault(mod, {})
        for node in ast.walk(tree):
            for target in _targets(node, mod, is_pkg, known):
                edges.setdefault(target, getattr(node, "lineno", 0))
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _sources() -> dict[str, tuple[bool, ast.Module]]:
    return {_module_name(p): (p.name == "__init__.py", tree) for p, tree in _modules()}


def _describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    inner = [f"{a} -> {b} (line {graph[a][b]})" for a in cycle for b in cycle if b in graph.get(a, {})]
    return "{" + ", ".join(cycle) + "}: " + "; ".join(inner)


def test_no_import_circles() -> None:
    """No two modules import each other, directly or through others (lazy and type-checking imports count too)."""
    graph = _graph(_sources())
    bad = [_describe(c, graph) for c in _cycles(graph)]
    assert not bad, "import circles:\n" + "\n".join(bad)


def _fleet_violations(graph: dict[str, dict[str, int]]) -> list[str]:
    return [f"{mod}:{line}: imports {target}" for mod, edges in sorted(graph.items())
            if mod == "quiho.fleet" or mod.startswith("quiho.fleet.")
            for target, line in sorted(edges.items())
            if not any(target == ok.rstrip(".") or target.startswith(ok if ok.endswith("_") else ok + ".")
                       or (ok.endswith("_") and target.startswith(ok)) for ok in FLEET_MAY_IMPORT)]


def test_fleet_imports_no_analysis_package() -> None:
    """The execution layer stands alone: ``quiho.fleet`` imports only the store, errors and shared helpers."""
    bad = _fleet_violations(_graph(_sources()))
    assert not bad, "quiho.fleet imports beyond store/errors/shared helpers:\n" + "\n".join(bad)


def test_the_graph_rules_catch_planted_violations() -> None:
    """A planted circle and a planted fleet -> analysis import are both reported."""
    def mod(src: str, pkg: bool = False) -> tuple[bool, ast.Module]:
        return pkg, ast.parse(src)

    sources = {
        "quiho": mod("", pkg=True),
        "quiho.fleet": mod("from quiho.fleet.runner import run\n", pkg=True),
        "quiho.fleet.runner": mod("def run():\n    from quiho.irup import engine\n"),
        "quiho.irup": mod("from . import engine\n", pkg=True),
        "quiho.irup.engine": mod("from ..fleet import runner\n"),
        "quiho.store": mod("", pkg=True),
        "quiho.errors": mod(""),
        "quiho._text": mod(""),
        "quiho.fleet.ok": mod("from quiho.store import x\nfrom quiho import _text\nfrom quiho.errors import E\n"),
    }
    graph = _graph(sources)
    assert graph["quiho.irup"] == {"quiho.irup.engine": 1}
    assert graph["quiho.irup.engine"] == {"quiho.fleet.runner": 1}
    assert _cycles(graph) == [["quiho.fleet.runner", "quiho.irup.engine"]]
    assert _fleet_violations(graph) == ["quiho.fleet.runner:2: imports quiho.irup.engine"]
    # the same sources with the lazy import removed: no circle, no violation
    sources["quiho.fleet.runner"] = mod("def run():\n    pass\n")
    graph = _graph(sources)
    assert _cycles(graph) == [] and _fleet_violations(graph) == []


# --- 6. Packages stand on floors ----------------------------------------------------------------------------------

#: Each package of quiho and the packages it may import (besides itself, ``quiho.errors`` and the shared
#: ``quiho._x`` helpers), bottom up. Adding an import across packages means adding it here, where an upward one
#: shows as a circle.
FLOORS: dict[str, tuple[str, ...]] = {
    # execution: the stored things, and playbooks run on an inventory
    "store": (),
    "fleet": ("store",),
    "testing": ("fleet",),
    # what runs on a fleet, each with its concept
    "app": ("fleet", "store"),
    "fingerprint": ("fleet", "store"),
    # analysis that needs neither store nor fleet
    "models": (),
    "design": (),
    "detect": ("models",),
    # analysis of stored measurements
    "irup": ("fingerprint", "store"),
    "history": ("fingerprint", "store"),
    "trace": ("app", "detect", "fleet", "store"),
    "schedule": ("fingerprint", "fleet", "history", "irup", "store"),
    "datasets": ("design", "detect", "history", "irup", "store"),
    # the questions quiho answers, and what shows the answers
    "profile": ("app", "design", "detect", "fingerprint", "fleet", "irup", "schedule", "store", "trace"),
    "publish": ("fleet", "history", "irup", "profile", "schedule", "store"),
    "report": ("design", "irup", "profile"),
    "cli": ("app", "datasets", "design", "detect", "fingerprint", "fleet", "history", "irup", "models", "profile",
            "publish", "report", "schedule", "store", "trace"),
}
#: Modules on top of every package: the public surface and ``python -m quiho``.
TOP = {"quiho", "quiho.__main__"}


def _pkg_of(module: str) -> str:
    """``profile`` for ``quiho.profile.x``; ``""`` for a shared top-level module (``quiho.errors``, ``quiho._text``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) else ""


def _path(module: str, sources: dict[str, tuple[bool, ast.Module]]) -> str:
    rel = module.replace(".", "/")
    return f"{rel}/__init__.py" if sources[module][0] else f"{rel}.py"


def _floor_violations(sources: dict[str, tuple[bool, ast.Module]],
                      floors: dict[str, tuple[str, ...]]) -> list[str]:
    """Every import that leaves a package for one its floors do not list (or a shared helper importing a package)."""
    graph = _graph(sources)
    bad = []
    for mod, edges in sorted(graph.items()):
        if mod in TOP:
            continue
        own = _pkg_of(mod)
        if own and own not in floors:
            bad.append(f"{_path(mod, sources)}:1: package {own} has no floor in FLOORS")
            continue
        for target, line in sorted(edges.items(), key=lambda e: e[1]):
            to = _pkg_of(target)
            if target in TOP:
                bad.append(f"{_path(mod, sources)}:{line}: imports {target}, which sits on top of every package")
            elif to and to != own and (not own or to not in floors[own]):
                who = f"package {own}" if own else f"shared helper {mod}"
                bad.append(f"{_path(mod, sources)}:{line}: {who} imports {target}, not on its floors")
    return bad


def _two_way_ties(sources: dict[str, tuple[bool, ast.Module]]) -> list[str]:
    """Every import of a pair of packages that import each other, both ways (whatever FLOORS says)."""
    graph = _graph(sources)
    edges: dict[tuple[str, str], list[str]] = {}
    for mod, targets in sorted(graph.items()):
        for target, line in sorted(targets.items(), key=lambda e: e[1]):
            a, b = _pkg_of(mod), _pkg_of(target)
            if a and b and a != b:
                edges.setdefault((a, b), []).append(f"{_path(mod, sources)}:{line}: {a} imports {target}")
    return [s for (a, b), where in sorted(edges.items()) if (b, a) in edges for s in where]


def _floor_circles(floors: dict[str, tuple[str, ...]]) -> list[list[str]]:
    return _cycles({p: dict.fromkeys(below, 0) for p, below in floors.items()})


def floor_lines(floors: dict[str, tuple[str, ...]] = FLOORS) -> list[str]:
    """The floors as text lines, bottom up: ``package      a, b`` (what it may import), wrapped at 100 characters."""
    return [line for p, below in floors.items()
            for line in textwrap.wrap(f"{p:<12} {', '.join(below) or '-'}", 100, subsequent_indent=" " * 13)]


def test_every_package_imports_only_its_floors() -> None:
    """Each import across packages is one :data:`FLOORS` allows; a new package needs a floor."""
    sources = _sources()
    bad = _floor_violations(sources, FLOORS)
    packages = {_pkg_of(m) for m in sources} - {""}
    bad += [f"FLOORS: {p} is not a package of quiho" for p in sorted(set(FLOORS) - packages)]
    assert not bad, "imports off their package's floors (see FLOORS in this file):\n" + "\n".join(bad)


def test_no_two_packages_import_each_other() -> None:
    """A two-way tie between packages fails here even when every module import is acyclic."""
    bad = _two_way_ties(_sources())
    assert not bad, "packages that import each other:\n" + "\n".join(bad)


def test_the_floors_are_an_order() -> None:
    """FLOORS has no circle and names only its own packages, so no two packages may both import each other."""
    bad = [" -> ".join(c) for c in _floor_circles(FLOORS)]
    bad += [f"{p} may import unknown {q}" for p, below in FLOORS.items() for q in below if q not in FLOORS]
    assert not bad, "FLOORS is not an order:\n" + "\n".join(bad)


def test_the_floors_are_shown_where_the_docs_say() -> None:
    """``quiho/__init__.py``'s docstring and docs/architecture.md show the floors as FLOORS has them."""
    shown = {"quiho/__init__.py": ast.get_docstring(ast.parse((QUIHO / "__init__.py").read_text())) or "",
             "docs/architecture.md": (QUIHO.parent / "docs" / "architecture.md").read_text()}
    want = [line.strip() for line in floor_lines()]

    def shows(text: str) -> bool:  # the lines in order, one after the other, at any indent
        have = [line.strip() for line in text.splitlines()]
        return any(have[i:i + len(want)] == want for i in range(len(have)))

    bad = [where for where, text in shown.items() if not shows(text)]
    assert not bad, ("floors out of step with FLOORS in " + ", ".join(bad) + "; the lines should read:\n"
                     + "\n".join(floor_lines()))


def test_the_floor_rules_catch_planted_violations() -> None:
    """A planted two-way tie, an import above a package's floors and an unplaced package are all reported."""
    def mod(src: str, pkg: bool = False) -> tuple[bool, ast.Module]:
        return pkg, ast.parse(src)

    floors = {"store": (), "fingerprint": ("store",), "history": ("fingerprint", "store")}
    sources = {
        "quiho": mod("from quiho.store import Store\n", pkg=True),
        "quiho.errors": mod(""),
        "quiho._text": mod("from quiho.errors import E\n"),
        "quiho.store": mod("from quiho import _text\n", pkg=True),
        "quiho.fingerprint": mod("", pkg=True),
        "quiho.fingerprint.drift": mod("import quiho.store\n\ndef f():\n    from quiho.history import detect\n"),
        "quiho.history": mod("from quiho.history import detect\n", pkg=True),
        "quiho.history.detect": mod("from quiho.fingerprint import catalog\nfrom quiho.errors import E\n"),
    }
    # no module circle (history.detect imports the fingerprint package, not drift), but the packages tie
    assert _cycles(_graph(sources)) == []
    assert _floor_violations(sources, floors) == [
        "quiho/fingerprint/drift.py:4: package fingerprint imports quiho.history.detect, not on its floors"]
    assert _two_way_ties(sources) == [
        "quiho/fingerprint/drift.py:4: fingerprint imports quiho.history.detect",
        "quiho/history/detect.py:1: history imports quiho.fingerprint"]
    # a tie written into the floors is refused as a circle
    assert _floor_circles({**floors, "fingerprint": ("store", "history")}) == [["fingerprint", "history"]]
    # a package without a floor, and a shared helper that imports a package
    sources["quiho.irup"] = mod("from quiho.store import x\n", pkg=True)
    sources["quiho._text"] = mod("from quiho.store import Store\n")
    assert _floor_violations(sources, floors)[:2] == [
        "quiho/_text.py:1: shared helper quiho._text imports quiho.store, not on its floors",
        "quiho/fingerprint/drift.py:4: package fingerprint imports quiho.history.detect, not on its floors"]
    assert "quiho/irup/__init__.py:1: package irup has no floor in FLOORS" in _floor_violations(sources, floors)
    # the planted package-level tie removed: nothing is reported
    sources["quiho.fingerprint.drift"] = mod("import quiho.store\n")
    sources["quiho._text"] = mod("")
    del sources["quiho.irup"]
    assert _floor_violations(sources, floors) == [] and _two_way_ties(sources) == []
