"""Root of the ``quiho`` command and the one place errors become exit codes."""

from __future__ import annotations

import importlib
import sys

import typer

from quiho.errors import QuihoError, UsageError

# Exit codes (STYLE.md): 0 ok, 1 error, 2 usage, 3 change found (--fail-on-change).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_CHANGE = 0, 1, 2, 3

app = typer.Typer(
    name="quiho",
    help="What resource does an application lean on, and what changed between two versions?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain: a '[...]' in them must never be parsed as markup
)

# Each module defines ``register(app)``; add a line here for a new command module.
_COMMAND_MODULES = (
    "quiho.cli._import",
    "quiho.cli._irup",
    "quiho.cli._history",
    "quiho.cli._trace",
    "quiho.cli._fleet",
    "quiho.cli._profile",
    "quiho.cli._schedule",
)


class ChangeFound(Exception):
    """Raised by a command run with ``--fail-on-change`` that found a change."""


for _name in _COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the process exit code instead of raising SystemExit."""
    try:
        app(args=argv, standalone_mode=False)
    except ChangeFound:
        return EXIT_CHANGE
    except UsageError as exc:
        print(f"quiho: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except QuihoError as exc:
        print(f"quiho: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("quiho: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # click's own --help / usage exits
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    except Exception as exc:  # click usage errors arrive as ClickException subclasses
        import click

        if isinstance(exc, click.exceptions.UsageError):
            exc.show()
            return EXIT_USAGE
        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return EXIT_ERROR
        if isinstance(exc, click.exceptions.Abort):
            return 130
        raise
    return EXIT_OK


def entry() -> None:  # console_scripts target
    sys.exit(main())
