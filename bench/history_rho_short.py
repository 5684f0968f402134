"""Round 5's pick on short histories: how the rank-variogram rho behaves where a CI gate lives (issue 48).

Round 5 and its held-out check scored detectors on histories of 100-200+ revisions; a CI gate reads a series
from its first ``min_size`` revisions on. This bench asks what ``auto-vario`` (``auto-ar1`` with
``rho_from="variogram"``) does there, against the default ``auto`` (independent noise) and ``auto-ar1`` (rho from
ranks around a running median). Per length n, on 400 seeded series each:

* rho: the variogram estimate on independent Gaussian noise: its median, the share above 0.5 and the share at
  the 0.95 clip (where the AR(1) factor (1 + rho) / (1 - rho) widens both tests 39-fold);
* false alarms: the share of those change-free series with any change;
* found: on the same noise plus one step of 3 noise sd at n/2, the share with a change within 2 revisions of it.

Run: ``python bench/history_rho_short.py`` (about a minute). Prints one table; asserts nothing.
"""

from __future__ import annotations

import numpy as np

from quiho.history.detectors import detect
from quiho.history.detectors._auto import variogram_rho

LENGTHS = (10, 15, 20, 30, 40, 60, 100, 200)
SEEDS = 400
DETECTORS = {"auto": ("auto", {}), "auto-vario": ("auto-ar1", {"rho_from": "variogram"}),
             "auto-ar1": ("auto-ar1", {})}


def main() -> None:
    print(f"{SEEDS} series per length; step: 3 noise sd at n/2; found: a change within 2 revisions of it\n")
    print("| n | variogram rho: median | > 0.5 | at 0.95 | " + " | ".join(
        f"{d}: false alarms | {d}: found" for d in DETECTORS) + " |")
    print("|---|---|---|---|" + "---|---|" * len(DETECTORS))
    for n in LENGTHS:
        rng = np.random.default_rng(20261204 + n)
        noise = [rng.normal(0.0, 1.0, n) for _ in range(SEEDS)]
        step = np.r_[np.zeros(n // 2), np.full(n - n // 2, 3.0)]
        rho = np.array([variogram_rho(y) for y in noise])
        cells = [f"{np.median(rho):.2f}", f"{np.mean(rho > 0.5):.1%}", f"{np.mean(rho >= 0.95):.1%}"]
        for method, params in DETECTORS.values():
            fa = np.mean([bool(detect(100 + y, method, **params).change_points) for y in noise])
            found = np.mean([any(abs(c.index - n // 2) <= 2 for c in detect(100 + y + step, method,
                                                                             **params).change_points)
                             for y in noise])
            cells += [f"{fa:.1%}", f"{found:.1%}"]
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
