"""Local-fleet calibration: run the real probes, record their responses, print the chosen levels and wall time.

    python bench/local_fleet_calibration.py --record tests/data/calibration/this-machine.json [--note TEXT]
    python bench/local_fleet_calibration.py --from tests/data/calibration/amd-epyc-issue15.json   # choice only

``--record`` needs root, cgroup v1 and stress-ng (the same probes ``quiho fleet calibrate`` runs, under the
local-fleet lock; cgroups and THP are restored afterwards). The JSON holds every probe time per emulated cell,
the machine facts, the load average before and after, and the calibration wall time; ``--from`` re-runs the
choice (quiho.fleet.local.calibrate.choose) on such a file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from quiho.fleet.local.calibrate import PREFAULT_MIB, UNTHROTTLED_REPS, choose, load_responses, measure_responses
from quiho.fleet.local.emulate import local_fleet_lock
from quiho.fleet.local.probes import ProbeRunner, machine_facts, require_root


def main() -> int:
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", type=Path, help="run the probes and write the responses here (JSON)")
    g.add_argument("--from", dest="src", type=Path, help="recorded responses: print the choice only")
    ap.add_argument("--reps", type=int, default=UNTHROTTLED_REPS)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    if a.record:
        require_root()
        facts = machine_facts()
        runner = ProbeRunner(f"quiho-calbench-{os.getpid()}", PREFAULT_MIB, lambda m: print(m, file=sys.stderr))
        with local_fleet_lock() as waited:
            t0 = time.monotonic()  # the calibration's own time: from holding the lock
            try:
                resp = measure_responses(runner, facts, a.reps)
            finally:
                runner.cleanup()
        resp["elapsed_s"] = round(time.monotonic() - t0, 2)
        resp["lock_wait_s"] = round(waited, 2)
        resp["source"] = f"bench/local_fleet_calibration.py --record on {facts['cpu_model']}" + (
            f"; {a.note}" if a.note else "")
        a.record.parent.mkdir(parents=True, exist_ok=True)
        a.record.write_text(json.dumps(resp, indent=1) + "\n")
    else:
        resp = load_responses(a.src)
    c = choose(resp)
    print(f"source: {resp.get('source', '?')}")
    print(f"load average (1/5/15 min) before, after: {resp.get('load_before_after', '?')}")
    print("\n| axis | kept | memory probe | CPU probe | reason |\n|---|---|---|---|---|")
    for ax in c.axes:
        eff = [("-" if e is None else f"{math.expm1(e):+.1%} ± {s:.1%}")
               for e, s in ((ax.effect_memory, ax.se_memory), (ax.effect_cpu, ax.se_cpu))]
        print(f"| {ax.name} | {'yes' if ax.kept else 'no'} | {eff[0]} | {eff[1]} | {ax.reason} |")
    print("\n| period | mean error | worst error | worst THP interaction | passes |\n|---|---|---|---|---|")
    for p, v in c.periods.items():
        inter = "-" if v["max_interaction"] is None else f"{v['max_interaction']:.1%}"
        print(f"| {int(p) // 1000} ms | {v['mean_error']:.1%} | {v['max_error']:.1%} | {inter} | {v['passes']} |")
    print("\nnoise (SD of log time per run; assumed SE per cell if the file gives one): "
          f"memory {c.noise['memory']:.1%}, cpu {c.noise['cpu']:.1%}; "
          f"quota step {math.expm1(c.step):.1%}")
    print(f"chosen: quota levels {list(c.quota_levels) or 'none (axis dropped)'}, period "
          f"{c.period_us if c.period_us else '-'} us, {len(c.hosts)} hosts: {', '.join(n for n, _ in c.hosts) or '-'}")
    for w in c.warnings:
        print(f"warning: {w}")
    if "elapsed_s" in resp:
        print(f"calibration wall time: {resp['elapsed_s']:.1f} s ({resp.get('probe_runs', '?')} probe runs; "
              f"{resp.get('lock_wait_s', 0):.0f} s waiting for the local-fleet lock before, not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
