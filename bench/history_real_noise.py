"""History detectors and the CI gate on real benchmark noise: A/A histories recorded on this machine.

    python bench/history_real_noise.py record OUT.csv [--builds 1200]     # ~12 min on a quiet 2-core VM
    python bench/history_real_noise.py analyse OUT.csv [--gate] [--null-series 10000]

Every false-alarm rate quiho prints for its history verdicts was measured on generated noise (Gaussian, AR(1),
bimodal, spikes: ``quiho.datasets``) or on TCPD's annotated series; this bench measures them on the noise of
real benchmark runs, where every build is the same code (an A/A history), next to the power on that noise.

Protocol (fixed here, in the commit that added this file, before any recording was made or looked at)
---------------------------------------------------------------------------------------------------
Record
    Three of quiho's example programs, built with ``gcc -O2`` from ``examples/``: ``cpuloop 10000000`` (CPU),
    ``pchase 262144 2097152`` (memory latency, 16 MiB) and ``stream-nadds1 2`` (memory bandwidth). Each *build*
    runs the three in a seeded random order, 3 runs each (a CI job measuring 3 benchmarks with 3 repetitions);
    a run records the program's own ``time_s`` (the kernel time it prints) and the process's wall time. Rows
    are flushed per build; a rerun on the same file resumes after its last complete build.
Series and windows
    6 series (3 programs x {time_s, wall_s}); each is cut into non-overlapping windows of :data:`WINDOW` builds,
    one history each (3 samples per revision). Windows of one program's two metrics share their runs, so they
    are not independent of each other; windows of one series follow each other in time.
Detectors
    Every candidate of ``bench/history_protocol.py`` with fixed defaults (the tuned candidate is left out:
    it has no training data here) and its peers, on the History (so repetitions are one revision).
A/A
    Every change point is a false alarm. Reported per detector: windows with at least one, and the total; next
    to q0, the share of :data:`NULL_SEED`-seeded independent Gaussian series of :data:`WINDOW` values with
    any change point (the rate the method has on independent noise), and the one-sided exact binomial p of the
    real windows' share exceeding q0 (are real series harder than independent noise?).
Power on the same noise
    In every window, a step of +2 %, +5 % and +10 % (all runs of the builds from k on multiplied by 1 + delta),
    k drawn uniformly from 15..45 with :data:`PLANT_SEED` (one k per window, the same for every delta and
    detector). Found: a change point within :data:`MARGIN` builds of k; other change points are false alarms.
CI gate (``--gate``)
    :func:`quiho.history.run_gate` with quiho's default :class:`~quiho.history.GateOptions` after every build
    (``bench/history_alerts.py``'s walk), on the A/A windows (every alert is false: alerts per 100 checked
    builds) and on the +5 % and +10 % windows (caught: an alert whose first bad build is k..k+3; false: an alert
    whose first bad build is before k).
Nothing here chooses a method or changes a default; the tables are evidence (issue 26 keeps its protocol).

Added after the first recording was analysed (its numbers are in docs/statistics.md): ``--floors`` prints
``auto`` and the gate at magnitude floors (the A/A windows' change points were 1-4 % moves of the machine), and
the gate's A/A row counts the alerts closed as fixed within 2 builds (one slow build). A second recording beside
a memory co-runner (``taskset -c 1 stress-ng --stream 1 -t 0`` while ``record`` runs) was registered in
docs/statistics.md before it was made, as the check of the floor's reading.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from quiho.history import History

sys.path.insert(0, str(Path(__file__).resolve().parent))
import history_protocol as P  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: (name, source, gcc flags, argv after the binary): quiho's example programs at short sizes
PROGRAMS = (
    ("cpuloop", "examples/cpuloop/cpuloop.c", (), ("10000000",)),
    ("pchase", "examples/pchase/pchase.c", (), ("262144", "2097152")),
    ("stream", "examples/stream/stream.c", ("-DNADDS=1",), ("2",)),
)
RUNS = 3
METRICS = ("time_s", "wall_s")
WINDOW = 60
MARGIN = 5
DELTAS = (0.02, 0.05, 0.10)
GATE_DELTAS = (0.05, 0.10)
ORDER_SEED, PLANT_SEED, NULL_SEED = 20261126, 26112026, 2611
FIELDS = ("build", "benchmark", "run", "time_s", "wall_s", "unix_time")
_TIME = re.compile(r"time_s: ([0-9.eE+-]+)")


# --- record ------------------------------------------------------------------------------------------------------


def _build(where: Path) -> dict[str, list[str]]:
    argv = {}
    for name, src, flags, args in PROGRAMS:
        exe = where / name
        subprocess.run(["gcc", "-O2", *flags, "-o", str(exe), str(REPO / src)], check=True)
        argv[name] = [str(exe), *args]
    return argv


def _complete_rows(out: Path) -> list[dict[str, str]]:
    """The rows of the builds already complete in ``out`` (builds 0.. with all their runs), in file order."""
    if not out.exists():
        return []
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    per: dict[int, int] = {}
    for r in rows:
        per[int(r["build"])] = per.get(int(r["build"]), 0) + 1
    done = 0
    while per.get(done, 0) == RUNS * len(PROGRAMS):
        done += 1
    return [r for r in rows if int(r["build"]) < done]


def record(out: Path, builds: int) -> None:
    keep = _complete_rows(out)
    start = int(keep[-1]["build"]) + 1 if keep else 0
    if start:  # drop a half-written build, keep the complete ones
        with out.open("w", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            w.writerows(keep)
        print(f"resuming after build {start - 1}", file=sys.stderr)
    rng = np.random.default_rng(ORDER_SEED)
    orders = [rng.permutation(len(PROGRAMS)) for _ in range(builds)]
    with tempfile.TemporaryDirectory() as tmp:
        argv = _build(Path(tmp))
        new = not out.exists()
        with out.open("a", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            if new:
                w.writeheader()
            t0 = time.time()
            for b in range(start, builds):
                for k in orders[b]:
                    name = PROGRAMS[k][0]
                    for run in range(RUNS):
                        s = time.perf_counter()
                        p = subprocess.run(argv[name], capture_output=True, text=True, check=True, timeout=60)
                        wall = time.perf_counter() - s
                        m = _TIME.search(p.stdout)
                        if m is None:
                            raise SystemExit(f"{name} printed no time_s: {p.stdout[:200]!r}")
                        w.writerow({"build": b, "benchmark": name, "run": run, "time_s": m.group(1),
                                    "wall_s": f"{wall:.6f}", "unix_time": f"{time.time():.3f}"})
                f.flush()
                if b % 100 == 99:
                    print(f"build {b + 1}/{builds} ({time.time() - t0:.0f} s)", file=sys.stderr)


# --- analyse -----------------------------------------------------------------------------------------------------


def windows(path: Path) -> list[tuple[str, int, History]]:
    """(series, window index, history) of every complete window of every series."""
    import pandas as pd

    df = pd.read_csv(path)
    out = []
    for name, _, _, _ in PROGRAMS:
        d = df[df["benchmark"] == name]
        for metric in METRICS:
            per = d.groupby("build")[metric].apply(lambda s: s.to_numpy(dtype=float))
            vals = [per[b] for b in sorted(per.index)]
            for k in range(len(vals) // WINDOW):
                chunk = vals[k * WINDOW:(k + 1) * WINDOW]
                h = History(f"{name}/{metric}", tuple(f"b{k * WINDOW + i}" for i in range(WINDOW)),
                            np.arange(WINDOW), tuple(chunk), "s")
                out.append((f"{name}/{metric}", k, h))
    return out


def _planted(h: History, k: int, delta: float) -> History:
    return History(h.name, h.revisions, h.orders,
                   tuple(s * (1 + delta) if i >= k else s for i, s in enumerate(h.samples)), h.unit)


def _power(run: P.Runner, ws: list[tuple[str, int, History]], ks: np.ndarray) -> list[str]:
    """Per step size: "found/windows (other change points)" of ``run`` on the windows with a step planted at ``ks``."""
    cells = []
    for d in DELTAS:
        found = false = 0
        for (_, _, h), k in zip(ws, ks, strict=True):
            cps = run(_planted(h, int(k), d))
            near = [i for i in cps if abs(i - k) <= MARGIN]
            found += bool(near)
            false += len(cps) - len(near)
        cells.append(f"{found}/{len(ws)} ({false})")
    return cells


def _describe(ws: list[tuple[str, int, History]]) -> None:
    print("\n**The recorded noise** (per series, median over its windows):\n")
    print("| series | windows | run CV within a build | build-mean CV | lag-1 autocorrelation of build means | "
          "window mean's range over the windows |")
    print("|---|---|---|---|---|---|")
    for name in dict.fromkeys(s for s, _, _ in ws):
        hs = [h for s, _, h in ws if s == name]
        within = np.median([np.median([x.std(ddof=1) / x.mean() for x in h.samples]) for h in hs])
        cv = np.median([h.values.std(ddof=1) / h.values.mean() for h in hs])
        rho = np.median([np.corrcoef(h.values[:-1], h.values[1:])[0, 1] for h in hs])
        means = np.array([h.values.mean() for h in hs])
        print(f"| {name} | {len(hs)} | {within:.1%} | {cv:.1%} | {rho:+.2f} | {means.max() / means.min() - 1:.1%} |")


def _q0(cands: list[P.Candidate], n: int) -> dict[str, float]:
    rng = np.random.default_rng(NULL_SEED)
    series = [rng.normal(size=WINDOW) for _ in range(n)]
    return {c.name: float(np.mean([bool(c.run(y)) for y in series])) for c in cands} if n else {}


def analyse(path: Path, gate: bool, null_series: int, floors: tuple[float, ...] = ()) -> None:
    ws = windows(path)
    if not ws:
        raise SystemExit(f"{path}: fewer than {WINDOW} complete builds")
    _describe(ws)
    cands = [c for c in P.candidates() if not c.grid]
    ks = np.random.default_rng(PLANT_SEED).integers(15, 46, size=len(ws))
    q0 = _q0(cands, null_series)
    n = len(ws)
    print(f"\n**A/A windows and planted steps** ({n} windows of {WINDOW} builds x {RUNS} runs; found = within "
          f"±{MARGIN} builds of the step; q0 over {null_series} independent Gaussian series of {WINDOW} values):\n")
    head = " | ".join(f"+{d:.0%} found (false)" for d in DELTAS)
    print(f"| detector | A/A windows with a false alarm | A/A false alarms | q0 | p (real > q0) | {head} |")
    print("|---|---|---|---|---|" + "---|" * len(DELTAS))
    for c in cands:
        aa = [c.run(h) for _, _, h in ws]
        hit = sum(bool(a) for a in aa)
        q = q0.get(c.name, float("nan"))
        p = float(stats.binomtest(hit, n, q, alternative="greater").pvalue) if np.isfinite(q) and q > 0 else \
            float("nan")
        cells = _power(c.run, ws, ks)
        qs = f"{q:.2%}" if np.isfinite(q) else "-"
        ps = f"{p:.2g}" if np.isfinite(p) else "-"
        print(f"| {c.name}{' (peer)' if c.peer else ''} | {hit}/{n} | {sum(map(len, aa))} | {qs} | {ps} | "
              + " | ".join(cells) + " |")
    if gate:
        _gate(ws, ks)
    for floor in floors:
        _floor(ws, ks, floor, gate)


def _floor(ws: list[tuple[str, int, History]], ks: np.ndarray, floor: float, gate: bool) -> None:
    """``auto-ar1`` (``auto`` when these tables were recorded) and, with ``gate``, the gate at ``floor``."""
    run = P._quiho("auto-ar1", magnitude_floor=floor)
    n = len(ws)
    aa = sum(bool(run(h)) for _, _, h in ws)
    cells = _power(run, ws, ks)
    print(f"\n**auto, magnitude floor {floor:.0%}**: A/A windows with a false alarm {aa}/{n}; "
          + "; ".join(f"+{d:.0%} found {c}" for d, c in zip(DELTAS, cells, strict=True)))
    if gate:
        _gate(ws, ks, floor)


def _gate(ws: list[tuple[str, int, History]], ks: np.ndarray, floor: float = 0.0) -> None:
    from history_alerts import walk_after

    from quiho.history import GateOptions

    opts = GateOptions(magnitude_floor=floor)
    print(f"\n**The CI gate** (run_gate after every build, quiho's defaults: alpha {opts.alpha}, newest alpha "
          f"{opts.newest_alpha}, min_size {opts.min_size}; magnitude floor {floor:.0%}):\n")
    print("| windows | checks | alerts (false) per 100 checks; closed as fixed within 2 builds | "
          "caught within 3 builds | alerts before the step |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        checks = alerts = short = 0
        for i, (_, _, h) in enumerate(ws):
            _, _, raised = walk_after(h, np.ones(len(h), dtype=bool), Path(tmp) / f"aa{i}.db", opts)
            checks += len(h) - opts.min_size
            alerts += len(raised)
            short += sum(fx is not None and fx - fb <= 2 for fb, fx in raised)
        print(f"| A/A | {checks} | {alerts} ({100 * alerts / checks:.2f}); {short} | - | - |")
        for d in GATE_DELTAS:
            caught = before = 0
            for i, ((_, _, h), k) in enumerate(zip(ws, ks, strict=True)):
                _, _, raised = walk_after(_planted(h, int(k), d), np.ones(len(h), dtype=bool),
                                          Path(tmp) / f"d{d}-{i}.db", opts)
                caught += any(k <= fb <= k + 3 for fb, _ in raised)
                before += sum(fb < k for fb, _ in raised)
            print(f"| +{d:.0%} step | {len(ws) * (WINDOW - opts.min_size)} | - | {caught}/{len(ws)} | {before} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="record A/A builds on this machine")
    r.add_argument("out", type=Path)
    r.add_argument("--builds", type=int, default=1200)
    a = sub.add_parser("analyse", help="print the tables of a recording")
    a.add_argument("csv", type=Path)
    a.add_argument("--gate", action="store_true", help="also walk the CI gate (slow: a store per window)")
    a.add_argument("--null-series", type=int, default=10_000, help="independent Gaussian series for q0 (0: skip)")
    a.add_argument("--floors", type=float, nargs="*", default=(), metavar="F",
                   help="also auto (and with --gate the gate) at these magnitude floors, e.g. 0.02 0.03 0.05")
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.out, args.builds)
    else:
        analyse(args.csv, args.gate, args.null_series, tuple(args.floors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
