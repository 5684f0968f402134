"""Pages of the history series: the filterable list and one page per series."""

from __future__ import annotations

from collections.abc import Sequence

from quiho.history import ChangePoint
from quiho.publish._collect import SeriesView, series_file
from quiho.publish._layout import badge, page, table
from quiho.publish._safe import json_script, num, page_file, pct, text
from quiho.publish._svg import Mark, PerRevision, series_svg
from quiho.store.alerts import AlertRow

__all__ = ["series_index", "series_page", "series_file", "newest_cells", "cp_label"]

#: Plot geometry shared by the SVG and the script's readout (pixel → revision).
_W, _LEFT, _RIGHT = 760, 56, 12


def cp_label(c: ChangePoint, unit: str) -> str:
    """Hover text of a change point: revision, segment means, magnitude, p and location (raw: the caller escapes)."""
    return (f"change at revision {c.revision} (index {c.index}): {num(c.before)} → {num(c.after)} {unit} "
            f"({pct(c.magnitude)}), p = {num(c.p_value, '.2g')}{c.location_text()}")


def newest_cells(s: SeriesView) -> tuple[str, str]:
    """(badge, evidence) of the newest-revision check, escaped."""
    if s.verdict is None:
        return badge("not analysed"), text(s.error, 200)
    nw = s.verdict.newest
    if nw.reason:
        return badge(nw.verdict), text(nw.reason, 200)
    return badge(nw.verdict), (f"{text(pct(nw.magnitude))} [{text(pct(nw.ci[0]))}, {text(pct(nw.ci[1]))}], "
                               f"p = {text(num(nw.p_value, '.2g'))}")


def _cps_cell(s: SeriesView) -> str:
    if s.verdict is None:
        return "–"
    d = s.verdict.detection
    if not d.meaningful:
        return text(d.reason, 120)
    if not d.change_points:
        return "none"
    last = d.change_points[-1]
    return f"{len(d.change_points)}; last {text(last.revision, 24)} {text(pct(last.magnitude))}"


def _order(s: SeriesView) -> tuple[int, str]:
    rank = {"regression": 0, "improvement": 1}.get(s.verdict.newest.verdict if s.verdict else "", 2)
    return rank, s.name


def series_index(series: list[SeriesView], site_title: str) -> str:
    """Every series, regressions at the newest revision first: a filterable table."""
    rows, names = [], []
    for s in sorted(series, key=_order):
        b, ev = newest_cells(s)
        rows.append([f"<a href='{page_file('s', s.name)}'>{text(s.name, 120)}</a>", text(s.unit, 30),
                     str(s.n_ok), str(s.n_failed), str(s.n_pending), b, ev, _cps_cell(s)])
        names.append(s.name)
    reg = sum(1 for s in series if s.verdict is not None and s.verdict.newest.verdict == "regression")
    body = [f"<h1>Series ({len(series)})</h1>",
            f"<p>{reg} of {len(series)} series regress at their newest revision. Newest revision: its mean against "
            "the revisions since the last change point (prediction interval); change points: the detector's "
            "segmentation of the whole series.</p>",
            table(["series", "unit", "ok", "failed", "pending", "newest revision", "newest vs. its segment (CI, p)",
                   "change points"], rows, table_id="series", names=names, num=(2, 3, 4))]
    return page("Series", site_title, body, 1)


def _values_table(s: SeriesView, stats: PerRevision) -> str:
    rows = []
    for rev, smp, mean in zip(s.revisions, s.samples, stats.means, strict=True):
        shown = ", ".join(num(v) for v in smp[:20].tolist()) + (" …" if len(smp) > 20 else "")
        rows.append([text(rev, 60), str(len(smp)), num(mean), shown])
    return table(["revision", "repetitions", "mean", "values"], rows, table_id="values", num=(1, 2))


def _cp_table(s: SeriesView) -> str:
    if s.verdict is None:
        return f"<p>Not analysed: {text(s.error)}</p>"
    d = s.verdict.detection
    if not d.meaningful:
        return f"<p>{text(d.reason)}</p>"
    if not d.change_points:
        return f"<p>No change point (method {text(d.method)}).</p>"
    rows = [[str(k + 1), text(c.revision, 60), str(c.index), num(c.before), num(c.after), text(pct(c.magnitude)),
             num(c.p_value, ".2g")] for k, c in enumerate(d.change_points)]
    return (f"<p>Method {text(d.method)}.</p>"
            + table(["#", "revision", "index", "before", "after", "magnitude", "p"], rows, table_id="changepoints",
                    num=(0, 2, 3, 4, 5, 6)))


def _newest_html(s: SeriesView) -> str:
    if s.verdict is None:
        return ""
    nw = s.verdict.newest
    b, ev = newest_cells(s)
    detail = "" if nw.reason else (f" Revision {text(nw.revision, 60)}: {num(nw.newest)} against the mean "
                                   f"{num(nw.baseline)} of the {nw.n_baseline} revisions since the last change "
                                   "point.")
    return f"<p id='newest'>Newest revision: {b} {ev}.{detail}</p>"


def _alerts_html(alerts: Sequence[AlertRow]) -> str:
    """The series' open alerts with their state (``new`` fails the CI gate, ``acknowledged`` is known)."""
    if not alerts:
        return "<h2>Open alerts</h2><p>None.</p>"
    rows = [[f"#{a.id}", badge(a.state), text(a.first_bad, 40), text(a.baseline_from, 40),
             text(f"{pct(a.magnitude)} [{pct(a.ci_low)}, {pct(a.ci_high)}]"), num(a.p_value, ".2g"),
             text(a.found_by, 40), text(a.created_at), text(a.updated_at)] for a in alerts]
    return (f"<h2>Open alerts ({len(alerts)})</h2>"
            + table(["alert", "state", "first bad revision", "good since", "regression (CI)", "p", "found by",
                     "opened", "updated"], rows, table_id="series-alerts", num=(5,)))


def series_page(s: SeriesView, site_title: str, alerts: Sequence[AlertRow] = ()) -> str:
    """One series: its open alerts, the newest check, the plot with change-point tooltips, change points, values."""
    marks = [] if s.verdict is None else [Mark(c.index, cp_label(c, s.unit), (c.before, c.after))
                                          for c in s.verdict.detection.change_points]
    stats = PerRevision.of(s.samples)
    svg = series_svg(s.revisions, stats, marks, unit=s.unit, title=f"{s.name}: mean and range per revision",
                     width=_W)
    data = {"revisions": list(s.revisions), "means": stats.means, "min": stats.mins, "max": stats.maxs,
            "reps": stats.counts, "n": len(s.samples), "unit": s.unit, "width": _W, "left": _LEFT, "right": _RIGHT,
            "cps": [{"index": m.index, "label": m.label} for m in marks]}
    body = [f"<h1>{text(s.name)}</h1>",
            f"<p class='muted'>unit {text(s.unit or '–')} · source {text(s.source)} · {s.n_ok} measured, "
            f"{s.n_failed} failed, {s.n_pending} pending revisions</p>",
            _newest_html(s), _alerts_html(alerts), "<figure id='plot-static'>", svg,
            "<figcaption class='muted'>Black line: mean per revision; grey bars: range of its repetitions; dashed "
            "lines: change points (hover for revision, magnitude and p); square: newest revision.</figcaption>"
            "</figure><p class='readout' id='readout'></p>",
            "<h2>Change points</h2>", _cp_table(s),
            "<h2>Failed revisions</h2>" + table(["revision", "reason"], ([text(r, 60), text(why, 500)]
                                                                       for r, why in s.failed), table_id="failed")
            if s.failed else "",
            f"<h2>Values</h2><details><summary>{len(s.revisions)} revisions</summary>{_values_table(s, stats)}"
            "</details>",
            json_script("series-data", data)]
    return page(s.name, site_title, body, 1, chart=True)
