"""Is a shared-cache knob worth building here: does a cache-sized thrashing co-runner tell the cache from memory?

Issue 47 asks for a shared-cache knob "only where its probe shows an effect". The fleet already has a stream
co-runner on CPU 1 (``stress-ng --stream 1 --stream-l3-size 64M``), which passes 192 MiB through the last-level
cache and so evicts whatever a program keeps there. A cache knob earns a factor only if it moves what lives in the
shared cache *differently* from how the stream co-runner moves it; otherwise its effects would repeat the stream
co-runner's and a design factor would buy nothing. Both co-runners take CPU 1, so a design could hold one of them
per host, not both.

Instruments (``examples/stream/stream.c``, ``gcc -O2``, pinned to CPU 0, the same element count per run): nadds1
on arrays that live in L2 (3 x 128 KiB), in the last-level cache only (3 x 4 MiB: over the 1 MiB L2, under the
32 MiB L3 this VM reports) and in memory (3 x 64 MiB). Conditions: alone; the stream co-runner; the cache co-runner
(``stress-ng --cache 1 --cache-level 3 --cache-no-affinity``: random reads and writes over a buffer of the L3's
reported size); the fleet's compute co-runner (``--cpu 1 --cpu-method int64``: core sharing, the control). Rounds
visit the conditions in a fresh random order, every instrument once per condition in random order. Effect: the mean
over rounds of log(time beside / time alone) of the same round, ± SE, as % slowdown.

The rule, fixed before the first run (2026-12-04). The cache knob is built when, over ``--rounds 10``:

1. *It reaches the cache*: the cache co-runner slows the LLC instrument by at least 5 % (the class floor) and by
   more than it slows the L2 instrument (what core sharing alone does), the difference's 95 % interval
   (mean ± 1.96 SE of the per-round paired difference) above 0; and
2. *it is not the stream co-runner again*: the contrast
   ``[cache(LLC) - cache(memory)] - [stream(LLC) - stream(memory)]`` (log effects, per round) has a 95 % interval
   above 0: the cache co-runner leans on the cache-resident program relatively more than the stream co-runner does.

Otherwise it is not built, and the table says why. The first run (``657a22a``) used a tenth of today's element
count: its instruments took 23-94 ms, their effects' SEs were 4-12 %, and both tests said no at that precision
(cache co-runner on the LLC instrument +13 % ± 10). The runs were lengthened tenfold, the rule unchanged, before
the second run. Run (root not needed; a quiet machine):
``python bench/cache_corunner.py --rounds 10`` (~5 min).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corunner_sensitivity import beside, run_once  # noqa: E402

SOURCE = Path(__file__).resolve().parents[1] / "examples" / "stream" / "stream.c"
ELEMENTS_PER_RUN = 800 * 1024 * 1024  # 100 passes over 8 Mi elements: ~1 s in memory, ~0.2 s in L2
#: instrument -> elements per array (three arrays of doubles).
INSTRUMENTS = {"L2 (384 KiB)": 16 * 1024, "LLC (12 MiB)": 512 * 1024, "memory (192 MiB)": 8 * 1024 * 1024}
CONDITIONS = {
    "alone": None,
    "stream co-runner": ["--stream", "1", "--stream-l3-size", "64M"],
    "cache co-runner": ["--cache", "1", "--cache-level", "3", "--cache-no-affinity"],
    "compute co-runner": ["--cpu", "1", "--cpu-method", "int64"],
}


def _mean_se(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), statistics.stdev(xs) / math.sqrt(len(xs))


def _pct(lr: list[float]) -> str:
    m, se = _mean_se(lr)
    return f"{100 * math.expm1(m):+.1f} % ± {100 * se:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    times: dict[tuple[str, str], list[float]] = {(c, p): [] for c in CONDITIONS for p in INSTRUMENTS}
    with tempfile.TemporaryDirectory() as td:
        exe = Path(td) / "stream-nadds1"
        subprocess.run(["gcc", "-O2", "-DNADDS=1", "-o", str(exe), str(SOURCE)], check=True)
        for r in range(args.rounds):
            for cond in rng.sample(list(CONDITIONS), len(CONDITIONS)):
                with beside(CONDITIONS[cond]):
                    for inst in rng.sample(list(INSTRUMENTS), len(INSTRUMENTS)):
                        elements = INSTRUMENTS[inst]
                        times[(cond, inst)].append(run_once(exe, ELEMENTS_PER_RUN // elements, elements))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    def lr(cond: str, inst: str) -> list[float]:
        return [math.log(b / a) for a, b in zip(times[("alone", inst)], times[(cond, inst)], strict=True)]

    print(f"{args.rounds} rounds; time alone (median s) and the slowdown beside each co-runner: mean of the rounds' "
          "log ratios, ± SE, in %\n")
    print("| instrument | alone (s) | " + " | ".join(c for c in CONDITIONS if c != "alone") + " |")
    print("|---|---|" + "---|" * (len(CONDITIONS) - 1))
    for inst in INSTRUMENTS:
        cells = [_pct(lr(c, inst)) for c in CONDITIONS if c != "alone"]
        print(f"| {inst} | {statistics.median(times[('alone', inst)]):.3f} | " + " | ".join(cells) + " |")

    l2, llc, mem = INSTRUMENTS
    reach = [a - b for a, b in zip(lr("cache co-runner", llc), lr("cache co-runner", l2), strict=True)]
    contrast = [(a - b) - (c - d) for a, b, c, d in zip(lr("cache co-runner", llc), lr("cache co-runner", mem),
                                                        lr("stream co-runner", llc), lr("stream co-runner", mem),
                                                        strict=True)]
    eff = statistics.fmean(lr("cache co-runner", llc))
    (rm, rse), (cm, cse) = _mean_se(reach), _mean_se(contrast)
    ok1 = math.expm1(eff) >= 0.05 and rm - 1.96 * rse > 0
    ok2 = cm - 1.96 * cse > 0
    print()
    print(f"1. reaches the cache: cache co-runner on LLC {100 * math.expm1(eff):+.1f} %; LLC minus L2 "
          f"{100 * rm:+.1f} [{100 * (rm - 1.96 * rse):+.1f}, {100 * (rm + 1.96 * rse):+.1f}] (log %): "
          f"{'yes' if ok1 else 'no'}")
    print(f"2. not the stream co-runner again: contrast {100 * cm:+.1f} [{100 * (cm - 1.96 * cse):+.1f}, "
          f"{100 * (cm + 1.96 * cse):+.1f}] (log %): {'yes' if ok2 else 'no'}")
    print(f"Decision: {'build the cache knob' if ok1 and ok2 else 'do not build the cache knob'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
