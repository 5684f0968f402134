"""Issue 48's walk over many seeds: real pytest-benchmark runs, a CPU hog beside random commits, two gates.

Run: ``.venv/bin/python bench/history_gate_walks.py [--seeds 20] [--start 0]``. Prints one line per walk and a
table; asserts nothing. Takes minutes (nine real pytest-benchmark runs per walk).

Each walk is the first form of tests/history/test_history_gate_busy.py's (its helpers, not its sizes, hogs or
floor): a fresh git project with two pytest-benchmark tests,
commits 7-9 make ``test_sort`` 30 % slower; a CPU hog on the benchmark's CPU beside the runs of 4 of the 9 commits,
drawn per seed; wall-clock timing. Even seeds import ``--benchmark-json`` (every round), odd seeds the file
``--benchmark-save`` keeps without ``--benchmark-save-data`` (the summary only). Every result file is imported
into two stores and each gets ``quiho history detect --all --fail-on-change`` after every commit: the new gate
(``--location min``, the default) and today's gate (``--location rounds``). After commit 9 the ``test_sort`` alert
(if any) is acknowledged and the gate run once more.

Columns per gate: walks whose exit codes were exactly 0 x 6, 3 x 3 and 0 after the acknowledgement; the +30 %
step caught at commit 7 (exit 3 there); false alerts (any alert on ``test_sum``, or on ``test_sort`` before
commit 7) in total and walks with one; red exits at commits 1-6. Each walk also reports the machine's own drift:
the spread (max / min - 1) of the minima at the commits among 1-6 run without the hog (the larger of the two
tests); the table is repeated for the walks whose drift is at most 5 %.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("busy_walk", HERE.parent / "tests" / "history" /
                                               "test_history_gate_busy.py")
assert _spec is not None and _spec.loader is not None
w = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(w)

GATES = {"new (min)": ("--location", "min"), "today (rounds)": ("--location", "rounds")}
#: this bench's walk is the test's first form: a +30 % step (10,100 floats against 8,000), one hog, no floor
SIZES = [8_000] * 6 + [10_100] * 3
GATE = ("history", "detect", "--all", "--fail-on-change")


def one_walk(seed: int, tmp: Path) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    hogged = sorted(int(x) for x in rng.choice(np.arange(1, 10), size=4, replace=False))
    save = seed % 2 == 0
    root = w.init_repo(tmp / "proj")
    stores = {g: str(tmp / f"{i}.db") for i, g in enumerate(GATES)}
    codes: dict[str, list[int]] = {g: [] for g in GATES}
    shas = []
    for i, n in enumerate(SIZES, start=1):
        out = w.commit_and_bench(root, n, f"commit {i}: sort {n}", hogs=int(i in hogged))[0 if save else 1]
        shas.append(w.git(root, "rev-parse", "HEAD").strip())
        for g, st in stores.items():
            assert w.quiho("history", "import", str(out), "--store", st)[0] == 0
            codes[g].append(w.quiho(*GATE, *GATES[g], "--store", st)[0])
    res: dict[str, dict[str, Any]] = {}
    import json

    from quiho.history import list_series, load_history
    from quiho.history.gate import located
    from quiho.store import open_store

    quiet = [i for i in range(6) if i + 1 not in hogged]  # the machine's own drift: unhogged commits 1-6
    with open_store(next(iter(stores.values()))) as db:
        drift = max(float(m.max() / m.min() - 1) for m in
                    (located(load_history(db, str(r["name"])), "min").values[quiet] for r in list_series(db)))

    for g, st in stores.items():
        alerts = json.loads(w.quiho("history", "alert", "list", "--all", "--json", "--store", st)[1])["alerts"]
        true = [a for a in alerts if w.short(a["series"]) == "test_sort" and a["first_bad"] in shas[6:]]
        false = [a for a in alerts if a not in true]
        for a in true:
            if a["state"] == "new":
                w.quiho("history", "alert", "ack", str(a["id"]), "--store", st)
        after = w.quiho(*GATE, *GATES[g], "--store", st)[0]
        res[g] = {"codes": codes[g], "after_ack": after, "caught": codes[g][6] == 3, "false": len(false),
                  "red_early": sum(c == 3 for c in codes[g][:6]),
                  "exact": codes[g] == [0] * 6 + [3] * 3 and after == 0, "drift": drift}
    print(f"seed {seed:3d} hog at {hogged} {'rounds ' if save else 'summary'} drift {drift:4.0%}  " + "  ".join(
        f"{g}: {''.join(map(str, r['codes']))}/{r['after_ack']} false {r['false']}" for g, r in res.items()),
        flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--start", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.start, args.start + args.seeds):
        with tempfile.TemporaryDirectory() as d:
            rows.append(one_walk(seed, Path(d)))
    print(f"\n{len(rows)} walks (seeds {args.start}-{args.start + len(rows) - 1}), {time.perf_counter() - t0:.0f} s; "
          f"drift = spread (max/min - 1) of the minima of unhogged commits among 1-6, the larger of the two tests")
    steady = [x for x in rows if float(x[next(iter(GATES))]["drift"]) <= 0.05]
    for title, sel in (("all walks", rows), ("walks whose machine held still (drift <= 5 %)", steady)):
        n = len(sel)
        print(f"\n{title}: {n}")
        head = f"{'gate':<16} {'exact exits':>12} {'caught at 7':>12} {'false alerts':>13} {'walks w/ false':>15} " \
               f"{'red at 1-6':>11}"
        print(head)
        print("-" * len(head))
        for g in GATES:
            r = [x[g] for x in sel]
            print(f"{g:<16} {sum(bool(x['exact']) for x in r):>7} / {n:<3} {sum(bool(x['caught']) for x in r):>7} / "
                  f"{n:<3} {sum(int(x['false']) for x in r):>13} {sum(int(x['false']) > 0 for x in r):>10} / {n:<3} "
                  f"{sum(int(x['red_early']) for x in r):>11}")

if __name__ == "__main__":
    main()
