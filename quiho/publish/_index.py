"""The site's front page: counts, what changed recently, the targets' resource profiles."""

from __future__ import annotations

from quiho.publish._collect import SiteData
from quiho.publish._fleet import drift_rows
from quiho.publish._layout import badge, page, table
from quiho.publish._profiles import profile_cells, profile_file, profile_key
from quiho.publish._safe import num, pct, text
from quiho.publish._series import newest_cells, series_file
from quiho.publish._targets import TARGET_HEAD, target_cells
from quiho.publish.options import PublishOptions

__all__ = ["index_page"]

#: Rows per "recent" table on the front page (the full lists are one click away).
_SHOW = 25


def _open_alerts_html(data: SiteData) -> list[str]:
    """The open history alerts (``new`` fails the CI gate, ``acknowledged`` is known), first on the page."""
    rows = [[f"#{a.id}", badge(a.state), f"<a href='{series_file(a.series)}'>{text(a.series, 100)}</a>",
             text(a.first_bad, 40), text(f"{pct(a.magnitude)} [{pct(a.ci_low)}, {pct(a.ci_high)}]"),
             num(a.p_value, ".2g"), text(a.created_at)] for a in data.alerts]
    return [f"<h2>Open alerts ({len(rows)})</h2>",
            table(["alert", "state", "series", "first bad revision", "regression (CI)", "p", "opened"], rows,
                  table_id="open-alerts", num=(5,)) if rows else "<p>No open alert.</p>"]


def _moved(data: SiteData) -> list[str]:
    moved = [s for s in data.series if s.verdict is not None and s.verdict.newest.verdict in ("regression",
                                                                                              "improvement")]
    rows = [[f"<a href='{series_file(s.name)}'>{text(s.name, 100)}</a>", *newest_cells(s)] for s in moved[:_SHOW]]
    return [f"<h2>Newest revisions that moved ({len(moved)})</h2>",
            table(["series", "newest revision", "vs. its segment (CI, p)"], rows, table_id="recent-newest")
            if rows else "<p>No series changed at its newest revision.</p>"]


def _recent_cps(data: SiteData, recent: int) -> list[str]:
    rows = []
    for s in data.series:
        if s.verdict is None:
            continue
        n = s.verdict.detection.n
        for c in s.verdict.detection.change_points:
            if c.index >= n - recent:
                rows.append((c.p_value, [f"<a href='{series_file(s.name)}'>{text(s.name, 100)}</a>",
                                         text(c.revision, 40), f"{num(c.before)} → {num(c.after)}",
                                         text(pct(c.magnitude)), num(c.p_value, ".2g")]))
    rows.sort(key=lambda r: r[0])
    return [f"<h2>Change points in the newest {recent} revisions ({len(rows)})</h2>",
            table(["series", "revision", "before → after", "magnitude", "p"], [r for _, r in rows[:_SHOW]],
                  table_id="recent-changepoints", num=(3, 4)) if rows else "<p>None.</p>"]


def _targets_html(data: SiteData) -> list[str]:
    """The targets next to series and profiles: meaningful IRUPs first, then by name."""
    order = sorted(data.targets, key=lambda t: (((t.irup or {}).get("validity") or {}).get("verdict") != "meaningful",
                                                t.name))
    rows = [target_cells(t, "targets/") for t in order[:_SHOW]]
    first = f", first {_SHOW}" if len(order) > _SHOW else ""
    return [f"<h2>Targets' resource profiles ({len(data.targets)}{first})</h2>",
            table(TARGET_HEAD, rows, table_id="recent-targets", num=(1, 2)) if rows
            else "<p>No target with application runs in the store.</p>"]


def index_page(data: SiteData, options: PublishOptions) -> str:
    """The front page: counts, then what changed (alerts, newest revisions, change points, drift), targets, profiles."""
    reg = sum(1 for s in data.series if s.verdict is not None and s.verdict.newest.verdict == "regression")
    drifted = sum(len(f.drift.drifted_hosts()) for f in data.fleets if f.drift is not None)
    stale = sum(h.stale for f in data.fleets for h in f.hosts)
    meaningful = sum(1 for t in data.targets if ((t.irup or {}).get("validity") or {}).get("verdict") == "meaningful")
    preg = sum(1 for p in data.profiles if p.row["verdict"] == "regression")
    cards = (f"<div class='cards' id='counts'><a class='card' href='series/index.html'><b id='n-series'>"
             f"{len(data.series)}</b> series, {reg} regress at the newest revision</a>"
             f"<a class='card' href='fleet/index.html'><b id='n-hosts'>{data.hosts}</b> hosts in "
             f"{sum(1 for f in data.fleets if f.hosts)} fingerprint source(s), {drifted} with drift alerts, {stale} "
             f"stale</a><a class='card' href='targets/index.html'><b id='n-targets'>{len(data.targets)}</b> targets, "
             f"{meaningful} with a meaningful IRUP</a><a class='card' href='profiles/index.html'><b id='n-profiles'>"
             f"{len(data.profiles)}</b> profiles, {preg} regressions</a></div>")
    notes = [f"<li>{text(f.source)}: {text(f.note)}</li>" for f in data.fleets if f.note]
    drows = [r for f in data.fleets for r in drift_rows(f, "fleet/")][:_SHOW]
    ndrift = sum(len(f.drift.drifts) for f in data.fleets if f.drift is not None)
    prof = [[f"<a href='{profile_file(p)}'>{text(profile_key(p), 40)}</a>", *profile_cells(p)]
            for p in data.profiles[:10]]
    body = [f"<h1>{text(options.title)}</h1>", cards,
            f"<ul class='muted' id='source-notes'>{''.join(notes)}</ul>" if notes else "",
            *_open_alerts_html(data), *_moved(data), *_recent_cps(data, options.recent),
            f"<h2>Fleet drift ({ndrift})</h2>",
            table(["host", "stressor", "class", "change", "before → after", "from run", "p (Bonferroni)"], drows,
                  table_id="recent-drift", num=(3, 6)) if drows else "<p>No drift alert.</p>",
            *_targets_html(data),
            "<h2>Newest profiles</h2>",
            table(["profile", "application", "versions", "verdict", "metric change [CI]", "Wilcoxon p", "IRUP",
                   "status", "created"], prof, table_id="recent-profiles", num=(5,)) if prof else "<p>None.</p>"]
    return page("Overview", options.title, body, 0)
