"""The report's "Functions that changed" section: fleet verdicts per function, overhead, and one plot.

The plot shows, for one host, every traced call of each function in both versions (duration against call
order) with a least-squares line per version; grey-scale readable (circles and solid line: baseline,
triangles and dashed line: candidate). Names are drawn literally and escaped in the HTML.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from quiho._plotting import calls_axis_top, figure_key, literal_text

__all__ = ["functions_figure", "trace_section_html"]


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:+.1%}"


@literal_text()
def functions_figure(samples: dict[str, Any], version_a: str, label_b: str, order: list[str]) -> Figure:
    """Calls of each function in ``order`` (at most 6) for both versions on one host, with a linear fit each.

    Parameters
    ----------
    samples : dict
        :attr:`quiho.profile.traces.FleetTraces.samples`.
    version_a, label_b : str
        Version labels of the baseline and the candidate.
    order : list of str
        Functions to draw, in this order.
    """
    fns = [f for f in order if f in samples.get("functions", {})][:6]
    n = max(len(fns), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.0 * n, 3.4), squeeze=False)
    for ax, fn in zip(axes[0], fns, strict=False):
        ys = [np.asarray(v[1], float) / 1e3 for v in samples["functions"][fn].values() if len(v[1])]
        top = calls_axis_top(ys)
        for label, marker, style, colour in ((version_a, "o", "-", "#777777"), (label_b, "^", "--", "#111111")):
            xy = samples["functions"][fn].get(label)
            if xy is None or len(xy[0]) == 0:
                continue
            x, y = np.asarray(xy[0], float), np.asarray(xy[1], float) / 1e3
            ax.scatter(x, y, marker=marker, s=8, color=colour, alpha=0.5, label=f"{label} calls")
            keep = y <= top  # calls above the axis (preempted) would tilt the fit
            if keep.sum() >= 2 and np.ptp(x[keep]) > 0:
                b, a = np.polyfit(x[keep], y[keep], 1)
                xs = np.array([x.min(), x.max()])
                ax.plot(xs, a + b * xs, style, color="black", lw=1.5, label=f"{label} linear fit")
        ax.set_title(fn, fontsize=9)
        ax.set_xlabel("call order")
        ax.set_ylabel("inclusive time per call (µs)")
        # preempted calls (ms on a shared machine) would squash the rest: the axis stops at 1.5 x the 99th
        # percentile and says how many calls lie above it
        above = sum(int((y > top).sum()) for y in ys)
        ax.set_ylim(0, top if top > 0 else None)
        if above:
            ax.text(0.99, 0.98, f"{above} call(s) above the axis", transform=ax.transAxes, ha="right", va="top",
                    fontsize=7)
        ax.legend(fontsize=7, loc="lower right")
    if not fns:
        axes[0][0].text(0.5, 0.5, "no traced calls", ha="center", va="center")
        axes[0][0].set_axis_off()
    fig.suptitle(f"traced calls on host {samples.get('host', '?')}", fontsize=10)
    fig.tight_layout()
    return fig


def trace_section_html(traces: Any, img: str, version_a: str, version_b: str) -> list[str]:
    """The section's HTML (``img``: the figure's ``<img>`` or a placeholder, already safe)."""
    if traces is None:
        return []
    parts = ["<h2 id='functions'>Functions that changed</h2>",
             "<p class='muted'>Both versions traced interleaved on every host (never counted in the metric); per "
             "host the joint detector with its default settings, then a strict-majority vote across the hosts that "
             "traced the function. Magnitude: median over hosts with a bootstrap 95 % CI over hosts; share: the "
             "function's exclusive time × its change, as a fraction of the metric's change.</p>"]
    rows = []
    for f in sorted(traces.functions, key=lambda f: (not f.flagged, -abs(f.share) if math.isfinite(f.share) else 0)):
        ci = f"{_pct(f.ci[0])} … {_pct(f.ci[1])}"
        share = f"{f.share:.0%}" if math.isfinite(f.share) else "–"
        rows.append(f"<tr><td>{_e(f.function)}</td><td>{_e(f.verdict.value)}</td><td>{_e(f.kind or '–')}</td>"
                    f"<td class='num'>{_e(_pct(f.magnitude))}</td><td class='num'>{_e(ci)}</td>"
                    f"<td class='num'>{f.hosts_flagged} / {f.hosts}</td><td class='num'>{_e(share)}</td>"
                    f"<td>{_e(f.reason)}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("function", "verdict", "kind", "magnitude", "95 % CI (hosts)",
                                              "hosts flagged", "share of metric change", "why"))
    parts.append(f"<table id='trace-functions'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    over = traces.overhead.get("hosts", {})
    if over:
        med = traces.overhead.get("median_ratio")
        parts.append("<p>Tracing overhead (median traced wall / median untraced wall): "
                     + ("–" if med is None else f"{med:.2f}×") + " over hosts.</p>")
        parts.append("<table><thead><tr><th>host</th><th>traced (s)</th><th>untraced (s)</th><th>ratio</th>"
                     "<th>tracer µs / call</th></tr></thead><tbody>" + "".join(
                         f"<tr><td>{_e(h)}</td><td class='num'>{_fmt(o.get('traced_s'))}</td>"
                         f"<td class='num'>{_fmt(o.get('untraced_s'))}</td><td class='num'>{_fmt(o.get('ratio'))}"
                         f"</td><td class='num'>{_fmt(_us(o.get('tracer_ns_per_call')))}</td></tr>"
                         for h, o in sorted(over.items())) + "</tbody></table>")
    if traces.host_messages:
        parts.append("<p>Hosts that could not trace:</p><ul>" + "".join(
            f"<li>{_e(h)}: {_e(m)}</li>" for h, m in sorted(traces.host_messages.items())) + "</ul>")
    parts.append(img)
    return parts


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def _fmt(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.3g}"


def figure_order(traces: Any) -> list[str]:
    """Functions for the figure: flagged first (largest share, then magnitude), then the others."""
    return [f.function for f in sorted(traces.functions, key=lambda f: figure_key(f.flagged, f.share, f.magnitude))]


def save_functions_figure(traces: Any, version_a: str, label_b: str, path: Path) -> Path | None:
    """Draw and save the figure (None when nothing was sampled)."""
    from quiho.report.plots import save

    if traces is None or not traces.samples:
        return None
    return save(functions_figure(traces.samples, version_a, label_b, figure_order(traces)), path)
