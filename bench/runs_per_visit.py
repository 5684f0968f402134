"""How many runs of each version a visit of the main job needs: 3 (the demo's ``--repetitions 5``) or 5 (``9``).

**Registered 2026-12-04 03:10 UTC, before any run it judges.** The main job is right (``different``, nadds1
memory-bound -> nadds30 CPU-bound) in 8 of 20 fresh clones on the AMD EPYC microVM, and its misses are the
change test's power (docs/design.md). Where the change's noise comes from, read off the five stored fresh demos
(stop 73's three, demos 16 and 17) by keeping only the first 1, 2 or 3 runs of each version in each visit: the
residual SD of a visit's change fell 0.17 -> 0.13 -> 0.10, 0.09 -> 0.07 -> 0.056, 0.12 -> 0.08 -> 0.067, 0.19
-> 0.12 -> 0.09 (demo 16: 0.19 -> 0.19 -> 0.20, a visit-level noise runs do not average), with no sign of
levelling off at 3: most of it is the runs' own noise (within a visit, log runs spread 7-14 %), which a visit's
minimum over more runs narrows, while the 16 visits and their degrees of freedom stay.

Candidates: 3 runs a visit (today) and 5. Data: the stores of ``python bench/demo_runs.py --repetitions 9 --runs 6
--out /work/runs/rpv74`` (the demo's command with 5 runs a visit) started after this text was committed, on the AMD
EPYC microVM, nothing else working; each is read twice with today's analysis: with every run, and with only the
first 3 runs of each version in each visit (the runs today's demo would have made, in the same minutes: the runs of
a visit alternate between the versions, so the first 3 of each are the first 6 of the visit). **Rule**: 5 runs a
visit become the demo's default if right in more of these demos than 3; otherwise 3 stays (the shorter demo). The
wall time of the demo with 5 runs (the table of ``demo_runs.py``) and the median SE of the tested changes are
reported beside, not part of the rule.
Outcome (2026-12-04): right with the first 3 runs in 3 of 6, with all 5 in 3 of 6, so 3 runs a visit stay;
median SE 0.049 against 0.047 (docs/design.md, "Runs a visit").

Run: ``python bench/runs_per_visit.py /work/runs/rpv74`` (a few seconds a store; nothing is measured).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

RIGHT = {("stream", "nadds1", "nadds30"): ("memory-bound", "CPU-bound")}


def keep_first(db: Path, batch: str, k: int) -> None:
    """Delete every run of ``batch`` after the first ``k`` of its version in its visit (host and round)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, host_id, version, json_extract(extra_json, '$.round'), "
                       "json_extract(extra_json, '$.order') FROM app_runs WHERE batch = ?", (batch,)).fetchall()
    seen: dict[tuple, int] = {}
    drop = []
    for rid, host, version, rnd, _order in sorted(rows, key=lambda r: (r[1], r[3] or 0, r[4] or 0)):
        key = (host, rnd, version)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > k:
            drop.append((rid,))
    con.executemany("DELETE FROM app_runs WHERE id = ?", drop)
    con.commit()
    con.close()


def read(db: Path, k: int | None) -> tuple[str, str, bool, float, int]:
    """(verdict, story, right, median SE of the tested changes, runs per visit) of the store's first profile."""
    from quiho.profile.analysis import analyse_profile
    from quiho.store import open_store

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    batch, app, va, vb = con.execute("SELECT batch, application, version_a, version_b FROM profiles ORDER BY id "
                                     "LIMIT 1").fetchone()
    con.close()
    with tempfile.TemporaryDirectory() as td:
        copy = Path(td) / "quiho.db"
        shutil.copy(db, copy)
        if k is not None:
            keep_first(copy, batch, k)
        con = sqlite3.connect(copy)
        per = con.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM app_runs WHERE batch = ? GROUP BY host_id, "
                          "version, json_extract(extra_json, '$.round'))", (batch,)).fetchone()[0]
        con.close()
        with open_store(copy, create=False) as st:
            dz = analyse_profile(st, app, va, vb, batch).design
    if dz is None:
        return "no design", "-", False, float("nan"), per
    story = (dz.story_a.label, dz.story_b.label)
    right = story == RIGHT.get((app, va, vb)) and dz.verdict == "different"
    ses = [c.se for c in dz.changes if c.tested] or [c.se for c in dz.changes]
    return dz.verdict, " -> ".join(story), right, float(np.median(ses)) if ses else float("nan"), per


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="+", help="bench/demo_runs.py output directories")
    ap.add_argument("--first", type=int, default=3, help="runs of each version a visit in the shorter reading")
    args = ap.parse_args()
    print(f"| out | run | first {args.first} a visit: verdict, A -> B | right | SE | every run: verdict, A -> B | "
          "right | SE | runs a visit |")
    print("|---|---|---|---|---|---|---|---|---|")
    tally = [0, 0]
    n = 0
    for out in args.out:
        for d in sorted(out.glob("run-*"), key=lambda p: int(p.name.split("-")[1])):
            db = d / "quiho.db"
            if not db.exists():
                continue
            short, full = read(db, args.first), read(db, None)
            n += 1
            tally[0] += short[2]
            tally[1] += full[2]
            print(f"| {out} | {d.name} | {short[0]}, {short[1]} | {'yes' if short[2] else 'no'} | {short[3]:.3f} | "
                  f"{full[0]}, {full[1]} | {'yes' if full[2] else 'no'} | {full[3]:.3f} | {full[4]} |", flush=True)
    print(f"\nright: first {args.first} a visit {tally[0]} of {n}, every run {tally[1]} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
