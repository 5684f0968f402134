"""Bulk writes of fingerprint runs that arrive whole: imported result files and generated data sets.

Each row is made by the module that owns its table (:mod:`quiho.store.hosts`, :mod:`quiho.store.fingerprints`);
this module only groups them into one transaction per import. Fleet runs, written host by host while they happen,
are in :mod:`quiho.store.fingerprints`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from quiho.store._db import Connection, Store
from quiho.store.fingerprints import insert_complete_run, insert_ok_measurements
from quiho.store.hosts import ensure_hosts

__all__ = ["delete_batches", "write_complete_runs"]


def delete_batches(conn: Connection, source: str, batches: Sequence[str]) -> None:
    """Forget the fingerprint and application runs of ``batches`` from ``source`` (a re-import replaces them)."""
    marks = ",".join("?" * len(batches))
    conn.execute(f"DELETE FROM app_runs WHERE source = ? AND batch IN ({marks})", (source, *batches))
    conn.execute(f"DELETE FROM fingerprint_runs WHERE source = ? AND batch IN ({marks})", (source, *batches))


def write_complete_runs(store: Store, source: str, battery: str,
                        runs: Iterable[tuple[str, str, Sequence[tuple[str, int, str, float]]]]) -> list[int]:
    """Write whole fingerprint runs ``(batch, started_at, [(host, repetition, stressor, value), ...])``.

    One transaction; hosts are created as needed. Returns the run ids in the given order.
    """
    runs = list(runs)
    ids = []
    with store.transaction() as c:
        host_ids = ensure_hosts(c, {h: {} for _, _, rows in runs for h, _, _, _ in rows})
        for batch, started, rows in runs:
            rid = insert_complete_run(c, source, batch, battery, {}, started, started)
            ids.append(rid)
            insert_ok_measurements(c, [(rid, host_ids[h], int(rep), s, float(v)) for h, rep, s, v in rows])
    return ids
