"""Matplotlib figures for IRUPs and fingerprints (PNG/SVG, grey-scale readable, labelled).

Classes are told apart by hatch pattern as well as colour, so the figures
survive grey-scale printing.
"""

from __future__ import annotations

from pathlib import Path

# No backend is forced: without a display matplotlib picks Agg by itself, and a notebook keeps its inline one.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from quiho._plotting import literal_text, save_figure
from quiho.irup.engine import Irup

__all__ = ["irup_bars", "irup_pair", "fingerprint_correlation", "pca_variance", "save"]

CLASS_STYLE: dict[str, tuple[str, str]] = {
    "cpu": ("#1b9e77", ""),
    "cpu-cache": ("#7570b3", "//"),
    "memory": ("#d95f02", ".."),
    "vm": ("#e7298a", "xx"),
    "os": ("#66a61e", "\\\\"),
    "storage": ("#e6ab02", "++"),
    "network": ("#a6761d", "oo"),
    "memory-capacity": ("#1f78b4", "**"),
    "unknown": ("#999999", "--"),
}


def _style(primary: str) -> tuple[str, str]:
    return CLASS_STYLE.get(primary, CLASS_STYLE["unknown"])


def _legend(ax: plt.Axes, classes: set[str]) -> None:
    handles = [Patch(facecolor=_style(c)[0], hatch=_style(c)[1], edgecolor="black", label=c)
               for c in CLASS_STYLE if c in classes]
    ax.legend(handles=handles, title="stress-ng class", loc="lower right", fontsize=8)


@literal_text()
def irup_bars(irup: Irup, *, top: int | None = None, ax: plt.Axes | None = None) -> Figure:
    """Horizontal bars of one IRUP (top = 100), coloured by class, with seed error bars."""
    feats = irup.features[: top or len(irup.features)]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 0.28 * len(feats) + 1.6))
    else:
        fig = ax.get_figure()  # type: ignore[assignment]
    y = np.arange(len(feats))[::-1]
    for yi, f in zip(y, feats, strict=True):
        color, hatch = _style(f.primary)
        ax.barh(yi, f.importance, xerr=f.std, color=color, hatch=hatch, edgecolor="black", linewidth=0.5,
                error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.set_yticks(y, [f.stressor + (" *" if f.noisy else "") for f in feats], fontsize=8)
    ax.set_xlabel(f"relative importance ({irup.importance}; top = 100; bars ±1 sd over {irup.seeds} seeds)")
    ax.set_xlim(0, max(110.0, max(f.importance + f.std for f in feats) * 1.05))
    ax.set_title(f"IRUP of {irup.target} — {irup.validity.verdict}", fontsize=10)
    _legend(ax, {f.primary for f in feats})
    fig.tight_layout()
    return fig


@literal_text()
def irup_pair(a: Irup, b: Irup, *, top: int = 15) -> Figure:
    """Two IRUPs side by side on a shared stressor axis (ordered by ``a``)."""
    names = [f.stressor for f in a.features[:top]]
    names += [f.stressor for f in b.features[:top] if f.stressor not in names]
    fa, fb = a.by_stressor(), b.by_stressor()
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.28 * len(names) + 1.8), sharey=True)
    y = np.arange(len(names))[::-1]
    for ax, irup, fm in ((axes[0], a, fa), (axes[1], b, fb)):
        for yi, n in zip(y, names, strict=True):
            f = fm.get(n)
            if f is None:
                continue
            color, hatch = _style(f.primary)
            ax.barh(yi, f.importance, xerr=f.std, color=color, hatch=hatch, edgecolor="black", linewidth=0.5,
                    error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_title(f"{irup.target}\n({irup.validity.verdict})", fontsize=9)
        ax.set_xlabel("relative importance (top = 100)")
        ax.set_xlim(0, 115)
    axes[0].set_yticks(y, names, fontsize=8)
    _legend(axes[1], {f.primary for f in list(fa.values()) + list(fb.values()) if f.stressor in names})
    fig.tight_layout()
    return fig


@literal_text()
def fingerprint_correlation(X: pd.DataFrame) -> Figure:
    """Spearman correlation heat-map of stressors across fingerprint rows (grey-scale friendly colormap)."""
    C = X.loc[:, X.std() > 0].corr(method="spearman")
    n = len(C)
    fig, ax = plt.subplots(figsize=(0.22 * n + 2.5, 0.22 * n + 2))
    im = ax.imshow(C.to_numpy(), cmap="RdGy_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n), C.columns, rotation=90, fontsize=6)
    ax.set_yticks(range(n), C.index, fontsize=6)
    fig.colorbar(im, ax=ax, label="Spearman correlation across rows")
    ax.set_title("fingerprint correlation", fontsize=10)
    fig.tight_layout()
    return fig


@literal_text()
def pca_variance(X: pd.DataFrame) -> Figure:
    """Explained variance of principal components of the log fingerprints (how many independent axes the fleet has)."""
    L = np.log(X.loc[:, X.std() > 0].clip(lower=1e-12).to_numpy(dtype=float))
    L = (L - L.mean(axis=0)) / L.std(axis=0)
    s = np.linalg.svd(L, compute_uv=False)
    ev = s**2 / np.sum(s**2)
    k = min(15, len(ev))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(np.arange(1, k + 1), ev[:k] * 100, color="#bbbbbb", edgecolor="black", label="per component")
    ax.plot(np.arange(1, k + 1), np.cumsum(ev[:k]) * 100, "k-o", ms=3, label="cumulative")
    ax.set_xlabel("principal component of z-scored log(bogo-ops/s)")
    ax.set_ylabel("explained variance (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    ax.set_title("fleet diversity: PCA of fingerprints", fontsize=10)
    fig.tight_layout()
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    """Save as PNG or SVG (by extension) and close the figure (text drawn literally; see :mod:`quiho._plotting`).

    Raises
    ------
    UsageError
        Another suffix, or a path that cannot be written.
    """
    return save_figure(fig, path, dpi=120)
