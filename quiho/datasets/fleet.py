"""Seeded fingerprint histories with known drift, and a writer that stores them like real runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from quiho.store import Store
from quiho.store.imports import write_complete_runs

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

    Many parameters because it is a seeded generator in the style of scikit-learn's ``make_*``: every knob of
    the planted truth is a keyword with a default, so a test names only the one it varies.

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
    runs = [(f"synthetic-{run:04d}", started,
             list(zip(sub["host"], sub["repetition"], sub["stressor"], sub["value"], strict=True)))
            for (run, started), sub in history.groupby(["run", "started_at"], sort=True)]
    return write_complete_runs(store, source, "synthetic", runs)
