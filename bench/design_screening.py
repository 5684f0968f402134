"""Which factors the change test of a designed fleet tests: every factor, or only those that move the versions.

The main job's fleet keeps up to 7 knobs on 16 visits (a 2^(7-4) fraction and its fold-over, one round each), so
the change regression has 7 residual degrees of freedom and Holm divides the level by 7. A factor that moves
neither version's runs (storage, network ... for a program that does no I/O) costs that power and can hardly
have changed. ``screen`` tests only the factors whose effect on both versions' runs pooled excludes 0; the pooled
runs of a visit are the same under every label exchange of the permutation test, so the filter does not bias the
p of the factors kept (independent filtering, Bourgon, Gentleman & Huber, PNAS 2010).

Two tables, both rules on the same data:

* ``--seeds N``: planted runs on the 7-knob design. ``pair`` is the main job's shape (a memory-bound version A,
  huge pages -22 %, and a version B that huge pages move -4 %: the change is +20 %; quota and co-runner move both
  alike); ``self`` has the same effects on both sides. Per cell: the huge-page change found (Holm p < 0.05 and at
  least the 5 % floor) and any other factor claimed changed. ``sd`` is a visit's own noise on the change (both
  versions' medians, the log scale; the main job's fresh clones measured 0.05-0.11), ``interaction`` a
  quota x page-size interaction of version A only (+-0.05 on the log scale: a 2fi the design's residual holds).
* ``--stored OUT ...``: every ``run-*/quiho.db`` of ``bench/demo_runs.py`` re-analysed in this process with each
  rule (nothing measured): the design verdict and class story A -> B, and whether it is right (stream:
  memory-bound -> CPU-bound; self: no class shift).

Run: ``python bench/design_screening.py --seeds 80`` (about 12 min on 2 cores), and
``python bench/design_screening.py --stored /tmp/runs/stream /tmp/runs/self``.

**A visit's minimum or its median** (``--compare summary``; registered 2026-12-02 before any run it judges).
The main job's misses on the AMD EPYC microVM are power: a change of +9 % to +21 % at a per-visit SE of 5-8 %.
Interference only adds time to a run (issue 48's gate chose the minimum of a revision's rounds on that
mechanism), and this VM runs a process in a fast or a ~1.6x slow band for seconds at a time; every knob slows
every run of its visit. So a version's minimum over its runs of a visit may be a less noisy summary than their
median. Candidates: ``median`` (today) and ``min``; the screening filter (the interquartile mean of the pooled
runs) is the same for both. Data: the stores of ``bench/demo_runs.py --runs 4`` (stream@nadds1 -> @nadds30) and
``--pair self --runs 2`` (nadds1 against itself) started after this text was committed, on the AMD EPYC microVM;
nothing else. **Rule**: ``min`` becomes the default only if it is right (``different``, memory-bound -> CPU-bound)
in more stream runs than ``median`` and claims a class shift in no self run where ``median`` claims none;
otherwise ``median`` stays (today's, and the plainer estimate under symmetric noise). Each cell's SE column is
reported, not part of the rule. Outcome (2026-12-02): ``min`` right in 3 of 4 stream runs, ``median`` in 2; no
self-run class shift under either, so ``min`` is the default (docs/design.md, "A visit's minimum", has the table
and why it says little).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sqlite3
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

from quiho.design import effects as E
from quiho.design.factors import factor_table
from quiho.fleet.local.screening import screening_design

KNOBS = ("cpu-quota", "huge-pages", "co-runner", "storage", "kernel-entry", "network", "memory-capacity")
A = {"cpu-quota": 0.33, "huge-pages": -0.22, "co-runner": 0.05}
B = {"cpu-quota": 0.33, "huge-pages": -0.04, "co-runner": 0.05}
RIGHT = {("stream", "nadds1", "nadds30"): ("memory-bound", "CPU-bound")}


@functools.cache
def _fleet() -> tuple[E.FactorTable, dict[str, dict[str, int]], tuple[tuple[str, ...], ...]]:
    d = screening_design(KNOBS)
    coded = {h.name: dict(zip(KNOBS, h.levels, strict=True)) for h in d.hosts}
    levels = {h: {k: (100 - 33 * x if k == "cpu-quota" else x) for k, x in v.items()} for h, v in coded.items()}
    return factor_table(levels), coded, d.rounds


def planted(effects_a: dict[str, float], effects_b: dict[str, float], sd: float, interaction: float,
            rng: np.random.Generator, runs: int = 5, run_sd: float = 0.06, visit_sd: float = 0.05) -> pd.DataFrame:
    """Runs of ``v1``/``v2`` on the 7-knob design: round drift, visit noise shared and per version, run noise."""
    _, coded, rounds = _fleet()
    rows = []
    for r, names in enumerate(rounds):
        drift = rng.normal(0, 0.05)
        for h in names:
            x = coded[h]
            shared = rng.normal(0, visit_sd)
            inter = interaction * (2 * x["cpu-quota"] - 1) * (2 * x["huge-pages"] - 1)
            for v, eff, extra in (("v1", effects_a, inter), ("v2", effects_b, 0.0)):
                mu = drift + shared + rng.normal(0, sd / np.sqrt(2)) + extra + sum(eff.get(f, 0.0) * x[f]
                                                                                     for f in KNOBS)
                rows += [{"host": h, "version": v, "round": r, "status": "ok",
                          "value": float(np.exp(mu + rng.normal(0, run_sd)))} for _ in range(runs)]
    return pd.DataFrame(rows)


def _moved(runs: pd.DataFrame, table: E.FactorTable, screen: bool, permutations: int) -> set[str]:
    s = E.DesignSettings(permutations=permutations, screen=screen)
    changes, _, _ = E.effect_changes(runs, "v1", "v2", table, s)
    return {c.factor for c in changes if c.tested and c.p_adjusted is not None and c.p_adjusted < s.alpha
            and c.beyond(s.floor)}


def simulate(seeds: int, permutations: int) -> None:
    """The planted table: per scenario, noise and interaction, both rules' hits and false claims over ``seeds``."""
    table, _, _ = _fleet()
    print(f"planted runs on the 7-knob fold-over design, {seeds} seeds per row, {permutations} permutations")
    print("| scenario | sd | interaction | every factor: huge pages found | other claimed | screened: huge pages "
          "found | other claimed |")
    print("|---|---|---|---|---|---|---|")
    for name, eb in (("pair", B), ("self", A)):
        truth = {"huge-pages"} if name == "pair" else set()
        for sd in (0.05, 0.08, 0.11, 0.15):
            for inter in (0.0, 0.05):
                hit = {False: 0, True: 0}
                other = {False: 0, True: 0}
                for seed in range(seeds):
                    runs = planted(A, eb, sd, inter, np.random.default_rng(seed))
                    for screen in (False, True):
                        m = _moved(runs, table, screen, permutations)
                        hit[screen] += "huge-pages" in m
                        other[screen] += bool(m - truth)
                found = {k: f"{hit[k]}/{seeds}" if name == "pair" else f"{hit[k]}/{seeds} (false)" for k in hit}
                print(f"| {name} | {sd:.2f} | {inter:.2f} | {found[False]} | {other[False]}/{seeds} | "
                      f"{found[True]} | {other[True]}/{seeds} |", flush=True)


def _settings(**kw: object) -> contextlib.AbstractContextManager[object]:
    """The profile's design settings with ``kw`` replaced (``screen=False``: the rule before screening)."""
    from quiho.profile import analysis

    real = analysis.DesignSettings
    return mock.patch.object(analysis, "DesignSettings", lambda **given: real(**{**given, **kw}))


#: ``--stored`` comparisons: name -> (rule name, design settings) x 2, the other rule second; each names its
#: setting, so a change of default does not turn a comparison into one rule twice.
COMPARE = {"screen": (("every factor", {"screen": False}), ("screened", {"screen": True})),
           "summary": (("visit min", {"summary": "min"}), ("visit median", {"summary": "median"}))}


def stored(dirs: list[Path], compare: str = "screen") -> None:
    """Two rules on every stored run of ``bench/demo_runs.py`` under ``dirs`` (the same runs, re-analysed).

    Each cell: verdict, class story A -> B, right or not, and the median SE of the tested factors' changes (the
    log scale: what a visit's summary does to the change test's noise).
    """
    from quiho.profile.analysis import analyse_profile
    from quiho.store import open_store

    rules = COMPARE[compare]
    print(f"| runs | run | pair | {rules[0][0]}: verdict, A -> B | right | SE | {rules[1][0]}: verdict, A -> B | "
          f"right | SE | {rules[1][0]}: factors tested |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    tally = [0, 0]
    for out in dirs:
        for d in sorted(out.glob("run-*"), key=lambda p: int(p.name.split("-")[1])):
            db = d / "quiho.db"
            if not db.exists():
                continue
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            row = con.execute("SELECT batch, application, version_a, version_b FROM profiles ORDER BY id "
                              "LIMIT 1").fetchone()
            con.close()
            if row is None:
                continue
            batch, app, va, vb = row
            cells = []
            for k, (_name, kw) in enumerate(rules):
                with open_store(db, create=False) as st, _settings(**kw):
                    res = analyse_profile(st, app, va, vb, batch)
                dz = res.design
                if dz is None:
                    cells.append(("no design", "–", "", ""))
                    continue
                story = (dz.story_a.label, dz.story_b.label)
                right = (story == RIGHT[(app, va, vb)] and dz.verdict == "different") if va != vb else \
                    not dz.class_shift
                tally[k] += right
                ses = [c.se for c in dz.changes if c.tested] or [c.se for c in dz.changes]
                tested = ", ".join(c.factor for c in dz.changes if c.tested)
                cells.append((f"{dz.verdict}, {story[0]} -> {story[1]}", "yes" if right else "no",
                              f"{np.median(ses):.3f}" if ses else "", tested))
            print(f"| {out} | {d.name} | {app}@{va} -> @{vb} | " + " | ".join(" | ".join(c[:3]) for c in cells)
                  + f" | {cells[-1][3]} |", flush=True)
    print(f"\nright: {rules[0][0]} {tally[0]}, {rules[1][0]} {tally[1]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=0, help="planted table over this many seeds per row")
    ap.add_argument("--permutations", type=int, default=499)
    ap.add_argument("--stored", type=Path, nargs="+", metavar="OUT", help="bench/demo_runs.py output directories")
    ap.add_argument("--compare", choices=sorted(COMPARE), default="screen",
                    help="--stored: screening vs every factor, or a visit's min vs its median")
    args = ap.parse_args()
    if not args.seeds and not args.stored:
        ap.error("give --seeds N and/or --stored OUT ...")
    if args.seeds:
        simulate(args.seeds, args.permutations)
    if args.stored:
        stored(args.stored, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
