import sqlite3

import pytest

from quiho.errors import SchemaVersionError, StoreError
from quiho.store import open_store, register_component


def test_new_store_is_wal_and_versioned(tmp_path):
    path = tmp_path / "s" / "q.db"
    with open_store(path) as st:
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.versions()["core"] >= 1
    assert path.exists()


def test_refuses_newer_schema(tmp_path):
    path = tmp_path / "q.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_versions SET version = version + 5 WHERE component = 'core'")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade quiho"):
        open_store(path)


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.db"
    path.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError):
        open_store(path)


def test_missing_store_without_create(tmp_path):
    with pytest.raises(StoreError, match="no store"):
        open_store(tmp_path / "nope.db", create=False)


def test_new_component_migrates_existing_store(tmp_path):
    path = tmp_path / "q.db"
    open_store(path).close()
    register_component("testonly", ["CREATE TABLE testonly_t (x INTEGER)"])
    try:
        with open_store(path) as st:
            assert st.versions()["testonly"] == 1
            st.conn.execute("INSERT INTO testonly_t VALUES (1)")
    finally:
        from quiho.store import _db

        _db._COMPONENTS.pop("testonly")


def test_transaction_rolls_back(tmp_path):
    with open_store(tmp_path / "q.db") as st:
        with pytest.raises(RuntimeError):
            with st.transaction() as c:
                c.execute("INSERT INTO hosts(name, created_at) VALUES ('a', 'now')")
                raise RuntimeError("boom")
        assert st.conn.execute("SELECT COUNT(*) FROM hosts").fetchone()[0] == 0
