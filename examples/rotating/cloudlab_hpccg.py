"""The rotating-runner example of docs/workflows/hardware.md, rebuilt from stored data.

hpccg's real CloudLab runs (../shared/data/quiho-popper, batch 1512873230): 50 revisions, each measured on a host
drawn at random from the 20 hosts that ran all four of the paper's benchmarks (3 of its runs), +10 % from revision
35 on, every revision carrying its host's median fingerprint. Prints the raw detector's changes and what
``quiho history detect hp --normalise`` prints. Rerun: ``python examples/rotating/cloudlab_hpccg.py [SEED]``
(default 3).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from quiho.history import History, detect
from quiho.history.normalise import MachineFingerprint, detect_normalised, normalised_lines
from quiho.irup import TargetData, load_target
from quiho.store import open_store
from quiho.store.popper import import_quiho_popper

RESULTS = (Path(__file__).resolve().parents[3] / "shared" / "data" / "quiho-popper" / "pipelines" / "single-node"
           / "datapackage" / "quiho" / "results.csv")
TARGETS = ("hpccg", "ssca", "scikit-learn", "redisbench/SET")


def load_hpccg() -> tuple[TargetData, list[str]]:
    """The hpccg runs and fingerprints, and the hosts that ran all four of the paper's benchmarks."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.db"
        with open_store(path) as st:
            import_quiho_popper(st, RESULTS)
            data = {t: load_target(st, t, batch="1512873230") for t in TARGETS}
    return data["hpccg"], sorted(set.intersection(*(set(map(str, x.meta["host"])) for x in data.values())))


def main(seed: int) -> None:
    """Build the series for ``seed`` and print both detections."""
    d, hosts = load_hpccg()
    rng = np.random.default_rng(seed)
    drawn = [str(h) for h in rng.choice(hosts, size=50)]
    samples, machines = [], []
    for i, h in enumerate(drawn):
        rows = (d.meta["host"] == h).to_numpy()
        v = rng.permutation(d.y[rows].to_numpy(dtype=float))[:3]
        samples.append(v * 1.10 if i >= 35 else v)  # hpccg's metric is a time: +10 % is slower
        machines.append(MachineFingerprint(h, d.X[rows].median()))
    hist = History("hp", tuple(f"r{i:03d}" for i in range(50)), np.arange(50), tuple(samples))
    print("raw:", [c.revision for c in detect(hist).change_points] or "no change")
    print("\n".join(normalised_lines(detect_normalised(hist, machines))))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
