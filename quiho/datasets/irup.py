"""Seeded fleets with a planted bottleneck: fingerprints whose truth is known.

Each hardware group gets independent log-normal "speeds" per stressor (so no
two stressors are interchangeable), hosts in a group share them (look-alike
hosts), repetitions add small multiplicative noise, and the application's
runtime is inversely proportional to the speed of the planted stressor(s).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from quiho.irup.data import TargetData

__all__ = ["planted_bottleneck", "DEFAULT_STRESSORS"]

DEFAULT_STRESSORS: tuple[str, ...] = (
    "cpu", "matrix", "vecmath", "cache", "l1cache", "stream", "memcpy", "vm", "malloc", "mmap", "zero", "qsort",
)


def planted_bottleneck(
    *,
    n_groups: int = 8,
    hosts_per_group: int = 2,
    reps: int = 3,
    bottleneck: str | Sequence[str] = "stream",
    weights: Sequence[float] | None = None,
    stressors: Sequence[str] = DEFAULT_STRESSORS,
    spread: float = 0.5,
    fingerprint_noise: float = 0.02,
    app_noise: float = 0.02,
    target: str = "planted",
    random_state: int = 0,
) -> TargetData:
    """A fleet whose application depends only on ``bottleneck``.

    Many parameters because it is a seeded generator in the style of scikit-learn's ``make_*``: every knob of
    the planted truth is a keyword with a default, so a test names only the one it varies.

    Parameters
    ----------
    n_groups : int, default 8
        Distinct hardware groups.
    hosts_per_group : int, default 2
        Differently named hosts per group (same hardware).
    reps : int, default 3
        Repetitions per host.
    bottleneck : str or sequence of str, default "stream"
        Stressor(s) the runtime depends on.
    weights : sequence of float, optional
        Exponent of each bottleneck's speed in the runtime (default all 1).
    stressors : sequence of str
        Fingerprint columns.
    spread : float, default 0.5
        Std of log speed across groups.
    fingerprint_noise, app_noise : float, default 0.02
        Multiplicative noise (std of log) per repetition.
    target : str
        Target name of the result.
    random_state : int, default 0

    Returns
    -------
    TargetData
    """
    rng = np.random.default_rng(random_state)
    names = [bottleneck] if isinstance(bottleneck, str) else list(bottleneck)
    w = np.ones(len(names)) if weights is None else np.asarray(weights, dtype=float)
    cols = list(stressors)
    for b in names:
        if b not in cols:
            cols.append(b)
    base = rng.normal(0.0, spread, size=(n_groups, len(cols)))
    scale = np.exp(rng.normal(np.log(1000.0), 1.0, size=len(cols)))
    rows, meta, y = [], [], []
    for g in range(n_groups):
        for h in range(hosts_per_group):
            host = f"g{g}-h{h}"
            for r in range(1, reps + 1):
                logv = base[g] + rng.normal(0.0, fingerprint_noise, size=len(cols))
                rows.append(scale * np.exp(logv))
                idx = [cols.index(b) for b in names]
                runtime = 10.0 * np.exp(-(w * base[g, idx]).sum() + rng.normal(0.0, app_noise))
                y.append(runtime)
                meta.append(("synthetic", host, r, 0, True))
    X = pd.DataFrame(np.vstack(rows), columns=cols)
    m = pd.DataFrame(meta, columns=["batch", "host", "repetition", "run_id", "paired"])
    return TargetData(target=target, X=X, y=pd.Series(y, name=target), meta=m, unit="s", higher_is_better=False)
