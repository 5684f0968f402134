"""A grey-scale-readable picture of a history: values, change points, GP mean +- 2 sigma, sampled revisions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quiho._plotting import check_plot_path, literal_text, save_figure
from quiho.history._model import Detection, History

__all__ = ["plot_history"]

GP_MAX = 400  # most revisions the GP band is fitted on
GRID_MAX = 2000  # most orders the GP band is drawn at


@literal_text()  # names and units are drawn as written, never as mathtext
def plot_history(history: History, path: str | Path, *, detection: Detection | None = None,
                 kernel: str | None = "brownian", n_orders: int | None = None,
                 failed_orders: Sequence[int] = (), title: str | None = None) -> Path:
    """Save a PNG or SVG (by suffix) of ``history``.

    Draws every repetition (small grey dots), the per-revision means (black
    circles = sampled revisions), the GP posterior mean (solid) with a
    ``± 2 sigma`` band (light grey) over orders ``0..n_orders-1``, change
    points (dashed verticals, labelled with their relative magnitude) and
    failed builds (x marks on the axis). Readable without colour.

    Raises
    ------
    UsageError
        The suffix is not .png or .svg, or the file cannot be written (:func:`quiho._plotting.check_plot_path`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from quiho.history.sampling import HistoryGP, noise_of_means

    out = check_plot_path(path)  # refused before anything is drawn
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    orders = history.orders
    if len(history):  # every repetition in one call: one artist per revision made 2k revisions take 20 s
        sizes = np.array([s.size for s in history.samples])
        ax.plot(np.repeat(orders, sizes), np.concatenate(history.samples), ".", color="0.6", ms=3, zorder=1)
    ax.plot(orders, history.values, "o", mfc="white", mec="black", ms=4.5, label="measured revision (mean)",
            zorder=3)
    end = int(max(orders.max() + 1, n_orders or 0)) if len(history) else 0
    if kernel and len(history) >= 2:
        # the GP is cubic in the revisions it sees and the picture has ~1000 pixel columns: fit it on at most
        # GP_MAX evenly spaced revisions and draw it on at most GRID_MAX orders (np.arange(end) allocated GiBs)
        pick = np.unique(np.linspace(0, len(history) - 1, min(len(history), GP_MAX)).round().astype(int))
        grid = np.unique(np.linspace(0, max(end - 1, 0), min(end, GRID_MAX)).round())
        gp = HistoryGP(kernel, n_restarts_optimizer=0).fit(
            orders[pick], history.values[pick], noise_var=noise_of_means([history.samples[i] for i in pick]),
            span=max(end - 1, 1), origin=0)
        mu, sd = gp.predict(grid)
        ax.fill_between(grid, mu - 2 * sd, mu + 2 * sd, color="0.85", label=f"GP ({kernel}) mean ± 2σ", zorder=0)
        ax.plot(grid, mu, "-", color="0.25", lw=1.2, zorder=2)
    if detection is not None:
        for i, cp in enumerate(detection.change_points):
            x = orders[cp.index] - 0.5
            ax.axvline(x, color="black", ls="--", lw=1, label="change point" if i == 0 else None)
            ax.annotate(f"{cp.magnitude:+.1%}\np={cp.p_value:.1g}", (x, 1), xycoords=("data", "axes fraction"),
                        xytext=(3, -4), textcoords="offset points", va="top", fontsize=8, zorder=5,
                        bbox={"facecolor": "white", "edgecolor": "0.5", "alpha": 0.9, "pad": 1.5})
    if len(failed_orders):
        ax.plot(list(failed_orders), np.full(len(failed_orders), ax.get_ylim()[0]), "kx", ms=7, clip_on=False,
                label="build failed")
    ax.set_xlabel("revision (order)")
    ax.set_ylabel(f"{history.name} ({history.unit})" if history.unit else f"{history.name} (unit not given)")
    if title is None:
        title = history.name
        if detection is not None:
            n_cp = len(detection.change_points)
            verdict = detection.reason if not detection.meaningful else (
                f"{n_cp} change point{'s' if n_cp != 1 else ''}" if n_cp else "no change point passes the test")
            title += f" — {detection.method}: {verdict}"
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8, frameon=False)
    fig.tight_layout()
    save_figure(fig, out)
    return out
