"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

StoreOpt = Annotated[
    str | None,
    typer.Option("--store", help="Store: a SQLite file or postgresql://USER@HOST:PORT/DB (password from the URL, "
                 "PGPASSFILE, a libpq service or PGPASSWORD; never printed). Default $QUIHO_STORE or "
                 "./.quiho/quiho.db. A PostgreSQL store keeps its Parquet files in $QUIHO_STORE_FILES "
                 "(default ./.quiho/pg-HOST-PORT-DB/)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]


def emit_json(doc: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")


def err(msg: str) -> None:
    """Logs, warnings and progress go to stderr."""
    print(msg, file=sys.stderr)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _range_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '≥'} {_num(lo)}"
    if hi is not None:
        return f"{'<' if hi_open else '≤'} {_num(hi)}"
    return "a finite number"


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
           hi_open: bool = False) -> Callable[[Any], Any]:
    """Option callback that refuses nan, ±inf and values outside ``lo``..``hi`` (a usage error, exit 2).

    The one validator of numeric options: typer's own ``min``/``max`` let ``nan`` through (every comparison
    with it is false) and have no upper bound for absurd values such as ``1e300`` hours.

    Parameters
    ----------
    lo, hi : float, optional
        Smallest and largest accepted value (inclusive unless ``lo_open`` / ``hi_open``).

    Returns
    -------
    callable
        ``check(value) -> value`` for ``typer.Option(callback=...)``; ``None`` (option not given) passes.

    Examples
    --------
    >>> number(0, 1, lo_open=True)(0.5)
    0.5
    """
    def check(value: Any) -> Any:
        if value is None:
            return value
        for v in value if isinstance(value, list | tuple) else (value,):
            bad = isinstance(v, float) and not math.isfinite(v)
            bad = bad or (lo is not None and (v < lo or (lo_open and v == lo)))
            bad = bad or (hi is not None and (v > hi or (hi_open and v == hi)))
            if bad:
                raise typer.BadParameter(f"{v} is not {_range_text(lo, hi, lo_open, hi_open)}")
        return value

    return check


#: Seeds: numpy's legacy generators take 0 ≤ seed < 2**32.
seed = number(0, 2**32 - 1)
#: Probabilities such as a significance level.
probability = number(0, 1, lo_open=True)
#: Timeouts in seconds: positive, at most a year (larger ones overflow the OS timers).
timeout_s = number(0, 366 * 86400, lo_open=True)


def plot_path(value: Path | None) -> Path | None:
    """Option callback: a ``--plot``/``-o`` file must be .png/.svg in a writable place (checked before any work)."""
    from quiho._plotting import check_plot_path
    from quiho.errors import UsageError

    if value is None:
        return value
    try:
        return check_plot_path(value)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from exc


def shell_words(value: str | None) -> str | None:
    """Option callback: a command given as shell words must split (balanced quotes), e.g. ``--bench``."""
    import shlex

    if value is None:
        return value
    try:
        shlex.split(value)
    except ValueError as exc:
        raise typer.BadParameter(f"cannot split {value!r} into words: {exc}") from exc
    return value


def output_dir(value: Path | None) -> Path | None:
    """Option callback: a directory to write into (e.g. ``--report``) must be creatable and writable.

    Checked before any work: a profile's report is written after the whole fleet run.
    """
    from quiho._plotting import check_writable_dir
    from quiho.errors import UsageError

    if value is None:
        return value
    try:
        return check_writable_dir(value, what="files")
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from exc


def worker_count(value: int | None) -> int | None:
    """Option callback: ``--jobs`` is -1 (all cores) or a count from 1 to 4096 (None: not given)."""
    if value is not None and value != -1 and not 1 <= value <= 4096:
        raise typer.BadParameter(f"{value} is not a number of workers: use -1 (all cores) or 1..4096")
    return value
