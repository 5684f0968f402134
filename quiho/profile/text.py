"""The terminal summary of a profile, as lines (tested directly; the CLI prints them)."""

from __future__ import annotations

from pathlib import Path

from quiho._text import printable as p
from quiho.profile.result import ProfileResult

__all__ = ["summary_lines", "summary_markdown", "design_lines"]


def _metric_line(res: ProfileResult) -> str:
    m = res.metric
    if not m.hosts_used:
        return f"verdict: {res.verdict.upper()}"
    return (f"verdict: {res.verdict.upper()}  change {m.change:+.1%} (95% CI {m.ci_low:+.1%} … {m.ci_high:+.1%}, "
            f"Wilcoxon p = {m.wilcoxon_p:.3g}, floor ±{m.min_change:.0%})")


def design_lines(res: ProfileResult) -> list[str]:
    """The designed fleet's answer: verdict, each version's class with its effects, what changed (or nothing).

    Every number comes from ``res.design`` (the JSON's ``design`` section); empty without a design analysis.
    """
    d = res.design
    if d is None:
        return []
    rounds = max(d.a.rounds, d.b.rounds)
    factors = ", ".join(p(f.describe()) for f in d.factors.factors)
    return [f"resource profile: {d.verdict}  {p(d.story_a.label)} → {p(d.story_b.label)}   (designed fleet: "
            f"{d.visits} host visits in {rounds} round(s); factors {factors})",
            f"  {p(res.version_a)}: {p(d.story_a.text())}", f"  {p(res.version_b)}: {p(d.story_b.text())}",
            f"  why: {p(d.reason)}"]


def _irup_lines(res: ProfileResult) -> list[str]:
    out = []
    # hosts left unfingerprinted on purpose (--fingerprint-hosts first-round) are said where the IRUPs are
    on = (f", {sum(h.fingerprinted for h in res.hosts)} of {len(res.hosts)} hosts fingerprinted"
          if any(h.fingerprint_skipped for h in res.hosts) else "")
    for key, irup, name in (("a", res.irup_a, res.version_a), ("b", res.irup_b, res.version_b)):
        if irup is None:
            out.append(f"IRUP {p(name)}: unavailable — {p(res.irup_errors.get(key, ''))}")
        else:
            top = ", ".join(f"{p(f.stressor)} {f.importance:.0f}±{f.std:.0f}" for f in irup.top(3))
            out.append(f"IRUP {p(name)}: {top}  [{irup.validity.verdict}, LOGO R² = {irup.validity.r2_group_cv:.2f}"
                       f"{on}]")
    if res.comparison is not None:
        shares = list(res.comparison.class_shares.values())
        cls = "  ".join(f"{p(k)} {shares[0].get(k, 0):.0%}→{shares[-1].get(k, 0):.0%}"
                        for k in sorted(set(shares[0]) | set(shares[-1]))
                        if shares[0].get(k, 0) or shares[-1].get(k, 0))
        label = "IRUP comparison (paper view)" if res.design is not None else "resource profile"
        c = res.comparison
        # a shift shown by the calibrated test, but read off an IRUP that predicts poorly: which way is not sure
        shaky = [f"{p(n)}'s IRUP {v}" for n, v in ((res.version_a, c.validity_a), (res.version_b, c.validity_b))
                 if v != "meaningful"]
        tail = f"  (shares uncertain: {', '.join(shaky)})" if shaky and c.verdict == "different" else ""
        out.append(f"{label}: {c.verdict}  class shares: {cls}{tail}")
    return out


def summary_lines(res: ProfileResult, report_dir: Path | None = None) -> list[str]:
    """What ``quiho profile`` prints: verdict with size, CI and p; both IRUPs; hints; partial notes; warnings.

    Names from user data are escaped (:func:`quiho._text.printable`), so a name cannot forge a line.
    """
    m = res.metric
    out = [f"quiho profile {p(res.application)}@{p(res.version_a)} → @{p(res.version_b)}   "
           f"({m.hosts_used} hosts, batch {p(res.batch)})", _metric_line(res), "  " + p(m.reason)]
    out.extend(design_lines(res))
    out.extend(_irup_lines(res))
    if res.hints:
        out.append("where to look first:")
        out.extend(f"  - {p(h.message)}" for h in res.hints[:6])
    out.extend(f"partial: {p(n)}" for n in res.partial)
    out.extend(p(n) for n in res.notes if n.startswith("warning:"))
    if report_dir is not None:
        out.append(f"report: {p(report_dir / 'report.html')}")
    return out


def summary_markdown(res: ProfileResult, report_dir: Path | None = None) -> str:
    """``quiho profile --format markdown``: a CI job summary / PR comment.

    A headline with the verdict, a table of the metric change (magnitude, 95 % CI, p, hosts), the IRUPs' top
    stressors, the top hints and a link to the HTML report. Every name is escaped (:mod:`quiho._markdown`).
    """
    from quiho._markdown import md_escape, md_table

    m = res.metric
    rows = [["verdict", res.verdict], ["hosts", str(m.hosts_used)]]
    if m.hosts_used:
        rows += [["change", f"{m.change:+.1%}"], ["95% CI", f"{m.ci_low:+.1%} … {m.ci_high:+.1%}"],
                 ["Wilcoxon p", f"{m.wilcoxon_p:.3g}"], ["floor", f"±{m.min_change:.0%}"]]
    rows += [[line.split(":", 1)[0].strip(), line.split(":", 1)[1].strip()]
             for line in design_lines(res) + _irup_lines(res)]
    out = [f"### quiho profile {md_escape(res.application)}: {md_escape(res.version_a)} → "
           f"{md_escape(res.version_b)}", "", f"**{md_escape(res.verdict.upper())}** — {md_escape(m.reason)}", "",
           md_table(["", "value"], rows).rstrip("\n")]
    if res.design is not None:
        from quiho.design.analysis import EFFECT_HEAD, effect_table

        out += ["", md_table(list(EFFECT_HEAD), effect_table(res.design)).rstrip("\n")]
    if res.hints:
        out += ["", "**Where to look first**", ""] + [f"- {md_escape(h.message)}" for h in res.hints[:3]]
    out += [f"- partial: {md_escape(n)}" for n in res.partial]
    if report_dir is not None:
        out += ["", f"[Full report]({md_escape(str(report_dir / 'report.html')).replace(' ', '%20')})"]
    return "\n".join(out) + "\n"
