"""What the issue-13 probe found holding, kept so: malformed CSVs are one line, BOM/CRLF are fine, a bad store is
never changed, SVG output escapes names, ``--json`` is strict JSON (one document, no NaN/Infinity)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from quiho.cli.main import main

MALFORMED = {
    "empty": b"",
    "header-only": b"revision,value\n",
    "binary": bytes(range(256)) * 4,
    "truncated": b"revision,value\nr1,1.0\n\"r2,2",
    "latin-1": "revision,value\nr\xe9,1\nr2,2\n".encode("latin-1"),
    "nul": b"revision,value\nr1,1\x00\nr2,2\n",
    "semicolons": b"revision;value\nr1;1\nr2;2\n",
    "nan-inf": b"revision,value\nr1,nan\nr2,inf\nr3,-inf\n",
    "no-value-column": b"revision,other\nr1,1\nr2,2\n",
}


def _steps(n: int = 30) -> bytes:
    rng = np.random.default_rng(0)
    return ("revision,value\n" + "".join(f"r{i},{100 + 20 * (i >= n // 2) + rng.normal(0, 1):.3f}\n"
                                         for i in range(n))).encode()


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["history detect", "history import", "history plot"])
def test_malformed_csv_is_one_line_exit_1(case, command, tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_bytes(MALFORMED[case])
    argv = [*command.split(), str(f), "--store", str(tmp_path / "q.db")]
    if command == "history plot":
        argv += ["-o", str(tmp_path / "p.png")]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc in (1, 2), (case, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "p.png").exists()


def test_bom_and_crlf_read_like_plain_csv(tmp_path, capsys):
    plain, odd = tmp_path / "plain.csv", tmp_path / "odd.csv"
    plain.write_bytes(_steps())
    odd.write_bytes(b"\xef\xbb\xbf" + _steps().replace(b"\n", b"\r\n"))
    docs = []
    for f in (plain, odd):
        assert main(["history", "detect", str(f), "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    for d in docs:
        d.pop("series", None)
    assert docs[0] == docs[1]
    assert docs[0]["change_points"], "the planted step is found"


def _digest(p) -> str:  # noqa: ANN001
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _stores(tmp_path):  # noqa: ANN001, ANN202
    good = tmp_path / "good.db"
    csv = tmp_path / "h.csv"
    csv.write_bytes(_steps())
    assert main(["history", "import", str(csv), "--store", str(good)]) == 0
    out = {}
    corrupt = tmp_path / "corrupt.db"
    shutil.copy2(good, corrupt)
    # damage a page that holds live data (a history table's root page): the middle of the file, as before, can
    # be a page on the free list, whose bytes SQLite never reads, and the test then failed 1 run in ~6
    con = sqlite3.connect(good)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE type='table' AND name LIKE 'history%' "
                       "ORDER BY name LIMIT 1").fetchone()[0]
    con.close()
    data = bytearray(corrupt.read_bytes())
    at = (root - 1) * page_size
    data[at:at + 512] = b"\xa5" * 512
    corrupt.write_bytes(bytes(data))
    out["corrupt"] = corrupt
    notdb = tmp_path / "notdb.db"
    notdb.write_bytes(b"this is not a database\n" * 100)
    out["not-a-db"] = notdb
    missing = tmp_path / "missing-table.db"
    shutil.copy2(good, missing)
    con = sqlite3.connect(missing)
    table = con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'history%' "
                        "ORDER BY name LIMIT 1").fetchone()[0]
    con.execute(f'DROP TABLE "{table}"')
    con.commit()
    con.close()
    out["missing-table"] = missing
    return csv, out


@pytest.mark.parametrize("argv", [["history", "import", "{csv}"], ["history", "list"], ["history", "detect", "h"],
                                  ["import", "quiho-popper", "{csv}"], ["targets"], ["fleet", "drift"],
                                  ["store", "compact"]], ids=lambda a: " ".join(a[:2]))
def test_bad_stores_are_never_changed(argv, tmp_path, capsys):
    csv, stores = _stores(tmp_path)
    for name, db in stores.items():
        before = _digest(db)
        rc = main([a.replace("{csv}", str(csv)) for a in argv] + ["--store", str(db)])
        err = capsys.readouterr().err
        assert "Traceback" not in err, (name, err)
        if rc != 0:
            assert len(err.strip().splitlines()) >= 1, name
        assert _digest(db) == before, f"{name} store changed by {argv} (exit {rc}): {err}"


def test_svg_escapes_names(tmp_path, capsys):
    csv = tmp_path / "h.csv"
    csv.write_bytes(_steps())
    svg = tmp_path / "p.svg"
    evil = "<script>alert(1)</script> --> &amp; ]]>"
    assert main(["history", "plot", str(csv), "-o", str(svg), "--unit", evil]) == 0, capsys.readouterr().err
    text = svg.read_text()
    ET.fromstring(text.encode())  # well-formed XML: nothing broke out of a comment or attribute
    assert "<script>" not in text


def _strict(text: str):  # noqa: ANN202
    def bad(name: str):  # noqa: ANN202
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=bad)


def test_json_output_is_one_strict_document(tmp_path, capsys):
    const = tmp_path / "const.csv"  # constant values: relative magnitudes are 0/0 -> must not print NaN
    const.write_text("revision,value\n" + "".join(f"r{i},0\n" for i in range(20)))
    steps = tmp_path / "steps.csv"
    steps.write_bytes(_steps())
    db = tmp_path / "q.db"
    assert main(["history", "import", str(steps), "--store", str(db)]) == 0
    capsys.readouterr()
    for argv in (["history", "detect", str(const), "--json"], ["history", "detect", str(steps), "--json"],
                 ["history", "list", "--json", "--store", str(db)], ["targets", "--json", "--store", str(db)],
                 ["fleet", "show", "--json", "--store", str(db)]):
        rc = main(argv)
        cap = capsys.readouterr()
        assert rc == 0, (argv, cap.err)
        _strict(cap.out)  # exactly one document: trailing text would make json.loads fail
