"""A store that cannot be used gives one line and exit 1, and is never changed (issue 13).

Every case runs the real CLI in a subprocess against a real SQLite file: read-only, a parent path that is a
file, bytes overwritten mid-file, a dropped table, two processes creating one new store at once, and
``import quiho-popper`` / ``store compact`` values that would be stored altered or break later analyses.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from quiho.store import open_store

CSV = "revision,value\na,1.0\nb,2.0\nc,3.0\nd,2.5\n"
POPPER_HEAD = "timestamp,benchmark,machine,repetition,test,result\n"


def quiho(*args: str, caps: tuple[str, ...] = (), cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "quiho", *args]
    if caps:  # run as root without the capabilities that let root write a file whose mode forbids it
        cmd = ["setpriv", f"--bounding-set={','.join('-' + c for c in caps)}", "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)


def one_line_error(p: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def history_store(tmp_path: Path) -> Path:
    csv = tmp_path / "h.csv"
    csv.write_text(CSV)
    store = tmp_path / "q.db"
    with open_store(store) as st:
        from quiho.history import import_history_csv

        for i in range(30):  # enough rows for several b-tree pages
            import_history_csv(st, csv, name=f"series-{i:02d}")
    return store


def test_parent_of_store_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory")
    (tmp_path / "h.csv").write_text(CSV)
    line = one_line_error(quiho("history", "import", str(tmp_path / "h.csv"), "--store",
                                str(tmp_path / "afile" / "q.db")))
    assert "cannot create store" in line and "afile is a file" in line
    assert (tmp_path / "afile").read_text() == "not a directory"


def test_store_path_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text(CSV)
    line = one_line_error(quiho("history", "import", str(tmp_path / "h.csv"), "--store", str(tmp_path)))
    assert "is a directory" in line


@pytest.mark.root
def test_read_only_store_is_refused_and_unchanged(history_store: Path, tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text(CSV)
    history_store.chmod(0o444)
    before = digest(history_store)
    p = quiho("history", "import", str(tmp_path / "h.csv"), "--store", str(history_store), "--series", "new",
              caps=("dac_override", "dac_read_search"))
    assert "read-only" in one_line_error(p)
    assert digest(history_store) == before
    # reading still works
    p = quiho("history", "list", "--store", str(history_store), caps=("dac_override", "dac_read_search"))
    assert p.returncode == 0, p.stderr
    assert "series-29" in p.stdout


def test_damaged_store_is_refused_before_any_write(history_store: Path, tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text(CSV)
    data = bytearray(history_store.read_bytes())
    page = 4096
    assert len(data) > 8 * page
    # overwrite the middle of the last pages (b-tree pages of the history tables) with garbage
    for start in range(len(data) - 3 * page + 100, len(data) - 100, 97):
        data[start:start + 8] = b"\xde\xad\xbe\xef\x00\xff\x13\x37"
    history_store.write_bytes(bytes(data))
    before = digest(history_store)
    line = one_line_error(quiho("history", "import", str(tmp_path / "h.csv"), "--store", str(history_store),
                                "--series", "new"))
    assert "damaged" in line or "malformed" in line
    assert digest(history_store) == before


def test_reading_an_empty_or_foreign_sqlite_file_leaves_it_untouched(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    before = digest(foreign)
    for path in (empty, foreign):
        line = one_line_error(quiho("store", "copy", str(path), str(tmp_path / f"copy-of-{path.stem}.db")))
        assert "no quiho store" in line
    assert empty.read_bytes() == b""
    assert digest(foreign) == before


def test_store_copy_prints_names_without_control_characters(history_store: Path, tmp_path: Path) -> None:
    dest = "\x1b[31mred\x1b[0m.db"
    p = quiho("store", "copy", str(history_store), dest, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout + p.stderr
    assert "\\x1b[31mred" in p.stdout
    assert (tmp_path / dest).exists()


def test_store_missing_a_table(history_store: Path) -> None:
    c = sqlite3.connect(history_store)
    c.execute("DROP TABLE history_points")
    c.commit()
    c.close()
    before = digest(history_store)
    line = one_line_error(quiho("history", "list", "--store", str(history_store)))
    assert "lacks table(s) history_points" in line
    assert digest(history_store) == before


def _create(path: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        with open_store(path) as st:
            out.put(("ok", sorted(st.versions().items())))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def test_processes_creating_one_new_store_at_once(tmp_path: Path) -> None:
    """Four forked processes (quiho already imported) pass one barrier, then open the same new file.

    Before the fix, 13 of 20 tries of two processes failed with "database is locked" or "table hosts already
    exists": schema versions were read before ``BEGIN IMMEDIATE``.
    """
    open_store(tmp_path / "warm.db").close()  # import every component module once, before forking
    ctx = multiprocessing.get_context("fork")
    results = []
    for i in range(10):
        store, n = tmp_path / f"new-{i}" / "q.db", 4
        barrier, out = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_create, args=(str(store), barrier, out)) for _ in range(n)]
        for p in procs:
            p.start()
        results += [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    errors = [r[1] for r in results if r[0] != "ok"]
    assert not errors, f"{len(errors)} of {len(results)} opens failed, e.g. {errors[0]}"
    assert len({str(r[1]) for r in results}) == 1  # every process saw the same, complete schema
    with open_store(tmp_path / "new-0" / "q.db") as st:
        assert st.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("bad", ["inf", "-inf", "1e308", "nan"])
def test_popper_import_refuses_non_finite_or_absurd_results(tmp_path: Path, bad: str) -> None:
    csv = tmp_path / "results.csv"
    csv.write_text(POPPER_HEAD + "1,stressng,m1,1,cpu,100.0\n1,hpccg,m1,1,hpccg,2.0\n"
                   f"1,stressng,m2,1,cpu,{bad}\n1,hpccg,m2,1,hpccg,2.5\n")
    store = tmp_path / "q.db"
    line = one_line_error(quiho("import", "quiho-popper", str(csv), "--store", str(store)))
    assert "line 4" in line and "result" in line
    assert not store.exists()


@pytest.mark.parametrize(("col", "bad"), [("timestamp", "1e30"), ("repetition", "1.5")])
def test_popper_import_refuses_values_it_would_alter(tmp_path: Path, col: str, bad: str) -> None:
    row = {"timestamp": "1", "repetition": "1"} | {col: bad}
    csv = tmp_path / "results.csv"
    csv.write_text(POPPER_HEAD + "1,stressng,m1,1,cpu,100.0\n"
                   f"{row['timestamp']},stressng,m2,{row['repetition']},cpu,90.0\n")
    line = one_line_error(quiho("import", "quiho-popper", str(csv), "--store", str(tmp_path / "q.db")))
    assert "line 3" in line and col in line


@pytest.mark.parametrize("days", ["nan", "inf", "1e9", "-1"])
def test_store_compact_older_than_out_of_range_is_a_usage_error(history_store: Path, days: str) -> None:
    before = digest(history_store)
    line = one_line_error(quiho("store", "compact", "--older-than", days, "--store", str(history_store)), code=2)
    assert "--older-than" in line
    assert digest(history_store) == before


def test_store_compact_accepts_a_century(history_store: Path) -> None:
    p = quiho("store", "compact", "--older-than", "36525", "--store", str(history_store))
    assert p.returncode == 0, p.stderr


def test_reads_of_a_damaged_store_raise_store_error(history_store: Path) -> None:
    """A damaged page met by a plain query surfaces as StoreError (exit 1 at the CLI), not sqlite3.DatabaseError."""
    from quiho.errors import StoreError
    from quiho.history import load_history

    with open_store(history_store) as st:
        pass
    data = bytearray(history_store.read_bytes())
    for start in range(len(data) - 3 * 4096 + 100, len(data) - 100, 97):
        data[start:start + 8] = b"\xde\xad\xbe\xef\x00\xff\x13\x37"
    history_store.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        with open_store(history_store) as st:
            for i in range(30):
                load_history(st, f"series-{i:02d}")
    assert os.path.exists(history_store)
