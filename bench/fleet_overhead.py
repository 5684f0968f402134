"""Orchestration overhead of a fleet fingerprint: 1 vs 3 network-namespace hosts (real sshd), vs the stressor budget.

For each host count and per-stressor seconds S, runs the ``quick`` battery (1 repetition, no warm-up,
hosts measured one after another) and reports:
    budget      = hosts x stressors x S                  (what the stressors are asked to run)
    stress-ng   = sum of the stressors' own wall times     (what they actually ran: stress-ng overruns -t a little)
    wall        = the whole fingerprint() call
    orchestration = wall - stress-ng                      (ansible, ssh, job files, collection, parsing, store)
Then fits wall = fixed + slope x budget + per-host x hosts, and the same for the orchestration alone.
Goal: orchestration <= 5 % of the stressor time plus a fixed start-up, i.e. an orchestration slope
<= 0.05 per stressor-second. Needs root, ip netns, sshd, stress-ng.
Usage: python bench/fleet_overhead.py [--seconds 1 3] [--hosts 1 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from quiho.fingerprint import fingerprint
from quiho.fingerprint.battery import load_battery
from quiho.store import open_store
from quiho.testing.netns import NetnsFleet


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 3])
    a = ap.parse_args()
    rows = []
    n_stressors = len(load_battery("quick").stressors)
    for n in a.hosts:
        with NetnsFleet(n, prefix="qbench") as fleet:
            for s in a.seconds:
                d = Path(tempfile.mkdtemp(prefix="qh-bench-"))
                store = open_store(d / "q.db")
                t0 = time.monotonic()
                run = fingerprint(fleet.inventory, store=store, battery="quick", seconds=s, repetitions=1,
                                  warmup_seconds=0)
                wall = time.monotonic() - t0
                walls = [json.loads(r[0]).get("wall_s") or 0.0 for r in store.conn.execute(
                    "SELECT extra_json FROM measurements WHERE run_id=?", (run.run_id,))]
                busy = [json.loads(r[0]).get("machine_busy_share") for r in store.conn.execute(
                    "SELECT extra_json FROM measurements WHERE run_id=?", (run.run_id,))]
                busy = [b for b in busy if b is not None]
                store.close()
                budget = n * n_stressors * s
                rows.append((n, s, budget, sum(walls), wall, run.status, float(np.median(busy)) if busy else None))
                print(f"hosts {n} S {s}: {run.status} wall {wall:.1f} s", file=sys.stderr)
    print("| hosts | s/stressor | status | budget s | stress-ng s | wall s | orchestration s | orchestration / host "
          "| busy |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for n, s, budget, sng, wall, status, busy in rows:
        print(f"| {n} | {s} | {status} | {budget} | {sng:.1f} | {wall:.1f} | {wall - sng:.1f} | "
              f"{(wall - sng) / n:.1f} | {busy if busy is None else round(busy, 2)} |")
    x = np.array([r[2] for r in rows], float)
    y = np.array([r[4] for r in rows], float)
    hosts = np.array([r[0] for r in rows], float)
    # wall = a + b*budget + c*hosts  (fixed start-up, per-second slope, per-host fixed cost)
    coef, *_ = np.linalg.lstsq(np.c_[np.ones_like(x), x, hosts], y, rcond=None)
    print(f"\nfit: wall = {coef[0]:.1f} s + {coef[1]:.3f} x budget + {coef[2]:.1f} s x hosts")
    orch = y - np.array([r[3] for r in rows], float)
    oc, *_ = np.linalg.lstsq(np.c_[np.ones_like(x), x, hosts], orch, rcond=None)
    sng_ratio = float(np.sum([r[3] for r in rows]) / np.sum(x))
    print(f"fit: orchestration = {oc[0]:.1f} s + {oc[1]:.3f} x budget + {oc[2]:.1f} s x hosts "
          f"(goal: slope <= 0.05); stress-ng ran {sng_ratio:.3f} x its budget")
    return 0


if __name__ == "__main__":
    import signal

    def _term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwind through the runs' cleanup

    signal.signal(signal.SIGTERM, _term)
    sys.exit(main())
