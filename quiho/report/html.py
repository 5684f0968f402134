"""A self-contained HTML report of a profile, plus its PNGs and schema-versioned JSON.

``report.html`` has no external resource: images are inline ``data:`` URIs, styles are
inline, there is no script. Every piece of text that comes from data (application,
version, host and stressor names, reasons, stderr) goes through :func:`html.escape`.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from quiho._text import fingerprint_word

if TYPE_CHECKING:
    from quiho.profile.result import ProfileResult

__all__ = ["ReportFiles", "write_report", "render_html", "load_report_json", "REPORT_SCHEMA_VERSIONS"]

#: ``report.json`` schema versions this quiho reads.
REPORT_SCHEMA_VERSIONS = (1,)

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:70em;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;
text-align:left;vertical-align:top}th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;padding:.2em .7em;border-radius:.3em;font-weight:bold;border:2px solid #222}
.regression{background:#fdd}.improvement{background:#dfd}.no-change{background:#eee}.inconclusive{background:#ffd}
.partial{background:#fff3cd;border:1px solid #e0b000;padding:.5em 1em;margin:1em 0}
img{max-width:100%;height:auto;border:1px solid #ddd}pre{white-space:pre-wrap;font-size:.8em;background:#f7f7f7;
padding:.4em}.muted{color:#666;font-size:.85em}li{margin:.3em 0}
"""


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by :func:`write_report`."""

    html: Path
    json: Path
    images: dict[str, Path]


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _pct(x: float | None) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:+.1%}"


def _num(x: float | None, fmt: str = ".4g") -> str:
    return "–" if x is None or not np.isfinite(x) else format(x, fmt)


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], num: set[int] | None = None) -> str:
    num = num or set()
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class='num'>{_e(c)}</td>" if i in num else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _img(path: Path | None, alt: str) -> str:
    if path is None or not path.exists():
        return f"<p class='muted'>({_e(alt)}: not available)</p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<p><img src='data:image/png;base64,{data}' alt='{_e(alt)}'></p>"


def _min_p_note(m: Any) -> str:
    from math import comb

    ns = [(h.n_a, h.n_b) for h in m.per_host]
    if not ns:
        return ""
    lo = min(2 / comb(a + b, a) for a, b in ns)
    return f" (with these repetitions the smallest possible per-host p is {lo:.3g})" if lo >= m.alpha else ""


def render_html(result: ProfileResult, images: dict[str, Path] | None = None) -> str:
    """The report as one HTML string (images inlined from ``images``: name → PNG path)."""
    images = images or {}
    from quiho.report.trace_section import trace_section_html

    traces = trace_section_html(result.traces, _img(images.get("functions"), "traced calls per function"),
                                result.version_a, result.version_b)
    return "".join([*_summary_html(result), *_metric_html(result, images), *_design_html(result),
                    *_irup_html(result, images),
                    *traces, *_fleet_html(result, images), *_method_html(result)])


def _summary_html(r: ProfileResult) -> list[str]:
    """Document head, the verdict line, partial-result warnings, notes and the hints."""
    m = r.metric
    title = f"quiho profile: {r.application}@{r.version_a} → {r.application}@{r.version_b}"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p><span class='verdict {_e(r.verdict)}' id='verdict'>{_e(r.verdict.upper())}</span> "
        f"&nbsp; change {_e(_pct(m.change))} (CI {_e(_pct(m.ci_low))} … {_e(_pct(m.ci_high))}, "
        f"Wilcoxon p = {_e(_num(m.wilcoxon_p, '.3g'))}) &nbsp; resource profile: "
        f"<b id='profile-verdict'>{_e(r.profile_verdict)}</b></p>",
        f"<p>{_e(m.reason)}</p>",
    ]
    if r.partial:
        parts.append("<div class='partial' id='partial'><b>Partial result</b> — kept, but read with these in mind:"
                     "<ul>" + "".join(f"<li>{_e(p)}</li>" for p in r.partial) + "</ul></div>")
    if r.notes:
        parts.append("<p class='muted'>Notes: " + "; ".join(_e(n) for n in r.notes) + "</p>")
    parts.append("<h2>Where to look first</h2>")
    if r.hints:
        parts.append("<ol id='hints'>" + "".join(f"<li><b>[{_e(h.kind)}]</b> {_e(h.message)}</li>" for h in r.hints)
                     + "</ol>")
    else:
        parts.append("<p>No class or stressor moved beyond its seed noise.</p>")

    return parts


def _metric_html(r: ProfileResult, images: dict[str, Path]) -> list[str]:
    """The metric's test, its per-host table and plot."""
    m = r.metric
    parts: list[str] = []
    parts.append("<h2>Metric change</h2>")
    direction = "higher is better" if m.higher_is_better else "lower is better"
    parts.append(f"<p>Metric in {_e(m.unit or 'its unit')} ({_e(direction)}); magnitude floor ±{m.min_change:.0%}, "
                 f"α = {m.alpha:g}, {m.confidence:.0%} paired bootstrap CI over hosts ({m.n_boot} draws); "
                 f"matched-pairs rank-biserial r = {_e(_num(m.rank_biserial, '+.2f'))}; "
                 f"hosts with a per-host Mann-Whitney p &lt; α: {m.hosts_significant} of {m.hosts_used}"
                 f"{_min_p_note(m)}; test deciding the verdict: {_e(m.test)} (van Elteren stratified p = "
                 f"{_e(_num(m.stratified_p, '.3g'))}).</p>")
    parts.append(_table(
        ["host", f"n {r.version_a}", f"n {r.version_b}", f"median {r.version_a}", f"median {r.version_b}",
         "change", "CoV A", "CoV B", "Mann-Whitney p", "Cliff's δ"],
        ([h.host, h.n_a, h.n_b, _num(h.median_a), _num(h.median_b), _pct(h.ratio - 1), _num(h.cov_a, ".1%"),
          _num(h.cov_b, ".1%"), _num(h.mannwhitney_p, ".3g"), _num(h.cliffs_delta, "+.2f")] for h in m.per_host),
        num={1, 2, 3, 4, 5, 6, 7, 8, 9},
    ))
    if m.excluded_hosts:
        parts.append("<p>Left out of the test: " + "; ".join(f"{_e(k)} ({_e(v)})" for k, v in
                                                              m.excluded_hosts.items()) + "</p>")
    parts.append(_img(images.get("metric"), "metric per host and version"))

    return parts


def _design_html(r: ProfileResult) -> list[str]:
    """The designed fleet's factor effects: each version's class, the effect table and the verdict's reason."""
    d = r.design
    if d is None:
        return []
    from quiho.design.analysis import EFFECT_HEAD, effect_table

    head = [h.replace(" a ", f" {r.version_a} ").replace(" b ", f" {r.version_b} ") for h in EFFECT_HEAD]
    parts = ["<h2>Resource profile on the designed fleet</h2>",
             f"<p id='design-verdict'>Verdict: <b>{_e(d.verdict)}</b> — {_e(d.reason)}</p>",
             f"<p><b>{_e(r.version_a)}</b>: <span id='story-a'>{_e(d.story_a.text())}</span><br>"
             f"<b>{_e(r.version_b)}</b>: <span id='story-b'>{_e(d.story_b.text())}</span></p>",
             _table(head, effect_table(d)),
             "<p class='muted'>Each factor's effect is its far level against its reference, on the log metric, from "
             f"per-visit means ({d.visits} host visits, blocked by round); a change's p is a within-visit "
             f"permutation test (B = {d.permutations}), Holm-adjusted with weights: the factors that move the two "
             "versions' runs pooled weigh 1 each, the others together 1 (with the cut of "
             "<code>DesignSettings.untested</code> \"model\" those are not tested). A factor's class is the one "
             "whose stressors it moves (at least twice as much as the cpu class): "
             + "; ".join(f"{_e(d.label(ax.factor))}: {_e(ax.resource)} ({_e(ax.reason)})" for ax in d.axes)
             + ".</p>"]
    return parts


def _irup_html(r: ProfileResult, images: dict[str, Path]) -> list[str]:
    """Both versions' IRUP validity, their plot, the comparison tables and fleet-size advice."""
    parts: list[str] = []
    title = "Inferred resource utilization profiles" + (" (the paper's view)" if r.design is not None else "")
    parts.append(f"<h2>{title}</h2>")
    for key, irup, name in (("a", r.irup_a, r.version_a), ("b", r.irup_b, r.version_b)):
        if irup is None:
            parts.append(f"<p><b>{_e(name)}</b>: no IRUP — {_e(r.irup_errors.get(key, 'unavailable'))}</p>")
        else:
            v = irup.validity
            parts.append(f"<p><b>{_e(name)}</b>: {_e(v.verdict)} — {_e(v.reason)}</p>")
    parts.append(_img(images.get("irups"), "IRUPs side by side"))
    if r.comparison is not None:
        c = r.comparison
        parts.append(f"<p>Comparison: <b>{_e(c.verdict)}</b> — {_e(c.reason)}. Spearman ρ = "
                     f"{_e(_num(c.spearman, '.2f'))}, Kendall τ = {_e(_num(c.kendall, '.2f'))}.</p>")
        parts.append(_table(["rank", f"{r.version_a}", "importance", f"{r.version_b}", "importance", "same?", "why"],
                            ([s.rank, s.stressor_a, f"{s.importance_a:.0f}", s.stressor_b, f"{s.importance_b:.0f}",
                              "yes" if s.same else "no", s.why] for s in c.steps), num={0, 2, 4}))
        shares = list(c.class_shares.values())
        classes = sorted(set(shares[0]) | set(shares[-1]))
        parts.append(_table(["class", f"share {r.version_a}", f"share {r.version_b}", "shift"],
                            ([k, f"{shares[0].get(k, 0):.0%}", f"{shares[-1].get(k, 0):.0%}",
                              f"{c.class_shift.get(k, 0):+.0%}"] for k in classes), num={1, 2, 3}))
    for irup in (r.irup_a, r.irup_b):
        if irup is not None and irup.target in r.advice:
            parts.append(f"<p>Fleet-size advice for {_e(irup.target)}: {_e(r.advice[irup.target].reason)}</p>")

    return parts


def _fleet_html(r: ProfileResult, images: dict[str, Path]) -> list[str]:
    """The fingerprint run used, per-host outcomes and the failed runs."""
    parts: list[str] = []
    parts.append("<h2>Fleet</h2>")
    fp = (f"fingerprint run {_e(r.fingerprint_batch)} (id {r.fingerprint_run_id}), "
          + ("taken for this profile" if r.fingerprinted_now else
             f"reused, {r.fingerprint_age_s / 60:.0f} min old" if r.fingerprint_age_s is not None else "reused")
          ) if r.fingerprint_run_id else "no fingerprint run"
    parts.append(f"<p>{fp}</p>")
    parts.append(_table(["host", "fingerprint", f"ok {r.version_a}", f"ok {r.version_b}", "failed", "why"],
                        ([h.host, fingerprint_word(h.fingerprinted, h.fingerprint_skipped), h.ok_a, h.ok_b,
                          h.failed_a + h.failed_b, "; ".join(h.reasons)] for h in r.hosts), num={2, 3, 4}))
    parts.append(_img(images.get("fingerprints"), "fingerprint overview"))

    failed = r.runs[r.runs["status"] != "ok"] if len(r.runs) else r.runs
    if len(failed):
        parts.append("<h2>Failed runs</h2>")
        parts.append(_table(["host", "version", "repetition", "reason"],
                            ([x.host, x.version, x.repetition, x.reason] for x in failed.itertuples()), num={2}))
    return parts


def _method_html(r: ProfileResult) -> list[str]:
    """Parameters, versions and the closing tags."""
    parts: list[str] = []
    parts.append("<h2>Method and versions</h2>")
    parts.append(f"<pre>{_e(json.dumps(r.params, indent=1, default=str))}</pre>")
    parts.append(f"<p class='muted'>batch {_e(r.batch)} · created {_e(r.created_at)} · report.json schema "
                 f"quiho.profile v1</p></body></html>")
    return parts


def write_report(result: ProfileResult, directory: str | Path) -> ReportFiles:
    """Write ``report.html``, ``report.json`` and the PNGs of ``result`` into ``directory``.

    PNGs: ``irups.png`` (both IRUPs side by side, when both exist), ``metric.png`` (metric per
    host per version), ``fingerprints.png`` (fingerprint overview, when fingerprints exist).
    """
    from quiho.report.plots import irup_pair, save
    from quiho.report.profile_plots import fingerprint_overview, metric_per_host

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    images: dict[str, Path] = {}
    if result.irup_a is not None and result.irup_b is not None:
        images["irups"] = save(irup_pair(result.irup_a, result.irup_b), d / "irups.png")
    if len(result.runs):
        images["metric"] = save(metric_per_host(result.runs, result.version_a, result.version_b,
                                                label_b=result.label_b, unit=result.metric.unit), d / "metric.png")
    if not result.fingerprints.empty:
        images["fingerprints"] = save(fingerprint_overview(result.fingerprints), d / "fingerprints.png")
    from quiho.report.trace_section import save_functions_figure

    if (fpng := save_functions_figure(result.traces, result.version_a, result.label_b, d / "functions.png")):
        images["functions"] = fpng
    html_path = d / "report.html"
    html_path.write_text(render_html(result, images), encoding="utf-8")
    json_path = d / "report.json"
    json_path.write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8")
    return ReportFiles(html_path, json_path, images)


def load_report_json(path: str | Path) -> dict[str, Any]:
    """Read a ``report.json`` written by ``quiho profile --report``.

    Raises
    ------
    ImportDataError
        Not a quiho profile report, or a schema version this quiho does not read (the message says what to do).
    """
    from quiho.errors import ImportDataError

    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ImportDataError(f"cannot read profile report {p}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("schema") != "quiho.profile":
        raise ImportDataError(f"{p} is not a quiho profile report (no \"schema\": \"quiho.profile\")")
    if doc.get("schema_version") not in REPORT_SCHEMA_VERSIONS:
        raise ImportDataError(f"{p} has report schema v{doc.get('schema_version')}; this quiho reads "
                              f"v{', v'.join(map(str, REPORT_SCHEMA_VERSIONS))}: upgrade quiho or rerun "
                              f"'quiho profile --report'")
    return doc
