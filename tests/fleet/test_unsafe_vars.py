"""Application-spec strings reach the host literally: Ansible never templates them on the controller."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from quiho.app import load_app_spec, run_app
from quiho.fleet.runner import unsafe_yaml
from quiho.store import open_store


def test_every_string_is_tagged_unsafe_and_the_structure_survives() -> None:
    doc = {"quiho_app": {"command": ["echo", "{{ 7 * 6 }}", 'quo"te\\n'], "workdir": ""}, "n": 3, "f": 0.5,
           "ok": True, "none": None}
    text = unsafe_yaml(doc, whole=False)  # ansible-core before 2.19: each string
    assert text.count("!unsafe") == 4

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!unsafe", lambda loader, node: ("UNSAFE", loader.construct_scalar(node)))
    back = yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    assert back["quiho_app"]["command"] == [("UNSAFE", "echo"), ("UNSAFE", "{{ 7 * 6 }}"), ("UNSAFE", 'quo"te\\n')]
    assert (back["n"], back["f"], back["ok"], back["none"]) == (3, 0.5, True, None)
    whole = unsafe_yaml(doc, whole=True)  # 2.19 on: the document
    assert whole.count("!unsafe") == 1 and whole.startswith("!unsafe {")
    assert json.loads(whole.removeprefix("!unsafe ")) == doc
    with pytest.raises(TypeError, match="of type set"):
        unsafe_yaml({"a": [{1, 2}]}, whole=True)


def test_a_lookup_in_a_spec_is_run_literally_not_templated(tmp_path: Path) -> None:
    marker = tmp_path / "templated"
    inv = tmp_path / "one.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local}\n  hosts:\n    lit-host: {}\n")
    spec = tmp_path / "lit.yml"
    payload = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    spec.write_text(
        "schema_version: 1\nname: lit\nversions:\n"
        f"  v1: {{command: [sh, -c, 'printf %s \"$1\" > got.txt', sh, \"{payload}\"], workdir: {tmp_path}}}\n"
        "repetitions: 1\ntimeout: 60\n"
    )
    assert load_app_spec(spec).versions["v1"].command[-1] == payload
    with open_store(tmp_path / "q.db") as st:
        run = run_app(load_app_spec(spec), "v1", inv, store=st)
    assert run.status == "complete", run.to_dict()
    assert not marker.exists()  # the lookup never ran on the controller
    assert (tmp_path / "got.txt").read_text() == payload  # and the host got the text as written
    conn = sqlite3.connect(tmp_path / "q.db")
    assert conn.execute("SELECT status FROM app_runs").fetchall() == [("ok",)]


def test_strings_that_read_as_yaml_booleans_numbers_or_null_reach_the_host_as_written(tmp_path: Path) -> None:
    """ansible-core 2.19 read an ``!unsafe "true"`` as the boolean True: a version's argv 'true' ran as 'True'."""
    words = ["true", "yes", "on", "null", "~", "007", "1.50", "0x10", "1e3", "", "{{ 6 * 7 }}"]
    inv = tmp_path / "one.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local}\n  hosts:\n    lit-host: {}\n")
    spec = tmp_path / "words.yml"
    spec.write_text(yaml.safe_dump({
        "schema_version": 1, "name": "words", "repetitions": 1, "timeout": 60,
        "versions": {"v1": {"command": ["sh", "-c", 'printf "%s|" "$@" > got.txt', "sh", *words],
                            "setup": ["sh", "-c", 'printf "%s|" "$@" > setup.txt', "sh", *words],
                            "workdir": str(tmp_path)}}}))
    with open_store(tmp_path / "q.db") as st:
        run = run_app(load_app_spec(spec), "v1", inv, store=st)
    assert run.status == "complete", run.to_dict()
    assert (tmp_path / "got.txt").read_text() == "|".join(words) + "|"
    assert (tmp_path / "setup.txt").read_text() == "|".join(words) + "|"
