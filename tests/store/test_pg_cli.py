"""The CLI on a PostgreSQL store (a real server, fixture ``pg_server``): the walkthrough gives the same JSON as on
SQLite, and every way the server can refuse or fail is one line on stderr, exit 1, no traceback, no password."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quiho.cli.main import main
from quiho.store import open_store

pytestmark = pytest.mark.postgres

PASSWORD = "pw-Quiho-7s3cr3t"  # tests/conftest.py's PG_PASSWORD


def quiho(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "quiho", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line_error(p: subprocess.CompletedProcess[str], *secrets: str) -> str:
    """The one stderr line of a failed command; nothing on stdout, no traceback, no secret anywhere."""
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == "", p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    for s in secrets:
        assert s not in p.stderr and s not in p.stdout
    return lines[0]


def _series(tmp: Path) -> list[Path]:
    rng = np.random.default_rng(3)
    out = []
    for name, jump in (("flat", 0.0), ("step", 0.5)):
        p = tmp / f"{name}.csv"
        vals = 1 + rng.normal(0, 0.01, 40) + np.r_[np.zeros(30), np.full(10, jump)]
        p.write_text("revision,value\n" + "".join(f"r{i:03d},{float(v)!r}\n" for i, v in enumerate(vals)))
        out.append(p)
    return out


def _walk(store: str, popper_csv: Path, series: list[Path], capsys: pytest.CaptureFixture[str]) -> list[object]:
    cmds = [["import", "quiho-popper", str(popper_csv)], ["irup", "hpccg", "--seeds", "2"],
            *[["history", "import", str(p), "--series", p.stem, "--unit", "s"] for p in series],
            ["history", "detect", "--all"], ["targets"], ["history", "list"]]
    docs = []
    for cmd in cmds:
        rc = main([*cmd, "--store", store, "--json"])
        out, err = capsys.readouterr()
        assert rc == 0, (cmd, err)
        assert PASSWORD not in out + err
        docs.append(_without_clock(json.loads(out)))
    return docs



def test_walkthrough_gives_identical_json_on_sqlite_and_postgresql(pg_server, popper_csv: Path,  # noqa: ANN001
                                                                    tmp_path: Path, capsys, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("QUIHO_STORE_FILES", str(tmp_path / "files"))
    series = _series(tmp_path)
    on_sqlite = _walk(str(tmp_path / "q.db"), popper_csv, series, capsys)
    on_pg = _walk(pg_server.url(pg_server.new_database()), popper_csv, series, capsys)
    assert on_pg == on_sqlite
    assert on_pg[4]["series"][1]["detection"]["change_points"]  # the step was found (the test compares results)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wrong_password_unknown_database_and_server_down_are_one_line(pg_server) -> None:  # noqa: ANN001
    db = pg_server.new_database()
    wrong = "Wr0ng-Secret-Pw"
    line = one_line_error(quiho("targets", "--store", pg_server.url(db, password=wrong)), wrong, PASSWORD)
    assert "password authentication failed" in line and "***" in line
    line = one_line_error(quiho("targets", "--store", pg_server.url("no_such_db")), PASSWORD)
    assert 'database "no_such_db" does not exist' in line
    down = f"postgresql://quiho:{PASSWORD}@127.0.0.1:{_free_port()}/{db}"
    line = one_line_error(quiho("history", "list", "--store", down), PASSWORD)
    assert "cannot open store" in line and "refused" in line
    env_line = one_line_error(quiho("targets", env={"QUIHO_STORE": down}), PASSWORD)  # the same through QUIHO_STORE
    assert "cannot open store" in env_line
    assert "no quiho store" in one_line_error(quiho("targets", "--store", pg_server.url(db)), PASSWORD)


def test_a_read_only_role_is_refused_in_one_line_and_nothing_changes(pg_server, tmp_path: Path) -> None:  # noqa: ANN001
    db = pg_server.new_database()
    csv = tmp_path / "h.csv"
    csv.write_text("revision,value\na,1.0\nb,2.0\nc,3.0\n")
    with open_store(pg_server.url(db)) as st:
        from quiho.history import import_history_csv

        import_history_csv(st, csv, name="kept")
    pg_server.admin("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", db=db)
    reader = pg_server.url(db, user="reader", password="reader-pw")
    p = quiho("history", "list", "--store", reader, "--json")
    assert p.returncode == 0 and [s["name"] for s in json.loads(p.stdout)["series"]] == ["kept"]
    line = one_line_error(quiho("history", "import", str(csv), "--series", "new", "--store", reader), "reader-pw")
    assert "read-only for this role" in line and "permission denied" in line
    fresh = pg_server.url(pg_server.new_database(), user="reader", password="reader-pw")  # cannot even create tables
    assert "permission denied" in one_line_error(quiho("history", "import", str(csv), "--store", fresh), "reader-pw")
    with open_store(pg_server.url(db)) as st:
        assert st.conn.execute("SELECT COUNT(*) FROM history_series").scalar() == 1


def test_store_copy_on_the_command_line(pg_server, tmp_path: Path, popper_csv: Path) -> None:  # noqa: ANN001
    url = pg_server.url(pg_server.new_database())
    assert quiho("import", "quiho-popper", str(popper_csv), "--store", str(tmp_path / "a.db")).returncode == 0
    p = quiho("store", "copy", str(tmp_path / "a.db"), url, "--json", env={"QUIHO_STORE_FILES": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["rows"]["measurements"] == 16897 and doc["destination"].count("***") == 1 and PASSWORD not in p.stdout
    back = quiho("store", "copy", url, str(tmp_path / "b.db"), "--json")
    assert back.returncode == 0 and json.loads(back.stdout)["rows"] == doc["rows"]
    assert "not empty" in one_line_error(quiho("store", "copy", str(tmp_path / "a.db"), url), PASSWORD)


def _plant_profile(store: str) -> None:
    """A fleet profile batch as a local-fleet run leaves it (fingerprint run + interleaved app runs), planted."""
    from quiho.datasets import planted_profile
    from quiho.store import app_runs, imports

    runs, a, _ = planted_profile(n_groups=6)
    first = a.meta["host"].drop_duplicates().index
    fp = [(a.meta.loc[i, "host"], 1, s, float(a.X.loc[i, s])) for i in first for s in a.X.columns]
    with open_store(store) as st:
        (rid,) = imports.write_complete_runs(st, "fleet", "quick", [("fp-1", "2026-11-01T00:00:00+00:00", fp)])
        head = app_runs.AppRunBatch("fleet", "prof-1", rid, "planted", "run", "s", False, "2026-11-02T00:00:00+00:00")
        app_runs.insert_app_runs(st, head, [app_runs.AppRunRow(r.host, r.version, int(r.repetition), r.status, r.value,
                                                         r.reason, None, {"order": int(r.order)})
                                         for r in runs.itertuples()])


def _without_clock(doc: object) -> object:
    """``doc`` without what depends on when it was computed (``created_at``, the fingerprint's ``age_s``)."""
    if isinstance(doc, dict):
        return {k: _without_clock(v) for k, v in doc.items() if k not in ("created_at", "updated_at", "age_s")}
    if isinstance(doc, list):
        return [_without_clock(v) for v in doc]
    return doc


def test_a_stored_profile_re_analysed_with_batch_gives_identical_json(pg_server, tmp_path: Path,  # noqa: ANN001
                                                                      capsys) -> None:  # noqa: ANN001
    """The planted batch is copied SQLite -> PostgreSQL with ``store copy`` and re-analysed on both."""
    from quiho.store.copy import copy_store

    db, url = str(tmp_path / "p.db"), pg_server.url(pg_server.new_database())
    _plant_profile(db)
    with open_store(db) as src, open_store(url) as dst:
        copy_store(src, dst)
    docs = []
    for store in (db, url):
        rc = main(["profile", "planted@v1", "planted@v2", "--batch", "prof-1", "--seeds", "2", "--store", store,
                   "--json"])
        out, err = capsys.readouterr()
        assert rc == 0, err
        docs.append(json.loads(out))
    assert docs[0]["batch"] == "prof-1" and docs[0]["metric"]["hosts_used"] == 6
    assert _without_clock(docs[1]) == _without_clock(docs[0])

