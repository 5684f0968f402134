"""False flags, side bias and detection of ``quiho profile --trace``'s per-function verdicts, on real traces.

Runs ``tags@v1`` against itself ``--self`` times (any flagged function is a false flag), ``tags@v1`` against
``tags@v2`` ``--detect`` times (``find_tag`` is the one real change) and ``zlib@l1`` against ``zlib@l9`` ``--zlib``
times (``deflate`` in the system libz is a real degradation), on a local fleet with real bpftrace uprobes:
``--hosts 3`` (plain, CPU quota 70 % and 50 %), ``--hosts 8`` (``inventories/local.yml``: quota 100/94/88/82 % x
transparent huge pages never/always) or ``-i INVENTORY``. Every profile's traces are then read back from the
store twice: as ``quiho profile`` reads them (a host's flag must also hold across its traced runs,
``quiho.detect.runs_agree``) and with the calls alone. One row per profile and reading: the fleet's verdict per
function (median change over hosts, hosts up/down), and ``side diff``: per host the median of side 2's run
medians over side 1's, minus 1, then the median over hosts and functions that did not change (a self-comparison
should read 0). ``load`` is the 1-minute load average when the profile started. Needs root (cgroups, bpftrace),
gcc and stress-ng.

    python bench/trace_false_positives.py --hosts 8 --self 10 --detect 1 --store /tmp/trace-fp.db
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import quiho.profile.traces as traces
from quiho.store import open_store
from quiho.store.traces import batch_trace_runs
from quiho.trace import find_trace_run, read_calls

REPO = Path(__file__).resolve().parents[1]
HOSTS = """all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    tfp-plain: {}
    tfp-q70: {quiho_cpu_quota_pct: 70}
    tfp-q50: {quiho_cpu_quota_pct: 50}
"""
FUNCTIONS = {"tags": ("find_tag", "make_key", "score_tag"), "zlib": ("deflate",)}
#: the function each kind of profile really changed (every other one is unchanged)
CHANGED = {"self": None, "detect": "find_tag", "zlib": "deflate"}


def _spec(d: Path, runs: int) -> Path:
    versions = "".join(
        f"  {v}:\n    setup: [gcc, -O2, -g, -fno-inline, -o, {d}/tags-{v}, tags.c]\n"
        f"    command: [{d}/tags-{v}, '20000', '400']\n    workdir: {REPO}/examples/trace/{v}\n" for v in ("v1", "v2"))
    path = d / "tags.yml"
    fns = ", ".join(FUNCTIONS["tags"])
    path.write_text(f"schema_version: 1\nname: tags\nversions:\n{versions}metric: {{kind: runtime, unit: s}}\n"
                    f"repetitions: 2\ntimeout: 60\ntrace: {{functions: [{fns}], runs: {runs}}}\n")
    return path


def _side_diffs(st: object, app: str, batch: str, va: str, lb: str) -> dict[str, list[float]]:
    """Per function: per host, median of side 2's run medians / side 1's - 1."""
    per_host: dict[str, dict[str, dict[str, list[float]]]] = {}
    for row in batch_trace_runs(st, app, batch):  # type: ignore[arg-type]
        calls = read_calls(find_trace_run(st, str(row.id)))  # type: ignore[arg-type]
        meds = calls.groupby("function", observed=True)["inclusive_ns"].median()
        for fn, m in meds.items():
            per_host.setdefault(row.host, {}).setdefault(str(fn), {}).setdefault(row.version, []).append(float(m))
    out: dict[str, list[float]] = {}
    for fns in per_host.values():
        for fn, by in fns.items():
            if by.get(va) and by.get(lb):
                out.setdefault(fn, []).append(float(np.median(by[lb]) / np.median(by[va]) - 1))
    return out


def _row(ft: traces.FleetTraces, kind: str, functions: tuple[str, ...], diffs: dict[str, list[float]]) -> list[str]:
    by = {f.function: f for f in ft.functions}
    cells = []
    for fn in functions:
        f = by.get(fn)
        d = f"; runs {np.median(diffs[fn]):+.1%}" if diffs.get(fn) else ""
        cells.append("n/a" if f is None else
                     f"{f.verdict.value} {f.magnitude:+.1%} ({f.degradations}↑ {f.optimizations}↓ of {f.hosts}){d}")
    flagged = ",".join(f.function for f in ft.functions if f.flagged) or "none"
    same = [x for fn, xs in diffs.items() if fn != CHANGED[kind] for x in xs]
    side = f"{np.median(same):+.1%}" if same else "n/a"
    return [flagged, side, *cells]


def _profile(a: str, b: str, spec: Path, inv: Path, store: Path, args: argparse.Namespace) -> tuple[str, str, str]:
    """``quiho profile A B --json`` (measured runs, fingerprints, traces); (batch, version_a, label_b)."""
    extra = ["--trace-runs", str(args.trace_runs)] if a.startswith("zlib@") else []
    cmd = [sys.executable, "-m", "quiho", "profile", a, b, "--spec", str(spec), "-i", str(inv), "--store",
           str(store), "--battery", "quick", "--max-age", "6h", "--fingerprint-repetitions", "1", "--seeds", "2",
           "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 3) or not out.stdout.strip():
        raise RuntimeError(str(out.stderr.strip().splitlines()[-1:]))
    doc = json.loads(out.stdout)
    return doc["batch"], doc["version_a"], doc["label_b"]


def _traces_only(a: str, b: str, spec_path: Path, inv: Path, store: Path,
                 args: argparse.Namespace) -> tuple[str, str, str]:
    """Only the profile's tracing step (:func:`quiho.trace.fleet.run_fleet_traces`, same playbook and order),
    without its measured runs and fingerprints; the versions' setups (builds) run here first."""
    from quiho.app import TraceSpec
    from quiho.fleet.inventory import load_inventory
    from quiho.profile import resolve_spec
    from quiho.profile.interleave import store_label
    from quiho.trace.fleet import resolve_trace, run_fleet_traces

    (app, va), (_, vb) = a.split("@"), b.split("@")
    spec = resolve_spec(app, spec=spec_path)
    for v in {va, vb}:
        ver = spec.versions[v]
        if ver.setup:
            subprocess.run(list(ver.setup), cwd=ver.workdir or None, check=True)
    want = spec.trace or TraceSpec(functions=FUNCTIONS[app], runs=args.trace_runs)
    plan = resolve_trace(spec, va, vb, want.model_copy(update={"runs": args.trace_runs}))
    batch = f"tfp-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    lb = store_label(va, vb)
    with open_store(store) as st:
        res = run_fleet_traces(spec, dataclasses.replace(plan, labels={"1": va, "2": lb}), load_inventory(inv),
                               store=st, batch=batch)
    if not res.stored:
        raise RuntimeError(f"no traced run stored: {res.host_messages()}")
    return batch, va, lb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self", dest="n_self", type=int, default=4, help="tags@v1 vs tags@v1 profiles")
    ap.add_argument("--detect", type=int, default=1, help="tags@v1 vs tags@v2 profiles")
    ap.add_argument("--zlib", type=int, default=0, help="zlib@l1 vs zlib@l9 profiles (examples/trace/zlib.yml)")
    ap.add_argument("--trace-runs", type=int, default=3, help="traced runs per version per host")
    ap.add_argument("--store", type=Path, default=None, help="store (default: a temporary file)")
    ap.add_argument("--hosts", type=int, choices=(3, 8), default=3,
                    help="3: plain, quota 70 %% and 50 %%; 8: inventories/local.yml (quota x THP)")
    ap.add_argument("-i", "--inventory", type=Path, default=None, help="inventory (overrides --hosts)")
    ap.add_argument("--traces-only", action="store_true",
                    help="run only the profiles' tracing step (no measured runs, no fingerprints): same traces, "
                         "about half the time")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="quiho-tfp-"))
    inv = args.inventory or (REPO / "inventories" / "local.yml" if args.hosts == 8 else d / "hosts.yml")
    if args.inventory is None and args.hosts == 3:
        inv.write_text(HOSTS)
    store = args.store or d / "q.db"
    specs = {"tags": _spec(d, args.trace_runs), "zlib": REPO / "examples" / "trace" / "zlib.yml"}
    print(f"store {store}; inventory {inv}; {args.trace_runs} traced runs per version per host", flush=True)
    names = sorted({f for fs in FUNCTIONS.values() for f in fs}, key=lambda f: (f == "deflate", f))
    print("| profile | load | min | reading | flagged | side diff (runs, unchanged) | " + " | ".join(names) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(names), flush=True)
    tally: dict[tuple[str, str], list[int]] = {}
    sides: dict[str, list[float]] = {}
    plan = ([("detect", "tags@v1", "tags@v2")] * args.detect + [("zlib", "zlib@l1", "zlib@l9")] * args.zlib
            + [("self", "tags@v1", "tags@v1")] * args.n_self)
    for i, (kind, a, b) in enumerate(plan, 1):
        app = a.split("@")[0]
        load, t0 = os.getloadavg()[0], time.monotonic()
        try:
            batch, va, lb = (_traces_only if args.traces_only else _profile)(a, b, specs[app], inv, store, args)
        except RuntimeError as exc:
            print(f"| {kind} {i} | {load:.1f} | {(time.monotonic() - t0) / 60:.1f} | failed: {exc} |", flush=True)
            continue
        took = (time.monotonic() - t0) / 60
        with open_store(store) as st:
            diffs = _side_diffs(st, app, batch, va, lb)
            for reading in ("calls and runs", "calls alone"):
                ft = traces.fleet_traces(st, app, va, lb, batch,
                                         settings=traces.FleetTraceSettings(run_check=reading == "calls and runs"))
                if ft is None:
                    print(f"| {kind} {i} | {load:.1f} | {took:.1f} | {reading} | no traces |", flush=True)
                    continue
                cells = _row(ft, kind, tuple(f for f in names if f in FUNCTIONS[app]), diffs)
                cells += ["" for f in names if f not in FUNCTIONS[app]]
                print(f"| {kind} {i} | {load:.1f} | {took:.1f} | {reading} | " + " | ".join(cells) + " |", flush=True)
                hosts = [c for cs in ft.per_host.values() for c in cs if c.function != CHANGED[kind]]
                fleet = [f for f in ft.functions if f.function != CHANGED[kind]]
                t = tally.setdefault((kind, reading), [0, 0, 0, 0, 0, 0, 0, 0])
                t[0] += sum(c.flagged for c in hosts)
                t[1] += len(hosts)
                t[2] += sum(f.flagged for f in fleet)
                t[3] += len(fleet)
                t[4] += not any(f.flagged for f in fleet)
                t[5] += 1
                t[7] += len(ft.per_host)
                if CHANGED[kind]:  # hosts that flag the real change and nothing else
                    t[6] += sum(any(c.flagged and c.function == CHANGED[kind] for c in cs)
                                and not any(c.flagged and c.function != CHANGED[kind] for c in cs)
                                for cs in ft.per_host.values())
        sides.setdefault(kind, []).extend(x for fn, xs in diffs.items() if fn != CHANGED[kind] for x in xs)
    print()
    print("| profiles | reading | no unchanged function flagged (fleet) | host flags of unchanged functions | "
          "fleet flags of unchanged functions | hosts flagging only the real change |")
    print("|---|---|---|---|---|---|")
    for (kind, reading), (hf, hn, ff, fn, clean, n, only, nh) in sorted(tally.items()):
        real = f"{only} of {nh}" if CHANGED[kind] else "-"
        print(f"| {kind} | {reading} | {clean} of {n} | {hf} of {hn} | {ff} of {fn} | {real} |")
    print()
    for kind, xs in sides.items():
        if not xs:  # zlib traces deflate alone: nothing unchanged to compare
            continue
        print(f"side diff of unchanged functions, {kind}: median {np.median(xs):+.2%} over {len(xs)} host x function "
              f"x profile cells (IQR {np.percentile(xs, 25):+.1%} .. {np.percentile(xs, 75):+.1%})")


if __name__ == "__main__":
    main()
