"""MkDocs hook: the CLI reference page, rendered from quiho's typer app at every build.

The page ``cli.md`` is never a file in the repository: ``on_files`` adds it to the build in memory, made from
the click command tree that typer builds from ``quiho.cli.main.app`` (every command and subcommand, its usage,
help and options with defaults, as ``--help`` prints them). A command added later is on the page at the next
build; ``tests/docs/test_site.py`` checks that the page lists every command of the tree.

Why a hook and not the ``mkdocs-click`` extension: typer >= 0.20 runs on its own vendored click
(``typer._click``), whose command classes are not the ``click`` package's, so an extension written against
``click`` cannot be relied on to recognise them; the hook only uses the command objects' own methods.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

SRC_URI = "cli.md"

_INTRO = """# CLI reference

Generated from the typer app (`quiho.cli.main.app`) when the site is built; never edit it by hand.
Every command prints the same text with `--help`. Exit codes: 0 ok, 1 error, 2 usage,
3 change found (only with `--fail-on-change`), 130 interrupted.
"""


def _escape(text: str) -> str:
    """Help text as literal Markdown: HTML and emphasis characters shown as they are."""
    text = html.escape(text, quote=False)
    for ch in "\\`*_[]":
        text = text.replace(ch, "\\" + ch)
    return text


def _code(text: str) -> str:
    """An inline code span that survives backticks inside ``text``."""
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def walk(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """Every visible command under ``command`` (itself first) with its click context, depth first."""
    yield command, ctx
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            yield from walk(sub, type(ctx)(sub, info_name=name, parent=ctx))


def root() -> tuple[Any, Any]:
    """The click command of ``quiho`` and its context (typer's vendored click or the ``click`` package)."""
    import typer.main

    from quiho.cli.main import app

    command = typer.main.get_command(app)
    context_class = getattr(command, "context_class", None)
    if context_class is None:  # pragma: no cover - every click Command has one
        raise RuntimeError("the typer app's command has no context class")
    return command, context_class(command, info_name="quiho")


def command_paths() -> list[str]:
    """``quiho``, ``quiho irup``, ``quiho history detect`` ...: every command the page must list."""
    return [ctx.command_path for _, ctx in walk(*root())]


def _section(command: Any, ctx: Any) -> str:
    level = "#" * min(2 + ctx.command_path.count(" "), 6)
    out = [f"{level} {ctx.command_path}", ""]
    if command.help:
        out += [_escape(p.strip().replace("\b", "")) for p in command.help.split("\n\n") if p.strip()]
        out.append("")
    out += ["```text", command.get_usage(ctx).strip(), "```", ""]
    arguments: list[str] = []
    options: list[str] = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:  # click arguments have no help record
            record = (param.human_readable_name, "")
        names, text = record
        line = f"- {_code(names)}" + (f": {_escape(' '.join(text.split()))}" if text else "")
        (arguments if param.param_type_name == "argument" else options).append(line)
    if arguments:
        out += ["Arguments:", "", *arguments, ""]
    if options:
        out += ["Options:", "", *options, ""]
    if hasattr(command, "list_commands"):
        subs = [n for n in command.list_commands(ctx) if not getattr(command.get_command(ctx, n), "hidden", False)]
        if subs:
            out += ["Commands: " + ", ".join(f"`{n}`" for n in subs), ""]
    return "\n".join(out)


def render() -> str:
    """The whole page as Markdown."""
    return _INTRO + "\n" + "\n".join(_section(c, ctx) for c, ctx in walk(*root()))


def on_files(files: Any, config: Any) -> Any:
    """Add the generated ``cli.md`` to the build (in memory: nothing is written into docs/)."""
    from mkdocs.structure.files import File

    existing = files.get_file_from_path(SRC_URI)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, SRC_URI, content=render()))
    return files
