"""The gate's location on recorded real noise: bench/history_real_noise.py's gate walk, once per location.

Run: ``.venv/bin/python bench/history_gate_real_noise.py [--locations rounds min]``. Prints one table per
recording and location; asserts nothing; chooses nothing (the location was chosen by
bench/history_gate_interference.py's protocol; this is evidence on noise nobody generated).

The recordings are bench/data/real-noise-2026-11-26.csv.gz (A/A builds on the quiet dev VM, 3 runs per build) and
bench/data/real-noise-corunner-2026-11-26.csv.gz (the same beside a memory co-runner, ``stress-ng --stream``):
history_real_noise.py's windows, planted +5 % and +10 % steps and gate walk (run_gate after every build) with
``GateOptions(location=...)``, everything else the defaults.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import history_real_noise as rn  # noqa: E402

import quiho.history  # noqa: E402

RECORDINGS = (HERE / "data" / "real-noise-2026-11-26.csv.gz", HERE / "data" / "real-noise-corunner-2026-11-26.csv.gz")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locations", nargs="+", default=["rounds", "min"])
    args = ap.parse_args()
    real = quiho.history.GateOptions
    for path in RECORDINGS:
        ws = rn.windows(path)
        ks = np.random.default_rng(rn.PLANT_SEED).integers(15, 46, size=len(ws))
        for loc in args.locations:
            print(f"\n### {path.name}: location {loc}")
            quiho.history.GateOptions = functools.partial(real, location=loc)  # type: ignore[misc]
            try:
                rn._gate(ws, ks)
            finally:
                quiho.history.GateOptions = real  # type: ignore[misc]


if __name__ == "__main__":
    main()
