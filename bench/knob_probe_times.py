"""The knob screening's raw probe times, round by round: what each knob's verdict was decided on.

Runs :func:`quiho.fleet.local.knobs.screen_knobs` once, as ``quiho fleet calibrate`` does, and prints for every
measured cell (the reference, then each knob) each probe's seconds per round, then each knob's verdict. A probe
whose reference times drift between rounds (a page cache emptied by the cell before it, a disk still busy) shows
here, not in the paired effect the verdict states.

    sudo .venv/bin/python bench/knob_probe_times.py [--reps 3]

Needs root (cgroups) and stress-ng; about 45 s with ``--reps 3`` on 2 vCPUs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile

from quiho.fleet.local.knobs import screen_knobs
from quiho.fleet.local.probes import Cell, ProbeRunner


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="rounds before the screening's own extra batch")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="quiho-knob-times-") as d:
        runner = ProbeRunner(f"quiho-knobtimes-{os.getpid()}", 512, workdir=d)
        try:
            out = screen_knobs(runner, d, vcpus=os.cpu_count() or 1, reps=a.reps)
        finally:
            runner.cleanup()
    print("| cell | probe | seconds per round |\n|---|---|---|")
    for c in out["cells"]:
        label = Cell(**{f.name: c[f.name] for f in dataclasses.fields(Cell)}).label
        for probe in ("cpu", "fsync", "syscall", "network", "reread"):
            if c.get(probe):
                times = ", ".join("-" if t is None else f"{t:.3f}" for t in c[probe])
                print(f"| {label} | {probe} | {times} |")
    print()
    for e in out["knobs"]:
        print(f"- {e['name']}: {'kept' if e['kept'] else 'dropped'}: {e['reason']}")
    for n in out["notes"]:
        print(f"- {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
