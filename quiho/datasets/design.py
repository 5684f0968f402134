"""A planted designed fleet: hosts of a full factorial design, two versions with known factor effects.

The truth is the log effect of every factor on each version (``effects_a``, ``effects_b``), so a design analysis
must find exactly those; stressors respond as the local fleet's do (the quota slows everything, huge pages and the
co-runner move the memory class only), so each factor's resource class is known too.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from quiho.design.factors import FactorTable, factor_table

__all__ = ["planted_design", "planted_fingerprints", "planted_hosts", "PLANTED_LEVELS"]

#: Each factor's two levels on the planted fleet (the local fleet's knobs).
PLANTED_LEVELS: dict[str, tuple[object, object]] = {"cpu-quota": (100, 68), "huge-pages": ("never", "always"),
                                                    "co-runner": ("none", "stream")}
_STRESSOR_EFFECTS = {  # log effect on bogo-ops/s of each factor's far level
    "cpu": {"cpu-quota": -0.39}, "matrix": {"cpu-quota": -0.39},
    "stream": {"cpu-quota": -0.39, "huge-pages": 0.2, "co-runner": -0.3},
    "memrate": {"cpu-quota": -0.39, "huge-pages": 0.15, "co-runner": -0.25},
}


def planted_design(*, effects_a: Mapping[str, float], effects_b: Mapping[str, float],
                   factors: tuple[str, ...] = ("cpu-quota", "huge-pages", "co-runner"), rounds: int = 1,
                   runs: int = 5, change: float = 0.0, visit_sd: float = 0.03, run_sd: float = 0.08,
                   random_state: int = 0) -> tuple[pd.DataFrame, FactorTable]:
    """Runs of versions ``v1``/``v2`` on a 2^k fleet in ``rounds`` rounds, and its factor table.

    Many parameters because it is a seeded generator like scikit-learn's ``make_*``: all keyword-only with
    defaults, each one property of the planted truth (effects, design, noise, seed).

    Parameters
    ----------
    effects_a, effects_b : mapping
        Factor name -> log effect of its far level on that version (missing: 0).
    factors : tuple of str
        Factors of the design (names of :data:`PLANTED_LEVELS`); 2^k hosts.
    rounds, runs : int
        Measurement rounds, and runs per version per host per round.
    change : float
        Log level change of ``v2`` (the metric verdict's business, not the profile's).
    visit_sd, run_sd : float
        SD of a visit's shared noise (both versions alike) and of a run's own noise, log scale.
    random_state : int
        Seed.

    Returns
    -------
    runs : DataFrame
        ``host``, ``version``, ``round``, ``repetition``, ``status``, ``value``.
    factors : FactorTable
        The coded factors of the hosts.
    """
    rng = np.random.default_rng(random_state)
    hosts = planted_hosts(factors)
    table = factor_table(hosts)
    X = {h: {f: float(c) for f, c in zip(factors, _bits(h), strict=True)} for h in hosts}
    rows = []
    for r in range(rounds):
        drift = rng.normal(0, 0.05)
        for h in rng.permutation(list(hosts)):
            shared = rng.normal(0, visit_sd)
            for v, eff, lvl in (("v1", effects_a, 0.0), ("v2", effects_b, change)):
                mu = 0.0 + lvl + drift + shared + sum(eff.get(f, 0.0) * X[h][f] for f in factors)
                for i in range(runs):
                    rows.append({"host": h, "version": v, "round": r, "repetition": r * runs + i, "status": "ok",
                                 "value": float(np.exp(mu + rng.normal(0, run_sd)))})
    return pd.DataFrame(rows), table


def planted_hosts(factors: tuple[str, ...] = ("cpu-quota", "huge-pages", "co-runner")) -> dict[str, dict[str, object]]:
    """The 2^k planted hosts and each one's factor levels (names ``h-010``: one digit per factor)."""
    hosts = {}
    for combo in itertools.product((0, 1), repeat=len(factors)):
        name = "h-" + "".join(str(c) for c in combo)
        hosts[name] = {f: PLANTED_LEVELS[f][c] for f, c in zip(factors, combo, strict=True)}
    return hosts


def planted_fingerprints(table: FactorTable, *, sd: float = 0.02, random_state: int = 0) -> pd.DataFrame:
    """Long fingerprints (``host``, ``stressor``, ``value``) of the planted hosts: two repetitions each."""
    rng = np.random.default_rng(random_state)
    rows = []
    for h in table.hosts:
        x = dict(zip(table.names, _bits(h), strict=True))
        for s, eff in _STRESSOR_EFFECTS.items():
            mu = np.log(1000.0) + sum(e * x.get(f, 0.0) for f, e in eff.items())
            rows += [{"host": h, "stressor": s, "value": float(np.exp(mu + rng.normal(0, sd))), "repetition": i}
                     for i in range(2)]
    return pd.DataFrame(rows)


def _bits(host: str) -> list[int]:
    return [int(c) for c in host.removeprefix("h-")]
