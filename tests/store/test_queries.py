"""The typed query functions of the store on both backends (a SQLite file, a real PostgreSQL server): round trips
and all-or-nothing writes."""

from __future__ import annotations

import pytest

from quiho.errors import HistoryError, StoreError
from quiho.store import history, imports, irup, open_store, traces


@pytest.fixture
def st(store_spec):  # noqa: ANN001, ANN201
    with open_store(store_spec) as s:
        yield s


def _count(st, table: str) -> int:  # noqa: ANN001
    return int(st.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # a test may look below the layer


def test_trace_run_round_trip_and_a_failed_calls_write_leaves_no_row(st) -> None:  # noqa: ANN001
    src, stats = traces.TraceSource("./app", "bpftrace", ("f", "g"), 2, host="h"), (9, 4, 1, 0, 0, 0, 3)
    rid = traces.insert_trace_run(st, "app", "v1", src, stats, lambda i: f"traces/run-{i}.parquet")
    row = traces.trace_run(st, rid)
    assert row is not None and row.functions == ("f", "g") and row.stats == (9, 4, 1, 0, 0, 0, 3)
    assert row.calls_path == st.files_dir / f"traces/run-{rid}.parquet" and row.sample == 2  # stored relative

    def fail(_: int) -> str:
        raise StoreError("disk full")

    with pytest.raises(StoreError, match="disk full"):
        traces.insert_trace_run(st, "app", "v1", src, stats, fail)
    assert _count(st, "trace_runs") == 1
    assert traces.trace_run_ids(st, "app", "v1") == [rid] and traces.latest_trace_run(st, "app", "v1") == row
    assert traces.has_trace_run(st, "app", "v1") and not traces.has_trace_run(st, "app", "v2")
    assert traces.trace_run(st, rid + 1) is None


def test_history_series_round_trip_and_a_moved_revision_writes_nothing(st) -> None:  # noqa: ANN001
    rows = [history.StoredRevision("a", 0, "ok", None, (1.0, 2.0)), history.StoredRevision("b", 5, "ok", None, (3.0,))]
    sid = history.replace_series(st, "s", "ms", "test", {"k": "v"}, rows)
    assert history.series_id(st, "s") == sid and history.series_meta(st, sid) == ("ms", {"k": "v"})
    assert [(r.revision, r.order, r.status, r.values) for r in history.revisions(st, sid)] == [
        ("a", 0, "ok", (1.0, 2.0)), ("b", 5, "ok", (3.0,))]
    sid2 = history.ensure_series(st, "t", "git")
    assert history.ensure_series(st, "t", "git") == sid2
    history.add_revisions(st, sid2, ["r0", "r1", "r2"])
    with pytest.raises(HistoryError, match="range changed"):
        history.add_revisions(st, sid2, ["r1", "r0", "r9"])
    assert [r.revision for r in history.revisions(st, sid2)] == ["r0", "r1", "r2"]  # r9 was not added
    history.record_measurement(st, sid2, "r1", [5.0, 6.0], {"host": "h"})
    history.record_failure(st, sid2, "r2", "build failed", "x" * 5000)
    states = {r.revision: (r.status, r.reason, r.values) for r in history.revisions(st, sid2)}
    assert states == {"r0": ("pending", None, ()), "r1": ("ok", None, (5.0, 6.0)), "r2": ("failed", "build failed", ())}
    assert [d["name"] for d in history.list_series(st)] == ["s", "t"] and history.series_names(st, 1) == ["s"]


def test_whole_runs_irup_rows_and_recorded_irups(st) -> None:  # noqa: ANN001
    ids = imports.write_complete_runs(st, "test", "synthetic", [
        ("b1", "2026-01-01T00:00:00+00:00", [("h1", 1, "cpu", 10.0), ("h2", 1, "cpu", 20.0)]),
        ("b2", "2026-01-02T00:00:00+00:00", [("h1", 1, "cpu", 11.0)]),
    ])
    fp = irup.fingerprint_values(st, ids)
    assert sorted(zip(fp["batch"], fp["host"], fp["value"], strict=True)) == [
        ("b1", "h1", 10.0), ("b1", "h2", 20.0), ("b2", "h1", 11.0)]
    assert irup.fingerprint_values(st, []).empty and _count(st, "hosts") == 2
    assert irup.target_counts(st).empty and irup.app_values(st, "app", "").empty
    rid = irup.insert_irup(st, "app/t", "permutation", 5, 0, {"a": 1}, {"top": "cpu"})
    assert st.conn.execute("SELECT target, result_json FROM irups WHERE id = ?", (rid,)).fetchone()[:] == (
        "app/t", '{"top": "cpu"}')
