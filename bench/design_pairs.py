"""Re-analyse stored profiles' designs two ways: the per-visit change from interleaved pairs, and from the versions'
medians (the rule before pairs).

Reads the ``report.json`` files ``quiho profile --report DIR`` wrote (runs, factors and settings are in them), so
no run is repeated. Prints, per profile, the verdict, both versions' class labels, the factors whose change
cleared Holm, and the smallest p.

Run: ``python bench/design_pairs.py DIR/report.json [...]`` (seconds per profile).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from unittest import mock

import pandas as pd

from quiho.design import DesignSettings, analyse_design
from quiho.design import effects as design_effects
from quiho.design.factors import Factor, FactorTable


def analyse(doc: dict, pairs: bool) -> str:
    des = doc["design"]
    factors = FactorTable(tuple(Factor(f["name"], f["label"], f["reference"], f["far"], f["values"])
                                for f in des["factors"]["factors"]), tuple(des["factors"]["hosts"]))
    st = des["settings"]
    settings = DesignSettings(alpha=st["alpha"], floor=st["floor"], permutations=st["permutations"])
    patch = mock.patch.object(design_effects, "_visit_pairs", lambda *a: {}) if not pairs else contextlib.nullcontext()
    with patch:
        r = analyse_design(pd.DataFrame(doc["runs"]), doc["version_a"], doc["version_b"], factors, settings=settings,
                           higher_is_better=bool(doc["metric"].get("higher_is_better", False)))
    moved = ", ".join(f"{c.factor} (Holm {c.p_adjusted:.3g})" for c in r.changes
                      if c.p_adjusted is not None and c.p_adjusted < settings.alpha)
    best = min(r.changes, key=lambda c: c.p_value)
    return (f"{r.verdict} | {r.story_a.label} → {r.story_b.label} | {moved or '-'} | "
            f"{best.factor} p {best.p_value:.3g}, Holm {best.p_adjusted:.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", type=Path)
    args = ap.parse_args()
    print("| profile | rule | verdict | classes | changes past Holm | smallest p |")
    print("|---|---|---|---|---|---|")
    for path in args.reports:
        doc = json.loads(path.read_text())
        if not (doc.get("design") or {}).get("factors"):
            continue
        name = path.parent.name if path.parent.name not in ("report", "profile-report") else str(path.parent)
        for pairs in (False, True):
            print(f"| {name} | {'pairs' if pairs else 'medians'} | {analyse(doc, pairs)} |", flush=True)


if __name__ == "__main__":
    main()
