"""The AR(1) coefficient rho each ``auto`` variant of the selection protocol estimates, by generated shape.

Run: ``python bench/history_rho.py``. Prints the median (and the 10-90 % range) of the detector's ``rho_``
over the protocol's generated performance histories (``bench/history_protocol.py``: the same suite, the
per-build means) for each shape. The diagnosis of round 2 (docs/history-protocol.md) predicts what a rho
estimate should read: high on ``ar1`` (true 0.5-0.8), about 0 on ``step`` and ``null`` (independent noise).
"""

from __future__ import annotations

import history_protocol as P
import numpy as np

from quiho.datasets.perf_history import SHAPES, make_perf_suite
from quiho.history import make_detector

VARIANTS = {
    "auto (running median)": {},
    "auto-diffrho (lag-11 differences)": {"rho_from": "differences"},
    "auto-vario (variogram, lags 1-2)": {"rho_from": "variogram"},
}


def main() -> None:
    gen = make_perf_suite(P.N_EACH, P.N_BUILDS, random_state=P.GEN_SEED)
    print("| rho from | " + " | ".join(SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for name, params in VARIANTS.items():
        cells = []
        for shape in SHAPES:
            rho = [make_detector("auto-ar1", **params).fit(g.history()).rho_ for g in gen if g.shape == shape]
            q10, q50, q90 = np.percentile(rho, [10, 50, 90])
            cells.append(f"{q50:.2f} ({q10:.2f}-{q90:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
