"""The local fleet's calibration on this machine: real probes (stress-ng in cgroups, THP changed and put back),
a stored row, a generated inventory; reused while the facts are the same, redone when they change."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from quiho.fleet.inventory import load_inventory
from quiho.fleet.local.calibrate import calibrate, resolve_inventory
from quiho.fleet.local.emulate import CGROUP_CPU, THP_PATH, THP_SAVE
from quiho.fleet.local.probes import machine_facts
from quiho.store import open_store

pytestmark = [pytest.mark.root, pytest.mark.stressng, pytest.mark.slow]


def test_calibration_probes_once_stores_writes_the_inventory_and_reprobes_on_new_facts(tmp_path: Path) -> None:
    thp_before = THP_PATH.read_text()
    store = open_store(tmp_path / "q.db")
    steps: list[str] = []
    first = calibrate(store, reps=2, knob_reps=3, on_step=steps.append)
    assert not first.reused and first.probe_runs >= 2 * 2 * 3  # both probes, >= 2 reps, >= 3 cells
    # the knobs were screened: each measured or said; a kept one makes the hosts a screening design
    said = {k["name"] for k in first.choice["knobs"]} | {n.split(":")[0] for n in first.choice["knob_notes"]}
    assert {"core-sharing", "storage", "kernel-entry", "network"} <= said
    assert bool(first.choice.get("design")) == any(k["kept"] for k in first.choice["knobs"])
    assert first.facts == machine_facts()
    # the machine is left as found: THP policy, no saved policy, no calibration cgroups
    assert THP_PATH.read_text() == thp_before and not THP_SAVE.exists()
    assert not [d for d in CGROUP_CPU.iterdir() if d.name.startswith("quiho-cal-")]
    # every probed cell's times are in the row; the choice says what it kept and dropped
    cells = first.responses["cells"]
    assert {(c["quota_pct"], c["thp"]) for c in cells} >= {(100, "never")}
    assert all(len(c["memory"]) >= 2 and all(t > 0 for t in c["memory"] + c["cpu"] if t is not None) for c in cells)
    # a cell is padded with None (a round it was not in) only when a re-probe appended rounds to other cells
    padded = [c for c in cells if None in c["memory"] + c["cpu"]]
    assert not padded or first.responses.get("reprobed")
    assert {a["name"] for a in first.choice["axes"]} == {"quota", "page-size", "co-runner"}
    assert all(a["reason"] for a in first.choice["axes"])
    # each axis's verdict is said as it is stored, as each knob's is
    for a in first.choice["axes"]:
        assert f"calibration: {a['name']}: {'kept' if a['kept'] else 'dropped'}: {a['reason']}" in steps
    for k in first.choice["knobs"]:
        assert f"calibration: knob {k['name']}: {'kept' if k['kept'] else 'dropped'}: {k['reason']}" in steps
    inv_path = Path(first.inventory)
    assert inv_path.parent == (tmp_path).resolve() and inv_path.name == f"local-fleet-{first.facts_key[:8]}.yml"
    if first.choice["hosts"]:
        inv = load_inventory(inv_path)
        assert inv.names == [h["name"] for h in first.choice["hosts"]]
        assert resolve_inventory(None, store) == str(inv_path)

    again = calibrate(store)  # same facts: the stored calibration, nothing probed
    assert again.reused and again.probe_runs == 0 and again.row_id == first.row_id

    inv_path.unlink(missing_ok=True)  # the file went away: written again from the row, still no probing
    third = calibrate(store)
    assert third.reused and third.row_id == first.row_id and inv_path.exists() == bool(first.choice["hosts"])

    changed = {**machine_facts(), "kernel": "another-kernel"}
    other = calibrate(store, facts=changed, reps=2, knobs=False)  # the grid only: the knobs were measured above
    assert not other.reused and other.probe_runs > 0 and other.row_id > first.row_id
    assert other.facts_key != first.facts_key and Path(other.inventory) != inv_path

    forced = calibrate(store, facts=changed, force=True, reps=2, knobs=False)
    assert not forced.reused and forced.row_id > other.row_id


def test_without_root_the_calibration_says_so() -> None:
    # a real unprivileged process (setpriv to nobody) with a store of its own in a directory it may write
    with tempfile.TemporaryDirectory(prefix="quiho-noroot-") as d:
        os.chmod(d, 0o777)
        code = ("import sys\nfrom quiho.errors import InventoryError\n"
                "from quiho.fleet.local.calibrate import calibrate\n"
                "from quiho.store import open_store\n"
                f"st = open_store({str(Path(d) / 'n.db')!r})\n"
                "try:\n    calibrate(st)\nexcept InventoryError as e:\n    print(e); sys.exit(7)\n")
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                            code], capture_output=True, text=True, timeout=120, check=False, cwd=d)
    assert r.returncode == 7, r.stderr
    assert "needs root" in r.stdout and "-i" in r.stdout
