r"""The one plotting context of quiho: literal text, and output paths checked before any work is done.

Every function that draws a figure runs inside :func:`literal_text` (it is also a decorator) and every figure is
written with :func:`save_figure`. Names drawn on a figure (series, units, targets, stressors, functions, hosts)
come from user data; matplotlib would parse a ``$...$`` in one as mathtext and raise on ``$x^$`` or ``$\foo$``
when the figure is drawn, after all the work that led to it. With ``text.parse_math`` off, each text is drawn as
written. Tick labels matplotlib creates while saving are covered because saving runs in the context too.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quiho._text import printable
from quiho.errors import UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLOT_SUFFIXES", "literal_text", "check_plot_path", "save_figure", "figure_key", "calls_axis_top"]

#: File types quiho writes figures as (grey-scale readable PNG or SVG).
PLOT_SUFFIXES = (".png", ".svg")


@contextmanager
def literal_text() -> Iterator[None]:
    """Matplotlib settings under which every text is drawn literally (no mathtext); usable as a decorator.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> with literal_text():
    ...     fig, ax = plt.subplots()
    ...     _ = ax.set_title("$x^$")
    ...     fig.canvas.draw()
    >>> plt.close(fig)
    """
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        yield


def check_plot_path(path: str | Path, *, what: str = "plot") -> Path:
    """Refuse a figure path quiho could not write, before anything is computed.

    The suffix must be one of :data:`PLOT_SUFFIXES`; the nearest existing ancestor must be a directory; when the
    parent exists, a file is created there (and removed again) to prove it can be written.

    Parameters
    ----------
    path : str or Path
        Where the figure will be written.
    what : str, default "plot"
        Word used in the message (e.g. "report").

    Returns
    -------
    Path
        ``path`` as a Path.

    Raises
    ------
    UsageError
        Unsupported suffix, a parent that is a file, or a place that cannot be written.
    """
    p = Path(path)
    if p.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"{what} file must end in {' or '.join(PLOT_SUFFIXES)}, got {printable(p.name)!r}")
    if p.is_dir():
        raise UsageError(f"{what} file {printable(p)} is a directory")
    check_writable_dir(p.parent, what=what)
    if p.parent.is_dir() and not p.exists():
        try:
            with p.open("xb"):
                pass
            p.unlink()
        except OSError as exc:
            raise UsageError(f"cannot write {what} {printable(p)}: {exc.strerror}") from exc
    elif p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"cannot write {what} {printable(p)}: {os.strerror(errno.EACCES)}")
    return p


def check_writable_dir(directory: str | Path, *, what: str = "output") -> Path:
    """Refuse a directory that is a file, lies below a file, or cannot be written (before any work is done).

    Raises
    ------
    UsageError
        The directory, or its nearest existing ancestor, is not a writable directory.
    """
    d = Path(directory)
    probe = d if str(d) else Path(".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"cannot write {what} below {printable(d)}: {printable(probe)} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {what} below {printable(d)}: {os.strerror(errno.EACCES)}")
    return d


def save_figure(fig: Figure, path: str | Path, *, dpi: float | None = None) -> Path:
    """Write ``fig`` as PNG or SVG (by suffix) with literal text, close it, and return the path.

    Raises
    ------
    UsageError
        Unsupported suffix, or the file or its directory cannot be written (the figure is closed either way).
    """
    import matplotlib.pyplot as plt

    try:
        p = check_plot_path(path)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            with literal_text():
                fig.savefig(p, dpi=dpi if dpi is not None else "figure")
        except OSError as exc:
            raise UsageError(f"cannot write plot {printable(p)}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)
    return p


# --- the functions figure's rules, shared by the report (matplotlib) and the site (SVG) ---


def figure_key(flagged: bool, share: float | None, magnitude: float | None) -> tuple[bool, float, float]:
    """Sort key of a function in the functions figure: flagged first, then the largest share, then magnitude."""
    def size(x: float | None) -> float:
        return -abs(x) if isinstance(x, int | float) and math.isfinite(x) else 0.0

    return (not flagged, size(share), size(magnitude))


def calls_axis_top(durations: Sequence[Any]) -> float:
    """Top of the functions figure's axis: 1.5 x the 99th percentile of every drawn duration.

    Preempted calls (ms on a shared machine) would squash the rest; the figure counts those above it, and its
    fits leave them out.
    """
    import numpy as np

    return 1.5 * float(np.quantile(np.concatenate(durations), 0.99)) if len(durations) else 1.0
