"""Figures of a profile: the metric per host per version, and the fleet's fingerprints at a glance.

Grey-scale readable (markers and hatches differ, not only colours), labelled with units.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from quiho._plotting import literal_text

__all__ = ["metric_per_host", "fingerprint_overview"]


@literal_text()
def metric_per_host(runs: pd.DataFrame, version_a: str, version_b: str, *, label_b: str | None = None,
                    unit: str = "", title: str = "") -> Figure:
    """Every successful run, per host, for both versions (circles: A, triangles: B; bars: medians).

    Parameters
    ----------
    runs : DataFrame
        Columns ``host``, ``version``, ``status``, ``value``.
    version_a, version_b : str
        Labels of the two versions (``label_b`` = how B is stored, when it differs from its name).
    unit : str
        Unit of the metric, for the axis label.
    """
    label_b = label_b or version_b
    ok = runs[runs["status"] == "ok"]
    hosts = sorted(runs["host"].unique())
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(hosts) + 2), 3.8))
    x = np.arange(len(hosts))
    for off, lab, name, marker, color in ((-0.15, version_a, version_a, "o", "#444444"),
                                          (0.15, label_b, f"{version_b} (B)" if label_b != version_b else version_b,
                                           "^", "#d95f02")):
        for i, h in enumerate(hosts):
            v = ok.loc[(ok["host"] == h) & (ok["version"] == lab), "value"].to_numpy(dtype=float)
            if len(v):
                ax.scatter(np.full(len(v), x[i] + off), v, marker=marker, color=color, s=22, zorder=3,
                           label=name if i == 0 or not ax.get_legend_handles_labels()[1].count(name) else None)
                ax.hlines(np.median(v), x[i] + off - 0.1, x[i] + off + 0.1, color="black", lw=1.5, zorder=4)
            else:
                ax.text(x[i] + off, 0, "×", ha="center", va="bottom", fontsize=10, color=color)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=False))
    ax.legend(uniq.values(), uniq.keys(), fontsize=8, loc="best")
    ax.set_xticks(x, hosts, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"metric ({unit})" if unit else "metric")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "metric per host and version (bars: medians; × = no successful run)", fontsize=10)
    fig.tight_layout()
    return fig


@literal_text()
def fingerprint_overview(wide: pd.DataFrame) -> Figure:
    """Heat map of each host's fingerprint relative to the fleet median per stressor (log2 ratio).

    Parameters
    ----------
    wide : DataFrame, shape (hosts, stressors)
        Median bogo-ops/s per host and stressor.
    """
    fig, ax = plt.subplots(figsize=(0.5 * max(len(wide.columns), 4) + 3, 0.4 * max(len(wide), 2) + 1.6))
    if wide.empty:
        ax.text(0.5, 0.5, "no fingerprints", ha="center", va="center")
        ax.set_axis_off()
        return fig
    rel = np.log2(wide / wide.median(axis=0))
    lim = float(np.nanmax(np.abs(rel.to_numpy()))) if np.isfinite(rel.to_numpy()).any() else 1.0
    im = ax.imshow(rel.to_numpy(dtype=float), cmap="RdGy_r", vmin=-max(lim, 0.1), vmax=max(lim, 0.1), aspect="auto")
    ax.set_xticks(range(len(wide.columns)), [str(c) for c in wide.columns], rotation=90, fontsize=7)
    ax.set_yticks(range(len(wide)), [str(i) for i in wide.index], fontsize=7)
    for i in range(rel.shape[0]):
        for j in range(rel.shape[1]):
            v = rel.iat[i, j]
            if np.isfinite(v):
                ax.text(j, i, f"{v:+.1f}", ha="center", va="center", fontsize=6,
                        color="white" if abs(v) > lim * 0.6 else "black")
    fig.colorbar(im, ax=ax, label="log2(host / fleet median), bogo-ops/s")
    ax.set_title("fingerprints: each host against the fleet median", fontsize=10)
    fig.tight_layout()
    return fig
