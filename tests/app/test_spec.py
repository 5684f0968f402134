"""Batteries, inventories and application specs: validated at the boundary with readable errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from quiho.app.run import command_wall, strip_markers
from quiho.app.spec import Metric, extract_metric, load_app_spec
from quiho.errors import AppSpecError, CatalogError, InventoryError
from quiho.fingerprint.battery import battery_names, load_battery, render_job
from quiho.fingerprint.catalog import stressors_dir
from quiho.fleet.inventory import load_inventory

NEVER = {"mmapfork", "cpu-online", "watchdog", "oom-pipe", "smi", "swap", "plugin"}


def test_batteries_load_and_exclude_unsafe_stressors() -> None:
    assert {"quick", "default", "paper"} <= set(battery_names())
    raw = yaml.safe_load((stressors_dir() / "batteries.yaml").read_text())
    assert NEVER <= set(raw["never"]) and all(raw["never"].values())
    for name in ("quick", "default", "paper"):
        b = load_battery(name)
        assert not NEVER & set(b.stressors)
        assert all(reason.strip() for reason in b.excluded.values())
        assert not set(b.excluded) & set(b.stressors)
    assert 38 <= len(load_battery("default").stressors) <= 45
    assert "null" in load_battery("quick").stressors  # the YAML-null gotcha is exercised in CI


def test_battery_with_a_never_stressor_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "b.yaml"
    f.write_text("schema_version: 1\nnever: {mmapfork: hangs}\nbatteries:\n  bad: {stressors: [cpu, mmapfork]}\n")
    with pytest.raises(CatalogError, match="mmapfork is never run: hangs"):
        load_battery("bad", f)
    f.write_text("schema_version: 1\nbatteries:\n  bad: {stressors: [cpu, no-such]}\n")
    with pytest.raises(CatalogError, match="not in stressors/catalog.yaml"):
        load_battery("bad", f)
    with pytest.raises(CatalogError, match="no battery 'nope'"):
        load_battery("nope", f)


def test_job_file_is_one_sequential_run_with_options() -> None:
    job = render_job(["mmap", "null"], 3, {"mmap": {"mmap-bytes": "16M"}})
    assert job.splitlines() == ["run sequential", "timeout 3", "metrics-brief", "mmap 1", "mmap-bytes 16M", "null 1"]
    with pytest.raises(CatalogError):
        render_job(["cpu; reboot"], 1, {})


def test_local_inventory_has_at_least_six_distinct_emulated_hosts() -> None:
    inv = load_inventory()
    assert len(inv.hosts) >= 6 and inv.shares_machine
    conds = {(h.cpu_quota_pct, h.corunner, h.thp) for h in inv.hosts}
    assert len(conds) == len(inv.hosts)
    assert all(h.connection == "local" for h in inv.hosts)
    # every measured command starts right after a prefault (free page reporting; inventories/local.yml)
    assert all(h.prefault_mib >= 256 for h in inv.hosts)


def test_wall_time_starts_at_the_wrappers_marker() -> None:
    res = {"delta": "0:00:01.500000", "end": "2026-11-21 10:00:02.000000",
           "stdout": "quiho-exec-at: 2026-11-21 10:00:01.250000\nquiho-version: 1\ntime_s: 0.7\n"}
    assert command_wall(res) == pytest.approx(0.75)  # not the 1.5 s that include the prefault
    assert strip_markers(res["stdout"]) == "quiho-version: 1\ntime_s: 0.7\n"
    assert command_wall({"delta": "0:00:01.500000", "stdout": "time_s: 0.7"}) == pytest.approx(1.5)
    # a marker later than the end (clock stepped) or unparsable: fall back to ansible's delta
    assert command_wall({**res, "end": "2026-11-21 10:00:01.000000"}) == pytest.approx(1.5)
    assert command_wall({**res, "end": "yesterday"}) == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("all:\n  hosts:\n    a: {ansible_connection: local, quiho_cpu_quota_pct: 150}\n", "quiho_cpu_quota_pct"),
        ("all:\n  hosts:\n    a: {ansible_connection: local, quiho_corunner: disk}\n", "quiho_corunner"),
        ("all:\n  hosts:\n    a: {ansible_connection: local, quiho_prefault_mib: -1}\n", "quiho_prefault_mib"),
        ("all:\n  hosts:\n    a: {ansible_connection: local, quiho_prefault_mib: '1; reboot'}\n", "quiho_prefault_mib"),
        ("all:\n  hosts:\n    a: {ansible_host: 10.200.9.2, quiho_prefault_mib: 64}\n", "not ansible_connection"),
        ("all:\n  hosts:\n    a: {ansible_host: 10.200.9.2, quiho_cpu_quota_pct: 50}\n", "not ansible_connection"),
        ("all:\n  hosts: [unclosed\n", "cannot be parsed"),
    ],
)
def test_bad_inventories_are_readable_errors(tmp_path: Path, body: str, match: str) -> None:
    f = tmp_path / "inv.yml"
    f.write_text(body)
    with pytest.raises(InventoryError, match=match):
        load_inventory(f)


def test_missing_inventory() -> None:
    with pytest.raises(InventoryError, match="does not exist"):
        load_inventory("/nonexistent/inv.yml")


def test_app_spec_validation(tmp_path: Path) -> None:
    f = tmp_path / "app.yml"
    f.write_text("name: x\nversions: {v1: {command: [true]}}\nmetric: {kind: regex, pattern: 'no group'}\n")
    with pytest.raises(AppSpecError, match="capturing group"):
        load_app_spec(f)
    f.write_text("name: x\nversions: {v1: {command: []}}\n")
    with pytest.raises(AppSpecError, match="versions.v1.command"):
        load_app_spec(f)
    f.write_text("name: x\nversions: {v1: {command: 'echo hi'}}\n")
    with pytest.raises(AppSpecError):
        load_app_spec(f)  # a shell string is not an argv list
    f.write_text("name: x\nversions: {v1: {command: [ls], workdir: sub}}\nrepetitions: 2\n")
    spec = load_app_spec(f)
    assert spec.versions["v1"].workdir == str(tmp_path / "sub") and spec.metric.test == "runtime"


def test_metric_extraction() -> None:
    assert extract_metric(Metric(), "", 1.5) == (1.5, None)
    rx = Metric(kind="regex", pattern=r"took ([0-9.]+) ms", unit="ms")
    assert extract_metric(rx, "x\ntook 12.5 ms\n", 9.0) == (12.5, None)
    assert extract_metric(rx, "nothing", 9.0)[0] is None
    js = Metric(kind="json", path="results.1.v")
    assert extract_metric(js, '{"results": [{"v": 1}, {"v": 2.5}]}', 0) == (2.5, None)
    assert "not found" in (extract_metric(js, '{"results": []}', 0)[1] or "")
    assert "not JSON" in (extract_metric(js, "garbage", 0)[1] or "")


def test_cli_errors_are_exit_codes_not_tracebacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from quiho.cli.main import main

    db = str(tmp_path / "q.db")
    assert main(["fingerprint", "-i", str(tmp_path / "missing.yml"), "--store", db]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["fingerprint", "--battery", "nope", "-i", str(tmp_path / "x.yml"), "--store", db]) == 1
    assert main(["fingerprint", "--resume", "fp-nope", "--store", db]) == 2
    assert "no fleet fingerprint run" in capsys.readouterr().err
    bad = tmp_path / "app.yml"
    bad.write_text("name: x\nversions: {}\n")
    assert main(["run", str(bad), "--version", "v1", "--store", db]) == 1
    assert "versions" in capsys.readouterr().err
