"""A second pass over the hosts when the first is inconclusive: one stage at the level, or two at half of it each.

**Registered 2026-12-04 (stop 76), before any run it judges.** The main job (stream@nadds1 -> @nadds30 on the
7-knob fold-over, 16 visits) is right in about half of the fresh demos on the AMD EPYC microVM. Its misses are
power: the changes that tell memory-bound from CPU-bound (huge pages +17 % .. +35 %, co-runner -10 % .. -20 %)
have a per-visit noise of 6-16 % on the log scale, and that noise is between visits, not between a visit's runs
(stop 74: 5 runs a visit instead of 3 left the change's SE at 0.047 against 0.049). More visits are what helps:
two stored demos of stops 74-75 read together (32 visits) were right in 20 of 21 combinations, against 5 of 7
alone. Visiting every host twice always would cost every profile another ~5 min; a second pass only when the
first cannot answer costs it only then.

Candidates:

* ``one stage`` (today): the hosts' planned rounds, the design's changes tested at the level (0.05).
* ``two stages``: the planned rounds, tested at half the level (0.025); when that verdict is ``inconclusive``
  (no change beyond the noise, not every interval within the floor) the same rounds are measured again, every
  host once more, and the verdict is on all visits, again at 0.025. Splitting the level over the two looks
  (Bonferroni) keeps the chance of a false ``different`` at most the level whatever the looks' correlation;
  ``equivalent`` needs 95 % intervals within the floor, one-sided 2.5 % each way at each look, so at most 5 % over
  both as well.

Data: (1) planted, ``--seeds 40 --permutations 499``: the rows of ``bench/design_screening.py`` (pair, reversal,
self at visit noise 0.05 .. 0.15, with and without an interaction), a second stage a fresh draw of the same rounds;
(2) the stores of ``python bench/demo_runs.py --runs 4 --out /work/runs/st76`` (the demo itself,
stream@nadds1 -> @nadds30, with this change's default), started after this text was committed, on the AMD EPYC
microVM, nothing else working; each demo's first-stage runs are also read at 0.05 (``one stage``), so both
candidates are judged on the same demos.

**Rule**: ``two stages`` is admissible when no planted row has more than 6 of 40 seeds claiming a factor outside
the truth (the 99 % binomial bound of a 5 % rate), as for the screen. It becomes the default only if admissible,
its planted score (every true change found, summed over the pair and reversal rows) is greater than one stage's,
and it is right (``different``, memory-bound -> CPU-bound) in at least as many fresh demos; otherwise one stage
stays (the plainer, and faster). The wall time of every demo is printed beside it, not part of the rule.

    python bench/design_stages.py --seeds 40            # planted (~6 min on 2 cores)
    python bench/design_stages.py --stored /work/runs/st76
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from design_screening import SCENARIOS, _fleet, planted, stored_profiles  # noqa: E402

from quiho.design.analysis import analyse_design  # noqa: E402
from quiho.design.effects import DesignSettings  # noqa: E402

ALPHA = 0.05


def _verdict(runs: pd.DataFrame, alpha: float, permutations: int) -> tuple[str, set[str]]:
    table, _, _ = _fleet()
    res = analyse_design(runs, "v1", "v2", table, settings=DesignSettings(alpha=alpha, permutations=permutations))
    return res.verdict, {c.factor for c in res.moved}


def simulate(seeds: int, permutations: int) -> None:
    """Per planted row: truth found, other factors claimed, and (two stages) how often the second pass ran."""
    print(f"planted runs on the 7-knob fold-over design, {seeds} seeds per row, {permutations} permutations; "
          "a second stage is a fresh draw of the same two rounds")
    print("| scenario | sd | interaction | one stage: truth found | other claimed | two stages: truth found "
          "| other claimed | second stage run |")
    print("|---|---|---|---|---|---|---|---|")
    score = {"one": 0, "two": 0}
    worst = {"one": 0, "two": 0}
    for name, (ea, eb, truth) in SCENARIOS.items():
        for sd in (0.05, 0.08, 0.11, 0.15):
            for inter in (0.0, 0.05):
                found = {"one": 0, "two": 0}
                other = {"one": 0, "two": 0}
                second = 0
                for seed in range(seeds):
                    rng = np.random.default_rng(seed)
                    first = planted(ea, eb, sd, inter, rng)
                    _v, moved = _verdict(first, ALPHA, permutations)
                    found["one"] += len(moved & truth)
                    other["one"] += bool(moved - truth)
                    v, moved = _verdict(first, ALPHA / 2, permutations)
                    if v == "inconclusive":
                        second += 1
                        more = planted(ea, eb, sd, inter, rng).assign(round=lambda d: d["round"] + 2)
                        _v, moved = _verdict(pd.concat([first, more], ignore_index=True), ALPHA / 2, permutations)
                    found["two"] += len(moved & truth)
                    other["two"] += bool(moved - truth)
                for k in score:
                    score[k] += found[k] if truth else 0
                    worst[k] = max(worst[k], other[k])
                n_true = len(truth) * seeds
                cell = {k: (f"{found[k]}/{n_true}" if truth else "–") for k in found}
                print(f"| {name} | {sd:.2f} | {inter:.2f} | {cell['one']} | {other['one']}/{seeds} | {cell['two']} | "
                      f"{other['two']}/{seeds} | {second}/{seeds} |", flush=True)
    print(f"\nscore (true changes found, pair + reversal rows): one stage {score['one']}, two stages {score['two']}; "
          f"worst row outside the truth: one stage {worst['one']}/{seeds}, two stages {worst['two']}/{seeds} "
          "(admissible: <= 6/40)")


def stored(dirs: list[Path]) -> None:
    """Each fresh demo of ``bench/demo_runs.py`` read both ways: its first stage at the level, and as run."""
    from quiho.profile.analysis import analyse_profile
    from quiho.profile.options import AnalysisOptions
    from quiho.store import open_store

    print("| runs | run | wall | stages run | one stage (first-stage visits at 0.05): verdict, A -> B | right "
          "| two stages (as run): verdict, A -> B | right |")
    print("|---|---|---|---|---|---|---|---|")
    tally = {"one": 0, "two": 0}
    for out, d, db, (batch, app, va, vb) in stored_profiles(dirs):
        cells = {}
        with open_store(db, create=False) as st:
            two = analyse_profile(st, app, va, vb, batch)
        with tempfile.TemporaryDirectory() as tmp:  # the first pass alone: a copy without the second's runs
            first = Path(tmp) / "first.db"
            shutil.copy(db, first)
            con = sqlite3.connect(first)
            con.execute("DELETE FROM app_runs WHERE json_extract(extra_json, '$.stage') = 2")
            con.commit()
            con.close()
            with open_store(first, create=False) as st:
                one = analyse_profile(st, app, va, vb, batch, AnalysisOptions(stages=1))
        stage = 2 if two.design is not None and one.design is not None and two.design.visits > one.design.visits \
            else 1
        for k, res in (("one", one), ("two", two)):
            dz = res.design
            if dz is None:
                cells[k] = ("no design", "no")
                continue
            right = dz.verdict == "different" and (dz.story_a.label, dz.story_b.label) == (
                "memory-bound", "CPU-bound")
            tally[k] += right
            cells[k] = (f"{dz.verdict}, {dz.story_a.label} -> {dz.story_b.label}", "yes" if right else "no")
        wall = _wall(d)
        print(f"| {out} | {d.name} | {wall} | {stage} | {' | '.join(cells['one'])} | "
              f"{' | '.join(cells['two'])} |", flush=True)
    print(f"\nright: one stage {tally['one']}, two stages {tally['two']}")


def _wall(d: Path) -> str:
    try:
        return f"{json.loads((d / 'wall.json').read_text())['wall_s'] / 60:.1f} min"
    except (OSError, ValueError, KeyError):
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=0, help="planted table over this many seeds per row")
    ap.add_argument("--permutations", type=int, default=499)
    ap.add_argument("--stored", type=Path, nargs="+", metavar="OUT", help="bench/demo_runs.py output directories")
    args = ap.parse_args()
    if not args.seeds and not args.stored:
        ap.error("give --seeds N and/or --stored OUT ...")
    if args.seeds:
        simulate(args.seeds, args.permutations)
    if args.stored:
        stored(args.stored)
    return 0


if __name__ == "__main__":
    sys.exit(main())
