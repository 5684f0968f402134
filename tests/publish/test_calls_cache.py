"""A traced profile's calls are read from the store's Parquet files once, then from the site cache, until a file
changes or goes (a real SQLite store and real calls files)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import quiho.trace
from quiho.publish._calls import cached_calls, prune_calls
from quiho.store import open_store
from quiho.store.traces import batch_trace_runs
from quiho.trace import CallStats, TraceSource, save_trace

ROW = {"application": "app", "version_a": "v1", "version_b": "v2", "batch": "profile-x"}
DOC = {"traces": {"functions": []}, "version_a": "v1", "label_b": "v2"}


@pytest.fixture
def store(tmp_path: Path, synthetic_calls: Any) -> Any:
    st = open_store(tmp_path / "q.db")
    for i, host in enumerate(("h1", "h2")):
        for version, scale in (("v1", 1.0), ("v2", 1.3)):
            save_trace(st, "app", version, synthetic_calls(300, scale, seed=10 * i + (version == "v2")),
                       CallStats(300, 300, 0, 0, 0, 0, 0),
                       TraceSource(command="app", engine="bpftrace", functions=("steady", "slower"), host=host,
                                   batch="profile-x", wall_s=1.0))
    yield st
    st.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Ids of the runs whose calls file was read (the real reader still reads it)."""
    seen: list[int] = []
    real = quiho.trace.read_calls

    def counting(run: Any) -> Any:
        seen.append(run.id)
        return real(run)

    monkeypatch.setattr(quiho.trace, "read_calls", counting)
    return seen


def test_a_republish_reads_no_calls_file_and_gets_the_same_samples(store: Any, reads: list[int]) -> None:
    first, note = cached_calls(store, ROW, DOC)
    assert note == "" and first["host"] == "h1" and set(first["functions"]) == {"steady", "slower"}
    assert len(reads) == 2  # h1's run of each version
    orders, ns = first["functions"]["slower"]["v2"]
    assert len(orders) == len(ns) == 300 and np.median(ns) > np.median(first["functions"]["slower"]["v1"][1])
    again, note = cached_calls(store, ROW, DOC)
    assert note == "" and again == first and len(reads) == 2


def test_a_rewritten_calls_file_is_read_again(store: Any, reads: list[int]) -> None:
    cached_calls(store, ROW, DOC)
    run = batch_trace_runs(store, "app", "profile-x")[0]
    st = os.stat(run.calls_path)
    os.utime(run.calls_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    cached_calls(store, ROW, DOC)
    assert len(reads) == 4


def test_a_gone_calls_file_is_said_even_when_its_samples_were_cached(store: Any) -> None:
    cached_calls(store, ROW, DOC)
    Path(batch_trace_runs(store, "app", "profile-x")[0].calls_path).unlink()
    calls, note = cached_calls(store, ROW, DOC)
    assert calls == {} and note.startswith("the traced calls cannot be read: cannot read calls of run")


def test_an_untraced_profile_has_no_calls_and_a_removed_profile_leaves_the_cache(store: Any) -> None:
    assert cached_calls(store, ROW, {"traces": None}) == ({}, "")
    cached_calls(store, ROW, DOC)
    count = "SELECT COUNT(*) FROM site_results WHERE kind = 'calls'"
    assert store.conn.execute(count).fetchone()[0] == 1
    prune_calls(store, ["profile-x"])
    assert store.conn.execute(count).fetchone()[0] == 1
    prune_calls(store, [])
    assert store.conn.execute(count).fetchone()[0] == 0
