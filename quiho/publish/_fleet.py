"""Pages of the fleet: hosts, hardware groups and drift alerts; one page per host with its fingerprint history."""

from __future__ import annotations

import json
from typing import Any

from quiho.publish._collect import FleetView, HostView
from quiho.publish._layout import badge, page, table
from quiho.publish._safe import num, page_file, pct, text
from quiho.publish._svg import Mark, spark_svg

__all__ = ["fleet_index", "host_page", "host_file", "drift_rows"]


def _host_page(name: str, source: str) -> str:
    """File name of a host's page: by its name alone for ``fleet`` (links kept from before sources), else by both."""
    return page_file("host", name if source == "fleet" else f"{source}\x00{name}")


def host_file(name: str, source: str = "fleet") -> str:
    """Path (from the site root) of the page of host ``name`` as fingerprint source ``source`` shows it."""
    return "fleet/" + _host_page(name, source)


def _drifts_of(fleet: FleetView, host: str) -> list[Any]:
    return [] if fleet.drift is None else [d for d in fleet.drift.drifts if d.host == host]


def drift_rows(fleet: FleetView, link_prefix: str = "") -> list[list[str]]:
    """One escaped row per drift alert: host (linked), stressor, class, magnitude, levels, run, adjusted p."""
    if fleet.drift is None:
        return []
    return [[f"<a href='{link_prefix}{_host_page(d.host, fleet.source)}'>{text(d.host, 60)}</a>", text(d.stressor),
             text(d.primary), text(pct(d.magnitude)), f"{num(d.before)} → {num(d.after)}",
             f"{text(d.batch, 40)} ({text(d.when)})", num(d.p_adjusted, ".3g")] for d in fleet.drift.drifts]


_DRIFT_HEAD = ["host", "stressor", "class", "change", "before → after (bogo-ops/s)", "from run", "p (Bonferroni)"]


def _drift_html(fleet: FleetView, k: int) -> list[str]:
    if fleet.drift is None:
        return ["<h3>Drift alerts</h3>", f"<p>No drift check: {text(fleet.drift_note)}</p>"]
    d = fleet.drift
    out = ["<h3>Drift alerts</h3>",
           f"<p>{d.runs} fingerprint runs, {d.series_tested} host × stressor series tested ({text(d.method)}, "
           f"family-wise α = {d.alpha:g} (Bonferroni), floor {d.min_change:.0%}); "
           f"{len(d.drifts)} alert(s), {len(d.not_meaningful)} series too short to test.</p>"]
    out.append(table(_DRIFT_HEAD, drift_rows(fleet), table_id=f"drift-{k}", num=(3, 6)) if d.drifts
               else "<p>No drift.</p>")
    if d.group_changes:
        out.append(f"<ul id='group-changes-{k}'>" + "".join(
            f"<li>{text(g.host)} {'became a look-alike of' if g.kind == 'look-alike' else 'split from'} "
            f"{text(', '.join(g.others))}</li>" for g in d.group_changes) + "</ul>")
    return out


def _source_html(fleet: FleetView, k: int) -> list[str]:
    """One source's section: hosts (filterable), hardware groups of its newest run, drift alerts."""
    head = f"<h2 id='source-{k}'>{text(fleet.source)}: {len(fleet.hosts)} hosts, {fleet.runs} fingerprint runs</h2>"
    if not fleet.hosts:
        return [head, f"<p class='note' id='note-{k}'>{text(fleet.note)}.</p>"]
    alerts = {h.name: len(_drifts_of(fleet, h.name)) for h in fleet.hosts}
    rows = [[f"<a href='{_host_page(h.name, fleet.source)}'>{text(h.name, 80)}</a>", text(h.inventory or "–", 60),
             text(", ".join(h.groups) or "–", 60), "–" if h.hardware_group is None else f"#{h.hardware_group}",
             text(h.last_fingerprint or "–", 40), text(h.last_time or "–") + (" " + badge("stale") if h.stale else ""),
             text(h.last_status or "–"), str(len(h.history)), str(alerts[h.name])] for h in fleet.hosts]
    groups = "".join(f"<li>#{g}: {text(', '.join(m), 400)}</li>" for g, m in sorted(fleet.hardware.items()))
    stale = sum(h.stale for h in fleet.hosts)
    return [head, f"<p>{stale} stale (newest fingerprint older than the schedule's period).</p>" if stale else "",
            table(["host", "inventory", "inventory groups", "hardware group", "last fingerprint", "time", "status",
                   "stressors", "drift alerts"], rows, table_id=f"hosts-{k}", names=[h.name for h in fleet.hosts],
                  num=(7, 8)),
            "<h3>Hardware groups (newest run)</h3>",
            f"<ul id='hardware-{k}'>{groups}</ul>" if groups else "<p>No fingerprints to group.</p>",
            *_drift_html(fleet, k)]


def fleet_index(fleets: list[FleetView], site_title: str) -> str:
    """Every fingerprint source, told apart: its hosts, hardware groups and drift alerts; a note where empty."""
    n = sum(len(f.hosts) for f in fleets)
    body = [f"<h1>Fleet ({n} hosts, {len(fleets)} fingerprint sources)</h1>",
            "<p>Each source is its own fleet: <b>fleet</b> is what <code>quiho fingerprint</code> and the schedule "
            "measured, <b>quick-local</b> the quick fingerprints of machines quiho ran on, any other an import.</p>"]
    for k, f in enumerate(fleets):
        body += _source_html(f, k)
    return page("Fleet", site_title, body, 1)


def host_page(h: HostView, fleet: FleetView, site_title: str) -> str:
    """One host: facts, its drift alerts, and the per-run median of every stressor (a small plot each)."""
    drifts = _drifts_of(fleet, h.name)
    figs = []
    for stressor, (_batches, values) in sorted(h.history.items()):
        marks = [Mark(d.index, f"{d.stressor} {pct(d.magnitude)} from run {d.batch} ({d.when}), "
                               f"p = {num(d.p_adjusted, '.3g')} (Bonferroni)")
                 for d in drifts if d.stressor == stressor]
        figs.append(f"<figure>{spark_svg(values, marks, title=f'{h.name} / {stressor}: median per run')}"
                    f"<figcaption>{text(stressor)} · {len(values)} runs · last {num(values[-1])}</figcaption>"
                    "</figure>")
    facts = [[text(k, 60), text(v if isinstance(v, str) else json.dumps(v, default=str), 300)]
             for k, v in sorted(h.facts.items())[:60]]
    body = [f"<h1>{text(h.name)}</h1>",
            f"<p class='muted'>source {text(fleet.source)}{' · ' + badge('stale') if h.stale else ''} · inventory "
            f"{text(h.inventory or '–')} · groups {text(', '.join(h.groups) or '–')} · "
            f"hardware group {'–' if h.hardware_group is None else f'#{h.hardware_group}'} · last fingerprint "
            f"{text(h.last_fingerprint or '–')} {text(h.last_time or '')}</p>",
            "<h2>Drift alerts</h2>",
            table(_DRIFT_HEAD, [r for r, d in zip(drift_rows(fleet), fleet.drift.drifts, strict=True)
                                if d.host == h.name], table_id="drift", num=(3, 6))
            if drifts and fleet.drift is not None else "<p>None.</p>",
            "<h2>Fingerprint history (median over repetitions, per run; dashed: drift)</h2>",
            f"<div class='smalls' id='stressors'>{''.join(figs)}</div>" if figs else "<p>No fingerprints.</p>",
            "<h2>Facts</h2>", table(["fact", "value"], facts) if facts else "<p>None recorded.</p>"]
    return page(h.name, site_title, body, 1)
