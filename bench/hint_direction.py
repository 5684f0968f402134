"""How stored profiles' design hints read each counted change: by size, or the way its factor moves its resource.

Usage:
    python bench/hint_direction.py DIR [DIR ...]     # every report.json below each DIR (a profile's --report)

For every factor a profile's design counted as changed (``design.moved``): both versions' effects as the report
stored them, the reading the hints gave before the rule of 2026-12-06 ("b leans more" when b's effect is the
larger in size, else "less") and the reading now (:meth:`quiho.design.analysis.DesignAnalysis.leans`: "more" or
"less" the way the factor moves what leans on its resource, huge pages faster and every other knob slower, and
"none" when neither version's interval excludes 0 on that side). Nothing is measured or analysed again: the
numbers are the reports'. Prints one row per counted change and how many readings differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from quiho.design.analysis import _toward


def _text(e: dict) -> str:
    lo, hi = e["ci"]
    return f"{100 * e['effect']:+.0f} % [{100 * lo:+.0f}, {100 * hi:+.0f}]"


def _leans(e: dict, slows: bool | None, higher_is_better: bool) -> bool:
    lo, hi = e["ci"]
    return (lo > 0 or hi < 0) and _toward(e["log_effect"], slows, higher_is_better) > 0


def readings(report: dict) -> list[dict]:
    """One row per counted change of ``report``'s design: the factor, both effects, the old and the new reading."""
    design = report.get("design") or {}
    if not design.get("moved"):
        return []
    hib = bool(report["metric"]["higher_is_better"])
    slows = {ax["factor"]: ax.get("slows") for ax in design["axes"]}
    ea = {e["factor"]: e for e in design["effects"]["a"]["effects"]}
    eb = {e["factor"]: e for e in design["effects"]["b"]["effects"]}
    rows = []
    for f in design["moved"]:
        a, b, sl = ea[f], eb[f], slows.get(f)
        old = "more" if abs(b["log_effect"]) > abs(a["log_effect"]) else "less"
        if not (_leans(a, sl, hib) or _leans(b, sl, hib)):
            new = "none"
        else:
            new = "more" if _toward(b["log_effect"], sl, hib) > _toward(a["log_effect"], sl, hib) else "less"
        rows.append({"factor": f, "a": _text(a), "b": _text(b), "old": old, "new": new,
                     "story": f"{design['story']['a']['label']} → {design['story']['b']['label']}"})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    args = ap.parse_args(argv)
    reports = sorted(p for d in args.dirs for p in d.rglob("report.json"))
    print("| report | factor | effect on a | effect on b | stories | before | now |")
    print("|---|---|---|---|---|---|---|")
    counted = differ = 0
    for p in reports:
        try:
            report = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            print(f"hint_direction: {p}: {exc}", file=sys.stderr)
            continue
        for r in readings(report):
            counted += 1
            differ += r["old"] != r["new"]
            mark = " **" if r["old"] != r["new"] else ""
            print(f"| {p.parent} | {r['factor']} | {r['a']} | {r['b']} | {r['story']} | {r['old']} | "
                  f"{r['new']}{mark} |")
    print(f"\n{len(reports)} reports, {counted} counted changes, {differ} read differently now"
          + (f" ({100 * differ / counted:.0f} %)" if counted else "") + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
