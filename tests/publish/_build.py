"""Stores to publish, built with the real importers and the seeded generators of ``quiho.datasets``."""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
from quiho.datasets.history import step_history
from quiho.history import import_history_csv, read_history_csv
from quiho.store import Store
from quiho.store.hosts import remember_hosts


def write_history_csv(path: Path, names: Sequence[str], n: int = 60, reps: int = 3, seed: int = 0) -> Path:
    """One CSV of ``len(names)`` series (column ``bench``), ``n`` revisions each, a step at 2/3 in every other one.

    Every series gets ``reps`` repetitions per revision; series ``k`` steps up by 15 % at revision ``2n/3`` when
    ``k`` is even and stays flat otherwise (the truth the pages must show).
    """
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["bench", "revision", "order", "value"])
        for k, name in enumerate(names):
            cps = (2 * n // 3,) if k % 2 == 0 else ()
            levels = (100.0, 115.0) if cps else (100.0,)
            case = step_history(n=n, change_points=cps, levels=levels, noise=1.0, random_state=int(rng.integers(2**31)))
            for i, v in enumerate(case.values):
                for _ in range(reps):
                    w.writerow([name, f"rev{i:04d}", i, f"{v + rng.normal(0, 0.5):.6f}"])
    return path


def add_histories(store: Store, tmp: Path, names: Sequence[str], **kw: int) -> int:
    """Import generated series through the CSV importer (``quiho history import``'s path); returns the count."""
    p = write_history_csv(tmp / "history.csv", names, **kw)
    hs = read_history_csv(p, config_cols=["bench"], order_col="order", unit="s", name="suite")
    import_history_csv(store, p, hs)
    return len(hs)


def add_fleet(store: Store, hosts: int = 4, runs: int = 12, drift_host: str | None = "h1") -> None:
    """A fleet's fingerprint history with one host's memory stressors dropping 15 %, and its inventory record."""
    hist = fingerprint_history(n_hosts=hosts, n_runs=runs, drift_host=drift_host, drift_at=runs // 2,
                               stressors=("cpu", "matrix", "stream", "memcpy", "vm", "cache"))
    store_fingerprint_history(store, hist)
    remember_hosts(store, "inventory.yml", [(f"h{i}", ["bench"], {}) for i in range(hosts)])


def add_profiles(store: Store, result: object, batches: Sequence[str]) -> None:
    """Save ``result`` (a ProfileResult) under each batch label, as ``quiho profile`` stores one."""
    from quiho.profile import save_profile

    for b in batches:
        save_profile(store, dataclasses.replace(result, batch=b))  # type: ignore[type-var]
