"""The local fleet's calibration (issue 15): the choice on recorded and synthetic responses, the generated
inventory, the stored result and ``quiho fleet show``'s text. The real probing is in test_calibrate_real.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quiho.errors import InventoryError
from quiho.fleet.inventory import load_inventory
from quiho.fleet.local.calibrate import MIN_STEP, choose, inventory_text, load_responses, quota_levels
from quiho.fleet.local.probes import PROBES, probe_seconds
from quiho.fleet.show import calibration_info, calibration_lines
from quiho.store import open_store
from quiho.store.calibrations import calibration_for_hosts, save_calibration

DATA = Path(__file__).resolve().parents[2] / "data" / "calibration"
AMD_ISSUE = DATA / "amd-epyc-issue15.json"
#: Recorded here (bench/local_fleet_calibration.py --record) at load average ~3 on 2 vCPUs: two recordings ten
#: minutes apart chose different fleets (8 hosts: quota x page size; 4 hosts: quota only), which is the point of
#: the busy-machine warning.
THIS_VM = sorted(DATA.glob("this-vm-*.json"))
#: Recorded by the demo's first calibration on this VM at load 0.9 (run 2 of the lead's five fresh runs).
QUIET_VM = DATA / "quiet-vm-amd-epyc-1710.json"


def _synthetic(*, thp_mem: float, thp_cpu: float, co_mem: float, co_cpu: float,
               bend: dict[int, float], reps: int = 5) -> dict[str, Any]:
    """Noise-free responses: log time = base + page-size + co-runner + quota effects (+ a per-period bend).

    ``bend[period]`` is added to the quota slowdown in log (0: proportional). The repetitions differ by a
    deterministic ±1 % so the noise estimate is small but not zero.
    """
    base = {"memory": math.log(0.3), "cpu": math.log(0.2)}
    jitter = [0.01 * ((i % 3) - 1) for i in range(reps)]
    cells = []

    def cell(q: int, thp: str, period: int, co: str, n: int) -> None:
        d: dict[str, Any] = {"quota_pct": q, "thp": thp, "period_us": period, "corunner": co}
        for p in ("memory", "cpu"):
            lt = base[p] + math.log(100 / q) + (bend[period] if q < 100 else 0.0)
            lt -= (thp_mem if p == "memory" else thp_cpu) if thp == "always" else 0.0
            lt += (co_mem if p == "memory" else co_cpu) if co == "stream" else 0.0
            d[p] = [math.exp(lt + j) for j in jitter[:n]]
        cells.append(d)

    cell(100, "never", 20000, "none", reps)
    cell(100, "always", 20000, "none", reps)
    cell(100, "never", 20000, "stream", 3)
    for period in bend:
        for q in (70, 84):
            for thp in ("never", "always"):
                cell(q, thp, period, "none", 2)
    return {"schema_version": 1, "cells": cells}


def test_exact_recovery_two_axes_at_the_proportional_period() -> None:
    # page size acts on memory (+18 %) not on compute; 20 ms periods bend the quota by 30 %: 100 ms must win
    c = choose(_synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0,
                          bend={100000: 0.0, 20000: 0.3}))
    assert c.kept == ["quota", "page-size"] and c.period_us == 100000
    assert c.periods["20000"]["passes"] is False and c.periods["100000"]["passes"] is True
    assert c.quota_levels == (100, 95, 90, 85)  # log(1.18) in three equal steps, each >= 5 % after rounding
    assert [n for n, _ in c.hosts] == [f"local-q{q}-{t}" for q in c.quota_levels for t in ("4k", "thp")]
    co = next(a for a in c.axes if a.name == "co-runner")
    assert not co.kept and "no measurable effect on memory" in co.reason
    assert c.warnings == ()


def test_no_page_size_effect_leaves_one_axis_with_eight_levels_and_a_warning() -> None:
    c = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.0}))
    assert c.kept == ["quota"] and len(c.hosts) == 8 and len(c.quota_levels) == 8
    assert all(a / b >= 1.05 for a, b in zip(c.quota_levels, c.quota_levels[1:], strict=False))
    assert any("IRUPs will be weak" in w for w in c.warnings)
    assert [n for n, _ in c.hosts][:2] == ["local-q100", "local-q95"]


def test_page_size_that_moves_compute_alike_is_dropped_and_one_that_moves_it_the_other_way_is_kept() -> None:
    alike = choose(_synthetic(thp_mem=0.15, thp_cpu=0.13, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.0}))
    page = next(a for a in alike.axes if a.name == "page-size")
    assert not page.kept and "a speed knob, not memory" in page.reason
    # huge pages speed memory and slow compute: memory- and cpu-class stressors order the hosts differently,
    # which is what the IRUP needs (the first rule dropped this as "a speed knob")
    other = choose(_synthetic(thp_mem=0.15, thp_cpu=-0.2, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.0}))
    assert next(a for a in other.axes if a.name == "page-size").kept


def test_a_co_runner_that_moves_memory_three_times_as_much_as_compute_is_kept() -> None:
    """This VM, worker-timed probes: +32.9 % ± 1.2 % memory, +11.1 % ± 3.0 % CPU (a third of 32.9 is 10.97: the
    first rule dropped it). The paired difference decides; a co-runner that moves both alike is still dropped."""
    c = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=math.log(1.329), co_cpu=math.log(1.111),
                          bend={100000: 0.0, 20000: 0.0}))
    assert c.kept == ["quota", "co-runner"] and len(c.hosts) == 8
    # kept, and what it does to computation is named: on this machine the two vCPUs share part of a core
    assert [w for w in c.warnings if w.startswith("the stream co-runner, kept for memory, also slows the CPU probe "
                                                  "+11.1%") and "core sharing" in w]
    alone = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=math.log(1.329), co_cpu=0.0,
                              bend={100000: 0.0, 20000: 0.0}))
    assert alone.kept == ["quota", "co-runner"] and not [w for w in alone.warnings if "core sharing" in w]
    c = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=math.log(1.30), co_cpu=math.log(1.28),
                          bend={100000: 0.0, 20000: 0.0}))
    co = next(a for a in c.axes if a.name == "co-runner")
    assert not co.kept and "a speed knob, not memory" in co.reason


def test_a_memory_only_co_runner_is_a_third_axis_and_the_fleet_stays_at_eight_hosts() -> None:
    c = choose(_synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=math.log(1.15), co_cpu=0.0,
                          bend={100000: 0.0, 20000: 0.0}))
    assert c.kept == ["quota", "page-size", "co-runner"] and len(c.hosts) == 8 and len(c.quota_levels) == 2
    assert "local-q100-thp-co" in [n for n, _ in c.hosts]


def test_quota_levels_keep_steps_of_five_percent_and_the_noise_step() -> None:
    levels, step = quota_levels(math.log(1.10), 4, 0.0)
    assert step == pytest.approx(MIN_STEP) and levels == (100, 95, 90, 85)
    levels, step = quota_levels(0.0, 8, 0.15)  # noise: steps of 16 %, only 7 levels fit above 40 %
    assert step == pytest.approx(0.15) and levels == (100, 86, 74, 64, 55, 47, 41)
    levels, _ = quota_levels(0.0, 4, 0.25)  # steps of 28 %: four levels still fit (three did above 50 %)
    assert levels == (100, 78, 61, 47)


def _worst_step_miss(choice: Any) -> float:
    """Largest |measured - nominal| log slowdown over the probed cells of the chosen period (0: no quota)."""
    if choice.period_us is None:
        return 0.0
    return max(r["error"] for r in choice.periods[str(choice.period_us)]["cells"])


def test_amd_numbers_of_the_issue_never_give_a_quota_level_whatever_the_assumed_noise() -> None:
    resp = load_responses(AMD_ISSUE)
    for se in (0.01, 0.02, 0.03, 0.04, 0.05):  # the issue gives medians only; the file assumes 0.03
        c = choose({**resp, "cell_se": {"memory": se, "cpu": se}})
        quota = next(a for a in c.axes if a.name == "quota")
        page = next(a for a in c.axes if a.name == "page-size")
        assert not quota.kept and "not usable" in quota.reason and c.quota_levels == ()
        # 6 % of quota cost the 4 KiB host 35 %: beyond noise that cell costs > 2x its nominal; within it, the
        # levels still cost 2.1x their nominal in all (least squares over the cells)
        why = quota.reason[quota.reason.index("(fails: "):]
        assert "94 % memory costs more than 2x its nominal" in why or "costs 2.12x nominal in all" in why
        assert c.periods["20000"]["max_error"] > 0.2 and not c.periods["20000"]["passes"]
        # huge pages: nadds1 13 % faster, nadds30 14 % slower. Beyond 3 SE of the assumed noise the axis orders
        # memory- and cpu-bound work differently and is kept, alone (replicas, and the one-axis warning);
        # within it, nothing is kept and there is no fleet
        if se <= 0.02:
            assert page.kept and c.kept == ["page-size"] and len(c.hosts) == 8
            assert any("1 independent" in w for w in c.warnings)
        else:
            assert not page.kept and "no measurable effect on memory" in page.reason
            assert c.hosts == () and any("0 independent" in w for w in c.warnings)


@pytest.mark.parametrize("recorded", THIS_VM, ids=lambda p: p.stem)
def test_this_vm_and_the_issue_lead_to_different_levels_and_no_far_off_level(recorded: Path) -> None:
    amd, here = choose(load_responses(AMD_ISSUE)), choose(load_responses(recorded))
    assert (here.quota_levels, here.period_us, here.kept) != (amd.quota_levels, amd.period_us, amd.kept)
    assert here.quota_levels and here.hosts and any("busy when probed" in w for w in here.warnings)
    for c in (amd, here):
        # never a 6 %-quota / 35 %-time level: a kept period has no cell whose slowdown misses its nominal
        # by more than half a step beyond noise, and every step is at least 5 %
        if c.period_us is not None:
            assert c.periods[str(c.period_us)]["passes"]
            assert not any(r["fails"] for r in c.periods[str(c.period_us)]["cells"])
        assert all(a / b >= 1.05 for a, b in zip(c.quota_levels, c.quota_levels[1:], strict=False))
    assert _worst_step_miss(amd) == 0.0  # AMD: no quota axis at all


def test_responses_of_an_unknown_version_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema_version": 99, "cells": []}))
    with pytest.raises(InventoryError, match="schema_version"):
        load_responses(p)
    with pytest.raises(InventoryError, match="record them again"):
        choose({"schema_version": 2, "cells": [{}]})


def test_generated_inventory_parses_with_its_period_and_levels(tmp_path: Path) -> None:
    c = choose(_synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0,
                          bend={100000: 0.0, 20000: 0.3}))
    p = tmp_path / "local-fleet-abcd1234.yml"
    p.write_text(inventory_text(c, {"cpu_model": "Test CPU", "vcpus": 2, "kernel": "6.1"}, "abcd" * 16))
    inv = load_inventory(p)
    assert inv.names == [n for n, _ in c.hosts] and inv.shares_machine
    assert {h.cfs_period_us for h in inv.hosts} == {100000} and {h.prefault_mib for h in inv.hosts} == {512}
    assert [(h.cpu_quota_pct, h.thp) for h in inv.hosts[:2]] == [(100, "never"), (100, "always")]
    text = p.read_text()
    assert "# page-size: kept: 4 KiB vs huge pages: memory probe +18.0%" in text
    assert "# co-runner: DROPPED" in text


def test_fleet_show_prints_levels_period_effects_and_dropped_axes(tmp_path: Path) -> None:
    store = open_store(tmp_path / "q.db")
    assert calibration_lines(calibration_info(store))[0].startswith("local fleet: not calibrated yet")
    c = choose(_synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0,
                          bend={100000: 0.0, 20000: 0.3}))
    facts = {"cpu_model": "Evil\x1b[2J CPU"}
    save_calibration(store, facts_key="k" * 64, facts=facts, result={"choice": c.to_dict()},
                                 inventory=str(tmp_path / "local-fleet-kkkkkkkk.yml"), elapsed_s=41.6,
                                 schema_version=1, quiho_version="test")
    lines = calibration_lines(calibration_info(store))
    assert all("\x1b" not in s for s in lines)
    assert "quota levels 100/95/90/85, 100 ms CFS period, 8 hosts" in lines[0] and "Evil\\x1b[2J CPU" in lines[0]
    assert "42 s" in lines[0]
    page = next(i for i, s in enumerate(lines) if s.lstrip().startswith("page-size"))
    assert "kept" in lines[page] and "memory probe +18.0% (" in lines[page] and "CPU probe +0.0% (" in lines[page]
    co = next(i for i, s in enumerate(lines) if s.lstrip().startswith("co-runner"))
    assert "dropped" in lines[co] and "no measurable effect on memory" in lines[co + 1]
    quota = next(i for i, s in enumerate(lines) if s.lstrip().startswith("quota"))
    assert "levels 100/95/90/85" in lines[quota] and "20 ms: mean error" in lines[quota + 1]
    assert "(fails: " in lines[quota + 1] and "84 % memory costs more than 2x its nominal" in lines[quota + 1]


def test_fleet_show_command_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from quiho.cli.main import main

    db = tmp_path / "q.db"
    store = open_store(db)
    c = choose(load_responses(AMD_ISSUE))
    save_calibration(store, facts_key="a" * 64, facts={"cpu_model": "AMD EPYC"},
                                 result={"choice": c.to_dict()}, inventory=str(tmp_path / "x.yml"), elapsed_s=3.0,
                                 schema_version=1, quiho_version="test")
    store.close()
    assert main(["fleet", "show", "--store", str(db)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "no fleet hosts yet: run 'quiho fingerprint'"
    assert "quota levels -, no quota, 0 hosts" in out[1]
    assert any("not usable at any probed period (20 ms: mean error" in s for s in out)
    assert any("0 independent axis(es)" in s for s in out)
    assert main(["fleet", "show", "--store", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["hosts"] == [] and doc["calibration"]["quota_levels"] == [] and doc["calibration"]["kept"] == []
    assert {a["name"]: a["kept"] for a in doc["calibration"]["axes"]} == {
        "quota": False, "page-size": False, "co-runner": False}


def test_default_inventory_comes_from_the_stored_calibration_and_says_why_it_cannot(tmp_path: Path) -> None:
    from quiho.fleet.local.calibrate import resolve_inventory
    from quiho.fleet.local.probes import facts_key, machine_facts

    store = open_store(tmp_path / "q.db")
    assert resolve_inventory("inventories/local.yml", store) == "inventories/local.yml"  # -i: as is
    facts = machine_facts()
    amd = choose(load_responses(AMD_ISSUE))  # nothing kept: no hosts
    # "knobs": screened (none could be set), so the row serves the default fleet without probing again
    save_calibration(store, facts_key=facts_key(facts), facts=facts, result={"choice": {**amd.to_dict(), "knobs": []}},
                                 inventory=str(tmp_path / "none.yml"), elapsed_s=1.0, schema_version=1,
                                 quiho_version="test")
    with pytest.raises(InventoryError, match="cannot emulate distinct machines here .*quota: not usable"):
        resolve_inventory(None, store)
    # one axis left: the inventory is used, and the weak-IRUP warning reaches on_step before anything runs
    one = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.0}))
    path = tmp_path / "one.yml"
    text = inventory_text(one, facts, facts_key(facts))
    save_calibration(store, facts_key=facts_key(facts), facts=facts,
                                 result={"choice": {**one.to_dict(), "knobs": []}, "inventory_text": text},
                                 inventory=str(path),
                                 elapsed_s=1.0, schema_version=1, quiho_version="test")
    said: list[str] = []
    assert resolve_inventory(None, store, said.append) == str(path)
    assert path.read_text() == text  # written again from the row: nothing probed
    assert any("IRUPs will be weak" in s for s in said)


def test_emulate_script_refuses_a_bad_cfs_period_before_touching_anything() -> None:
    import subprocess

    script = Path(__file__).resolve().parents[3] / "playbooks" / "files" / "quiho-emulate.sh"
    cg = "/sys/fs/cgroup/cpu/qh-none-period"
    for period, why in (("5o", "bad CFS period"), ("999", "outside 1000..1000000"), ("2000000", "outside")):
        r = subprocess.run(["sh", str(script), "start", cg, "50", "none", "10", "keep", period],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 2 and why in r.stderr, (period, r.stderr)
    assert not Path(cg).exists()


def test_a_quiet_recording_here_keeps_page_size_through_pairing_and_gives_eight_hosts() -> None:
    """The memory probe drifts over seconds on this VM (0.24-0.34 s unthrottled within a minute); paired by round,
    the page-size effect stands out (+27 % ± 3 %) and the CPU probe's noise (+5 % ± 8 %) does not drop the axis.
    The first rules (unpaired medians, steps of 3 probe-cell SEs) left 3 quota-only hosts from this recording."""
    c = choose(load_responses(QUIET_VM))
    assert c.kept == ["quota", "page-size"] and len(c.hosts) == 8 and c.period_us is not None
    assert not any("busy" in w for w in c.warnings)
    assert all(a / b >= 1.05 for a, b in zip(c.quota_levels, c.quota_levels[1:], strict=False))
    assert _worst_step_miss(c) < c.step


def test_the_first_round_is_a_warm_up_and_does_not_drop_the_page_size_axis() -> None:
    """A real calibration (Intel Xeon VM, issue 25's self-profiles): the huge-page cell's first run 0.449 s, the
    five after it 0.234-0.239 s. With the first round the page-size effect was +26 % ± 10 % and the axis dropped."""
    resp = load_responses(DATA / "intel-xeon-first-round-transient.json")
    first = [c for c in resp["cells"] if c["thp"] == "always" and c["quota_pct"] == 100][0]["memory"]
    assert first[0] > 1.5 * max(first[1:])  # the recorded transient is there
    c = choose(resp)
    (page,) = [a for a in c.axes if a.name == "page-size"]
    assert page.kept and page.se_memory < 0.02 and math.expm1(page.effect_memory) > 0.3, page
    assert "page-size" in c.kept


def test_a_probe_is_timed_by_its_worker_from_stress_ngs_metrics() -> None:
    """Real stress-ng 0.15 output of the memory probe: time = bogo-ops / real-time rate, not the command's wall."""
    text = (DATA / "probe-memory-stress-ng-0.15.yml").read_text()
    secs = probe_seconds(text, PROBES["memory"])
    assert secs == pytest.approx(12 / 35.019411, rel=1e-9)
    # stress-ng exits 0 with no metrics when a stressor is skipped: an error, never a time
    no_metrics = text[: text.index("metrics:")]
    with pytest.raises(InventoryError, match="reported no operations"):
        probe_seconds(no_metrics, PROBES["memory"])
    with pytest.raises(InventoryError, match="reported no operations"):
        probe_seconds(text.replace("bogo-ops: 12", "bogo-ops: 0"), PROBES["memory"])
    with pytest.raises(InventoryError, match="unreadable"):
        probe_seconds("metrics: [\n", PROBES["memory"])


def test_a_stored_batch_finds_the_calibration_of_its_hosts(tmp_path: Path) -> None:
    """``quiho profile --batch`` re-analyses without calibrating: the fleet's axes come from the calibration whose
    generated hosts are exactly the batch's hosts (the newest such), none for other hosts."""
    store = open_store(tmp_path / "q.db")
    two = choose(_synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0}))
    one = choose(_synthetic(thp_mem=0.0, thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0}))
    for c in (two, one):
        save_calibration(store, facts_key="k" * 64, facts={}, result={"choice": c.to_dict()},
                                     inventory=str(tmp_path / "x.yml"), elapsed_s=1.0, schema_version=1,
                                     quiho_version="test")
    found = calibration_for_hosts(store, {n for n, _ in two.hosts})
    assert found is not None and found["result"]["choice"]["kept"] == ["quota", "page-size"]
    found = calibration_for_hosts(store, {n for n, _ in one.hosts})
    assert found is not None and found["result"]["choice"]["kept"] == ["quota"]
    assert calibration_for_hosts(store, {"web-1", "web-2"}) is None


def _knob(name: str, level: str, kept: bool = True) -> dict[str, Any]:
    return {"name": name, "kept": kept, "level": level, "effect_probe": 1.0, "se_probe": 0.05, "effect_cpu": 0.0,
            "se_cpu": 0.05, "reason": "synthetic"}


def test_kept_knobs_make_the_hosts_a_resolution_iv_design_of_one_factor_per_class() -> None:
    from quiho.design import factor_table, local_fleet_vars

    resp = _synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.3})
    resp["knobs"] = {"knobs": [_knob("storage", "254:0:50"), _knob("kernel-entry", "4000"),
                               _knob("network", "rate:1000", kept=False)], "notes": []}
    c = choose(resp)
    assert c.design is not None and c.design["kind"].startswith("2^(4-1) resolution IV")
    assert c.design["factors"] == ["cpu-quota", "huge-pages", "storage", "kernel-entry"] and not c.design["left_out"]
    assert c.quota_levels == (100, 67)  # two levels, the low one 1.5x slower (more than the 18 % page-size effect)
    assert len(c.hosts) == 8 and len({n for n, _ in c.hosts}) == 8
    assert not any("quiho_design_rounds" in v for _, v in c.hosts)  # its own fold-over: both rounds visit all
    table = factor_table(local_fleet_vars(dict(c.hosts)))
    assert table.names == c.design["factors"] and not table.notes
    m = table.matrix(list(table.hosts))
    centred = m - m.mean(axis=0)
    gram = centred.T @ centred  # balanced and orthogonal: every main effect estimated apart from the others
    assert abs(gram - 2 * np.eye(4)).max() < 1e-9
    assert c.to_dict()["design"] == c.design


def test_five_or_more_factors_take_a_fold_over_round_on_eight_more_hosts(tmp_path: Path) -> None:
    from quiho.design import factor_table, local_fleet_vars

    resp = _synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.3})
    resp["knobs"] = {"knobs": [_knob("core-sharing", "cpu"), _knob("storage", "254:0:50"),
                               _knob("kernel-entry", "4000"), _knob("network", "rate:1000")], "notes": []}
    c = choose(resp)
    assert c.design is not None and c.design["kind"] == "2^(6-3) resolution III fraction + fold-over"
    assert c.design["factors"] == ["cpu-quota", "huge-pages", "storage", "kernel-entry", "network", "core-sharing"]
    rounds = [v["quiho_design_rounds"] for _, v in c.hosts]
    assert len(c.hosts) == 16 and rounds == [[0]] * 8 + [[1]] * 8
    # over both rounds every main effect is orthogonal to the others (and, by the fold-over, to every 2FI)
    table = factor_table(local_fleet_vars(dict(c.hosts)))
    assert table.names == c.design["factors"] and not table.notes
    m = table.matrix(list(table.hosts))
    centred = m - m.mean(axis=0)
    assert abs(centred.T @ centred - 4 * np.eye(6)).max() < 1e-9
    p = tmp_path / "local-fleet-abcd1234.yml"
    p.write_text(inventory_text(c, {"cpu_model": "Test CPU", "vcpus": 2, "kernel": "6.1"}, "abcd" * 16))
    inv = load_inventory(p)
    assert [h.design_rounds for h in inv.hosts] == [(0,)] * 8 + [(1,)] * 8


def test_without_a_kept_knob_the_fleet_stays_the_quota_by_page_size_grid() -> None:
    resp = _synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={100000: 0.0, 20000: 0.3})
    grid = choose(resp)
    resp["knobs"] = {"knobs": [_knob("storage", "254:0:50", kept=False)], "notes": []}
    c = choose(resp)
    assert c.design is None and "design" not in c.to_dict() and c.hosts == grid.hosts


def test_design_factors_take_the_stream_co_runner_before_core_sharing() -> None:
    from quiho.fleet.local.calibrate import _fleet_hosts, design_factors

    knobs = [_knob("core-sharing", "cpu"), _knob("storage", "8:0:100")]
    with_stream, _ = design_factors(67, page=False, co=True, knobs=knobs)
    assert [n for n, _v, _l in with_stream] == ["cpu-quota", "co-runner", "storage"]
    without, _ = design_factors(67, page=False, co=False, knobs=knobs)
    assert [(n, v, lev) for n, v, lev in without] == [("cpu-quota", "quiho_cpu_quota_pct", 67),
                                                      ("storage", "quiho_write_iops", "8:0:100"),
                                                      ("core-sharing", "quiho_corunner", "cpu")]
    # a kept knob left out is said: the fleet's warnings name it and why
    warnings: list[str] = []
    _fleet_hosts((100, 67), False, True, tuple(knobs), warnings)
    assert warnings == ["core-sharing kept by its probe but left out of the hosts: its compute co-runner would take "
                        "the other CPU, where the stream co-runner runs"]
    warnings.clear()
    _fleet_hosts((100, 67), False, False, tuple(knobs), warnings)
    assert warnings == []


def test_every_kept_class_comes_before_a_second_memory_axis_and_the_design_keeps_seven() -> None:
    from quiho.fleet.local.calibrate import _design_hosts, design_factors

    knobs = [_knob("core-sharing", "cpu"), _knob("storage", "8:0:100"), _knob("kernel-entry", "4000"),
             _knob("network", "rate:1000"), _knob("memory-capacity", "32")]
    factors, left = design_factors(67, page=True, co=True, knobs=knobs)
    assert [n for n, _v, _l in factors] == ["cpu-quota", "huge-pages", "storage", "kernel-entry", "network",
                                            "memory-capacity", "co-runner"]
    assert left == []  # seven: none left out; core sharing would take the CPU the stream co-runner runs on
    hosts, kind = _design_hosts(factors)
    assert "fold-over" in kind and len(hosts) == 16
    mem = {name: v["quiho_mem_cache_mib"] for name, v in hosts}
    assert sorted(set(mem.values()), key=str) == [0, "32"] and sum(1 for x in mem.values() if x) == 8
    assert all(("-mem" in name) == bool(x) for name, x in mem.items())


class _Rounds:
    """Plays the probe runner's ``rounds`` from given per-cell times (the real probing is in test_calibrate_real)."""

    def __init__(self, times: dict[tuple[int, str, str], dict[str, list[float]]]) -> None:
        self.times, self.asked = times, []
        self.on_step = lambda _m: None

    def rounds(self, cells, probes, probes_of=None):  # noqa: ANN001, ANN201 - the runner's signature
        self.asked.append([(c.quota_pct, c.thp, c.corunner, n) for c, n in cells])
        return [{p: self.times[(c.quota_pct, c.thp, c.corunner)][p][:n] for p in probes} for c, n in cells]


def test_an_axis_left_undecided_by_a_noisy_minute_is_probed_again_and_its_rounds_still_pair() -> None:
    from quiho.fleet.local.calibrate import _first_phase, _reprobe_undecided
    from quiho.fleet.local.probes import Cell

    # the co-runner's 4 rounds: memory +20 % in two, -5 % and +45 % in the others (a busy minute): not > 3 SE
    ref = {"memory": [0.30, 0.30, 0.30, 0.30, 0.30, 0.30], "cpu": [0.2] * 6}
    resp = {"schema_version": 1, "cells": [
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "none", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, **ref},
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "stream", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": [0.36, 0.36, 0.285, 0.435], "cpu": [0.2] * 4}]}
    assert not _first_phase(resp).co.kept
    quiet = {(100, "never", "none"): {"memory": [0.3] * 6, "cpu": [0.2] * 6},
             (100, "never", "stream"): {"memory": [0.36, 0.357, 0.363, 0.36, 0.359, 0.361], "cpu": [0.2] * 6}}
    runner = _Rounds(quiet)
    unthrottled = [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)]
    _reprobe_undecided(runner, resp, unthrottled, ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert resp["reprobed"] == ["co-runner"] and runner.asked == [[(100, "never", "none", 6),
                                                                   (100, "never", "stream", 6)]]
    co = resp["cells"][1]["memory"]
    assert len(co) == 12 and co[4:6] == [None, None]  # rounds 5-6 had no co-runner cell: the new ones pair with 7-12
    assert _first_phase(resp).co.kept
    json.dumps(resp)  # still JSON


def test_an_axis_whose_noise_cannot_rule_out_an_effect_is_probed_again() -> None:
    from quiho.fleet.local.calibrate import MIN_STEP, _first_phase, _reprobe_undecided
    from quiho.fleet.local.probes import Cell

    # a busy minute: the co-runner's rounds average ~0 % but scatter +-20 %; 0 is no evidence of no effect
    resp = {"schema_version": 1, "cells": [
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "none", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": [0.30] * 6, "cpu": [0.2] * 6},
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "stream", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": [0.37, 0.27, 0.37, 0.27], "cpu": [0.2] * 4}]}
    co = _first_phase(resp).co
    assert not co.kept and abs(co.effect_memory) < MIN_STEP < abs(co.effect_memory) + 2 * co.se_memory
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3] * 6, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": [0.36] * 6, "cpu": [0.2] * 6}})
    _reprobe_undecided(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)],
                       ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert resp["reprobed"] == ["co-runner"]
    # decided on all 10 rounds: the quiet ones (+20 %) move the estimate, the busy ones still widen its SE
    assert _first_phase(resp).co.effect_memory > co.effect_memory + MIN_STEP


def test_an_axis_still_undecided_gets_another_batch_and_no_more_than_the_cap() -> None:
    from quiho.fleet.local.calibrate import REPROBE_BATCHES, _first_phase, _reprobe_undecided
    from quiho.fleet.local.probes import Cell

    # every batch scatters +-20 % around ~+5 %: neither shown nor ruled out, however many rounds come
    scatter = [0.37, 0.27, 0.36, 0.27, 0.37, 0.28]
    resp = {"schema_version": 1, "cells": [
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "none", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": [0.30] * 6, "cpu": [0.2] * 6},
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "stream", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": scatter[:4], "cpu": [0.2] * 4}]}
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3] * 6, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": scatter, "cpu": [0.2] * 6}})
    _reprobe_undecided(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)],
                       ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert REPROBE_BATCHES >= 2 and len(runner.asked) == resp["reprobe_batches"] == REPROBE_BATCHES
    assert resp["reprobed"] == ["co-runner"] and not _first_phase(resp).co.kept
    assert len(resp["cells"][1]["memory"]) == 6 + 6 * REPROBE_BATCHES  # padded to the reference, then each batch


def test_a_decided_axis_is_not_probed_again() -> None:
    from quiho.fleet.local.calibrate import _reprobe_undecided
    from quiho.fleet.local.probes import Cell

    resp = _synthetic(thp_mem=math.log(1.18), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={20000: 0.0})
    runner = _Rounds({})
    _reprobe_undecided(runner, resp, [(Cell(100, "never"), 5), (Cell(100, "always"), 5)],  # type: ignore[arg-type]
                       ["memory", "cpu"], 5)
    assert runner.asked == [] and "reprobed" not in resp


def test_the_last_look_decides_at_two_se_and_the_looks_before_it_at_three() -> None:
    from quiho.fleet.local.calibrate import LAST_LOOK_SE, REPROBE_BATCHES, _first_phase, _reprobe_undecided
    from quiho.fleet.local.probes import Cell

    # rounds alternate +25 % and -3 % (a real ~+10 % effect in a noisy minute): ~1.5 SE on the first 4 rounds,
    # ~2.3 on 10 and ~2.8 on all 16, so it is undecided until the last look and kept there
    alternate = [0.375, 0.291] * 3
    resp = {"schema_version": 1, "cells": [
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "none", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": [0.30] * 6, "cpu": [0.2] * 6},
        {"quota_pct": 100, "thp": "never", "period_us": 20000, "corunner": "stream", "iops": "0", "mem_mib": 0,
         "net": "0", "syscall_rules": 0, "memory": alternate[:4], "cpu": [0.2] * 4}]}
    steps: list[str] = []
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3] * 6, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": alternate, "cpu": [0.2] * 6}})
    runner.on_step = steps.append
    _reprobe_undecided(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)],
                       ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert REPROBE_BATCHES == 2 and resp["reprobe_batches"] == 2 and resp["last_look"] == ["co-runner"]
    assert f"decided after it at {LAST_LOOK_SE:g} SE" in steps[-1]
    co = _first_phase(resp).co
    z = co.effect_memory / co.se_memory
    assert LAST_LOOK_SE < z < 3 and co.kept and "kept at the last re-probe look's 2 SE" in co.reason
    # the same rounds at an earlier look need 3 SE
    del resp["last_look"]
    again = _first_phase(resp).co
    assert not again.kept and "needs > 5 % and > 3 SE" in again.reason
    # a last look the effect clears at 3 SE anyway is not said to be the lowered bar's
    resp["cells"][1]["memory"] = [0.36, 0.361, 0.359] * 5 + [0.36]
    resp["last_look"] = ["co-runner"]
    clear = _first_phase(resp).co
    assert clear.kept and "last re-probe look" not in clear.reason


def _off_minute(co_memory: list[float]) -> dict[str, Any]:
    """Responses whose co-runner rounds are ``co_memory`` (the reference's memory probe: 0.30 s), quota cells too."""
    resp = _synthetic(thp_mem=math.log(1.2), thp_cpu=0.0, co_mem=0.0, co_cpu=0.0, bend={20000: 0.0}, reps=6)
    resp["cells"][2]["memory"], resp["cells"][2]["cpu"] = co_memory, [0.2] * len(co_memory)
    resp["cells"][0]["memory"] = [0.30, 0.303, 0.297, 0.30, 0.301, 0.299]
    return _recorded(resp)


def _recorded(resp: dict[str, Any]) -> dict[str, Any]:
    """``resp`` with every cell's conditions as :func:`measure_responses` records them (the knobs' off levels)."""
    from dataclasses import asdict

    from quiho.fleet.local.probes import Cell

    for c in resp["cells"]:
        c.update({k: v for k, v in asdict(Cell()).items() if k not in c})
    return resp


def test_an_axis_the_first_rounds_miss_is_probed_a_minute_later_and_decided_on_all_rounds() -> None:
    from quiho.fleet.local.calibrate import _first_phase, _late_look, before_late_look
    from quiho.fleet.local.probes import Cell

    # the co-runner's first 4 rounds fell where it did nothing (the VM's off spells, docs/design.md): ruled out,
    # so no re-probe; a minute later it moves the memory probe +35 % again
    resp = _off_minute([0.301, 0.299, 0.30, 0.302])
    first = _first_phase(resp)
    assert not first.co.kept and first.page.kept
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3, 0.302, 0.298] * 2, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": [0.405, 0.40, 0.41] * 2, "cpu": [0.2] * 6}})
    steps: list[str] = []
    runner.on_step = steps.append
    unthrottled = [(Cell(100, "never"), 6), (Cell(100, "always"), 6), (Cell(100, "never", corunner="stream"), 4)]
    _late_look(runner, resp, unthrottled, ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert runner.asked == [[(100, "never", "none", 6), (100, "never", "stream", 6)]]  # page size was kept
    assert resp["late_look"]["axes"] == ["co-runner"] and resp["late_look"]["rounds_before"] == 6
    assert "another minute" in steps[0]
    assert resp["cells"][2]["memory"][4:6] == [None, None]  # padded, so the new rounds pair with the reference's
    co = _first_phase(resp).co
    assert co.kept and "in the calibration's first rounds" in co.reason and "kept on all its rounds" in co.reason
    # what the quota cells were probed at does not move: the plan is the first rounds'
    assert _first_phase(resp).levels == first.levels and _first_phase(resp).step == first.step
    early = before_late_look(resp)
    assert "late_look" not in early and early["cells"][2]["memory"] == [0.301, 0.299, 0.30, 0.302]
    assert not _first_phase(early).co.kept
    json.dumps(resp)
    assert {"co-runner", "page-size"} <= set(choose(resp).kept)


def test_a_late_look_at_an_axis_without_an_effect_leaves_it_dropped_and_says_so() -> None:
    from quiho.fleet.local.calibrate import _first_phase, _late_look
    from quiho.fleet.local.probes import Cell

    resp = _off_minute([0.301, 0.299, 0.30, 0.302])
    # a minute later it alternates +20 % / -17 % (mean ~0): two looks do not make an effect of no effect
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3] * 6, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": [0.36, 0.25] * 3, "cpu": [0.2] * 6}})
    _late_look(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)],
               ["memory", "cpu"], 6)  # type: ignore[arg-type]
    co = _first_phase(resp).co
    assert resp["late_look"]["axes"] == ["co-runner"] and not co.kept
    assert "not shown on all its rounds or on the late rounds alone" in co.reason


def test_an_axis_on_in_the_late_minute_only_is_kept_though_the_mean_of_both_minutes_falls_short() -> None:
    from quiho.fleet.local.calibrate import _axes, _first_phase, _late_look
    from quiho.fleet.local.probes import Cell

    # 10 rounds off (first rounds and a re-probe), then a minute later 6 rounds on at ~+40 %, as a quiet
    # reference calibration of 2026-12-05 measured: the mean of all 16 is below 3 SE, the late rounds' is not
    ref = [0.30, 0.303, 0.297, 0.30, 0.301, 0.299] * 2
    resp = _off_minute([0.301, 0.299, 0.30, 0.302, None, None, 0.30, 0.302, 0.298, 0.301, 0.299, 0.30])
    resp["cells"][0]["memory"], resp["cells"][0]["cpu"] = ref, [0.2] * 12
    resp["cells"][2]["cpu"] = [0.2] * 12
    runner = _Rounds({(100, "never", "none"): {"memory": [0.3, 0.302, 0.298] * 2, "cpu": [0.2] * 6},
                      (100, "never", "stream"): {"memory": [0.30, 0.42, 0.44, 0.41, 0.43, 0.42], "cpu": [0.2] * 6}})
    _late_look(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "never", corunner="stream"), 4)],
               ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert not _axes(resp)[2].kept  # all 16 rounds: the off minute's mean falls short
    co = _first_phase(resp).co
    assert co.kept and co.reason.startswith("late rounds: ") and "shown by those rounds alone" in co.reason
    assert co.effect_memory > math.log(1.3)  # the late minute's effect, not the mean over both


def test_no_late_look_when_every_memory_axis_was_kept() -> None:
    from quiho.fleet.local.calibrate import _late_look
    from quiho.fleet.local.probes import Cell

    resp = _recorded(_synthetic(thp_mem=math.log(1.2), thp_cpu=0.0, co_mem=math.log(1.3), co_cpu=0.0,
                                bend={20000: 0.0}, reps=6))
    runner = _Rounds({})
    _late_look(runner, resp, [(Cell(100, "never"), 6), (Cell(100, "always"), 6),
                              (Cell(100, "never", corunner="stream"), 3)], ["memory", "cpu"], 6)  # type: ignore[arg-type]
    assert runner.asked == [] and "late_look" not in resp
