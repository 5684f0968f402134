"""The store on both backends (a SQLite file and a real PostgreSQL server, fixture ``store_spec``): schema versions
and migrations of components old and new, all-or-nothing writes, trace files beside a PostgreSQL store,
``store copy`` in both directions, and URLs whose password no message, label or repr ever shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from quiho.errors import SchemaVersionError, StoreError
from quiho.store import _db, history, hosts, imports, open_store, register_component
from quiho.store._location import parse_location
from quiho.store.copy import copy_store, table_counts

PASSWORD = "pw-Quiho-7s3cr3t"  # tests/conftest.py's PG_PASSWORD


@pytest.fixture
def component():  # noqa: ANN201
    """Register components for one test and forget them afterwards (and their tables in the shared metadata)."""
    names: list[str] = []

    def add(name: str, migrations: list) -> None:  # noqa: ANN001
        names.append(name)
        register_component(name, migrations)

    yield add
    for n in names:
        comp = _db._COMPONENTS.pop(n)
        for step in comp.migrations:
            for t in getattr(step, "tables", ()):
                _db.SCHEMA.remove(t)


def test_new_store_has_every_component_version(store_spec: str) -> None:
    with open_store(store_spec) as st:
        v = st.versions()
        assert v["core"] == 1 and v["history"] == 3 and v["trace"] == 3 and set(v) >= {"fleet", "profile"}
        assert PASSWORD not in repr(st) and PASSWORD not in str(st)


def test_components_registered_every_way_migrate_an_existing_store(store_spec: str, component) -> None:  # noqa: ANN001
    """A component made of SQL strings and callables (the old way) and one of Table objects both migrate."""
    open_store(store_spec).close()

    def fill(conn) -> None:  # noqa: ANN001  (a callable step gets the store's Connection, ? placeholders work)
        conn.execute("INSERT INTO old_way(name, n) VALUES (?, ?)", ("seed", 1))

    component("oldway", ["CREATE TABLE old_way (name TEXT NOT NULL UNIQUE, n INTEGER NOT NULL)", fill,
                         "ALTER TABLE old_way ADD COLUMN score DOUBLE PRECISION"])
    table = sa.Table("new_way", _db.SCHEMA, sa.Column("id", _db.ID, primary_key=True),
                     sa.Column("host_id", _db.ID, sa.ForeignKey("hosts.id"), nullable=False),
                     sa.Column("note", _db.TEXT, nullable=False))
    component("newway", [_db.Tables(table)])
    with open_store(store_spec) as st:
        assert st.versions()["oldway"] == 3 and st.versions()["newway"] == 1
        with st.transaction() as c:
            c.execute("UPDATE old_way SET score = :s WHERE name = :n", {"s": 0.1 + 0.2, "n": "seed"})
            hid = hosts.ensure_hosts(c, {"h": {}})["h"]
            nid = _db.insert_id(c, "INSERT INTO new_way(host_id, note) VALUES (?, ?) RETURNING id", (hid, "x"))
        assert st.conn.execute("SELECT score FROM old_way").scalar() == 0.1 + 0.2  # 64-bit on both
        assert dict(st.conn.execute("SELECT * FROM new_way").fetchone()) == {"id": nid, "host_id": hid, "note": "x"}


def test_a_store_written_by_a_newer_quiho_is_refused(store_spec: str) -> None:
    with open_store(store_spec) as st, st.transaction() as c:
        c.execute("UPDATE schema_versions SET version = version + 5 WHERE component = 'core'")
    with pytest.raises(SchemaVersionError, match="upgrade quiho") as e:
        open_store(store_spec)
    assert PASSWORD not in str(e.value)


def test_a_failed_transaction_leaves_nothing(store_spec: str) -> None:
    with open_store(store_spec) as st:
        with pytest.raises(RuntimeError), st.transaction() as c:
            c.execute("INSERT INTO hosts(name, created_at) VALUES ('a', 'now')")
            raise RuntimeError("boom")
        assert st.conn.execute("SELECT COUNT(*) FROM hosts").scalar() == 0
        with pytest.raises(sa.exc.IntegrityError), st.transaction() as c:  # a constraint is a bug: not translated
            c.execute("INSERT INTO hosts(name, created_at) VALUES ('a', 'now')")
            c.execute("INSERT INTO hosts(name, created_at) VALUES ('a', 'now')")
        assert st.conn.execute("SELECT COUNT(*) FROM hosts").scalar() == 0


def test_ordering_and_unique_keys_compare_bytes_on_both(store_spec: str) -> None:
    """PostgreSQL's text columns use the C collation, so ORDER BY gives SQLite's order (uppercase first)."""
    names = ["b", "B", "a", "_x", "Z", "ä"]
    with open_store(store_spec) as st:
        sid = history.ensure_series(st, "s", "t")
        for n in names:
            history.ensure_series(st, n, "t")
        assert [d["name"] for d in history.list_series(st)] == sorted([*names, "s"])
        assert history.ensure_series(st, "s", "t") == sid


def _trace(st) -> int:  # noqa: ANN001
    import pandas as pd

    from quiho.trace import CallStats, TraceSource, save_trace

    calls = pd.DataFrame({"function": ["f", "g"], "tid": [1, 1], "order": [0, 1], "start_ns": [0, 10],
                          "inclusive_ns": [5, 7], "exclusive_ns": [5, 7], "depth": [0, 0], "arg": [0, 0]})
    src = TraceSource("./app", "test", ("f", "g"))
    return save_trace(st, "app", "v1", calls, CallStats(2, 2, 0, 0, 0, 0, 0), src).id


@pytest.mark.postgres
def test_trace_files_of_a_postgresql_store_live_in_quiho_store_files(pg_server, tmp_path: Path,  # noqa: ANN001
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from quiho.trace import load_trace

    url = pg_server.url(pg_server.new_database())
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("QUIHO_STORE_FILES", raising=False)
    with open_store(url) as st:  # default: under ./.quiho/, named after host, port and database
        assert st.files_dir == Path(".quiho") / f"pg-127.0.0.1-{pg_server.port}-{url.rsplit('/', 1)[1]}"
    monkeypatch.setenv("QUIHO_STORE_FILES", str(tmp_path / "shared"))
    with open_store(url) as st:
        rid = _trace(st)
        files = list((tmp_path / "shared" / "traces").glob("*.parquet"))
        assert len(files) == 1
        run, calls = load_trace(st, str(rid))
        assert run.calls_path == files[0] and list(calls["function"]) == ["f", "g"]


@pytest.mark.postgres
def test_copy_sqlite_to_postgresql_and_back_keeps_every_row_and_file(pg_server, tmp_path: Path,  # noqa: ANN001
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a" / "q.db", tmp_path / "c" / "q.db"
    url = pg_server.url(pg_server.new_database())
    monkeypatch.setenv("QUIHO_STORE_FILES", str(tmp_path / "pgfiles"))
    with open_store(a) as st:
        imports.write_complete_runs(st, "test", "synthetic", [
            ("b1", "2026-01-01T00:00:00+00:00", [("h1", 1, "cpu", 10.25), ("h2", 1, "cpu", 1e-300)])])
        history.replace_series(st, "s", "ms", "test", {}, [history.StoredRevision("r0", 0, "ok", None, (1.0, 2.0)),
                                                             history.StoredRevision("r1", 1, "ok", None, (3.0,))])
        _trace(st)
        before = table_counts(st)
    with open_store(a) as src, open_store(url) as dst:
        out = copy_store(src, dst)
    assert out.rows == before and out.files == 1 and sum(before.values()) > 8
    with open_store(url) as st:  # ids were copied: new rows continue after them
        sid = history.ensure_series(st, "t", "test")
        assert sid == history.series_id(st, "s") + 1
        assert history.revisions(st, history.series_id(st, "s"))[1].values == (3.0,)
        with pytest.raises(StoreError, match="not empty"), open_store(a) as src:
            copy_store(src, st)
    with open_store(url) as src, open_store(b) as dst:
        copy_store(src, dst)
        assert table_counts(dst) == {**before, "history_series": 2}
        assert sorted(st_values(dst)) == [1e-300, 10.25]
    assert len(list((b.parent / "traces").glob("*.parquet"))) == 1


def st_values(st) -> list[float]:  # noqa: ANN001
    return [r[0] for r in st.conn.execute("SELECT value FROM measurements")]


# --- URLs and passwords --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [
    f"postgresql://quiho:{PASSWORD}@db.example:5433/qdb",
    f"postgres://quiho:{PASSWORD}@db.example:5433/qdb",
    f"postgresql:/quiho:{PASSWORD}@db.example:5433/qdb",  # what pathlib.Path leaves of the URL
    "postgresql://quiho:p%40ss%2Fw%3Ard@db.example:5433/qdb",
])
def test_a_url_is_a_postgresql_store_named_without_its_password(spec: str) -> None:
    loc = parse_location(spec)
    assert loc.backend == "postgresql"
    assert loc.label == "postgresql://quiho:***@db.example:5433/qdb"
    for shown in (loc.label, str(loc), repr(loc), str(loc.path), str(loc.files_dir)):
        assert PASSWORD not in shown and "p%40ss" not in shown and "p@ss/w:rd" not in shown
    assert loc.redact(f"failed for {loc.secret} and {spec}") .count("***") == 2


@pytest.mark.parametrize("spec", [f"mysql://quiho:{PASSWORD}@db.example/qdb", "s3://bucket/quiho.db",
                                  "https://example.org/quiho.db"])
def test_another_url_scheme_is_refused_not_taken_for_a_file(spec: str) -> None:
    with pytest.raises(StoreError, match=r"store URL scheme '[a-z0-9]+' is not supported") as exc:
        parse_location(spec)
    assert PASSWORD not in str(exc.value) and "\n" not in str(exc.value)


def test_paths_env_and_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_location(tmp_path / "x.db").backend == "sqlite"
    assert parse_location("sqlite:///rel/x.db").path == Path("rel/x.db")
    monkeypatch.setenv("QUIHO_STORE", "postgresql://quiho@h/qdb")
    assert parse_location(None).label == "postgresql://quiho@h/qdb"
    svc = parse_location("postgresql:///?service=team")
    assert svc.backend == "postgresql" and svc.files_dir == Path(".quiho") / "pg-team-5432"


@pytest.mark.postgres
def test_credentials_from_pgpassfile_and_the_environment(pg_server, tmp_path: Path,  # noqa: ANN001
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = pg_server.new_database()
    bare = pg_server.url(db, password=None)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_server.port}:{db}:quiho:{PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    with open_store(bare) as st:
        assert st.versions()["core"] == 1
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with open_store(bare) as st:
        assert str(st) == bare
    monkeypatch.setenv("PGPASSWORD", "wrong")
    with pytest.raises(StoreError, match="password authentication failed"):
        open_store(bare)
    assert os.environ["PGPASSWORD"] == "wrong"


def test_only_this_controllers_running_runs_are_declared_dead(store_spec: str) -> None:
    """With a shared store the measurement lock is per controller: another machine's running run is left alone."""
    from quiho.store import fingerprints

    with open_store(store_spec) as st:
        mine = fingerprints.create_fingerprint_run(st, "mine", "quick", {}, "t")
        theirs = fingerprints.create_fingerprint_run(st, "theirs", "quick", {}, "t")
        with st.transaction() as c:
            c.execute("UPDATE fingerprint_runs SET controller = 'other-controller' WHERE id = ?", (theirs,))
        assert fingerprints.mark_interrupted_runs(st) == [mine]
        status = dict(st.conn.execute("SELECT batch, status FROM fingerprint_runs").fetchall())
        assert status == {"mine": "partial", "theirs": "running"}


def test_schedule_install_refuses_a_postgresql_store_without_writing_its_url(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """A timer's unit file would hold the URL (and its password): the schedule takes SQLite stores only."""
    from quiho.cli.main import main

    url = f"postgresql://quiho:{PASSWORD}@db.example/qdb"
    assert main(["schedule", "install", "--store", url, "--root", str(tmp_path), "--backend", "cron"]) == 2
    out, err = capsys.readouterr()
    assert "SQLite store" in err and PASSWORD not in out + err and "***" in err
    assert not any(tmp_path.rglob("*"))


def test_the_lock_stays_on_the_controller_when_the_files_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    from quiho.fleet.lock import lock_path

    monkeypatch.setenv("QUIHO_STORE_FILES", "/mnt/shared/quiho")
    loc = parse_location("postgresql://quiho@db.example:5433/qdb")
    assert loc.files_dir == Path("/mnt/shared/quiho")
    assert lock_path(loc.path).parent == Path(".quiho") / "pg-db.example-5433-qdb"
