"""``quiho detect`` / ``quiho models`` on malformed Perun files: one line on stderr, exit 1, never a traceback."""

from __future__ import annotations

import copy
import json
import os

import pytest

from quiho.cli.main import main


def perun_doc(n: int = 40, name: str = "work(int)", scale: float = 1.0) -> dict:
    """A minimal valid Perun profile of one function (amounts grow with the size)."""
    return {
        "header": {"type": "mixed", "units": {"mixed(time delta)": "us"}},
        "resources": {f"{name}#0": {"amount": [scale * (10 + 2 * i) for i in range(n)],
                                    "structure-unit-size": list(range(n))}},
        "resource_type_map": {f"{name}#0": {"uid": name, "type": "mixed"}},
    }


def _mutated(change) -> dict:  # noqa: ANN001
    d = copy.deepcopy(perun_doc())
    change(d)
    return d


def _res(d: dict) -> dict:
    return next(iter(d["resources"].values()))


BAD = {
    "resources-a-list": _mutated(lambda d: d.update(resources=list(d["resources"].values()))),
    "header-a-string": _mutated(lambda d: d.update(header="mixed")),
    "units-a-list": _mutated(lambda d: d["header"].update(units=["us"])),
    "type-map-a-list": _mutated(lambda d: d.update(resource_type_map=[])),
    "resource-a-number": _mutated(lambda d: d["resources"].update({"work(int)#0": 3})),
    "amount-not-numeric": _mutated(lambda d: _res(d)["amount"].__setitem__(3, "fast")),
    "amount-null": _mutated(lambda d: _res(d).update(amount=None)),
    "amount-nested": _mutated(lambda d: _res(d)["amount"].__setitem__(0, [1, 2])),
    "amount-bool": _mutated(lambda d: _res(d)["amount"].__setitem__(0, True)),
    "x-a-string": _mutated(lambda d: _res(d).update({"structure-unit-size": "big"})),
    "x-too-short": _mutated(lambda d: _res(d).update({"structure-unit-size": [1, 2]})),
    "exclusive-too-short": _mutated(lambda d: _res(d).update(exclusive=[1.0])),
    "no-resources": {"header": {}, "resource_type_map": {}},
    "top-level-list": [1, 2, 3],
}


def _write(path, doc) -> None:  # noqa: ANN001
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_perun_file_is_one_line_exit_1(case, tmp_path, capsys):
    good, bad = tmp_path / "good.perf", tmp_path / "bad.perf"
    _write(good, perun_doc())
    _write(bad, BAD[case])
    for argv in (["detect", str(bad), str(good)], ["detect", str(good), str(bad)],
                 ["models", str(bad), "-f", "work(int)"]):
        assert main(argv) == 1, (case, argv)
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("quiho: error: "), err
        assert "bad.perf" in err


@pytest.mark.parametrize("content", [os.urandom(2000), b"\xff\xfe\x00garbage", b"[" * 50_000, b"{\"resources\": {",
                                     b"NaN", b""])
def test_garbage_bytes_are_one_line_exit_1(content, tmp_path, capsys):
    good, bad = tmp_path / "good.perf", tmp_path / "bad.perf"
    _write(good, perun_doc())
    bad.write_bytes(content)
    assert main(["detect", str(bad), str(good)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("quiho: error: "), err


def test_non_finite_amounts_are_refused(tmp_path, capsys):
    good, bad = tmp_path / "good.perf", tmp_path / "bad.perf"
    _write(good, perun_doc())
    bad.write_text(json.dumps(perun_doc()).replace("[10.0,", "[Infinity,"))
    assert main(["detect", str(bad), str(good)]) == 1
    assert "finite" in capsys.readouterr().err


def test_valid_minimal_file_still_loads(tmp_path, capsys):
    a, b = tmp_path / "a.perf", tmp_path / "b.perf"
    _write(a, perun_doc())
    _write(b, perun_doc(scale=3.0))
    assert main(["detect", str(a), str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {c["function"] for c in doc["changes"]} == {"work(int)"}
    assert any(c["state"] == "degradation" for c in doc["changes"])


def test_names_with_control_characters_are_escaped_in_detect_text(tmp_path, capsys):
    name = "evil\n0 change(s) flagged\x1b[31m"
    a, b = tmp_path / "a.perf", tmp_path / "b.perf"
    _write(a, perun_doc(name=name))
    _write(b, perun_doc(name=name, scale=3.0))
    assert main(["detect", str(a), str(b), "--all"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    lines = out.splitlines()
    assert not any(line.startswith("0 change(s) flagged") for line in lines[:-1])
    assert "evil\\x0a0 change" in out
