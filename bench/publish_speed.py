"""Wall time of ``quiho publish`` on a large store: 1,000 series, 100 profiles, a fleet; cold, warm, incremental.

Run: ``python bench/publish_speed.py [--series 1000] [--profiles 100] [--revisions 100]``. Prints a table;
asserts nothing. The store is generated first (not timed): series of ``--revisions`` revisions × 3 repetitions
with a 10 % step in every other one (``quiho.datasets.history.step_history``), a fleet of 8 hosts × 30 daily
fingerprint runs × 12 stressors with one drifting host (``quiho.datasets.fleet``), and one planted profile
(``quiho.datasets.planted_profile``, analysed once) stored under ``--profiles`` batch labels. Rows:

- cold: an empty directory; every file written (the ``read`` / ``render`` / ``write`` split is shown);
- warm: republished with no new data: nothing written;
- incremental: 10 series got a new revision and one profile was added: only their pages and the lists change.

The target (issue 29) is ≤ 60 s for the cold publish on 2 cores; publish itself uses one.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
from quiho.datasets.history import step_history
from quiho.history import History, save_history
from quiho.publish import PublishOptions, publish, render_site
from quiho.publish._collect import read_site
from quiho.publish._site import write_site
from quiho.store import Store, open_store
from quiho.store import history as history_store
from quiho.store.hosts import remember_hosts
from quiho.store.profiles import ProfileRow, save_profile_row


def build_series(store: Store, n_series: int, n_rev: int) -> None:
    rng = np.random.default_rng(0)
    revs = tuple(f"{i:07x}" for i in range(n_rev))
    for k in range(n_series):
        cps = (n_rev * 2 // 3,) if k % 2 == 0 else ()
        case = step_history(n=n_rev, change_points=cps, levels=(100.0, 110.0) if cps else (100.0,), noise=1.0,
                            random_state=k)
        samples = tuple(v + rng.normal(0, 0.5, 3) for v in case.values)
        save_history(store, History(f"suite/bench-{k:04d}", revs, np.arange(n_rev), samples, "s"), "bench")


def build_profiles(store: Store, n: int) -> None:
    from quiho.datasets import planted_profile
    from quiho.irup import ModelParams
    from quiho.profile import AnalysisOptions, ProfileData, analyse_data, host_fingerprints, save_profile

    stressors = ("cpu", "matrix", "stream", "zero", "vm", "cache")
    runs, a, b = planted_profile(n_groups=8, spread=0.5, change=1.3, stressors=stressors, application="app",
                                 version_a="v1", version_b="v2")
    data = ProfileData(runs, a, b, application="app", version_a="v1", version_b="v2", unit="s",
                       fingerprints=host_fingerprints(a))
    res = analyse_data(data, AnalysisOptions(seeds=3, model_params=ModelParams(n_estimators=100), n_jobs=1))
    for i in range(n):
        save_profile(store, dataclasses.replace(res, batch=f"profile-{i:04d}", application=f"app{i % 10}"))


def build_fleet(store: Store) -> None:
    hist = fingerprint_history(n_hosts=8, n_runs=30, drift_host="h3")
    store_fingerprint_history(store, hist)
    remember_hosts(store, "inventory.yml", [(f"h{i}", ["bench"], {}) for i in range(8)])


def timed_publish(store: Store, site: Path) -> tuple[float, float, object]:
    """(wall s, CPU s of this process, result) of one publish."""
    t, c = time.perf_counter(), time.process_time()
    res = publish(store, site)
    return time.perf_counter() - t, time.process_time() - c, res


def split_cold(store: Store, site: Path) -> tuple[float, float, float]:
    """(read and analyse, render, write) CPU seconds of a publish into an empty directory."""
    opts = PublishOptions()
    t0 = time.process_time()
    data = read_site(store, opts)
    t1 = time.process_time()
    files = render_site(data, opts)
    t2 = time.process_time()
    write_site(site, files)
    return t1 - t0, t2 - t1, time.process_time() - t2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--profiles", type=int, default=100)
    ap.add_argument("--revisions", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "q.db") as store:
        t = time.perf_counter()
        build_series(store, args.series, args.revisions)
        build_fleet(store)
        build_profiles(store, args.profiles)
        print(f"store built in {time.perf_counter() - t:.1f} s (not timed below); {os.cpu_count()} CPUs visible, "
              "publish uses one")
        read_s, render_s, write_s = split_cold(store, Path(d) / "split")
        rows = [("cold", *timed_publish(store, Path(d) / "site"))]
        rows.append(("warm (no new data)", *timed_publish(store, Path(d) / "site")))
        for k in range(0, 20, 2):
            sid = history_store.series_id(store, f"suite/bench-{k:04d}")
            assert sid is not None
            history_store.append_revision(store, sid, "new")
            history_store.record_measurement(store, sid, "new", [130.0, 131.0, 129.0])
        from quiho.profile import load_profile

        doc = load_profile(store, "profile-0000")
        save_profile_row(store, ProfileRow(
            batch="profile-new", application="app-new", version_a="v1", version_b="v2", status=doc["status"],
            verdict=doc["verdict"], irup_verdict=doc["irup"]["verdict"], partial=[], fingerprint_run_id=None,
            document={**doc, "batch": "profile-new"}, schema_version=doc["schema_version"], quiho_version="bench"))
        rows.append(("incremental (10 series +1 rev, +1 profile)", *timed_publish(store, Path(d) / "site")))
    print(f"\ncold split (CPU s): read + analyse {read_s:.2f}, render {render_s:.2f}, write {write_s:.2f}\n")
    print(f"| {'case':44} | series | hosts | profiles | files | written | unchanged | wall s | CPU s |")
    print(f"|{'-' * 46}|-------:|------:|---------:|------:|--------:|----------:|-------:|------:|")
    for name, sec, cpu, r in rows:
        print(f"| {name:44} | {r.series:6} | {r.hosts:5} | {r.profiles:8} | {r.pages:5} | "  # type: ignore[attr-defined]
              f"{len(r.written):7} | {r.unchanged:9} | {sec:6.2f} | {cpu:5.2f} |")  # type: ignore[attr-defined]
    print(f"\nload average while measuring: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
