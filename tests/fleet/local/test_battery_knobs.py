"""The resources battery feels the local fleet's knobs: each knob stressor slows under its knob, for real.

Two emulated hosts, one repetition each (about 30 s): a plain host and one with the four knobs on at the levels a
calibration keeps here (200 write IOPS, 4000 seccomp rules, a 1 Gbit loopback, a 32 MiB page-cache allowance).
The knobs' effects on their stressors measured here are -87 % to -97 % (``bench/battery_knobs.py``), a 8-30x
slowdown; the test asks for 2x, beyond the 1.2-2.4x by which a whole run on a busy VM can be slower by chance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quiho.fingerprint import FingerprintPlan, fingerprint, load_battery, load_catalog
from quiho.fleet import FleetAccess
from quiho.fleet.local.knobs import write_disk
from quiho.fleet.session import REMOTE_BASE
from quiho.store import open_store

pytestmark = [pytest.mark.root, pytest.mark.stressng]

#: knob stressor -> the class its catalogue entry names, which is the knob's
KNOB_STRESSORS = {"sync-file": "storage", "sock": "network", "sendfile": "memory-capacity"}


def test_the_resources_battery_has_a_stressor_for_every_knob_class() -> None:
    cat, bat = load_catalog(), load_battery("resources")
    classes = {cat.primary(s) for s in bat.stressors}
    assert {"cpu", "memory", "os", "storage", "network", "memory-capacity"} <= classes
    assert {s: cat.primary(s) for s in KNOB_STRESSORS} == KNOB_STRESSORS
    assert (bat.repetitions, bat.warmup_seconds) == (1, 0)


def test_each_knob_slows_its_stressor_on_this_machine(tmp_path: Path) -> None:
    Path(REMOTE_BASE).mkdir(parents=True, exist_ok=True)
    disk = write_disk(REMOTE_BASE)
    if disk is None:
        pytest.skip(f"{REMOTE_BASE} is on no block device here (tmpfs): the storage knob cannot be set")
    inv = tmp_path / "inv.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local, quiho_thp: never}\n  hosts:\n    qbk-plain: {}\n"
                   f'    qbk-knobs: {{quiho_write_iops: "{disk}:200", quiho_syscall_rules: 4000, '
                   'quiho_net: "rate:1000", quiho_mem_cache_mib: 32}\n')
    with open_store(tmp_path / "q.db") as store:
        run = fingerprint(inv, store=store, plan=FingerprintPlan(battery="resources"),
                          access=FleetAccess(cgroup_prefix="qtest"))
        assert run.status == "complete", run
        rows = store.conn.execute(
            "SELECT h.name, m.stressor, m.value FROM measurements m JOIN hosts h ON h.id = m.host_id "
            "WHERE m.run_id = ? AND m.status = 'ok'", (run.run_id,)).fetchall()
    value = {(r[0], r[1]): r[2] for r in rows}
    assert len(value) == 2 * len(load_battery("resources").stressors)  # nothing failed, nothing overran
    slowdown = {s: value[("qbk-plain", s)] / value[("qbk-knobs", s)] for s in KNOB_STRESSORS}
    assert all(x > 2.0 for x in slowdown.values()), slowdown
