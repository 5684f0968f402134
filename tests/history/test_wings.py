"""The layout of ``quiho.history``: wings with a public face, private modules private to their wing.

``tests/shared/test_layering.py`` keeps other top-level packages out of ``quiho.history``'s private modules; this
keeps the wings apart inside it: ``quiho/history/<wing>/_x.py`` is imported only by modules of that wing, the
others use ``quiho.history.<wing>`` (its ``__init__``). Each violation is listed as ``path:line: what``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

HISTORY = Path(__file__).resolve().parents[2] / "quiho" / "history"
WINGS = sorted(p.name for p in HISTORY.iterdir() if (p / "__init__.py").is_file())


def _wing(path: Path) -> str:
    """``gate`` for ``quiho/history/gate/_ci.py``; ``""`` for ``quiho/history/_plot.py``."""
    rel = path.relative_to(HISTORY).parts
    return rel[0] if len(rel) > 1 else ""


def _violations(sources: dict[str, str]) -> list[str]:
    """``rel path -> source``: every import of a wing's private module from outside that wing."""
    bad = []
    for rel, src in sorted(sources.items()):
        own = _wing(HISTORY / rel)
        for node in ast.walk(ast.parse(src)):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[:2] != ["quiho", "history"] or len(parts) < 4 or parts[2] not in WINGS:
                    continue
                if parts[3].startswith("_") and parts[2] != own:
                    bad.append(f"{rel}:{node.lineno}: imports {name}, private to quiho.history.{parts[2]}")
                    break
    return bad


def test_there_are_wings() -> None:
    assert {"detectors", "sources", "sampling", "gate", "normalise"} <= set(WINGS)


def test_wing_private_modules_are_imported_only_by_their_wing() -> None:
    sources = {str(p.relative_to(HISTORY)): p.read_text() for p in sorted(HISTORY.rglob("*.py"))}
    bad = _violations(sources)
    assert not bad, "a wing's private module imported from outside the wing:\n" + "\n".join(bad)


def test_the_rule_catches_a_planted_import() -> None:
    planted = {
        "gate/_ci.py": "from quiho.history.detectors._base import detect\nfrom quiho.history.detectors import detect\n",
        "_plot.py": "from quiho.history.sampling import _gp\n",
        "detectors/_auto.py": "from quiho.history.detectors._base import Detector\n",
    }
    assert _violations(planted) == [
        "_plot.py:1: imports quiho.history.sampling._gp, private to quiho.history.sampling",
        "gate/_ci.py:1: imports quiho.history.detectors._base, private to quiho.history.detectors",
    ]


@pytest.mark.parametrize("module", ["quiho.history", *(f"quiho.history.{w}" for w in WINGS)])
def test_every_face_has_a_complete_all(module: str) -> None:
    mod = importlib.import_module(module)
    names = mod.__all__
    assert len(names) == len(set(names)), "a name listed twice"
    assert [n for n in names if not hasattr(mod, n)] == []
    public = {n for n, v in vars(mod).items() if not n.startswith("_") and not isinstance(v, type(mod))}
    assert public - set(names) == set(), "imported into the face but not in __all__"


def test_the_history_face_is_short_and_comes_from_the_wings() -> None:
    import quiho.history as h

    assert len(h.__all__) <= 45
    faces = [importlib.import_module(f"quiho.history.{w}") for w in WINGS]
    homeless = [n for n in h.__all__ if not any(n in f.__all__ for f in faces)
                and n not in ("History", "ChangePoint", "Detection", "plot_history")]
    assert homeless == []
