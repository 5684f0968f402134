"""Pages of the targets: the list with each one's top stressor and validity, and one page per target with its IRUP.

The numbers are those of ``quiho irup TARGET`` (same document, same formats: importance and spread to one decimal,
top-3 share in whole per cent); the document itself is published beside the page.
"""

from __future__ import annotations

from typing import Any

from quiho.publish._irups import TargetView
from quiho.publish._layout import badge, page, table
from quiho.publish._profiles import factor_rows, profile_file
from quiho.publish._report_svg import Bars, bars_svg
from quiho.publish._safe import num, page_file, text

__all__ = ["targets_index", "target_page", "target_file", "target_cells", "TARGET_HEAD"]

#: Stressors shown on a target's page before the rest fold away.
_TOP = 15
TARGET_HEAD = ["target", "runs", "hosts", "unit", "top stressors (importance ± sd)", "IRUP validity"]


def target_file(name: str, ext: str = "html") -> str:
    """Path (from the site root) of the page of target ``name`` (``ext="json"``: its IRUP document)."""
    return "targets/" + page_file("t", name)[:-4] + ext


def _verdict(t: TargetView) -> str:
    return str(((t.irup or {}).get("validity") or {}).get("verdict") or "no IRUP")


def _top_text(t: TargetView, k: int = 3) -> str:
    if t.irup is None:
        return text(t.error, 160)
    return "; ".join(f"{text(f['stressor'])} {f['importance']:.1f} ± {f['std']:.1f}"
                     for f in (t.irup.get("features") or [])[:k])


def target_cells(t: TargetView, link_prefix: str = "") -> list[str]:
    """Escaped cells of :data:`TARGET_HEAD`, the name linked to the target's page."""
    return [f"<a href='{link_prefix}{page_file('t', t.name)}'>{text(t.name, 100)}</a>", str(t.runs), str(t.hosts),
            text(t.unit or "–", 20), _top_text(t), badge(_verdict(t))]


def targets_index(targets: list[TargetView], site_title: str) -> str:
    """Every target with application runs: a filterable table of top stressors and validity verdicts."""
    meaningful = sum(1 for t in targets if _verdict(t) == "meaningful")
    failed = sum(1 for t in targets if t.irup is None)
    body = [f"<h1>Targets ({len(targets)})</h1>",
            f"<p>Each target's inferred resource utilisation profile (IRUP): which stress-ng stressors' scores "
            f"predict its metric across the fleet's hardware. {meaningful} of {len(targets)} are meaningful "
            f"(fingerprints predict the metric on hardware left out); {failed} have none (why is in the row).</p>",
            table(TARGET_HEAD, [target_cells(t) for t in targets], table_id="targets", names=[t.name for t in targets],
                  num=(1, 2))]
    return page("Targets", site_title, body, 1)


def _features_table(features: list[dict[str, Any]], table_id: str, first: int = 1) -> str:
    rows = [[str(i), text(f.get("stressor")) + (" (noisy)" if f.get("noisy") else ""),
             num(f.get("importance"), ".1f"), num(f.get("std"), ".1f"), text(f.get("primary")),
             text(", ".join(f.get("classes") or [])), num(f.get("top3_frequency"), ".0%"),
             num(f.get("median_rank"), "g")] for i, f in enumerate(features, first)]
    return table(["rank", "stressor", "importance", "± sd", "class", "classes", "top-3 share", "median rank"], rows,
                 table_id=table_id, num=(0, 2, 3, 6, 7))


def _validity_html(irup: dict[str, Any]) -> list[str]:
    v = irup.get("validity") or {}
    return [f"<p id='validity'>{badge(str(v.get('verdict', '–')))} {text(v.get('reason', ''))}</p>",
            f"<p class='muted'>leave-one-hardware-group-out R² {num(v.get('r2_group_cv'), '.2f')} · "
            f"{v.get('hardware_groups', '–')} hardware groups · {v.get('hosts', '–')} hosts · {v.get('rows', '–')} "
            f"rows · top stressor first in {num(v.get('top1_frequency'), '.0%')} of seeds</p>"]


def _advice_html(t: TargetView, irup: dict[str, Any]) -> str:
    """The fleet-size advisor's answer as ``quiho advise`` stored it on these inputs; else the command that answers."""
    v = irup.get("validity") or {}
    if v.get("verdict") == "not-meaningful":
        return ("<p id='advice'>The full fleet's IRUP is not meaningful, so no subset of it can do better: add "
                "hardware groups that differ in the resources this application might use "
                "(<code>quiho advise</code>'s answer whatever the draws).</p>")
    a = t.advice
    if a:
        rows = [[num(r.get("n_groups"), "g"), num(r.get("draws"), "g"), num(r.get("top1_agreement"), ".0%"),
                 num(r.get("top3_overlap"), ".0%")] for r in a.get("rows") or []]
        return (f"<p id='advice'>{text(a.get('reason', ''))} <span class='muted'>(<code>quiho advise "
                f"{text(t.name, 200)}</code> on these runs and fingerprints; full fleet: "
                f"{num(a.get('full_groups'), 'g')} hardware groups, top 3: "
                f"{text(', '.join(a.get('full_top3') or []))})</span></p>"
                + table(["groups", "draws", "top-1 agreement", "top-3 overlap"], rows, table_id="advice-rows",
                        num=(0, 1, 2, 3)))
    return (f"<p id='advice'>How many distinct machines this profile needs: <code>quiho advise "
            f"{text(t.name, 200)}</code> (not computed at publish: it fits about seventy further models per "
            "target; once run on these inputs, the next publish shows its answer).</p>")


def _designed_html(t: TargetView) -> list[str]:
    """Each designed-fleet profile of the target: its class and factor effects here, as the profile stored them."""
    if not t.designed:
        return []
    out = ["<h2>On a designed fleet: what moves it</h2>"]
    for i, (p, side) in enumerate(t.designed):
        doc = p.document or {}
        design = doc.get("design") or {}
        story = (design.get("story") or {}).get(side) or {}
        pair = f"{doc.get('application')}@{doc.get('version_a')} → @{doc.get('label_b') or doc.get('version_b')}"
        out.append(f"<p><a href='../{profile_file(p)}'>profile {text(p.row.get('batch'))}</a> ({text(pair)}): "
                   f"<b>{text(story.get('label', '–'))}</b> — {text(story.get('evidence', ''))}</p>")
        out.append(table(["factor", "loads", "effect (95 % CI)"], factor_rows(design, (side,)),
                         table_id=f"designed-{i}"))
    return out


def target_page(t: TargetView, site_title: str) -> str:
    """One target: validity, top stressors with their spread over seeds, class shares, advice, method.

    A target measured by a profile on a designed fleet also shows that profile's factor effects on it.
    """
    body = [f"<h1>{text(t.name)}</h1>",
            f"<p class='muted'>{t.runs} runs on {t.hosts} hosts · metric in {text(t.unit or '–')}</p>"]
    if t.irup is None:
        body.append(f"<p id='validity'>{badge('no IRUP')} {text(t.error)}</p>")
        return page(t.name, site_title, body + _designed_html(t), 1)
    irup = t.irup
    feats = list(irup.get("features") or [])
    body += _validity_html(irup)
    top = feats[:_TOP]
    bars = bars_svg([f["stressor"] for f in top], [Bars(t.name, tuple(f["importance"] for f in top),
                                                        tuple(f["std"] for f in top))],
                    title=f"IRUP of {t.name}: importance ± sd of the top stressors")
    body += [f"<h2>Top stressors ({irup.get('importance')} importance, {irup.get('seeds')} seeds; top = 100)</h2>",
             f"<figure id='irup-bars'>{bars}</figure>", _features_table(top, "irup")]
    if len(feats) > _TOP:
        body.append(f"<details><summary>{len(feats) - _TOP} more stressors</summary>"
                    f"{_features_table(feats[_TOP:], 'irup-rest', _TOP + 1)}</details>")
    body += _designed_html(t)
    shares = sorted(t.class_shares.items(), key=lambda kv: (-kv[1], kv[0]))  # largest first, ties by name
    body += ["<h2>Class shares</h2>",
             table(["class", "share of importance"], ([text(k), num(v, ".0%")] for k, v in shares),
                   table_id="class-shares", num=(1,)),
             "<h2>Fleet size</h2>", _advice_html(t, irup)]
    if irup.get("dropped"):
        body.append("<h2>Dropped stressors</h2><ul id='dropped'>" + "".join(
            f"<li>{text(d.get('stressor'))}: {text(d.get('reason'))}</li>" for d in irup["dropped"]) + "</ul>")
    if irup.get("notes"):
        body.append("<h2>Notes</h2><ul id='notes'>" + "".join(f"<li>{text(n)}</li>" for n in irup["notes"]) + "</ul>")
    p = irup.get("params") or {}
    body.append(f"<h2>Method</h2><p class='muted'>{text(p.get('model', ''))}, {text(p.get('n_estimators', ''))} "
                f"trees, learning rate {text(p.get('learning_rate', ''))}; resample {text(irup.get('resample'))}, "
                f"random state {text(irup.get('random_state'))}; {irup.get('rows')} rows. "
                f"<a href='{page_file('t', t.name)[:-4]}json'>The IRUP document (JSON, as <code>quiho irup "
                "--json</code> prints it)</a>.</p>")
    return page(t.name, site_title, body, 1)
