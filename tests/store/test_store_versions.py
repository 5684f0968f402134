"""Stores written by older quiho versions stay readable (sample files under tests/data/)."""

import shutil
from pathlib import Path

from quiho.store import open_store

DATA = Path(__file__).resolve().parents[1] / "data"


def test_core_v1_store_opens_and_gains_new_components(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(DATA / "store-core-v1.db", db)
    with open_store(db) as st:
        versions = st.versions()
        assert versions["core"] >= 1
        assert len(versions) > 1  # components added since were created on open
        row = st.conn.execute("SELECT stressor, value FROM measurements").fetchone()
        assert (row["stressor"], row["value"]) == ("null", 123.5)  # the stressor called null survives
        assert st.conn.execute("SELECT value FROM app_runs").fetchone()[0] == 2.5
