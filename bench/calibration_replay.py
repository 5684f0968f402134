"""Re-run the local-fleet axis choice on recorded calibrations: stores' stored responses or recorded JSON files.

    python bench/calibration_replay.py /tmp/demo-runs/run-*/quiho.db tests/data/calibration/*.json

One row per source (a store's newest calibration): the axes kept and each memory axis's effect ± SE on the
memory probe, as this quiho's :func:`quiho.fleet.local.calibrate.choose` decides them from the same probe times
(nothing is measured). Rerun it before and after a change of the choice's rules to see which calibrations change
their axes.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from quiho.errors import QuihoError
from quiho.fleet.local.calibrate import AxisEffect, choose
from quiho.store import open_store
from quiho.store.calibrations import latest_calibration


def _responses(source: str) -> dict | None:
    """Recorded responses (a JSON file), or those of a store's newest calibration (None: it has none)."""
    if source.endswith(".json"):
        return json.loads(Path(source).read_text())
    with open_store(source) as st:
        cal = latest_calibration(st)
    return None if cal is None else cal["result"]["responses"]


def _effect(x: AxisEffect | None) -> str:
    if x is None or x.effect_memory is None:
        return "-"
    return f"{math.expm1(x.effect_memory):+.1%} ± {x.se_memory or 0:.1%} ({'kept' if x.kept else 'dropped'})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+", help="stores (SQLite files or PostgreSQL URLs) or recorded responses (JSON)")
    a = ap.parse_args()
    print("| calibration | axes kept | page-size (memory probe) | co-runner (memory probe) |")
    print("|---|---|---|---|")
    for src in a.sources:
        try:
            resp = _responses(src)
        except (OSError, ValueError, QuihoError) as e:  # one unreadable source is a row, not the end of the table
            print(f"| {src} | not read: {e} | | |")
            continue
        if resp is None:
            print(f"| {src} | no calibration stored | | |")
            continue
        ch = choose(resp)
        by = {x.name: x for x in ch.axes}
        kept = "+".join(x.name for x in ch.axes if x.kept) or "none"
        print(f"| {src} | {kept} | {_effect(by.get('page-size'))} | {_effect(by.get('co-runner'))} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
