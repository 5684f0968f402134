"""The frame every page shares: head, navigation, tables, verdict badges, and the site's CSS and script.

No inline script or style: the Content-Security-Policy of every page allows only the site's own files
(``script-src 'self'``), no connection anywhere (``connect-src 'none'``), so even a name that slipped through
escaping could run nothing and fetch nothing. The script only enhances: without it every page shows all its
content (filtering becomes the browser's find, a plot's values are in the table under it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from quiho._version import __version__
from quiho.publish._safe import text

__all__ = ["page", "table", "badge", "CSS", "JS"]

_CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'")
_NAV = (("index.html", "Overview"), ("series/index.html", "Series"), ("fleet/index.html", "Fleet"),
        ("targets/index.html", "Targets"), ("profiles/index.html", "Profiles"))


def page(title: str, site_title: str, body: Iterable[str], depth: int, *, chart: bool = False) -> str:
    """A whole HTML page; ``depth`` is how many directories below the site root it lives (for relative links).

    ``chart``: the page loads the vendored chart library (uPlot) before the site's script, which then draws an
    interactive chart over the page's static SVG plot.
    """
    root = "../" * depth
    css = f"<link rel='stylesheet' href='{root}assets/uplot.min.css'>" if chart else ""
    lib = f"<script src='{root}assets/uplot.min.js'></script>" if chart else ""
    nav = "".join(f"<a href='{root}{href}'>{label}</a>" for href, label in _NAV)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{text(title, 200)} · {text(site_title, 80)}</title>"
            f"{css}<link rel='stylesheet' href='{root}assets/site.css'></head><body>"
            f"<nav><b>{text(site_title, 80)}</b> {nav}</nav><main>{''.join(body)}</main>"
            f"<footer>quiho {text(__version__)} · static site: no server, no network</footer>"
            f"{lib}<script src='{root}assets/site.js'></script></body></html>\n")


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, table_id: str = "", names: Sequence[str] = (),
          num: Iterable[int] = ()) -> str:
    """A table of already-escaped cells; ``names`` (raw) become each row's ``data-name`` for the filter box.

    A table with ``names`` is filterable: the script adds a search box above it.
    """
    nums = set(num)
    attrs = (f" id='{text(table_id)}'" if table_id else "") + (" data-filter='1'" if names else "")
    out = [f"<table{attrs}><thead><tr>", *(f"<th>{text(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for k, r in enumerate(rows):
        name = f" data-name='{text(names[k].lower())}'" if names else ""
        out.append(f"<tr{name}>" + "".join(f"<td class='num'>{c}</td>" if i in nums else f"<td>{c}</td>"
                                           for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def badge(verdict: str) -> str:
    """A verdict as a labelled badge; the label carries the meaning (grey scale), the border style repeats it."""
    cls = verdict.replace(" ", "-").lower()
    mark = {"regression": "▲ ", "improvement": "▼ ", "different": "≠ "}.get(cls, "")
    return f"<span class='badge {text(cls)}'>{mark}{text(verdict)}</span>"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#111;line-height:1.4}
nav{background:#eee;border-bottom:1px solid #999;padding:.5em 1em}nav a{margin-left:1em;color:#000}
main{max-width:80em;margin:1em auto;padding:0 1em}footer{color:#555;font-size:.8em;padding:1em;text-align:center}
h1{font-size:1.4em;word-break:break-all}h2{font-size:1.15em;border-bottom:1px solid #999;margin-top:1.5em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #aaa;padding:.2em .5em;
text-align:left;vertical-align:top}th{background:#e8e8e8}td.num{text-align:right;font-variant-numeric:tabular-nums}
td{max-width:40em;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 .5em;border:1px solid #555;border-radius:.3em;white-space:nowrap}
.badge.regression{border:3px solid #000;font-weight:bold}.badge.improvement{border:3px double #000}
.badge.different,.badge.inconclusive{border-style:dashed}.muted{color:#555;font-size:.9em}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #999;padding:.5em 1em;min-width:12em}
.card b{font-size:1.6em;display:block}
svg{max-width:100%;height:auto}svg .axis{stroke:#000;stroke-width:1}svg .grid{stroke:#ddd;stroke-width:1}
svg .tick{font-size:10px;fill:#333}svg .mean{fill:none;stroke:#000;stroke-width:1.2}
svg .reps{stroke:#999;stroke-width:2}svg .newest{fill:#fff;stroke:#000;stroke-width:1.5}
svg .cp line{stroke:#000;stroke-width:1.2;stroke-dasharray:5 3}svg .cp .level{fill:none;stroke:#666;
stroke-dasharray:2 2}svg .cp .hit{fill:transparent;stroke:none}svg .cp:hover line{stroke-width:3}
.spark{border:1px solid #ccc}.smalls{display:flex;flex-wrap:wrap;gap:.5em}.smalls figure{margin:0}
.smalls figcaption{font-size:.8em}.filter{margin:.5em 0;padding:.2em;width:20em}.count{color:#555}
svg .bar-0{fill:#222}svg .bar-1{fill:#aaa}svg .whisker{stroke:#555;stroke-width:1.2}
svg .run-a{fill:#fff;stroke:#000;stroke-width:1.2}svg .run-b{fill:#666;stroke:#000;stroke-width:.6}
svg .median{stroke:#000;stroke-width:2.5}svg .fit{stroke:#000;stroke-width:1.5}svg .fit-1{stroke-dasharray:5 3}
.readout{min-height:1.4em;font-variant-numeric:tabular-nums}pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em}
"""

JS = r"""'use strict';
// Enhancements only: every page is complete without this file.
(function () {
  document.querySelectorAll('table[data-filter]').forEach(function (tbl) {
    var input = document.createElement('input');
    input.type = 'search'; input.className = 'filter'; input.placeholder = 'filter by name';
    input.setAttribute('aria-label', 'filter rows by name');
    var count = document.createElement('span');
    count.className = 'count';
    tbl.parentNode.insertBefore(input, tbl);
    tbl.parentNode.insertBefore(count, tbl);
    var rows = Array.prototype.slice.call(tbl.tBodies[0].rows);
    function apply() {
      var q = input.value.toLowerCase(), shown = 0;
      rows.forEach(function (r) {
        var hit = (r.getAttribute('data-name') || '').indexOf(q) >= 0;
        r.hidden = !hit;
        if (hit) { shown += 1; }
      });
      count.textContent = ' ' + shown + ' of ' + rows.length + ' shown';
    }
    input.addEventListener('input', apply);
    apply();
  });
  var holder = document.getElementById('series-data');
  var out = document.getElementById('readout');
  if (!holder || !out) { return; }
  var d = JSON.parse(holder.textContent);
  function describe(i) {
    var text = d.revisions[i] + ': mean ' + Number(d.means[i]).toPrecision(5) + ' ' + d.unit + ' over ' +
      d.reps[i] + ' repetition(s), range ' + Number(d.min[i]).toPrecision(5) + ' … ' + Number(d.max[i]).toPrecision(5);
    d.cps.forEach(function (c) { if (c.index === i) { text += ' · ' + c.label; } });
    return text;
  }
  var fig = document.getElementById('plot-static');
  if (window.uPlot && fig && d.n > 0) {
    // the interactive chart (uPlot): cursor readout, drag to zoom, double-click to reset; the SVG stays for print
    var el = document.createElement('div');
    el.id = 'chart';
    fig.parentNode.insertBefore(el, fig);
    var xs = d.means.map(function (_, i) { return i; });
    var grey = {stroke: '#999', width: 1, dash: [3, 3]};
    new window.uPlot({
      width: Math.max(Math.min(fig.parentNode.clientWidth, 1100), 320), height: 280,
      scales: {x: {time: false}},
      legend: {show: false},
      axes: [{values: function (u, vals) {
        return vals.map(function (v) {
          return d.revisions[v] === undefined ? '' : String(d.revisions[v]).slice(0, 12);
        });
      }}, {label: d.unit}],
      series: [{label: 'revision'}, Object.assign({label: 'max'}, grey), {label: 'mean', stroke: '#000', width: 1.5},
               Object.assign({label: 'min'}, grey)],
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = '#000';
          ctx.lineWidth = 1.5 * (window.devicePixelRatio || 1);
          ctx.setLineDash([6, 4]);
          d.cps.forEach(function (c) {
            var x = u.valToPos(c.index - 0.5, 'x', true);
            ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
          });
          ctx.restore();
        }],
        setCursor: [function (u) { if (u.cursor.idx != null) { out.textContent = describe(u.cursor.idx); } }]
      }
    }, [xs, d.max, d.means, d.min], el);
    fig.hidden = true;
    return;
  }
  var svg = fig && fig.querySelector('svg.plot');
  if (svg) {  // no chart library: the readout follows the mouse over the static plot
    svg.addEventListener('mousemove', function (ev) {
      var box = svg.getBoundingClientRect();
      var x = (ev.clientX - box.left) * d.width / box.width;
      var i = Math.round((x - d.left) / (d.width - d.left - d.right) * Math.max(d.n - 1, 1));
      if (i >= 0 && i < d.n) { out.textContent = describe(i); }
    });
  }
}());
"""
