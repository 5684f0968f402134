"""Seeded performance histories with known truth: builds, repetitions, build effects, missing builds.

A *build* is one revision built and benchmarked; it is measured ``runs`` times. Each value is
``level(build) * (1 + build_effect + run_noise)``: the build effect is shared by all runs of a build (the
binary's layout, the machine's state that day), so repetitions of one build agree with each other more than
with the next build, and a change can only sit *between* builds. The build effect is independent across
builds, or AR(1) (``rho``) for a history that wanders. Some builds are missing (never measured): their
positions are gaps in ``orders``, and ``truth`` indexes the measured builds.

:func:`make_perf_history` draws one history of a named shape (:data:`SHAPES`); :func:`make_perf_suite`
draws ``n_each`` of every shape. Shapes with an empty truth are the negatives: no level change happened,
so every reported change is a false alarm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from quiho.history import History

__all__ = ["PerfHistoryCase", "SHAPES", "NEGATIVE_SHAPES", "make_perf_history", "make_perf_suite"]


@dataclass(frozen=True, eq=False)
class PerfHistoryCase:
    """A generated performance history with its truth.

    Attributes
    ----------
    shape : str
        Name of the generating shape (a key of :data:`SHAPES`).
    orders : ndarray of int, shape (n,)
        Positions of the measured builds (gaps = missing builds).
    samples : tuple of ndarray
        ``samples[i]``: the repetitions measured for build ``i``.
    signal : ndarray, shape (n,)
        True level of each measured build (spikes included).
    truth : tuple of int
        Indexes (into the measured builds) of the first build of each new level; empty for negatives.
    """

    shape: str
    orders: np.ndarray
    samples: tuple[np.ndarray, ...]
    signal: np.ndarray
    truth: tuple[int, ...]

    @property
    def values(self) -> np.ndarray:
        """Mean of the repetitions of each measured build, shape (n,)."""
        return np.array([s.mean() for s in self.samples])

    def history(self) -> History:
        """The case as a :class:`quiho.history.History` (revisions ``b<order>``)."""
        return History(self.shape, tuple(f"b{o}" for o in self.orders), self.orders, self.samples, "s")


@dataclass(frozen=True)
class _Draw:
    """The shape-specific part of a history: level per build position, truth positions, build-effect rho."""

    level: np.ndarray
    changes: tuple[int, ...]
    rho: float = 0.0
    upper_band: float = 0.0  # relative height of the upper band (bimodal runs)
    p_upper: float = 0.0


def _steps(n: int, rng: np.random.Generator, sd: float, k_max: int = 3) -> tuple[np.ndarray, tuple[int, ...]]:
    k = int(rng.integers(1, k_max + 1))
    cps = tuple(sorted(int(c) for c in rng.choice(np.arange(20, n - 20, 20), size=k, replace=False)))
    level = np.ones(n)
    for c in cps:
        # 4-10 build-noise sds (about 2-10 % at the suite's noise): what a regression alert should catch
        level[c:] *= 1 + float(rng.choice([-1, 1]) * rng.uniform(4, 10)) * sd
    return level, cps


def _spikes(level: np.ndarray, rng: np.random.Generator, sd: float, away: tuple[int, ...] = ()) -> np.ndarray:
    """Lone slow builds: 3 % of the builds (at least 2), 10-30 build-noise sds slower, none next to a change."""
    n = level.size
    ok = np.array([all(abs(i - c) > 3 for c in away) for i in range(2, n - 2)])
    where = rng.choice(np.arange(2, n - 2)[ok], size=max(2, int(0.03 * n)), replace=False)
    out = level.copy()
    out[where] *= 1 + rng.uniform(10, 30, where.size) * sd
    return out


def _draw_step(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    level, cps = _steps(n, rng, sd)
    return _Draw(level, cps)


def _draw_drift(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    total = float(rng.choice([-1, 1]) * rng.uniform(4, 10)) * sd  # same size as a step, spread over all builds
    return _Draw(1 + total * np.arange(n) / (n - 1), ())


def _draw_spikes(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    return _Draw(_spikes(np.ones(n), rng, sd), ())


def _draw_step_spikes(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    level, cps = _steps(n, rng, sd)
    return _Draw(_spikes(level, rng, sd, cps), cps)


def _draw_bimodal(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    return _Draw(np.ones(n), (), upper_band=float(rng.uniform(6, 12)) * sd, p_upper=float(rng.uniform(0.1, 0.5)))


def _draw_ar1(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    return _Draw(np.ones(n), (), rho=float(rng.uniform(0.5, 0.8)))


def _draw_ar1_step(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    level, cps = _steps(n, rng, sd, k_max=1)
    return _Draw(level, cps, rho=float(rng.uniform(0.5, 0.8)))


def _draw_null(n: int, rng: np.random.Generator, sd: float) -> _Draw:
    return _Draw(np.ones(n), ())


#: shape name -> drawer of its level, truth and noise dependence; the empty-truth shapes are negatives
SHAPES: dict[str, Callable[[int, np.random.Generator, float], _Draw]] = {
    "step": _draw_step,
    "step+spikes": _draw_step_spikes,
    "ar1+step": _draw_ar1_step,
    "step+missing": _draw_step,  # the missing fraction is raised for this shape in make_perf_history
    "null": _draw_null,
    "drift": _draw_drift,
    "spikes": _draw_spikes,
    "bimodal": _draw_bimodal,
    "ar1": _draw_ar1,
}
#: shapes without a level change
NEGATIVE_SHAPES = ("null", "drift", "spikes", "bimodal", "ar1")


def _build_effect(n: int, rho: float, sd: float, rng: np.random.Generator) -> np.ndarray:
    """Build effects with marginal sd ``sd``: independent (rho 0) or AR(1) across builds."""
    w = rng.normal(0.0, sd * np.sqrt(1 - rho**2), n)
    e = np.empty(n)
    e[0] = rng.normal(0.0, sd)  # start in the stationary distribution
    for t in range(1, n):
        e[t] = rho * e[t - 1] + w[t]
    return e


def make_perf_history(shape: str = "step", n_builds: int = 200, *, runs: int | None = None,
                      build_sd: float = 0.01, run_sd: float = 0.01, missing: float = 0.05,
                      base: float = 100.0, random_state: int | np.random.Generator | None = 0) -> PerfHistoryCase:
    """Draw one performance history of ``shape``.

    Parameters
    ----------
    shape : str, default "step"
        A key of :data:`SHAPES`.
    n_builds : int, default 200
        Build positions before missing ones are removed.
    runs : int or None, default None
        Repetitions per build; None draws 1, 3 or 5 for the whole history.
    build_sd, run_sd : float, default 0.01
        Relative sd of the build effect (shared by a build's runs) and of each run.
    missing : float, default 0.05
        Fraction of builds never measured (0.2 for ``step+missing``); the first and last are always measured.
    base : float, default 100.0
        Level of the first build (e.g. seconds).
    random_state : int, Generator or None
        Seed.

    Returns
    -------
    PerfHistoryCase

    Raises
    ------
    ValueError
        Unknown shape or fewer than 60 builds.

    Examples
    --------
    >>> c = make_perf_history("step", 100, runs=3, random_state=1)
    >>> len(c.samples[0]), c.truth == tuple(sorted(c.truth))
    (3, True)
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of {', '.join(SHAPES)}")
    if n_builds < 60:
        raise ValueError(f"n_builds must be >= 60, got {n_builds}")
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    r = int(runs) if runs is not None else int(rng.choice([1, 3, 5]))
    # the per-build mean's noise sd: what step heights and spike sizes are measured in
    sd = float(np.sqrt(build_sd**2 + run_sd**2 / r))
    d = SHAPES[shape](n_builds, rng, sd)
    effect = _build_effect(n_builds, d.rho, build_sd, rng)
    noise = rng.normal(0.0, run_sd, (n_builds, r))
    if d.p_upper:
        noise = noise + d.upper_band * (rng.random((n_builds, r)) < d.p_upper)
    values = base * d.level[:, None] * (1 + effect[:, None] + noise)
    frac = 0.2 if shape == "step+missing" else missing
    keep = rng.random(n_builds) >= frac
    keep[[0, -1]] = True
    for c in d.changes:  # the first build of a new level is measured, so the truth is an observed index
        keep[c] = True
    orders = np.flatnonzero(keep)
    truth = tuple(int(np.searchsorted(orders, c)) for c in d.changes)
    return PerfHistoryCase(shape, orders, tuple(values[o] for o in orders), base * d.level[orders], truth)


def make_perf_suite(n_each: int = 20, n_builds: int = 200,
                    random_state: int | None = 0) -> list[PerfHistoryCase]:
    """``n_each`` histories of every shape in :data:`SHAPES`, all seeded from ``random_state``.

    Examples
    --------
    >>> suite = make_perf_suite(2, random_state=0)
    >>> len(suite) == 2 * len(SHAPES)
    True
    """
    rng = np.random.default_rng(random_state)
    return [make_perf_history(s, n_builds, random_state=rng) for _ in range(n_each) for s in SHAPES]
