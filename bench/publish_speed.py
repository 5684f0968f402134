"""Wall time of ``quiho publish`` on a large store: 1,000 series, 100 profiles, 100 targets, fleets; cold, warm,
incremental.

Run: ``python bench/publish_speed.py [--series 1000] [--profiles 100] [--revisions 100] [--targets 100]
[--hosts 8] [--traced 10] [--calls 100000]``. Prints a table; asserts nothing. The store is generated first
(not timed): series of ``--revisions`` revisions × 3 repetitions with a 10 % step in every other one
(``quiho.datasets.history.step_history``), a fleet of 8 hosts × 30 daily fingerprint runs × 12 stressors with one
drifting host (``quiho.datasets.fleet``), one planted profile (``quiho.datasets.planted_profile``, analysed once)
stored under ``--profiles`` batch labels, and ``--targets`` applications measured 3 times on each of ``--hosts``
distinct machines fingerprinted by 12 stressors, each application bound by one of them (written as a quiho-popper
``results.csv`` and imported by ``quiho import quiho-popper``'s importer: a second fingerprint source), and
``--traced`` traced profiles (the planted document with a ``traces`` entry; 2 hosts x 2 versions x 2 functions of
``--calls`` calls each, real Parquet calls files through ``save_trace``). Rows:

- cold: an empty directory and an empty IRUP cache: every file written, every target's IRUP computed (``quiho
  irup``'s defaults: 10 seeds, the batched engine, every core);
- warm: republished with no new data: nothing written, no IRUP computed;
- warm, calls cache emptied: as warm, but the traced profiles' cached call samples deleted first, so every calls
  file is read again (what each republish cost before the cache, issue 49);
- incremental: 10 series got a new revision, one profile was added and one target's runs changed: only their
  pages and the lists change, one IRUP is computed.

The cold split (read / render / write) is measured first, on its own store copy's cache, so the cold row computes
its IRUPs too. The target (issue 49) is ≤ 60 s for the cold publish on 2 cores, ≤ 5 s for the warm one.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
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


def build_traced(store: Store, n: int, calls: int) -> None:
    """``n`` traced profiles: the planted document with a ``traces`` entry and real calls files behind it."""
    import pandas as pd

    from quiho.profile import load_profile
    from quiho.trace import CallStats, TraceSource, save_trace

    doc = load_profile(store, "profile-0000")
    rng = np.random.default_rng(7)
    for i in range(n):
        app, batch = f"traced{i:03d}", f"traced-{i:03d}"
        for host in ("h1", "h2"):
            for version, scale in (("v1", 1.0), ("v2", 1.3)):
                df = pd.concat([pd.DataFrame({
                    "function": f, "tid": 1, "order": np.arange(calls), "start_ns": np.arange(calls) * 10_000,
                    "inclusive_ns": y, "exclusive_ns": y, "depth": 0, "arg": 0})
                    for f, y in (("steady", (1000 + rng.normal(0, 20, calls)).astype(np.int64)),
                                 ("slower", (5000 * scale + rng.normal(0, 20, calls)).astype(np.int64)))],
                    ignore_index=True)
                df["function"] = df["function"].astype("category")
                save_trace(store, app, version, df, CallStats(2 * calls, 2 * calls, 0, 0, 0, 0, 0),
                           TraceSource(command=app, engine="bpftrace", functions=("steady", "slower"), host=host,
                                       batch=batch, wall_s=1.0))
        traces = {"functions": [], "hosts": {}, "traced_runs": 4, "detector": "bench"}
        save_profile_row(store, ProfileRow(
            batch=batch, application=app, version_a="v1", version_b="v2", status=doc["status"],
            verdict=doc["verdict"], irup_verdict=doc["irup"]["verdict"], partial=[], fingerprint_run_id=None,
            document={**doc, "batch": batch, "application": app, "version_a": "v1", "label_b": "v2",
                      "traces": traces}, schema_version=doc["schema_version"], quiho_version="bench"))


def build_fleet(store: Store) -> None:
    hist = fingerprint_history(n_hosts=8, n_runs=30, drift_host="h3")
    store_fingerprint_history(store, hist)
    remember_hosts(store, "inventory.yml", [(f"h{i}", ["bench"], {}) for i in range(8)])


_STRESSORS = ("cpu", "matrix", "stream", "memcpy", "vm", "cache", "zero", "hdd", "fork", "pipe", "atomic", "malloc")


def build_targets(store: Store, n_targets: int, n_hosts: int, tmp: Path) -> None:
    """``n_targets`` applications on ``n_hosts`` machines, each bound by one stressor, through the popper importer."""
    from quiho.store.popper import import_quiho_popper

    rng = np.random.default_rng(1)
    machines = [f"m{i:02d}.bench" for i in range(n_hosts)]
    scores = {m: dict(zip(_STRESSORS, rng.lognormal(8, 0.5, len(_STRESSORS)), strict=True)) for m in machines}
    head = "giturl,commit,user,timestamp,benchmark,machine,repetition,test,result\n"
    lines = []
    for m in machines:
        for rep in (1, 2, 3):
            lines += [f"bench,0,u,1000,stressng,{m},{rep},{s},{v * rng.normal(1, 0.01):.6f}"
                      for s, v in scores[m].items()]
    for k in range(n_targets):
        bound = _STRESSORS[k % len(_STRESSORS)]
        for m in machines:
            for rep in (1, 2, 3):
                lines.append(f"bench,0,u,1000,app{k:03d},{m},{rep},app{k:03d},"
                             f"{1e6 / scores[m][bound] * rng.normal(1, 0.02):.6f}")
    path = tmp / "results.csv"
    path.write_text(head + "\n".join(lines) + "\n")
    import_quiho_popper(store, path)


def timed_publish(store: Store, site: Path) -> tuple[float, float, object]:
    """(wall s, CPU s of this process, result) of one publish."""
    t, c = time.perf_counter(), time.process_time()
    res = publish(store, site)
    return time.perf_counter() - t, time.process_time() - c, res


def split_cold(store: Store, site: Path) -> tuple[float, float, float]:
    """(read and analyse, render, write) wall seconds of a publish into an empty directory."""
    opts = PublishOptions()
    t0 = time.perf_counter()
    data = read_site(store, opts)
    t1 = time.perf_counter()
    files = render_site(data, opts)
    t2 = time.perf_counter()
    write_site(site, files)
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--profiles", type=int, default=100)
    ap.add_argument("--revisions", type=int, default=100)
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--traced", type=int, default=10, help="traced profiles (0: none)")
    ap.add_argument("--calls", type=int, default=100_000, help="calls per function per traced run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        with open_store(Path(d) / "q.db") as store:
            t = time.perf_counter()
            build_series(store, args.series, args.revisions)
            build_fleet(store)
            build_profiles(store, args.profiles)
            build_targets(store, args.targets, args.hosts, Path(d))
            build_traced(store, args.traced, args.calls)
        shutil.copy(Path(d) / "q.db", Path(d) / "split.db")
        print(f"store built in {time.perf_counter() - t:.1f} s (not timed below); {os.cpu_count()} CPUs visible; "
              "publish reads and renders on one, the IRUP fits use every core")
        with open_store(Path(d) / "split.db", create=False) as split:
            read_s, render_s, write_s = split_cold(split, Path(d) / "split")
        store = open_store(Path(d) / "q.db", create=False)
        rows = [("cold", *timed_publish(store, Path(d) / "site"))]
        rows.append(("warm (no new data)", *timed_publish(store, Path(d) / "site")))
        with store.transaction() as c:
            c.execute("DELETE FROM site_results WHERE kind = 'calls'")
        rows.append((f"warm, calls cache emptied ({args.traced} traced)", *timed_publish(store, Path(d) / "site")))
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
        with store.transaction() as c:  # one target's runs change: its IRUP alone is recomputed
            c.execute("UPDATE app_runs SET value = value * 1.5 WHERE application = 'app000' AND repetition = 1")
        rows.append(("incremental (10 series, 1 profile, 1 target)", *timed_publish(store, Path(d) / "site")))
        store.close()
    print(f"\ncold split (wall s): read + analyse (IRUPs included) {read_s:.2f}, render {render_s:.2f}, "
          f"write {write_s:.2f}\n")
    print(f"| {'case':44} | series | hosts | targets | IRUPs computed | profiles | files | written | unchanged "
          "| wall s | CPU s |")
    print(f"|{'-' * 46}|-------:|------:|--------:|---------------:|---------:|------:|--------:|----------:|-------:"
          "|------:|")
    for name, sec, cpu, r in rows:
        print(f"| {name:44} | {r.series:6} | {r.hosts:5} | {r.targets:7} | {r.irups_computed:14} | "  # type: ignore[attr-defined]
              f"{r.profiles:8} | {r.pages:5} | {len(r.written):7} | {r.unchanged:9} | {sec:6.2f} | "  # type: ignore[attr-defined]
              f"{cpu:5.2f} |")
    print(f"\nload average while measuring: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
