"""Seeded performance histories with known change points.

Every generator returns a :class:`HistoryCase` whose ``truth`` lists the
indexes where the generating process changed (the first index of each new
segment), so tests and ``bench/history_accuracy.py`` can score detectors.
``truth`` is empty for the null cases: constant, slow drift, bimodal banding,
wandering (serially dependent) noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "HistoryCase",
    "step_history",
    "trend_history",
    "variance_change_history",
    "outlier_history",
    "bimodal_history",
    "heavy_tail_history",
    "ar_noise_history",
    "history_suite",
]


@dataclass(frozen=True, eq=False)
class HistoryCase:
    """A generated history: observed ``values``, noise-free ``signal`` and the true change indexes."""

    name: str
    values: np.ndarray
    signal: np.ndarray
    truth: tuple[int, ...]


def _rng(random_state: int | np.random.Generator | None) -> np.random.Generator:
    return random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)


def _levels(n: int, change_points: tuple[int, ...], levels: tuple[float, ...]) -> np.ndarray:
    if len(levels) != len(change_points) + 1:
        raise ValueError("need one more level than change points")
    bounds = [0, *change_points, n]
    out = np.empty(n)
    for k in range(len(levels)):
        out[bounds[k]:bounds[k + 1]] = levels[k]
    return out


def step_history(n: int = 200, change_points: tuple[int, ...] = (60, 130), levels: tuple[float, ...] = (100, 115, 105),
                 noise: float = 2.0, random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Piecewise-constant levels plus Gaussian noise of standard deviation ``noise`` (0 = noise-free)."""
    signal = _levels(n, change_points, levels)
    y = signal + _rng(random_state).normal(0, noise, n) if noise > 0 else signal.copy()
    return HistoryCase("steps", y, signal, tuple(change_points))


def trend_history(n: int = 200, start: float = 100.0, drift: float = 6.0, noise: float = 2.0,
                  random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """A slow linear drift of ``drift`` over the whole history: no change point."""
    signal = start + drift * np.arange(n) / max(n - 1, 1)
    return HistoryCase("trend", signal + _rng(random_state).normal(0, noise, n), signal, ())


def variance_change_history(n: int = 200, change_point: int = 100, level: float = 100.0,
                            noise: tuple[float, float] = (1.0, 6.0),
                            random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Same mean, noise standard deviation changes at ``change_point`` (a change in spread, not level)."""
    rng = _rng(random_state)
    sd = np.where(np.arange(n) < change_point, noise[0], noise[1])
    signal = np.full(n, level)
    return HistoryCase("variance", signal + rng.normal(0, 1, n) * sd, signal, (change_point,))


def outlier_history(n: int = 200, change_points: tuple[int, ...] = (100,), levels: tuple[float, ...] = (100, 112),
                    noise: float = 2.0, outlier_rate: float = 0.03, outlier_size: float = 60.0,
                    random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Steps plus isolated outliers (``outlier_rate`` of the revisions, ``+outlier_size``)."""
    rng = _rng(random_state)
    signal = _levels(n, change_points, levels)
    y = signal + rng.normal(0, noise, n)
    y[rng.random(n) < outlier_rate] += outlier_size
    return HistoryCase("outliers", y, signal, tuple(change_points))


def bimodal_history(n: int = 200, bands: tuple[float, float] = (100.0, 130.0), p_upper: float = 0.3,
                    noise: float = 1.5, random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Values fall at random in one of two bands, with no change: the detector should stay quiet."""
    rng = _rng(random_state)
    upper = rng.random(n) < p_upper
    y = np.where(upper, bands[1], bands[0]) + rng.normal(0, noise, n)
    signal = np.full(n, bands[0] * (1 - p_upper) + bands[1] * p_upper)
    return HistoryCase("bimodal", y, signal, ())


def heavy_tail_history(n: int = 200, change_points: tuple[int, ...] = (70, 140),
                       levels: tuple[float, ...] = (100, 110, 100), scale: float = 1.5, df: float = 2.0,
                       random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Steps plus Student-t noise with ``df`` degrees of freedom (df=2: infinite variance)."""
    signal = _levels(n, change_points, levels)
    return HistoryCase("heavy_tail", signal + scale * _rng(random_state).standard_t(df, n), signal,
                       tuple(change_points))


def ar_noise_history(n: int = 200, change_points: tuple[int, ...] = (), levels: tuple[float, ...] = (100.0,),
                     rho: float = 0.7, noise: float = 2.0,
                     random_state: int | np.random.Generator | None = 0) -> HistoryCase:
    """Steps plus AR(1) noise ``e_t = rho e_(t-1) + w_t`` with marginal sd ``noise``: a history that wanders.

    Real histories are serially dependent (machine state, caches, a neighbour's load drift between runs);
    with ``change_points=()`` this is a null case for detectors that assume independent noise.
    """
    if not -1 < rho < 1:
        raise ValueError(f"rho must be in (-1, 1), got {rho}")
    rng = _rng(random_state)
    w = rng.normal(0.0, noise * np.sqrt(1 - rho**2), n)
    e = np.empty(n)
    e[0] = rng.normal(0.0, noise)  # start in the stationary distribution
    for t in range(1, n):
        e[t] = rho * e[t - 1] + w[t]
    signal = _levels(n, change_points, levels)
    return HistoryCase("ar_noise", signal + e, signal, tuple(change_points))


def history_suite(n_each: int = 10, n: int = 200, random_state: int | None = 0) -> list[HistoryCase]:
    """A varied benchmark set: ``n_each`` seeded series of each generator with random change locations.

    Step heights are 3-8 noise standard deviations; one to three changes per series.
    """
    rng = np.random.default_rng(random_state)
    out: list[HistoryCase] = []
    for _ in range(n_each):
        k = int(rng.integers(1, 4))
        cps = tuple(sorted(int(c) for c in rng.choice(np.arange(15, n - 15, 15), size=k, replace=False)))
        lv = [100.0]
        for _ in cps:
            lv.append(lv[-1] + float(rng.choice([-1, 1]) * rng.uniform(6, 16)))
        out.append(step_history(n, cps, tuple(lv), noise=2.0, random_state=rng))
        out.append(trend_history(n, drift=float(rng.uniform(4, 10)), noise=2.0, random_state=rng))
        out.append(variance_change_history(n, int(rng.integers(50, n - 50)), random_state=rng))
        out.append(outlier_history(n, cps, tuple(lv), random_state=rng))
        out.append(bimodal_history(n, p_upper=float(rng.uniform(0.1, 0.5)), random_state=rng))
        out.append(heavy_tail_history(n, cps, tuple(lv), random_state=rng))
    return out
