"""The report's plots as inline SVG: IRUP bars, the metric of every run per host, and each traced function's calls.

``quiho profile --report`` draws these with matplotlib into PNGs beside its report; the site draws the same views
from the stored document (the calls: from the store's traced runs) as text (no matplotlib per page, nothing to
fetch), in grey scale: version A in outline circles, B in filled triangles, medians as black bars, linear fits as
a solid (A) and a dashed (B) line; importances as black (A) and grey (B) bars with a ±sd whisker, clipped at the
axis end.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiho._plotting import calls_axis_top
from quiho.publish._safe import num, text

__all__ = ["Bars", "bars_svg", "runs_svg", "calls_svg"]


@dataclass(frozen=True)
class Bars:
    """One bar series: its name, and importance and spread per label (None: absent from this IRUP)."""

    name: str
    values: tuple[float | None, ...]
    spreads: tuple[float | None, ...]


def bars_svg(labels: Sequence[str], series: Sequence[Bars], *, title: str, width: int = 760) -> str:
    """Horizontal bars, one row per label and one bar per series, on the IRUP's 0-100 importance scale."""
    left, right, row, bar = 170, 20, 6 + 12 * len(series), 10
    height = 30 + row * len(labels)
    vals = [v for s in series for v in s.values if v is not None]
    top = max([100.0, *vals]) * 1.15
    span = width - left - right

    def x(v: float) -> float:
        return left + span * max(0.0, min(v, top)) / top

    parts = [f"<svg class='plot bars' role='img' viewBox='0 0 {width} {height}' width='{width}' height='{height}' "
             f"xmlns='http://www.w3.org/2000/svg'><title>{text(title)}</title>",
             f"<line class='axis' x1='{left}' y1='4' x2='{left}' y2='{height - 24}'/>"]
    for t in (0, 25, 50, 75, 100):
        parts.append(f"<line class='grid' x1='{x(t):.1f}' y1='4' x2='{x(t):.1f}' y2='{height - 24}'/>"
                     f"<text class='tick' x='{x(t):.1f}' y='{height - 10}' text-anchor='middle'>{t}</text>")
    for i, label in enumerate(labels):
        y0 = 6 + i * row
        parts.append(f"<text class='tick' x='{left - 6}' y='{y0 + row / 2 + 3:.1f}' text-anchor='end'>"
                     f"{text(label, 26)}</text>")
        for k, s in enumerate(series):
            v, sd = s.values[i], s.spreads[i]
            if v is None:
                continue
            y = y0 + k * 12
            tip = f"{label} · {s.name}: {num(v, '.1f')} ± {num(sd, '.1f')}"
            parts.append(f"<g><title>{text(tip)}</title><rect class='bar bar-{k}' x='{left}' y='{y}' "
                         f"width='{x(v) - left:.1f}' height='{bar}'/>")
            if sd:
                parts.append(f"<line class='whisker' x1='{x(v - sd):.1f}' y1='{y + bar / 2}' x2='{x(v + sd):.1f}' "
                             f"y2='{y + bar / 2}'/>")
            parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _frame(kind: str, title: str, size: tuple[int, int], margins: tuple[int, int, int, int], hi: float,
           y: Callable[[float], float]) -> list[str]:
    """A plot's opening: the ``<svg>`` with its title, both axes, and y ticks at 0, ``hi / 2`` and ``hi``.

    ``margins`` are (left, top, right, bottom) in px; ``y`` maps a value to its px.
    """
    (width, height), (left, top, right, bottom) = size, margins
    parts = [f"<svg class='plot {kind}' role='img' viewBox='0 0 {width} {height}' width='{width}' height='{height}' "
             f"xmlns='http://www.w3.org/2000/svg'><title>{text(title)}</title>",
             f"<line class='axis' x1='{left}' y1='{top}' x2='{left}' y2='{height - bottom}'/>",
             f"<line class='axis' x1='{left}' y1='{height - bottom}' x2='{width - right}' y2='{height - bottom}'/>"]
    for t in (0.0, hi / 2, hi):
        parts.append(f"<text class='tick' x='{left - 4}' y='{y(t) + 3:.1f}' text-anchor='end'>{num(t, '.3g')}</text>")
    return parts


def _groups(runs: Sequence[dict[str, Any]],
            labels: tuple[str, str]) -> tuple[list[str], dict[tuple[str, str], list[float]]]:
    """Hosts (sorted) and the ``ok`` values of each (host, version label)."""
    hosts = sorted({str(r.get("host")) for r in runs})
    vals: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        v = r.get("value")
        if r.get("status", "ok") == "ok" and isinstance(v, int | float) and str(r.get("version")) in labels:
            vals.setdefault((str(r.get("host")), str(r.get("version"))), []).append(float(v))
    return hosts, vals


def runs_svg(runs: Sequence[dict[str, Any]], labels: tuple[str, str], *, unit: str, title: str,
             height: int = 260) -> str:
    """Every successful run per host and version (A: circles, B: triangles), each group's median as a bar.

    ``labels`` are the stored version labels of A and B. A host with no successful run of a version gets a ×.
    """
    hosts, vals = _groups(runs, labels)
    flat = [v for vs in vals.values() for v in vs]
    hi = (max(flat) if flat else 1.0) * 1.08 or 1.0
    left, bottom, top = 60, 60, 10
    step = 36
    width = max(360, left + 20 + step * len(hosts))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - v / hi)

    parts = _frame("runs", title, (width, height), (left, top, 10, bottom), hi, y)
    parts.append(f"<text class='tick' x='12' y='{top + 10}'>{text(unit or 'metric', 20)}</text>")
    for i, h in enumerate(hosts):
        cx = left + step * (i + 0.5)
        parts.append(f"<text class='tick' x='{cx:.1f}' y='{height - bottom + 12}' text-anchor='end' "
                     f"transform='rotate(-35 {cx:.1f} {height - bottom + 12})'>{text(h, 18)}</text>")
        for k, lab in enumerate(labels):
            px = cx + (-7 if k == 0 else 7)
            vs = vals.get((h, lab), [])
            if not vs:
                parts.append(f"<text class='tick' x='{px:.1f}' y='{height - bottom - 2}' text-anchor='middle'>×"
                             f"<title>{text(h)} · {text(lab)}: no successful run</title></text>")
                continue
            med = statistics.median(vs)
            marks = "".join(f"<circle class='run-a' cx='{px:.1f}' cy='{y(v):.1f}' r='3'/>" if k == 0 else
                            f"<path class='run-b' d='M{px:.1f} {y(v) - 4:.1f}l3.5 6h-7z'/>" for v in vs)
            parts.append(f"<g><title>{text(h)} · {text(lab)}: {len(vs)} runs, median {num(med)} {text(unit)}</title>"
                         f"{marks}<line class='median' x1='{px - 5:.1f}' y1='{y(med):.1f}' x2='{px + 5:.1f}' "
                         f"y2='{y(med):.1f}'/></g>")
    parts.append("</svg>")
    return "".join(parts)


def calls_svg(calls: Mapping[str, tuple[Sequence[float], Sequence[float]]], labels: tuple[str, str], *, title: str,
              points: int = 300, width: int = 380, height: int = 240) -> str:
    """One function's calls, ``{label: (call order, inclusive ns)}``, in µs per call, with a linear fit per version.

    As the report's ``functions.png``: the axis stops at 1.5 x the 99th percentile (preempted calls would squash
    the rest) and says how many calls lie above it, and the fits leave those calls out (a few would tilt them);
    each version is thinned evenly to ``points`` marks (the fit uses every call given below the axis end).
    """
    xy = {lab: (np.asarray(calls[lab][0], float), np.asarray(calls[lab][1], float) / 1e3)
          for lab in labels if lab in calls and len(calls[lab][0])}
    ys = [y for _, y in xy.values()]
    hi = calls_axis_top(ys)
    hi = hi if hi > 0 else 1.0
    xmax = max([float(x.max()) for x, _ in xy.values()] + [1.0])
    left, bottom, top, right = 54, 34, 10, 10

    def px(x: float) -> float:
        return left + (width - left - right) * x / xmax

    def py(y: float) -> float:
        return top + (height - top - bottom) * (1 - min(max(y, 0.0), hi) / hi)

    above = sum(int((y > hi).sum()) for y in ys)
    parts = _frame("calls", title, (width, height), (left, top, right, bottom), hi, py)
    parts.append(f"<text class='tick' x='{(left + width) / 2:.0f}' y='{height - 4}' text-anchor='middle'>call order"
                 "</text>")
    parts.append(f"<text class='tick' x='{left + 4}' y='{top + 8}'>µs per call</text>")
    if above:
        parts.append(f"<text class='tick' x='{width - right}' y='{top + 8}' text-anchor='end'>{above} call(s) above "
                     "the axis</text>")
    for k, lab in enumerate(labels):
        if lab not in xy:
            continue
        x, y = xy[lab]
        idx = np.unique(np.linspace(0, x.size - 1, min(points, x.size)).astype(int))
        marks = "".join(f"<circle class='run-a' cx='{px(a):.1f}' cy='{py(b):.1f}' r='2'/>" if k == 0 else
                        f"<path class='run-b' d='M{px(a):.1f} {py(b) - 3:.1f}l2.5 4.5h-5z'/>"
                        for a, b in zip(x[idx], y[idx], strict=True) if b <= hi)
        fit = ""
        keep = y <= hi
        if keep.sum() >= 2 and np.ptp(x[keep]) > 0:
            slope, icpt = (float(c) for c in np.polyfit(x[keep], y[keep], 1))
            seg = _within(slope, icpt, float(x.min()), float(x.max()), hi)
            if seg is not None:
                (x0, y0), (x1, y1) = seg
                fit = (f"<line class='fit fit-{k}' x1='{px(x0):.1f}' y1='{py(y0):.1f}' x2='{px(x1):.1f}' "
                       f"y2='{py(y1):.1f}'/>")
        parts.append(f"<g><title>{text(lab)}: {x.size} calls, median {num(float(np.median(y)), '.3g')} µs</title>"
                     f"{marks}{fit}</g>")
    parts.append("</svg>")
    return "".join(parts)


def _within(slope: float, icpt: float, x0: float, x1: float, hi: float
            ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of the line ``icpt + slope * x`` over ``[x0, x1]`` that lies in ``0 <= y <= hi`` (None: none)."""
    lo_x, hi_x = x0, x1
    if slope == 0:
        if not 0 <= icpt <= hi:
            return None
    else:
        a, b = sorted(((0 - icpt) / slope, (hi - icpt) / slope))
        lo_x, hi_x = max(x0, a), min(x1, b)
    if lo_x >= hi_x:
        return None
    return (lo_x, icpt + slope * lo_x), (hi_x, icpt + slope * hi_x)
