"""Functions stay small enough to read: at most ~60 lines of code and 8 parameters, or a docstring that says why.

Counted on the source (AST): code lines are the function's lines less its docstring, blank lines and comment
lines; parameters are every named parameter less ``self``/``cls`` (``*args``/``**kwargs`` count one each). The
CLI's typer commands are exempt from the parameter rule (each option is a parameter there, by design). A function
over either limit passes when its docstring gives the reason in a sentence with "long because" or "many
parameters because" (a compiled kernel that cannot take objects, a seeded generator taking sklearn-style keyword
arguments ...).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

QUIHO = Path(__file__).resolve().parents[2] / "quiho"
MAX_LINES = 60
MAX_PARAMS = 8
LONG = re.compile(r"\blong because\b", re.I)
MANY = re.compile(r"\bmany parameters because\b", re.I)


def _code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef, src: list[str]) -> int:
    body = fn.body
    first = body[0]
    start = first.end_lineno + 1 if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                                     and isinstance(first.value.value, str)) and first.end_lineno else first.lineno
    return sum(1 for line in src[start - 1: fn.end_lineno] if line.strip() and not line.strip().startswith("#"))


def _n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def _is_typer_command(fn: ast.FunctionDef | ast.AsyncFunctionDef, path: Path) -> bool:
    """A CLI function whose parameters are typer options/arguments (annotated or as defaults)."""
    if "cli" not in path.parts:
        return False
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "typer"
               and n.attr in ("Option", "Argument")
               for arg in fn.args.args + fn.args.kwonlyargs + fn.args.defaults + fn.args.kw_defaults if arg
               for n in ast.walk(arg)) or any(
        isinstance(a.annotation, ast.Name) and a.annotation.id.endswith("Opt") for a in fn.args.args)


def shape_violations(path: Path, text: str) -> list[str]:
    """Every function in ``text`` over a limit without its reason, as ``path:line name: what``."""
    src = text.splitlines()
    bad = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node) or ""
        lines, params = _code_lines(node, src), _n_params(node)
        where = f"{path}:{node.lineno} {node.name}"
        if lines > MAX_LINES and not LONG.search(doc):
            bad.append(f"{where}: {lines} lines of code")
        if params > MAX_PARAMS and not MANY.search(doc) and not _is_typer_command(node, path):
            bad.append(f"{where}: {params} parameters")
    return bad


def test_functions_are_small_or_say_why() -> None:
    bad = [v for p in sorted(QUIHO.rglob("*.py")) for v in shape_violations(p.relative_to(QUIHO.parent), p.read_text())]
    assert not bad, "functions over 60 lines or 8 parameters without a reason in their docstring:\n" + "\n".join(bad)


def test_the_rule_catches_what_it_claims() -> None:
    many = ", ".join(f"p{i}" for i in range(9))
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    src = (f"def wide({many}):\n    pass\n\n"
           f"def wide_ok({many}):\n    '''Many parameters because it is a compiled kernel.'''\n\n"
           f"def tall():\n    '''Doc.'''\n    # a comment\n\n{body}\n\n"
           f"def tall_ok():\n    '''Long because one loop.'''\n{body}\n\n"
           f"class C:\n    def method(self, {', '.join(f'q{i}' for i in range(8))}):\n        pass\n")
    bad = shape_violations(Path("x.py"), src)
    assert bad == ["x.py:1 wide: 9 parameters", "x.py:7 tall: 61 lines of code"], bad
