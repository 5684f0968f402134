"""The newest-revision example of docs/workflows/hardware.md (a PR on whichever runner it got), from stored data.

hpccg's real CloudLab runs (../shared/data/quiho-popper, batch 1512873230): 40 revisions of unchanged code, each
measured on a host drawn at random from 15 of the 20 hosts that ran all four of the paper's benchmarks (3 of its
runs), then a newest revision 10 % slower measured on a host the history has seen, and the same on one of the 5
it has not. Prints what ``quiho history detect hp --normalise`` says of the newest revision in each case, and the
raw check. Rerun: ``python examples/rotating/cloudlab_newest.py [SEED]`` (default 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cloudlab_hpccg import load_hpccg  # noqa: E402

from quiho.history import History, check_newest, detect  # noqa: E402
from quiho.history.normalise import MachineFingerprint, check_newest_normalised, newest_text  # noqa: E402


def main(seed: int) -> None:
    """Build the history for ``seed`` and print the newest revision's check on a seen and on a new host."""
    d, hosts = load_hpccg()
    rng = np.random.default_rng(seed)
    order = [str(h) for h in rng.permutation(hosts)]
    new_hosts, old_hosts = order[:5], order[5:]

    def revision(host: str, slower: float) -> tuple[np.ndarray, MachineFingerprint]:
        rows = (d.meta["host"] == host).to_numpy()
        v = rng.permutation(d.y[rows].to_numpy(dtype=float))[:3] * slower  # hpccg's metric is a time
        return v, MachineFingerprint(host, d.X[rows].median())

    past = [revision(str(h), 1.0) for h in rng.choice(old_hosts, size=40)]
    for label, host in (("a host the history has seen", str(rng.choice(old_hosts))),
                        ("a host it has not", new_hosts[0])):
        v, m = revision(host, 1.10)
        h = History("hp", tuple(f"r{i:03d}" for i in range(41)), np.arange(41), (*(s for s, _ in past), v))
        raw = check_newest(h, alpha=0.001, detection=detect(History("hp", h.revisions[:-1], h.orders[:-1],
                                                                    h.samples[:-1])), test_within="pooled")
        print(f"+10 % on {label} ({host}):")
        print(f"  raw: {raw.verdict}, {raw.magnitude:+.1%} [{raw.ci[0]:+.1%}, {raw.ci[1]:+.1%}]")
        print(f"  --normalise: {newest_text(check_newest_normalised(h, [*(x for _, x in past), m]))}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
