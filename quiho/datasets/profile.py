"""A planted version pair: the baseline leans on one stressor, the candidate on another, with a known change.

Both versions "ran" on the same seeded fleet (:func:`quiho.datasets.planted_bottleneck`,
same ``random_state`` → same fingerprints), so the truth is known: the IRUP of A tops
``bottleneck_a``, the IRUP of B tops ``bottleneck_b``, and B's metric is ``change`` times
A's shape on its own bottleneck. Handy for tests and walkthroughs of hints and reports
without running a fleet.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from quiho.datasets.irup import DEFAULT_STRESSORS, planted_bottleneck
from quiho.irup.data import TargetData

__all__ = ["planted_profile"]


def planted_profile(
    *,
    n_groups: int = 8,
    hosts_per_group: int = 1,
    reps: int = 3,
    bottleneck_a: str = "stream",
    bottleneck_b: str = "cpu",
    change: float = 1.5,
    spread: float = 0.3,
    app_noise: float = 0.02,
    application: str = "planted",
    version_a: str = "v1",
    version_b: str = "v2",
    stressors: tuple[str, ...] = DEFAULT_STRESSORS,
    random_state: int = 0,
) -> tuple[pd.DataFrame, TargetData, TargetData]:
    """Runs and IRUP training rows of a planted version pair.

    Many parameters because it is a seeded generator like scikit-learn's ``make_*``: all keyword-only with
    defaults, each one property of the planted truth (fleet shape, bottlenecks, change, noise, names, seed).

    Parameters
    ----------
    n_groups, hosts_per_group, reps : int
        Fleet shape (see :func:`quiho.datasets.planted_bottleneck`).
    bottleneck_a, bottleneck_b : str
        Stressor each version's runtime depends on (equal: the resource profile does not shift).
    change : float, default 1.5
        Multiplier of B's runtime (1.0 = no change in level; >1 = slower).
    spread : float, default 0.3
        Std of log speed across hardware groups.
    app_noise : float, default 0.02
        Multiplicative run-to-run noise.
    application, version_a, version_b : str
        Names in the returned data.
    random_state : int, default 0

    Returns
    -------
    runs : DataFrame
        ``host``, ``version``, ``repetition``, ``order``, ``status`` ("ok"), ``value``, ``reason`` (None).
    data_a, data_b : TargetData
        IRUP training rows of each version (same fingerprints).
    """
    kw = dict(n_groups=n_groups, hosts_per_group=hosts_per_group, reps=reps, stressors=stressors, spread=spread,
              app_noise=app_noise, random_state=random_state)
    a = planted_bottleneck(bottleneck=bottleneck_a, target=f"{application}@{version_a}", **kw)  # type: ignore[arg-type]
    b = planted_bottleneck(bottleneck=bottleneck_b, target=f"{application}@{version_b}", **kw)  # type: ignore[arg-type]
    # Same seed, same fleet; B's level is scaled so its fleet median is `change` times A's.
    scale = change * float(np.median(a.y)) / float(np.median(b.y))
    b = TargetData(target=b.target, X=b.X, y=(b.y * scale).rename(b.target), meta=b.meta, unit="s",
                   higher_is_better=False)
    rows = []
    for data, version in ((a, version_a), (b, version_b)):
        for i, (host, rep, value) in enumerate(zip(data.meta["host"], data.meta["repetition"], data.y, strict=True)):
            order = 2 * (int(rep) - 1) + (0 if version == version_a else 1) + 1
            rows.append((host, version, int(rep), order, "ok", float(value), None))
            del i
    runs = pd.DataFrame(rows, columns=["host", "version", "repetition", "order", "status", "value", "reason"])
    return runs, a, b
