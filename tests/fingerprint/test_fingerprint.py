"""The fingerprint catalog, batteries and the stress-ng result parser, on real files.

``tests/data/stressng/cpu-null.yaml`` is real stress-ng 0.15.06 output (how it was recorded is in its first
line); the bad inputs are made from it (cut short, metrics removed) or written here as the smallest file that
shows the case.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from quiho.errors import CatalogError, FingerprintParseError
from quiho.fingerprint import (
    ANALYSIS_CLASSES,
    battery_names,
    load_battery,
    load_catalog,
    parse_stressng_yaml,
    render_job,
    running_stressor,
)
from quiho.fingerprint.parse import last_started

REAL = Path(__file__).resolve().parents[1] / "data" / "stressng" / "cpu-null.yaml"


def parse(text: str, requested=("cpu", "null"), seconds: float = 1.0):  # noqa: ANN001, ANN201
    return parse_stressng_yaml(text, list(requested), seconds, host="h1", path="out.yaml")


# --- parse ------------------------------------------------------------------------------------------------------


def test_real_output_gives_one_ok_result_per_requested_stressor() -> None:
    results, info = parse(REAL.read_text())
    assert [r.stressor for r in results] == ["cpu", "null"]  # 'null' although YAML reads the name as None
    assert all(r.status == "ok" for r in results)
    assert results[0].value == pytest.approx(650.537250)
    assert results[1].value == pytest.approx(41713.033274)
    assert results[0].extra["wall_s"] == pytest.approx(1.002249)
    assert results[0].extra["cpu_share"] == pytest.approx(0.454190 / 1.002249)
    assert info["cpus"] == 2 and info["stress-ng-version"] == "0.15.06"


def test_requested_stressor_missing_from_the_output_fails_with_a_reason() -> None:
    results, _ = parse(REAL.read_text(), requested=("cpu", "matrix", "null"))
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    assert results[1].value is None and "no metrics" in (results[1].reason or "")


def test_output_with_no_metrics_fails_every_stressor() -> None:
    head = REAL.read_text().split("metrics:")[0]
    for tail in ("metrics:\n...\n", "metrics: []\n...\n", "...\n"):
        results, info = parse(head + tail)
        assert [r.status for r in results] == ["failed", "failed"], tail
        assert all(r.value is None and "no metrics" in (r.reason or "") for r in results)
        assert info["cpus"] == 2


def test_every_truncation_of_real_output_is_refused() -> None:
    text = REAL.read_text()
    end = text.rindex("...")
    for cut in range(0, end, 7):
        with pytest.raises(FingerprintParseError) as err:
            parse(text[:cut])
        assert "h1" in str(err.value) and "out.yaml" in str(err.value)


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ("   \n", "empty"),
    ("metrics: [unclosed\n...\n", "not valid YAML"),
    ("- a\n- b\n...\n", "expected a YAML mapping"),
    ("metrics: {cpu: 1}\n...\n", "expected a list"),
    ("metrics:\n  - bogo-ops: 3\n...\n", "no 'stressor'"),
    ("\x00\x01binary\xff", "host h1, file out.yaml"),
])
def test_malformed_output_is_one_parse_error(text: str, why: str) -> None:
    with pytest.raises(FingerprintParseError, match=why):
        parse(text)


def _one(entry: str, seconds: float = 1.0):  # noqa: ANN202
    return parse(f"metrics:\n  - stressor: cpu\n{entry}...\n", requested=("cpu",), seconds=seconds)[0][0]


@pytest.mark.parametrize(("entry", "reason"), [
    ("    bogo-ops: 0\n    bogo-ops-per-second-real-time: 0\n    wall-clock-time: 1.0\n", "0 bogo-ops"),
    ("    bogo-ops: 10\n    wall-clock-time: 1.0\n", "lacks bogo-ops or the real-time rate"),
    ("    bogo-ops: 10\n    bogo-ops-per-second-real-time: 10\n", "lacks wall-clock-time"),
    ("    bogo-ops: 10\n    bogo-ops-per-second-real-time: 100\n    wall-clock-time: 0.1\n", "ended early"),
    ("    bogo-ops: 10\n    bogo-ops-per-second-real-time: 1\n    wall-clock-time: 9.0\n", "overran"),
    ("    bogo-ops: yes\n    bogo-ops-per-second-real-time: 1\n    wall-clock-time: 1.0\n", "lacks bogo-ops"),
])
def test_exit_code_zero_is_not_success(entry: str, reason: str) -> None:
    r = _one(entry)
    assert r.status == "failed" and r.value is None and reason in (r.reason or "")


def test_wall_time_within_budget_is_ok() -> None:
    r = _one("    bogo-ops: 10\n    bogo-ops-per-second-real-time: 5\n    wall-clock-time: 2.0\n", seconds=2.0)
    assert r.status == "ok" and r.value == 5.0


def test_hung_and_last_started_stressor_from_the_log() -> None:
    log = ("stress-ng: debug: [10] cpu: started [11] (instance 0)\n"
           "stress-ng: debug: [10] cpu: exited [11] (instance 0)\n"
           "stress-ng: debug: [10] vm: started [12] (instance 0)\n")
    assert running_stressor(log) == "vm" and last_started(log) == "vm"
    assert running_stressor(log + "stress-ng: debug: [10] vm: exited [12] (instance 0)\n") is None
    assert running_stressor("") is None and last_started("") is None


# --- catalog ----------------------------------------------------------------------------------------------------


def test_shipped_catalog_loads_with_the_null_stressor() -> None:
    cat = load_catalog()
    assert cat.get("null") is not None and cat.primary("null") == "os"
    assert cat.primary("no-such") == "unknown" and cat.classes("no-such") == ()
    assert {s.primary for s in cat.stressors.values()} <= set(ANALYSIS_CLASSES)


@pytest.mark.parametrize(("text", "why"), [
    ("stressors: [\n", "catalog"),
    ("- just\n- a list\n", "catalog"),
    ("schema_version: 1\n", "'stressors'"),
    ("schema_version: 99\nstressors: {}\n", "schema_version 99"),
    ("schema_version: 1\nstressors:\n  cpu: 3\n", "must be a mapping"),
    ("schema_version: 1\nstressors:\n  cpu: {classes: [cpu], primary: gpu, subsystem: x, hint: y}\n", "primary"),
    ("schema_version: 1\nstressors:\n  cpu: {classes: [cpu], primary: cpu, subsystem: x}\n", "hint"),
    ("schema_version: 1\nstressors:\n  cpu: {classes: [cpu], primary: cpu, subsystem: x, hint: y, z: 1}\n", "z"),
])
def test_bad_catalog_is_one_catalog_error(tmp_path: Path, text: str, why: str) -> None:
    p = tmp_path / "catalog.yaml"
    p.write_text(text)
    with pytest.raises(CatalogError, match=why):
        load_catalog(p)


def test_missing_catalog_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError):
        load_catalog(tmp_path / "nope.yaml")


# --- batteries --------------------------------------------------------------------------------------------------


def test_every_shipped_battery_loads_and_names_catalogued_stressors() -> None:
    cat = load_catalog()
    names = battery_names()
    assert {"quick", "default", "paper"} <= set(names)
    for n in names:
        b = load_battery(n)
        assert b.stressors and all(cat.get(s) is not None for s in b.stressors), n


def _battery(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "batteries.yaml"
    p.write_text("schema_version: 1\nnever:\n  watchdog: reboots\nbatteries:\n  t:\n" + body)
    return p


@pytest.mark.parametrize(("body", "why"), [
    ("    stressors: [cpu, no-such-stressor]\n", "not in stressors/catalog.yaml"),
    ("    stressors: [cpu, watchdog]\n", "never run: reboots"),
    ("    stressors: [cpu, cpu]\n", "duplicate"),
    ("    stressors: ['cpu; rm -rf /']\n", "not a stress-ng stressor name"),
    ("    stressors: []\n", "no stressors"),
    ("    stressors: [cpu]\n    options: {vm: {vm-bytes: 16M}}\n", "does not run"),
    ("    stressors: [cpu]\n    options: {cpu: {cpu-method: 'all; reboot'}}\n", "not a plain stress-ng option"),
    ("    stressors: [cpu]\n    seconds: 0\n", "seconds"),
    ("    stressors: [cpu]\n    colour: red\n", "colour"),
])
def test_bad_battery_is_one_catalog_error(tmp_path: Path, body: str, why: str) -> None:
    with pytest.raises(CatalogError, match=why):
        load_battery("t", _battery(tmp_path, body))


def test_unknown_battery_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="known: t"):
        load_battery("nope", _battery(tmp_path, "    stressors: [cpu]\n"))


def test_battery_file_with_another_schema_version(tmp_path: Path) -> None:
    p = tmp_path / "b.yaml"
    p.write_text("schema_version: 2\nbatteries: {}\n")
    with pytest.raises(CatalogError, match="schema_version 1"):
        load_battery("t", p)


def test_render_job_refuses_names_that_are_not_stressors() -> None:
    assert render_job(["vm"], 3, {"vm": {"vm-bytes": "16M"}}).splitlines() == [
        "run sequential", "timeout 3", "metrics-brief", "vm 1", "vm-bytes 16M"]
    with pytest.raises(CatalogError):
        render_job(["cpu\nexec rm"], 1, {})


@pytest.mark.stressng
def test_rendered_job_runs_under_real_stress_ng_and_parses(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.write_text(render_job(["cpu", "null"], 1, {}))
    out = tmp_path / "out.yaml"
    p = subprocess.run([shutil.which("stress-ng") or "stress-ng", "--job", str(job), "--yaml", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    results, _ = parse(out.read_text())
    assert [r.status for r in results] == ["ok", "ok"] and all((r.value or 0) > 0 for r in results)
