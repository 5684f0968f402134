"""Seeded fingerprint histories with known drift, and a writer that stores them like real runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from quiho.store._db import Store

__all__ = ["fingerprint_history", "store_fingerprint_history"]

_STRESSORS = ("cpu", "matrix", "vecmath", "hash", "cache", "l1cache", "stream", "memcpy", "vm", "zero", "malloc",
              "mmap")
_MEMORY = ("stream", "memcpy", "vm", "zero")


def fingerprint_history(
    *,
    n_hosts: int = 6,
    n_runs: int = 30,
    reps: int = 2,
    stressors: Sequence[str] = _STRESSORS,
    noise: float = 0.03,
    drift_host: str | None = None,
    drift_stressors: Sequence[str] = _MEMORY,
    drift_at: int = 18,
    drift_factor: float = 0.85,
    every: timedelta = timedelta(days=1),
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    random_state: int = 0,
) -> pd.DataFrame:
    """Daily fingerprints of a fleet, optionally with one host's stressors dropping at one run.

    Returns a long table ``run, started_at, host, repetition, stressor, value``.
    Hosts ``h0``..``h{n-1}`` have independent log-normal speeds per stressor;
    every value gets multiplicative noise (std of log = ``noise``); from run
    ``drift_at`` on, ``drift_host``'s ``drift_stressors`` are multiplied by
    ``drift_factor`` (0.85 = a 15 % drop, e.g. a failing DIMM or a noisy neighbour).
    """
    rng = np.random.default_rng(random_state)
    hosts = [f"h{i}" for i in range(n_hosts)]
    base = {h: dict(zip(stressors, np.exp(rng.normal(np.log(1000), 0.5, len(stressors))), strict=True))
            for h in hosts}
    rows = []
    for r in range(n_runs):
        t = (start + r * every).isoformat()
        for h in hosts:
            for rep in range(1, reps + 1):
                for s in stressors:
                    v = base[h][s] * np.exp(rng.normal(0, noise))
                    if h == drift_host and s in drift_stressors and r >= drift_at:
                        v *= drift_factor
                    rows.append((r, t, h, rep, s, float(v)))
    return pd.DataFrame(rows, columns=["run", "started_at", "host", "repetition", "stressor", "value"])


def store_fingerprint_history(store: Store, history: pd.DataFrame, *, source: str = "fleet") -> list[int]:
    """Write a generated history into ``store`` as complete fingerprint runs; returns run ids."""
    from quiho._version import __version__
    from quiho.store._db import utcnow

    ids = []
    with store.transaction() as c:
        host_ids = {}
        for h in sorted(history["host"].unique()):
            c.execute("INSERT INTO hosts(name, facts_json, created_at) VALUES (?, '{}', ?) "
                      "ON CONFLICT(name) DO NOTHING", (h, utcnow()))
            host_ids[h] = c.execute("SELECT id FROM hosts WHERE name = ?", (h,)).fetchone()[0]
        for (run, started), sub in history.groupby(["run", "started_at"], sort=True):
            cur = c.execute(
                "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, finished_at, "
                "quiho_version) VALUES (?, ?, 'synthetic', 'complete', '{}', ?, ?, ?)",
                (source, f"synthetic-{run:04d}", started, started, __version__),
            )
            rid = int(cur.lastrowid or 0)
            ids.append(rid)
            c.executemany(
                "INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status) "
                "VALUES (?, ?, ?, ?, ?, 'bogo-ops/s', 'ok')",
                [(rid, host_ids[h], int(rep), s, float(v)) for h, rep, s, v in
                 zip(sub["host"], sub["repetition"], sub["stressor"], sub["value"], strict=True)],
            )
    return ids
