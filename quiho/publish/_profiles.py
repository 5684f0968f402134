"""Pages of the stored profiles: the list, and one full report per profile rendered from its stored document.

The document is what ``quiho profile`` stored (``report.json``'s schema); rendering it needs no re-analysis,
so 100 profiles publish in well under a second. Its JSON is published beside the page.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from quiho._plotting import figure_key
from quiho._text import UNTESTED_CHANGE, fingerprint_word, holm_weight_note
from quiho.publish._collect import ProfileView
from quiho.publish._layout import badge, page, table
from quiho.publish._report_svg import Bars, bars_svg, calls_svg, runs_svg
from quiho.publish._safe import num, page_file, pct, text

__all__ = ["profiles_index", "profile_page", "profile_file", "profile_key", "profile_cells", "effect_text",
           "factor_rows"]


def profile_key(p: ProfileView) -> str:
    """The identity a profile's files are named by: its batch (unique in the store)."""
    return str(p.row["batch"])


def profile_file(p: ProfileView, ext: str = "html") -> str:
    """Path (from the site root) of a profile's page (``ext="json"``: its stored document)."""
    return "profiles/" + page_file("profile", profile_key(p))[:-4] + ext


def _metric(doc: dict[str, Any] | None) -> dict[str, Any]:
    return (doc or {}).get("metric") or {}


def profile_cells(p: ProfileView) -> list[str]:
    """Escaped cells: application, A → B, verdict, change [CI], p, IRUP verdict, status, created."""
    r, m = p.row, _metric(p.document)
    ci = m.get("ci") or [None, None]
    # the resource-profile verdict the profile gave (its designed-fleet analysis where it had one)
    profile_verdict = ((p.document or {}).get("resource_profile") or {}).get("verdict") or r["irup_verdict"]
    change = (f"{text(pct(m.get('change')))} [{text(pct(ci[0]))}, {text(pct(ci[1]))}]" if p.document
              else text(p.error, 120))
    return [text(r["application"], 60), f"{text(r['version_a'], 30)} → {text(r['version_b'], 30)}",
            badge(str(r["verdict"])), change, num(m.get("wilcoxon_p"), ".3g"), badge(str(profile_verdict or "–")),
            text(r["status"]), text(r["created_at"])]


def profiles_index(profiles: list[ProfileView], site_title: str) -> str:
    """Every stored profile, newest first: a filterable table linking to each full report."""
    head = ["profile", "application", "versions", "verdict", "metric change [CI]", "Wilcoxon p", "resource profile",
            "status", "created"]
    rows = [[f"<a href='{page_file('profile', profile_key(p))}'>{text(profile_key(p), 40)}</a>", *profile_cells(p)]
            for p in profiles]
    names = [f"{p.row['application']} {p.row['version_a']} {p.row['version_b']} {profile_key(p)}" for p in profiles]
    body = [f"<h1>Profiles ({len(profiles)})</h1>",
            table(head, rows, table_id="profiles", names=names, num=(5,))]
    return page("Profiles", site_title, body, 1)


def _shift_html(cmp: dict[str, Any], a: str, b: str) -> list[str]:
    """The IRUP shift: class shares of both versions and their change, then the rank walk (the class story)."""
    shares = cmp.get("class_shares") or {}
    sa, sb, shift = shares.get("a") or {}, shares.get("b") or {}, cmp.get("class_shift") or {}
    classes = sorted(set(sa) | set(sb) | set(shift))
    out = [f"<p id='irup-shift'>{badge(str(cmp.get('verdict', '–')))} {text(cmp.get('reason', ''))}</p>",
           table(["class", f"share {a}", f"share {b}", "shift"],
                 ([text(k), num(sa.get(k), ".0%"), num(sb.get(k), ".0%"), num(shift.get(k), "+.0%")]
                  for k in classes), table_id="class-shares", num=(1, 2, 3))]
    walk = cmp.get("walk") or []
    if walk:
        out.append(table(["rank", a, "importance", b, "importance", "same?", "why"],
                         ([str(s.get("rank")), text(s.get("stressor_a")), num(s.get("importance_a"), ".0f"),
                           text(s.get("stressor_b")), num(s.get("importance_b"), ".0f"),
                           "yes" if s.get("same") else "no", text(s.get("why"))] for s in walk), num=(0, 2, 4)))
    return out


def effect_text(e: dict[str, Any]) -> str:
    """``+25 % [+16, +35]``, as quiho.design.Effect.text formats the same numbers."""
    ci = e.get("ci") or [None, None]
    if e.get("effect") is None or None in ci:
        return "n/a"
    return f"{100 * e['effect']:+.0f} % [{100 * ci[0]:+.0f}, {100 * ci[1]:+.0f}]"


def factor_rows(design: dict[str, Any], sides: Sequence[str]) -> list[list[str]]:
    """Per factor of a stored design: its levels, what it loads, and its effect on each version of ``sides``."""
    effects = {side: {e["factor"]: e for e in ((design.get("effects") or {}).get(side) or {}).get("effects") or []}
               for side in sides}
    axes = {x["factor"]: x["resource"] for x in design.get("axes") or []}
    return [[text(f"{f['label']} {f['reference']} → {f['far']}"), text(axes.get(f["name"], "none")),
             *(effect_text(effects[side].get(f["name"], {})) for side in sides)]
            for f in (design.get("factors") or {}).get("factors") or []]


def _design_html(design: dict[str, Any], a: str, b: str) -> list[str]:
    """The designed fleet's answer as the profile stored it: verdict, each version's class, the factor table."""
    story = design.get("story") or {}
    ch = {e["factor"]: e for e in design.get("changes") or []}
    rows = []
    for f, row in zip((design.get("factors") or {}).get("factors") or [], factor_rows(design, ("a", "b")),
                      strict=True):
        c = ch.get(f["name"])
        p_txt = ("n/a" if c is None else UNTESTED_CHANGE if c.get("tested") is False else
                 "n/a" if c.get("p_value") is None else
                 f"{c['p_value']:.3g} (Holm {c.get('p_adjusted') or float('nan'):.3g}"
                 f"{holm_weight_note(c.get('weight'))})")
        rows.append([*row, effect_text(c or {}), text(p_txt)])
    return [f"<p id='design'>{badge(str(design.get('verdict', '–')))} {text(design.get('reason', ''))}</p>",
            f"<p><b>{text(a)}</b>: {text((story.get('a') or {}).get('label', ''))} — "
            f"{text((story.get('a') or {}).get('evidence', ''))}<br><b>{text(b)}</b>: "
            f"{text((story.get('b') or {}).get('label', ''))} — {text((story.get('b') or {}).get('evidence', ''))}</p>",
            table(["factor", "loads", f"effect on {a}", f"effect on {b}", "change", "permutation p"], rows,
                  table_id="design-effects")]


def _irup_bars(doc: dict[str, Any], a: str, b: str) -> str:
    """Both versions' IRUPs side by side (the report's ``irups.png``): the top 15 stressors of either."""
    irup = doc.get("irup") or {}
    fa = {f["stressor"]: f for f in (irup.get("a") or {}).get("features") or []}
    fb = {f["stressor"]: f for f in (irup.get("b") or {}).get("features") or []}
    if not fa or not fb:
        return ""
    order = list(dict.fromkeys([*list(fa)[:15], *list(fb)[:15]]))[:15]
    series = [Bars(v, tuple(f[s]["importance"] if s in f else None for s in order),
                   tuple(f[s]["std"] if s in f else None for s in order)) for v, f in ((a, fa), (b, fb))]
    return (f"<figure id='irup-bars'>{bars_svg(order, series, title=f'IRUP of {a} (black) and {b} (grey)')}"
            f"<figcaption class='muted'>Importance (top = 100) of the top stressors of either version, "
            f"{text(a)} black, {text(b)} grey; whiskers ± sd over seeds.</figcaption></figure>")


def _metric_html(doc: dict[str, Any]) -> list[str]:
    m = _metric(doc)
    rows = ([text(h.get("host")), str(h.get("n_a")), str(h.get("n_b")), num(h.get("median_a")),
             num(h.get("median_b")), text(pct((h.get("ratio") or float("nan")) - 1)),
             num(h.get("mannwhitney_p"), ".3g"),
             num(h.get("cliffs_delta"), "+.2f")] for h in m.get("per_host") or [])
    a, b = str(doc.get("version_a", "A")), str(doc.get("version_b", "B"))
    runs = doc.get("runs") or []
    svg = runs_svg(runs, (a, str(doc.get("label_b") or b)), unit=str(m.get("unit") or ""),
                   title=f"metric per host: {a} (circles) and {b} (triangles)")
    plot = (f"<figure id='runs-plot'>{svg}<figcaption class='muted'>Every successful run per host: {text(a)} "
            f"circles, {text(b)} triangles; bars: medians; × no successful run.</figcaption></figure>") if runs else ""
    return ["<h2>Metric change</h2>",
            f"<p>{text(m.get('reason', ''))}</p>", plot,
            table(["host", "n A", "n B", "median A", "median B", "change", "Mann-Whitney p", "Cliff's δ"], rows,
                  table_id="per-host", num=range(1, 8))]


def _figure_order(fns: list[dict[str, Any]]) -> list[str]:
    """Functions for the figures, as the report orders them: flagged first (largest share, then magnitude)."""
    return [str(f.get("function")) for f in sorted(
        fns, key=lambda f: figure_key(f.get("verdict") in ("degradation", "optimization"), f.get("share"),
                                      f.get("magnitude")))]


def _calls_html(p: ProfileView, fns: list[dict[str, Any]], a: str, b: str) -> str:
    """The report's functions figure: each drawn function's calls on one host (at most 6 functions)."""
    if p.calls_note:
        return f"<p class='muted' id='calls-note'>{text(p.calls_note)}</p>"
    drawn = p.calls.get("functions") or {}
    names = [f for f in _figure_order(fns) if f in drawn][:6]
    if not names:
        return ""
    figs = "".join(f"<figure>{calls_svg(drawn[f], (a, b), title=f'{f}: calls of {a} and {b}')}"
                   f"<figcaption>{text(f, 60)}</figcaption></figure>" for f in names)
    return (f"<div class='smalls' id='calls'>{figs}</div><p class='muted'>Traced calls on host "
            f"{text(p.calls.get('host', '?'))}: inclusive time per call against call order, {text(a)} circles and "
            f"solid fit, {text(b)} triangles and dashed fit; the axis stops at 1.5 × the 99th percentile, and the fits "
            "leave out the calls above it.</p>")


def _traces_html(p: ProfileView, traces: dict[str, Any] | None, a: str, b: str) -> list[str]:
    """The traced runs' per-function verdicts and the calls behind them, as the report's trace section shows."""
    if not traces:
        return []
    fns = traces.get("functions") or []
    def ci(f: dict[str, Any]) -> str:
        lo, hi = (f.get("ci") or [None, None])[:2]
        return f"{text(pct(lo))}, {text(pct(hi))}"

    rows = ([text(f.get("function"), 120), badge(str(f.get("verdict", "–"))), text(f.get("kind") or "–"),
             text(pct(f.get("magnitude"))), ci(f),
             f"{text(f.get('hosts_flagged', '–'))} of {text(f.get('hosts', '–'))}", num(f.get("share"), ".0%"),
             text(f.get("reason") or "–")]
            for f in fns)
    notes = "".join(f"<li>{text(h)}: {text(m)}</li>" for h, m in sorted((traces.get("hosts") or {}).items()))
    return ["<h2>Traced functions</h2>",
            f"<p class='muted'>{text(traces.get('traced_runs', '–'))} traced runs; {text(traces.get('detector', ''))}"
            "</p>",
            table(["function", "verdict", "kind", "change", "95 % CI over hosts", "hosts flagged", "share of the "
                   "metric change", "why"], rows, table_id="trace-functions", num=(3, 6)) if fns
            else "<p>No function changed.</p>",
            f"<ul class='muted'>{notes}</ul>" if notes else "", _calls_html(p, fns, a, b)]


def profile_page(p: ProfileView, site_title: str) -> str:
    """A profile's full report: verdict, metric per host, IRUP shift and class story, hints, hosts, parameters."""
    r, doc = p.row, p.document or {}
    a, b = str(r["version_a"]), str(r["version_b"])
    title = f"{r['application']}@{a} → {r['application']}@{b}"
    cells = profile_cells(p)
    body = [f"<h1>{text(title)}</h1>",
            f"<p id='verdict'>{cells[2]} metric change {cells[3]}, Wilcoxon p = {cells[4]} · resource profile "
            f"{cells[5]} · {cells[6]} · batch {text(profile_key(p))} · {cells[7]}</p>"]
    if p.document is None:
        body.append(f"<p>The stored document cannot be read: {text(p.error)}</p>")
        return page(title, site_title, body, 1)
    if doc.get("partial"):
        body.append("<div id='partial'><b>Partial result</b><ul>"
                    + "".join(f"<li>{text(x)}</li>" for x in doc["partial"]) + "</ul></div>")
    body.append("<h2>Where to look first</h2>")
    hints = doc.get("hints") or []
    body.append("<ol id='hints'>" + "".join(f"<li><b>[{text(h.get('kind'))}]</b> {text(h.get('message'))}</li>"
                                            for h in hints) + "</ol>" if hints else "<p>No hints.</p>")
    body += _metric_html(doc)
    if doc.get("design"):
        body.append("<h2>Resource profile on the designed fleet</h2>")
        body += _design_html(doc["design"], a, b)
    body.append("<h2>Resource profile (IRUP) shift" + (" — the paper's view" if doc.get("design") else "") + "</h2>")
    irup = doc.get("irup") or {}
    cmp = irup.get("comparison")
    body.append(_irup_bars(doc, a, b))
    body += _shift_html(cmp, a, b) if cmp else [f"<p>No comparison: {text(json.dumps(irup.get('errors') or {}))}</p>"]
    body += _traces_html(p, doc.get("traces"), str(doc.get("version_a") or a), str(doc.get("label_b") or b))
    body.append("<h2>Hosts</h2>" + table(
        ["host", "fingerprinted", "ok A", "ok B", "failed", "why"],
        ([text(h.get("host")), fingerprint_word(h.get("fingerprinted"), h.get("fingerprint_skipped")),
          str(h.get("ok_a")), str(h.get("ok_b")), str((h.get("failed_a") or 0) + (h.get("failed_b") or 0)),
          text("; ".join(h.get("reasons") or []))]
         for h in doc.get("hosts") or []), table_id="profile-hosts", num=(2, 3, 4)))
    params = json.dumps(doc.get("params") or {}, indent=1, default=str)
    body.append(f"<h2>Method</h2><pre>{text(params, lines=True)}</pre>")
    body.append(f"<p><a href='{page_file('profile', profile_key(p))[:-4]}json'>The stored document (JSON)</a> · "
                f"notes: {text('; '.join(doc.get('notes') or []) or '–')}</p>")
    return page(title, site_title, body, 1)
