"""Round 5's held-out check on real performance histories: does ``auto-vario`` hold against ``auto``?

Run: ``python bench/history_holdout_perf.py [--dir DIR]``. Prints tables and the rule's answer; asserts nothing.
The registration (data, candidates, metric, rule) is "The held-out check on real performance histories" in
docs/history-protocol.md, committed with this script and the data before the first run.

Data: ``bench/data/mozilla-perf-holdout`` (TCPD layout: ``annotations.json``, ``datasets/NAME/NAME.json``): the first
200 revisions of Mozilla Perfherder series whose alerts performance sheriffs triaged (provenance in its README).
Candidates: round 5's (``history_protocol.r5_candidates``), run once per series with their defaults, no tuning.
Metric: TCPDBench's F1 and covering against the annotations, margin 5, as in round 5.
Rule (:func:`holdout_rule`): ``auto-vario`` replaces ``auto`` when the 95 % paired bootstrap interval of its F1 minus
``auto``'s over the series reaches 0 and so does the interval of its covering minus ``auto``'s (round 5's rule 3,
"within the noise", applied to the pick against today's default); otherwise ``auto`` stays.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import history_accuracy as H
import history_protocol as P
import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "mozilla-perf-holdout"
PICK, DEFAULT = "auto-vario", "auto"
BOOT_SEED = 20261129  # a seed no earlier stage used


def holdout_rule(f1: dict[str, np.ndarray], cover: dict[str, np.ndarray]) -> tuple[bool, str, dict]:
    """``(switch, reason, intervals)``: the pick replaces the default when neither paired interval lies below 0."""
    rng = np.random.default_rng(BOOT_SEED)
    ci = {"f1": P.paired_interval(f1[PICK] - f1[DEFAULT], rng),
          "cover": P.paired_interval(cover[PICK] - cover[DEFAULT], rng)}
    below = [m for m, (_, hi) in ci.items() if hi < 0]
    if below:
        return False, f"{PICK} is below {DEFAULT} beyond the noise on {' and '.join(below)}", ci
    return True, f"{PICK} is not below {DEFAULT} beyond the noise on F1 or covering", ci


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=DATA, help="folder of annotated series in TCPD layout")
    a = ap.parse_args()
    if not (a.dir / "annotations.json").is_file():
        ap.error(f"--dir {a.dir}: no annotations.json there")
    data = P.load_tcpd(a.dir)
    dev_ann = P.TCPD / "annotations.json"
    dev = set(json.loads(dev_ann.read_text())) if dev_ann.is_file() else set()
    shared = sorted(dev & {name for name, _, _ in data})
    cands = P.r5_candidates()
    f1, cover, found = {}, {}, {}
    for c in cands:
        found[c.name] = H.tcpd_predictions(c, data, {})  # each candidate runs once per series
        s = H.tcpd_scores_of(data, found[c.name])
        f1[c.name], cover[c.name] = np.array(s[0]), np.array(s[1])
        print(f"  {c.name}: done", file=sys.stderr, flush=True)

    n = len(data)
    print(f"\n## Held-out check on real performance histories ({a.dir.name}: {n} series, TCPDBench F1 / covering, "
          f"margin {P.MARGIN})\n")
    print("| series | n | annotated changes |")
    print("|---|---|---|")
    for name, y, anns in data:
        print(f"| {name} | {y.size} | {' '.join(map(str, anns[0])) or '-'} |")

    print("\n| candidate | complexity | mean F1 | mean cover | F1 per series | change indexes per series |")
    print("|---|---|---|---|---|---|")
    for c in cands:
        per = " / ".join(f"{v:.2f}" for v in f1[c.name])
        idx = " / ".join(" ".join(map(str, p)) or "-" for p in found[c.name])
        print(f"| {c.name}{' (peer)' if c.peer else ''} | {c.complexity} | {f1[c.name].mean():.3f} | "
              f"{cover[c.name].mean():.3f} | {per} | {idx} |")

    switch, reason, ci = holdout_rule(f1, cover)
    print(f"\nPaired over the {n} series ({P.R5_RESAMPLES} resamples, seed {BOOT_SEED}): {PICK} - {DEFAULT} F1 "
          f"{(f1[PICK] - f1[DEFAULT]).mean():+.3f} [{ci['f1'][0]:+.3f}, {ci['f1'][1]:+.3f}], cover "
          f"{(cover[PICK] - cover[DEFAULT]).mean():+.3f} [{ci['cover'][0]:+.3f}, {ci['cover'][1]:+.3f}]")
    if shared:
        print(f"\nNot a held-out run: {', '.join(shared)} also in tcpd-dev.")
    print(f"\n**The rule's answer: {PICK + ' replaces ' + DEFAULT if switch else DEFAULT + ' stays'}** ({reason}).")
    if switch:
        print(f"(Not carried out: {PICK} loses power on short histories, bench/history_rho_short.py; "
              "docs/history-protocol.md, \"The switch, tried and not made\".)")


if __name__ == "__main__":
    main()
