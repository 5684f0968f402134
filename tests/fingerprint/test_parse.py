"""stress-ng YAML parsing: rc 0 is not success, results keyed by the requested name, damage is named."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quiho.errors import FingerprintParseError
from quiho.fingerprint.parse import parse_stressng_yaml, running_stressor

GOOD = """---
system-info:
      stress-ng-version: 0.15.06
      hostname: vm
      cpus: 2

metrics:
    - stressor: cpu
      bogo-ops: 3857
      bogo-ops-per-second-usr-sys-time: 1932.316325
      bogo-ops-per-second-real-time: 1928.338857
      wall-clock-time: 2.000167
      user-time: 1.996050
      system-time: 0.000000
      cpu-usage-per-instance: 99.794161
      max-rss: 6444

    - stressor: null
      bogo-ops: 168909
      bogo-ops-per-second-usr-sys-time: 170144.247235
      bogo-ops-per-second-real-time: 84452.9
      wall-clock-time: 2.000018
      user-time: 0.219283
      system-time: 0.773457
      cpu-usage-per-instance: 99.272225
      max-rss: 2552

    - stressor: tree
      bogo-ops: 0
      bogo-ops-per-second-usr-sys-time: 0.0
      bogo-ops-per-second-real-time: 0.0
      wall-clock-time: 2.1
      user-time: 2.0
      system-time: 0.0

    - stressor: stream
      bogo-ops: 3
      bogo-ops-per-second-usr-sys-time: 40.0
      bogo-ops-per-second-real-time: 42.0
      wall-clock-time: 0.07
      user-time: 0.07
      system-time: 0.0

    - stressor: resources
      bogo-ops: 30
      bogo-ops-per-second-usr-sys-time: 2.0
      bogo-ops-per-second-real-time: 2.1
      wall-clock-time: 14.5
      user-time: 1.0
      system-time: 1.0
...
"""

REQ = ["cpu", "null", "tree", "stream", "resources", "af-alg"]


def parse(text: str = GOOD, req: list[str] = REQ) -> dict:
    results, _ = parse_stressng_yaml(text, req, 2, host="h1", path="/x/rep1.yaml")
    return {r.stressor: r for r in results}


def test_values_and_extras_of_good_stressors() -> None:
    r = parse()
    assert r["cpu"].status == "ok" and r["cpu"].value == pytest.approx(1928.338857)
    assert r["cpu"].extra["rate_usr_sys"] == pytest.approx(1932.316325)
    assert r["cpu"].extra["cpu_share"] == pytest.approx(1.996050 / 2.000167)


def test_null_stressor_is_keyed_by_requested_name() -> None:
    # stress-ng writes `stressor: null` unquoted: YAML gives None, the result must still be "null".
    r = parse()
    assert r["null"].status == "ok" and r["null"].value == pytest.approx(84452.9)


@pytest.mark.parametrize(
    ("name", "why"),
    [("tree", "0 bogo-ops"), ("stream", "ended early"), ("resources", "overran"), ("af-alg", "no metrics")],
)
def test_rc0_is_not_success(name: str, why: str) -> None:
    r = parse()[name]
    assert r.status == "failed" and r.value is None and why in (r.reason or "")


def test_one_result_per_requested_stressor_in_order() -> None:
    results, info = parse_stressng_yaml(GOOD, ["zero", "cpu"], 2, host="h", path="p")
    assert [x.stressor for x in results] == ["zero", "cpu"]
    assert results[0].status == "failed" and info["cpus"] == 2


@pytest.mark.parametrize(
    "text",
    ["", "metrics: [\n  - stressor: cpu\n    bogo-ops: 1", "just a string\n...\n", "metrics: 5\n...\n",
     "metrics:\n  - {bogo-ops: 3}\n...\n"],
)
def test_malformed_yaml_names_host_and_file(text: str) -> None:
    with pytest.raises(FingerprintParseError) as exc:
        parse(text)
    assert "host h1" in str(exc.value) and "/x/rep1.yaml" in str(exc.value)


def test_truncated_but_parseable_yaml_is_an_error() -> None:
    cut = GOOD[: GOOD.index("    - stressor: tree")]
    with pytest.raises(FingerprintParseError, match="truncated"):
        parse(cut)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=len(GOOD) - 5))
def test_any_truncation_raises_parse_error_or_nothing_else(cut: int) -> None:
    # Every prefix of a result file is either rejected with FingerprintParseError (never another
    # exception) or — only if the end marker survived — parsed.
    text = GOOD[:cut]
    try:
        parse(text)
    except FingerprintParseError as exc:
        assert "h1" in str(exc)
    else:
        assert "\n..." in text


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_garbage_never_crashes(text: str) -> None:
    try:
        results, _ = parse_stressng_yaml(text + "\n...\n", ["cpu"], 1, host="h", path="p")
    except FingerprintParseError:
        return
    assert len(results) == 1 and (results[0].status == "failed" or results[0].value is not None)


def test_running_stressor_from_verbose_log() -> None:
    log = """stress-ng: debug: [7543] starting stressors
stress-ng: debug: [7545] cpu: started [7545] (instance 0)
stress-ng: debug: [7545] cpu: exited [7545] (instance 0)
stress-ng: debug: [7546] null: started [7546] (instance 0)
"""
    assert running_stressor(log) == "null"
    assert running_stressor(log + "stress-ng: debug: [7546] null: exited [7546] (instance 0)\n") is None
    assert running_stressor("") is None
