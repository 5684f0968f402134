"""What the local fleet's co-runner does to the demo's programs: memory bandwidth, or the core the program runs on.

The demo's story is nadds1 memory-bound -> nadds30 CPU-bound. On the AMD EPYC microVM the stream co-runner moved
nadds30 +3 % to +15 % in the fresh demos (nadds1 +17 % to +23 %), so nadds30 read memory-bound whenever that
effect was pooled with nadds1's or cleared the 5 % floor. This bench separates the two ways a co-runner on the
other CPU can slow a program pinned to CPU 0: through memory (the 192 MiB arrays) or through the core itself
(two vCPUs that share a physical core, or the host's frequency), which a cache-resident copy of the same kernel
also feels.

Programs (``examples/stream/stream.c``, built here with ``gcc -O2``): nadds1 and nadds30 on the demo's 192 MiB
(10 passes, the demo's command), nadds30 on 3 x 128 KiB that stay in the 1 MiB L2 (passes scaled to the same
element count), and nadds100 on 192 MiB (3 passes). Conditions: alone; beside the fleet's stream co-runner
(``stress-ng --stream 1 --stream-l3-size 64M`` on CPU 1); beside its compute co-runner (``stress-ng --cpu 1
--cpu-method int64``, the core-sharing knob). The programs run on CPU 0 (``taskset``), as the fleet runs them.
Rounds visit every condition in a fresh random order; within a condition every program runs once, in random
order. Effect: the mean over rounds of log(time beside / time alone) of the same round, ± SE, as % slowdown.

Run (root not needed; a quiet machine): ``python bench/corunner_sensitivity.py --rounds 10`` (~4 min).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "examples" / "stream" / "stream.c"

#: name -> (NADDS, passes, elements): the demo's two commands, a cache-resident nadds30, and nadds100.
PROGRAMS = {
    "nadds1 192 MiB": (1, 10, 8 * 1024 * 1024),
    "nadds30 192 MiB": (30, 10, 8 * 1024 * 1024),
    "nadds30 in L2 (384 KiB)": (30, 5120, 16 * 1024),
    "nadds100 192 MiB": (100, 3, 8 * 1024 * 1024),
}
#: condition -> the co-runner's stress-ng arguments (the fleet's, ``playbooks/files/quiho-emulate.sh``).
CONDITIONS = {
    "alone": None,
    "stream co-runner": ["--stream", "1", "--stream-l3-size", "64M"],
    "compute co-runner": ["--cpu", "1", "--cpu-method", "int64"],
}


def build(tmp: Path) -> dict[str, Path]:
    exes = {}
    for nadds in sorted({p[0] for p in PROGRAMS.values()}):
        exe = tmp / f"stream-nadds{nadds}"
        subprocess.run(["gcc", "-O2", f"-DNADDS={nadds}", "-o", str(exe), str(SOURCE)], check=True)
        exes[str(nadds)] = exe
    return exes


@contextlib.contextmanager
def beside(args: list[str] | None) -> Iterator[None]:
    """Run the body beside a stress-ng co-runner on CPU 1 (``args``; None: alone), started 2 s before it."""
    co = None
    if args:
        co = subprocess.Popen(["taskset", "-c", "1", "stress-ng", *args, "-t", "120"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)  # the fleet's wait: the co-runner faults its arrays in first
    try:
        yield
    finally:
        if co is not None:
            co.terminate()
            co.wait()


def run_once(exe: Path, passes: int, elements: int) -> float:
    out = subprocess.run(["taskset", "-c", "0", str(exe), str(passes), str(elements)], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"time_s: ([0-9.]+)", out)
    if m is None:
        raise RuntimeError(f"no time in the output of {exe}")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    times: dict[tuple[str, str], list[float]] = {(c, p): [] for c in CONDITIONS for p in PROGRAMS}
    with tempfile.TemporaryDirectory() as td:
        exes = build(Path(td))
        for r in range(args.rounds):
            for cond in rng.sample(list(CONDITIONS), len(CONDITIONS)):
                with beside(CONDITIONS[cond]):
                    for prog in rng.sample(list(PROGRAMS), len(PROGRAMS)):
                        nadds, passes, elements = PROGRAMS[prog]
                        times[(cond, prog)].append(run_once(exes[str(nadds)], passes, elements))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds; time alone (median s) and the slowdown beside each co-runner: mean of the rounds' "
          "log ratios, ± SE, in %\n")
    print("| program | alone (s) | " + " | ".join(c for c in CONDITIONS if c != "alone") + " |")
    print("|---|---|" + "---|" * (len(CONDITIONS) - 1))
    for prog in PROGRAMS:
        alone = times[("alone", prog)]
        cells = []
        for cond in CONDITIONS:
            if cond == "alone":
                continue
            lr = [math.log(b / a) for a, b in zip(alone, times[(cond, prog)], strict=True)]
            se = statistics.stdev(lr) / math.sqrt(len(lr)) if len(lr) > 1 else float("nan")
            cells.append(f"{100 * math.expm1(statistics.fmean(lr)):+.1f} % ± {100 * se:.1f}")
        print(f"| {prog} | {statistics.median(alone):.3f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
