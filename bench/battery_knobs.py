"""Which stressors of a battery each local-fleet factor moves: one host per factor, every other factor off.

Reads the levels of a calibrated local fleet (``.quiho/local-fleet-*.yml``, written by ``quiho fleet calibrate``),
builds an inventory of a baseline host (every factor at its ``off`` level) and one host per factor at the level the
calibration chose, fingerprints them with ``--battery`` and ``--repetitions``, and prints per stressor: the
baseline's ops/s, a repetition's noise (median over hosts of the SD of log ops/s across repetitions) and each
factor's effect (the host's median against the baseline's, in %). A knob's stressor should move far beyond that
noise and beyond what the factor does to the others; the CPU quota moves everything.

    sudo .venv/bin/python bench/battery_knobs.py --fleet .quiho/local-fleet-*.yml [--battery resources]
        [--repetitions 3] [--store /tmp/battery-knobs.db]

Needs root (the local fleet's cgroups), stress-ng. About 10 s per host and repetition for the resources battery.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from quiho._factors import FACTORS  # noqa: E402
from quiho.fleet.inventory import load_inventory  # noqa: E402

QUIHO = str(REPO / ".venv" / "bin" / "quiho")


def factor_hosts(fleet: Path) -> tuple[dict, dict[str, dict]]:
    """(the fleet's group vars, {host: vars}): a baseline and one host per factor the fleet sets to another level."""
    hosts = list(load_inventory(fleet).design_vars().values())
    base = {f.host_var: f.off for f in FACTORS}
    out = {"base": dict(base)}
    for f in FACTORS:
        levels = {str(h.get(f.host_var, f.off)) for h in hosts} - {str(f.off)}
        if f.on is not None:
            levels &= {str(f.on)}
        if levels:
            level = next(h[f.host_var] for h in hosts if str(h.get(f.host_var, f.off)) in levels)
            out[f.name] = {**base, f.host_var: level}
    return yaml.safe_load(fleet.read_text())["all"].get("vars", {}), out


def inventory(group_vars: dict, hosts: dict[str, dict]) -> str:
    return yaml.safe_dump({"all": {"vars": group_vars, "children": {"local": {"hosts": {
        f"bk-{name}": vars_ for name, vars_ in hosts.items()}}}}}, sort_keys=False)


def table(db: Path, run_id: int) -> pd.DataFrame:
    con = sqlite3.connect(db)
    df = pd.read_sql("SELECT h.name AS host, m.repetition AS rep, m.stressor, m.value, m.status FROM measurements m "
                     "JOIN hosts h ON h.id = m.host_id WHERE m.run_id = ?", con, params=(run_id,))
    failed = df[df.status != "ok"]
    for row in failed.itertuples():
        print(f"failed: {row.host} {row.stressor} repetition {row.rep}", file=sys.stderr)
    df = df[df.status == "ok"].assign(lv=lambda d: np.log(d.value.astype(float)))
    med = df.groupby(["stressor", "host"]).value.median().unstack()
    base = med.pop("bk-base")
    rel = (med.div(base, axis=0) - 1) * 100
    noise = df.groupby(["stressor", "host"]).lv.std().groupby("stressor").median() * 100
    out = rel.round(0).rename(columns=lambda c: c.removeprefix("bk-"))
    out.insert(0, "rep SD %", noise.round(1))
    out.insert(0, "base ops/s", base.round(0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", type=Path, required=True, help="a calibrated local fleet inventory")
    ap.add_argument("--battery", default="resources")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "battery-knobs.db")
    a = ap.parse_args()
    group_vars, hosts = factor_hosts(a.fleet)
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write(inventory(group_vars, hosts))
    t0 = time.monotonic()
    r = subprocess.run([QUIHO, "fingerprint", "-i", f.name, "--battery", a.battery, "--repetitions",
                        str(a.repetitions), "--warmup", "0", "--store", str(a.store), "--json"],
                       capture_output=True, text=True, check=False)
    if r.returncode not in (0, 3):
        print(f"battery_knobs: fingerprint failed ({r.returncode}): {r.stderr.strip()[-400:]}", file=sys.stderr)
        return 1
    doc = json.loads(r.stdout)
    print(f"battery {a.battery}, {a.repetitions} repetition(s), no warm-up, {len(hosts)} hosts, "
          f"{time.monotonic() - t0:.0f} s; fleet {a.fleet}")
    print("levels: " + "; ".join(f"{n}: {v[f.host_var]}" for f in FACTORS for n, v in hosts.items() if n == f.name))
    print(f"fingerprint run {doc['run_id']}, status {doc['status']}\n")
    print("effect of each factor on each stressor, % against the baseline host (median of the repetitions):\n")
    print(table(a.store, int(doc["run_id"])).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
