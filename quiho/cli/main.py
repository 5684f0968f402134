"""Root of the ``quiho`` command and the one place errors become exit codes."""

from __future__ import annotations

import contextlib
import importlib
import sys

import typer

from quiho._text import printable
from quiho.errors import QuihoError, UsageError

# Exit codes: 0 ok, 1 error, 2 usage, 3 change found (--fail-on-change).
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
    "quiho.cli._predict",
    "quiho.cli._history",
    "quiho.cli._trace",
    "quiho.cli._fleet",
    "quiho.cli._profile",
    "quiho.cli._schedule",
    "quiho.cli._publish",
)


class ChangeFound(Exception):
    """Raised by a command run with ``--fail-on-change`` that found a change."""


for _name in _COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def _click_errors() -> tuple[type[Exception], type[Exception]]:
    """Return the ``(UsageError, ClickException)`` classes of the click that typer runs on.

    typer ≥ 0.20 vendors click as ``typer._click``; older typer uses the ``click`` package. Both expose
    ``typer.BadParameter``, a subclass of both classes, so they are taken from its MRO (never ``import click``:
    it is not a dependency, and when present it may be a different click from typer's).
    """
    by_name = {c.__name__: c for c in typer.BadParameter.__mro__}
    return by_name["UsageError"], by_name["ClickException"]


_CLICK_USAGE_ERROR, _CLICK_EXCEPTION = _click_errors()
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


def _interrupted() -> int:
    print("quiho: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _undecodable(args: list[str]) -> str | None:
    """The first argument holding bytes that are not UTF-8 (Python passes them on as lone surrogates), shown safely.

    Such a name cannot be stored (SQLite text is UTF-8), printed or drawn; refusing it here is one answer for all.
    """
    for a in args:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            return printable(repr(a.encode("utf-8", "surrogateescape"))[1:])
    return None


def _names_a_group(args: list[str]) -> bool:
    """Whether ``args`` name no command, only the root or a group (``[]``, ``["history"]``): one is missing."""
    return not args or (len(args) == 1 and args[0] in {g.name for g in app.registered_groups})


def _serial_csv_reading() -> None:
    """Make pandas read CSV files in the calling thread only.

    pandas ≥ 3.1 splits large CSV files over worker threads reading a memory map; Ctrl-C unwinds the main thread,
    which unmaps the file while the workers still read it: the process died with SIGSEGV instead of exiting 130
    (about 1 interrupt in 15 during ``import quiho-popper``). One thread keeps an interrupt an exception.
    """
    import pandas as pd

    with contextlib.suppress(KeyError, pd.errors.OptionError):  # older pandas: no such option, no such threads
        pd.set_option("mode.max_threads", 1)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the process exit code instead of raising SystemExit.

    Every way a command can end becomes one exit code here (0 ok, 1 error, 2 usage, 3 change found,
    130 interrupted): typer's usage errors print typer's usage message; quiho's errors print one line.
    A Ctrl-C always ends as 130, also when a library turned the ``KeyboardInterrupt`` into an error of its own
    (pandas' C parser reports an interrupted read as "Calling read(nbytes) on source failed").
    """
    seen = _SigintSeen.install()
    try:
        code = _dispatch(sys.argv[1:] if argv is None else list(argv))
    finally:
        seen.uninstall()
    if seen.count and code != EXIT_INTERRUPTED:
        return _interrupted()
    return code


class _SigintSeen:
    """Counts SIGINTs while a command runs and raises ``KeyboardInterrupt`` as Python's own handler does."""

    def __init__(self, previous: object) -> None:
        self.previous = previous
        self.count = 0

    @classmethod
    def install(cls) -> _SigintSeen:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return cls(None)  # signals reach the main thread only; nothing to count here
        seen = cls(signal.getsignal(signal.SIGINT))
        if seen.previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, seen._handle)
        else:
            seen.previous = None  # ignored (a background job) or someone else's: leave it alone
        return seen

    def _handle(self, signum: int, frame: object) -> None:
        import signal

        self.count += 1
        signal.default_int_handler(signum, frame)  # type: ignore[arg-type]

    def uninstall(self) -> None:
        import signal

        if self.previous is not None and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self.previous)  # type: ignore[arg-type]


def _dispatch(args: list[str]) -> int:
    """Run one command line; the exit code for every way it can end."""
    if (bad := _undecodable(args)) is not None:
        print(f"quiho: usage error: argument {bad} is not UTF-8 text (quiho takes UTF-8 names and paths)",
              file=sys.stderr)
        return EXIT_USAGE
    if _names_a_group(args):  # no command is a usage error: help on stderr, exit 2 (click < 8.2 would exit 0)
        with contextlib.redirect_stdout(sys.stderr):
            app(args=[*args, "--help"], prog_name="quiho", standalone_mode=False)
        return EXIT_USAGE
    try:
        if not {"--help", "-h"} & set(args):
            _serial_csv_reading()
        rv = app(args=args, prog_name="quiho", standalone_mode=False)
    except ChangeFound:
        return EXIT_CHANGE
    except UsageError as exc:
        print(f"quiho: usage error: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except QuihoError as exc:
        print(f"quiho: error: {printable(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # the file system refused (name too long, disk full...) where no check of quiho's did
        where = f"{printable(exc.filename)[:200]}: " if exc.filename else ""
        print(f"quiho: error: {where}{printable(exc.strerror or exc)}", file=sys.stderr)
        return EXIT_ERROR
    except (KeyboardInterrupt, typer.Abort):  # typer < 0.20 turns Ctrl-C into Abort
        return _interrupted()
    except SystemExit as exc:
        return EXIT_OK if exc.code is None else exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except _CLICK_USAGE_ERROR as exc:  # unknown command or option, bad value, missing argument
        exc.show()  # type: ignore[attr-defined]
        return EXIT_USAGE
    except _CLICK_EXCEPTION as exc:
        exc.show()  # type: ignore[attr-defined]
        return EXIT_ERROR
    # Non-standalone typer returns the code of a ``typer.Exit`` (``--help`` → 0; Ctrl-C → 130 in typer ≥ 0.20)
    # and a command's own return value (None).
    if rv == EXIT_INTERRUPTED:
        return _interrupted()
    return rv if isinstance(rv, int) else EXIT_OK


def entry() -> None:  # console_scripts target
    sys.exit(main())
