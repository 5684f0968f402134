"""A tiny benchmark that writes github-action-benchmark "custom" JSON: [{"name", "unit", "value", "range"}].

Stands in for your project's benchmark (pytest-benchmark, Google Benchmark, hyperfine, asv, go test -bench and
JMH output import the same way). Each value is the best of 5 runs in CPU seconds, which other load on a shared
CI runner barely changes. ``QUIHO_CI_SLOWDOWN=k`` makes the work k times larger (to plant a regression).

Run: ``python bench.py > result.json``
"""

from __future__ import annotations

import json
import os
import sys
import time


def best_cpu_seconds(fn, repeat: int = 5) -> tuple[float, float]:
    """Smallest CPU time of ``repeat`` calls of ``fn`` and the spread (max - min)."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times), max(times) - min(times)


def main() -> None:
    """Print the custom JSON of every case."""
    k = float(os.environ.get("QUIHO_CI_SLOWDOWN", "1"))
    n = int(200_000 * k)
    cases = {
        "sum of squares": lambda: sum(i * i for i in range(n)),
        "sort reversed": lambda: sorted(range(n, 0, -1)),
    }
    out = []
    for name, fn in cases.items():
        best, spread = best_cpu_seconds(fn)
        out.append({"name": name, "unit": "s", "value": best, "range": spread})
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
