"""False positives and detection of ``quiho profile`` on the local fleet.

Fingerprints the fleet once (quick battery, or reuses one younger than --max-age), then runs
``stream@nadds1`` against itself ``--self`` times (every verdict other than no-change/inconclusive
is a false positive) and ``stream@nadds1`` against ``stream@nadds30`` ``--detect`` times, and
prints one row per profile plus a summary. Needs root (cgroups) and stress-ng.

    python bench/profile_false_positives.py --self 5 --detect 2 --store /tmp/fp-bench.db
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from quiho.app import load_app_spec
from quiho.profile import ProfileOptions, run_profile
from quiho.store import open_store

REPO = Path(__file__).resolve().parents[1]


def _row(kind: str, i: int, res, elapsed: float) -> str:  # noqa: ANN001
    m = res.metric
    va = res.irup_a.validity.verdict if res.irup_a else "n/a"
    vb = res.irup_b.validity.verdict if res.irup_b else "n/a"
    sh = res.comparison.class_shares if res.comparison else {}
    shares = list(sh.values())
    mem = f"{shares[0].get('memory', 0):.0%}→{shares[-1].get('memory', 0):.0%}" if shares else "n/a"
    cpu = f"{shares[0].get('cpu', 0):.0%}→{shares[-1].get('cpu', 0):.0%}" if shares else "n/a"
    top = (f"{res.irup_a.features[0].stressor}/{res.irup_b.features[0].stressor}" if res.irup_a and res.irup_b
           else "n/a")
    return (f"| {kind} {i} | {res.verdict} | {m.change:+.1%} | {m.ci_low:+.1%} … {m.ci_high:+.1%} | "
            f"{m.wilcoxon_p:.3g} | {m.hosts_used} | {res.irup_verdict} | {va}/{vb} | {top} | {mem} | {cpu} | "
            f"{elapsed:.0f} s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self", dest="n_self", type=int, default=5, help="self-comparisons (false-positive check)")
    ap.add_argument("--detect", type=int, default=2, help="nadds1 vs nadds30 profiles")
    ap.add_argument("--store", type=Path, default=None, help="store (default: a temporary file)")
    ap.add_argument("-i", "--inventory", default=None, help="inventory (default: the local fleet)")
    ap.add_argument("--repetitions", type=int, default=5, help="runs per version per host")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-age", type=float, default=6 * 3600, help="reuse fingerprints this young (s)")
    ap.add_argument("--min-change", type=float, default=0.05)
    args = ap.parse_args()
    store_path = args.store or Path(tempfile.mkdtemp()) / "bench.db"
    spec = load_app_spec(REPO / "examples" / "stream" / "stream.yml")
    print(f"store {store_path}; {args.repetitions} runs per version per host; floor ±{args.min_change:.0%}; "
          f"{args.seeds} seeds", flush=True)
    print("| profile | verdict | change | 95% CI | Wilcoxon p | hosts | IRUPs | validity A/B | top A/B | "
          "memory share | cpu share | time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    plan = [("detect", "nadds1", "nadds30")] * args.detect + [("self", "nadds1", "nadds1")] * args.n_self
    verdicts: dict[str, list[str]] = {"self": [], "detect": []}
    counts = {"self": 0, "detect": 0}
    opts = ProfileOptions.build(inventory=args.inventory, max_age=args.max_age, repetitions=args.repetitions,
                                seeds=args.seeds, min_change=args.min_change)
    with open_store(store_path) as st:
        for kind, a, b in plan:
            counts[kind] += 1
            t0 = time.monotonic()
            res = run_profile(spec, a, b, store=st, options=opts)
            verdicts[kind].append(res.verdict)
            print(_row(kind, counts[kind], res, time.monotonic() - t0), flush=True)
    fp = sum(v in ("regression", "improvement") for v in verdicts["self"])
    det = sum(v == "regression" for v in verdicts["detect"])
    print()
    print(f"false positives: {fp} of {len(verdicts['self'])} self-comparisons "
          f"(verdicts: {', '.join(verdicts['self'])})")
    print(f"detected nadds30 regression: {det} of {len(verdicts['detect'])} "
          f"(verdicts: {', '.join(verdicts['detect'])})")


if __name__ == "__main__":
    main()
