"""False flags and detection of ``quiho profile --trace``'s per-function verdicts, on real traces.

Runs ``tags@v1`` against itself ``--self`` times (any flagged function is a false flag) and ``tags@v1`` against
``tags@v2`` ``--detect`` times (``find_tag`` is the one real change), on a small local fleet (three hosts: plain,
CPU quota 70 % and 50 %; or ``-i INVENTORY``), with real bpftrace uprobes. Every profile's traces are then read
back from the store twice: as ``quiho profile`` reads them (a host's flag must also hold across its traced runs,
``quiho.detect.runs_agree``) and with the calls alone (the joint detector's verdict as is). One row per
profile and reading: hosts flagged per function, and the fleet's verdict. Needs root (cgroups, bpftrace), gcc and
stress-ng.

    python bench/trace_false_positives.py --self 4 --detect 1 --store /tmp/trace-fp.db
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import quiho.profile.traces as traces
from quiho.store import open_store

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
FUNCTIONS = ("find_tag", "make_key", "score_tag")


def _spec(d: Path, runs: int) -> Path:
    versions = "".join(
        f"  {v}:\n    setup: [gcc, -O2, -g, -fno-inline, -o, {d}/tags-{v}, tags.c]\n"
        f"    command: [{d}/tags-{v}, '20000', '400']\n    workdir: {REPO}/examples/trace/{v}\n" for v in ("v1", "v2"))
    path = d / "tags.yml"
    path.write_text(f"schema_version: 1\nname: tags\nversions:\n{versions}metric: {{kind: runtime, unit: s}}\n"
                    f"repetitions: 2\ntimeout: 60\ntrace: {{functions: [{', '.join(FUNCTIONS)}], runs: {runs}}}\n")
    return path


def _cells(ft: traces.FleetTraces) -> tuple[str, list[str]]:
    by = {f.function: f for f in ft.functions}
    cells = []
    for fn in FUNCTIONS:
        f = by.get(fn)
        if f is None:
            cells.append("n/a")
            continue
        cells.append(f"{f.verdict.value} {f.magnitude:+.1%} ({f.degradations}↑ {f.optimizations}↓ of {f.hosts})")
    flagged = ",".join(f.function for f in ft.functions if f.flagged) or "none"
    return flagged, cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self", dest="n_self", type=int, default=4, help="tags@v1 vs tags@v1 profiles")
    ap.add_argument("--detect", type=int, default=1, help="tags@v1 vs tags@v2 profiles")
    ap.add_argument("--trace-runs", type=int, default=3, help="traced runs per version per host")
    ap.add_argument("--store", type=Path, default=None, help="store (default: a temporary file)")
    ap.add_argument("-i", "--inventory", type=Path, default=None, help="inventory (default: 3 local hosts)")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="quiho-tfp-"))
    inv = args.inventory or d / "hosts.yml"
    if args.inventory is None:
        inv.write_text(HOSTS)
    store = args.store or d / "q.db"
    spec = _spec(d, args.trace_runs)
    print(f"store {store}; inventory {inv}; {args.trace_runs} traced runs per version per host", flush=True)
    print("| profile | reading | flagged | " + " | ".join(FUNCTIONS) + " |")
    print("|---|---|---|" + "---|" * len(FUNCTIONS), flush=True)
    tally: dict[tuple[str, str], list[int]] = {}
    plan = [("self", "tags@v1", "tags@v1")] * args.n_self + [("detect", "tags@v1", "tags@v2")] * args.detect
    for i, (kind, a, b) in enumerate(plan, 1):
        cmd = [sys.executable, "-m", "quiho", "profile", a, b, "--spec", str(spec), "-i", str(inv), "--store",
               str(store), "--max-age", "6h", "--fingerprint-repetitions", "1", "--seeds", "2", "--json"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0 or not out.stdout.strip():
            print(f"| {kind} {i} | failed: {out.stderr.strip().splitlines()[-1:]} |", flush=True)
            continue
        doc = json.loads(out.stdout)
        batch, app, va, lb = doc["batch"], doc["application"], doc["version_a"], doc["label_b"]
        with open_store(store) as st:
            for reading in ("calls and runs", "calls alone"):
                ft = traces.fleet_traces(st, app, va, lb, batch, run_check=reading == "calls and runs")
                if ft is None:
                    print(f"| {kind} {i} | {reading} | no traces |", flush=True)
                    continue
                flagged, cells = _cells(ft)
                print(f"| {kind} {i} | {reading} | {flagged} | " + " | ".join(cells) + " |", flush=True)
                def unchanged(function: str, kind: str = kind) -> bool:  # find_tag is v2's one real change
                    return kind == "self" or function != "find_tag"

                hosts = [c for cs in ft.per_host.values() for c in cs if unchanged(c.function)]
                fleet = [f for f in ft.functions if unchanged(f.function)]
                t = tally.setdefault((kind, reading), [0, 0, 0, 0])
                t[0] += sum(c.flagged for c in hosts)
                t[1] += len(hosts)
                t[2] += sum(f.flagged for f in fleet)
                t[3] += len(fleet)
    print()
    print("| profiles | reading | host flags of unchanged functions | fleet flags of unchanged functions |")
    print("|---|---|---|---|")
    for (kind, reading), (hf, hn, ff, fn) in sorted(tally.items()):
        print(f"| {kind} | {reading} | {hf} of {hn} | {ff} of {fn} |")


if __name__ == "__main__":
    main()
