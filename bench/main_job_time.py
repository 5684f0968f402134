"""Where the main job's minutes go, from the store a fresh demo left (issue 47: <= 6 min from a fresh clone).

    python bench/main_job_time.py CLONE [--wall S]        # CLONE: a clone where `bash scripts/demo.sh` ran

Reads nothing but what the demo stored: the calibration's own seconds (``fleet_calibrations``), the profile's
fingerprint run's start and the profile's stored result (the whole visit loop, a second pass's visits
included), each visit's stress-ng job (the ``rep1.stat0`` and
``rep1.stat1`` files the fingerprint playbook writes before and after it, 1-s resolution) and each stored run's
wall time (``app_runs.extra_json``: ``wall_s``; a visit's warm-up runs, one per version, are not stored and are
counted as its fastest stored run of that version). What is left of a visit is orchestration: two playbooks,
the emulation's start and stop, the store. With ``--wall`` (the demo's wall seconds, set-up included) the
set-up is what the rest leaves. Prints one row per visit, then the budget: measured work, orchestration,
calibration, set-up, against the 360 s the issue asks for.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

BAR_S = 360.0


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clone", type=Path, help="the clone the demo ran in (its .quiho/ holds the store)")
    ap.add_argument("--wall", type=float, default=None, help="the demo's wall seconds, set-up included")
    a = ap.parse_args()
    q = a.clone / ".quiho"
    db = q / "quiho.db"
    if not db.is_file():
        print(f"main_job_time: no store at {db}", file=sys.stderr)
        return 2
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    cal = con.execute("SELECT elapsed_s FROM fleet_calibrations ORDER BY id LIMIT 1").fetchone()
    fp = con.execute("SELECT id, batch, started_at, finished_at FROM fingerprint_runs ORDER BY id LIMIT 1").fetchone()
    if cal is None or fp is None or fp[3] is None:
        print("main_job_time: the store holds no calibration or no finished fingerprint run", file=sys.stderr)
        return 2
    names = dict(con.execute("SELECT id, name FROM hosts"))
    walls: dict[tuple[int, str], list[tuple[str, float]]] = defaultdict(list)
    for host, started, version, extra in con.execute(
            "SELECT host_id, started_at, version, extra_json FROM app_runs WHERE status = 'ok'"):
        w = json.loads(extra or "{}").get("wall_s")
        if w is not None:
            walls[(host, started)].append((version, float(w)))
    # the visit loop ends at the profile's stored result (a second pass's visits included, and the seconds of
    # analysis before it); without a stored profile, at the fingerprint run's end
    prof = con.execute("SELECT created_at FROM profiles ORDER BY id LIMIT 1").fetchone()
    loop_s = (_ts(prof[0]) if prof else _ts(fp[3])) - _ts(fp[2])
    print("| visit | host | stress-ng s | runs s (warm-ups incl.) |")
    print("|---|---|---|---|")
    fp_total = run_total = 0.0
    seen: set[int] = set()
    for i, ((host, _started), runs) in enumerate(sorted(walls.items(), key=lambda kv: kv[0][1]), 1):
        d = q / "fleet" / fp[1] / names[host]
        stress = ((d / "rep1.stat1").stat().st_mtime - (d / "rep1.stat0").stat().st_mtime
                  if (d / "rep1.stat0").exists() and (d / "rep1.stat1").exists() and host not in seen else 0.0)
        seen.add(host)  # a host is fingerprinted on its first visit only
        warm = sum(min(w for v, w in runs if v == version) for version in {v for v, _ in runs})
        run_s = sum(w for _, w in runs) + warm
        fp_total, run_total = fp_total + stress, run_total + run_s
        print(f"| {i} | {names[host]} | {stress:.0f} | {run_s:.1f} |")
    visits = len(walls)
    orch = loop_s - fp_total - run_total
    print()
    print("| part | s | share of the 360 s bar |")
    print("|---|---|---|")
    parts = [("stress-ng fingerprints", fp_total), ("application runs", run_total),
             (f"orchestration ({orch / max(visits, 1):.1f} s a visit, {visits} visits)", orch),
             ("calibration", float(cal[0]))]
    if a.wall is not None:
        parts.append(("set-up and the rest (wall minus the above)", a.wall - loop_s - float(cal[0])))
    for name, s in parts:
        print(f"| {name} | {s:.0f} | {s / BAR_S:.0%} |")
    total = a.wall if a.wall is not None else loop_s + float(cal[0])
    print(f"| **total** | **{total:.0f}** | **{total / BAR_S:.0%}** |")
    floor = fp_total + run_total + float(cal[0])
    print(f"\nmeasured work alone (fingerprints, runs, calibration): {floor:.0f} s "
          f"({'within' if floor <= BAR_S else 'beyond'} the {BAR_S:.0f} s bar before any orchestration or set-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
