"""Stored traced runs: each store's calls stay its own, also beside another store in the same directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quiho.store import open_store
from quiho.trace import CallStats, TraceSource, load_trace, save_trace


def test_two_stores_in_one_directory_keep_their_own_calls(tmp_path: Path, synthetic_calls: Any) -> None:
    """Run ids count per store: the Parquet file must be named per store, or the second store's run 1 overwrites the
    first's (this garbled a bench: three stores in /tmp/t30 read each other's traces)."""
    stats = CallStats(400, 400, 0, 0, 0, 0, 0)
    for name, scale in (("a.db", 1.0), ("b.db", 3.0)):
        with open_store(tmp_path / name) as st:
            run = save_trace(st, "app", "v1", synthetic_calls(200, scale, seed=1), stats,
                             TraceSource(command="app", engine="bpftrace", functions=("steady", "slower")))
            assert run.id == 1 and run.calls_path.parent == tmp_path / "traces"
    means = {}
    for name in ("a.db", "b.db"):
        with open_store(tmp_path / name) as st:
            _, calls = load_trace(st, "1")
        means[name] = calls[calls["function"] == "slower"]["inclusive_ns"].mean()
    assert 4900 < means["a.db"] < 5100 and 14900 < means["b.db"] < 15100, means
