"""Where one local-fleet visit's time goes: each Ansible task of ``run.yml`` and the gap between runs.

One interleaved visit of the stream example (both versions, ``--runs`` each plus one warm-up each) on one host of
the local fleet, through the same ``FleetSession`` a profile uses, timed from ansible-runner's job events. Prints
the start of every task (seconds from the call), the time outside the run loop, and per run its ``delta`` (the
prefault included) and the time since the previous run ended (what ``quiho_runs`` costs between runs).

    python bench/visit_tasks.py                      # local-q94-thp of inventories/local.yml
    python bench/visit_tasks.py --host local-q82-4k --repeat 3

Needs root (cgroups, THP). Stores nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from quiho.app import load_app_spec  # noqa: E402
from quiho.app.run import _parse_delta  # noqa: E402
from quiho.fleet.inventory import load_inventory  # noqa: E402
from quiho.fleet.session import FleetSession, new_batch  # noqa: E402
from quiho.profile.interleave import _command, _setup  # noqa: E402


def visit(host: str, runs: int, inventory: Path) -> None:
    spec = load_app_spec(REPO / "examples" / "stream" / "stream.yml")
    command, setup = _command(spec, "nadds1", "nadds30", 0), _setup(spec, "nadds1", "nadds30")
    session = FleetSession(load_inventory(inventory), "run.yml", new_batch("bench"), cgroup_prefix="qhbench")
    extravars = {"quiho_app": {"command": command, "setup": setup, "workdir": ""},
                 "quiho_reps": list(range(1, 2 * runs + 3)), "quiho_app_timeout": 60, "quiho_emulate_seconds": 900}
    t0 = time.monotonic()
    w0 = datetime.now().astimezone()
    res = session.run([host], extravars, 900)
    total = time.monotonic() - t0
    print(f"\n{host}: {res.status}, {total:.2f} s in all\n\n| task | starts at (s) |\n|---|---|")
    loop_start = loop_end = None
    for e in res.events:
        data = e.get("event_data") or {}
        if e.get("event") == "playbook_on_task_start" and e.get("created"):
            at = (datetime.fromisoformat(e["created"]) - w0).total_seconds()
            print(f"| {data.get('task')} | {at:.2f} |")
            if data.get("task") == "quiho app run":
                loop_start = at
            elif loop_start is not None and loop_end is None:
                loop_end = at
    if loop_start is not None and loop_end is not None:
        loop = loop_end - loop_start
        print(f"\noutside the run loop: {total - loop:.2f} s; run loop {loop:.2f} s")
    print("\n| run | delta (s) | since the previous run ended (s) |\n|---|---|---|")
    prev = None
    for data in res.runs("quiho app run"):  # start/end: the target's clock, around each run
        r = data["res"]
        start, end = datetime.fromisoformat(r["start"]), datetime.fromisoformat(r["end"])
        gap = f"{(start - prev).total_seconds():.3f}" if prev is not None else "-"
        print(f"| {r.get('item')} | {_parse_delta(r.get('delta')) or 0.0:.3f} | {gap} |")
        prev = end


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="local-q94-thp")
    ap.add_argument("--inventory", type=Path, default=REPO / "inventories" / "local.yml")
    ap.add_argument("--runs", type=int, default=3, help="measured runs per version (plus one warm-up each)")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("visit_tasks: the local fleet needs root", file=sys.stderr)
        return 1
    for _ in range(a.repeat):
        visit(a.host, a.runs, a.inventory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
