"""Seeded generators of Perun-style baseline/target pairs with known truth.

The Perun-compatible set follows the recipe of Perun's artificial benchmark, reverse-engineered from its 24
``degradation_profiles`` test files: x = 1, 1001, ..., 999 001 plus 1 000 000 (1001 points), six baseline families,
three injected changes (constant, linear, quadratic) checked in both directions = 36 ordered pairs.
The ``const`` family's "quadratic" target is exponential in Perun's files (y ≈ 1.17·1.00004^x); it is
generated the same way here and labelled ``exponential`` (``perun_kind`` keeps Perun's column name).

The harder variants are: null pairs (two independent noise draws), a change-size sweep
relative to the baseline mean, heavy-tailed and multiplicative noise, localized changes, concave changes
(√x, ln x) and true negative-quadratic changes. ``repetitions`` gives several measurements per x.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from quiho.detect import Samples

__all__ = ["FAMILY_NAMES", "LabeledPair", "perun_x", "baseline_curve", "perun_pairs", "null_pair", "changed_pair",
           "noise"]

Arr = NDArray[np.float64]
FAMILY_NAMES = ("const", "lin", "log", "quad", "pow", "exp")


@dataclass(frozen=True)
class LabeledPair:
    """A baseline/target pair and its truth: ``direction`` +1 degradation, -1 optimization, 0 none."""

    name: str
    family: str
    baseline: Samples
    target: Samples
    direction: int
    kind: str
    perun_kind: str = ""


def perun_x(repetitions: int = 1) -> Arr:
    """The x of Perun's files: 1 + 1000·k (k = 0..999) and 10⁶, each repeated ``repetitions`` times."""
    x = np.concatenate([1 + 1000 * np.arange(1000.0), [1e6]])
    return np.repeat(x, repetitions)


_CURVES: dict[str, Callable[[Arr], Arr]] = {
    "const": lambda x: np.ones_like(x),
    "lin": lambda x: 240 + 0.049 * x,
    "log": lambda x: -116556 + 11033 * np.log(x),
    "quad": lambda x: 9479 - 7.9e-5 * x + 4.59e-8 * x**2,
    "pow": lambda x: 0.303 * x**0.8605,
    "exp": lambda x: 4372 * np.exp(2.889e-6 * x),
}


def baseline_curve(family: str, x: Arr) -> Arr:
    """Noise-free baseline of a family (fitted to Perun's ``degradation_profiles`` files)."""
    return _CURVES[family](x)


def noise(family: str, x: Arr, rng: np.random.Generator, kind: str = "perun") -> Arr:
    """Additive noise of a family.

    ``perun`` (as in the files), ``heavy`` (Student t, 2 dof, same scale) or ``multiplicative`` (returned as
    additive: curve·(e^{N(0, 0.1)} - 1)).
    """
    if family == "const":
        scale = 0.01 / np.sqrt(3)
        if kind == "perun":
            return rng.uniform(-0.01, 0.01, x.size)
    else:
        scale = {"lin": 300.0, "log": 170.0, "quad": 170.0, "pow": 165.0, "exp": 200.0}[family]
    if kind == "perun":
        e = rng.normal(0, scale, x.size)
        return np.rint(e) if family == "lin" else e
    if kind == "heavy":
        return scale * rng.standard_t(2, x.size) / np.sqrt(2)
    if kind == "multiplicative":
        return baseline_curve(family, x) * np.expm1(rng.normal(0, 0.1, x.size))
    raise ValueError(f"unknown noise kind {kind!r}")


def _perun_change(family: str, change: str, x: Arr, rng: np.random.Generator) -> Arr:
    n = x.size
    if change == "constant":
        if family == "const":
            return np.full(n, 10.0)
        half = 10 if family == "pow" else 500
        return 5000 + rng.integers(-half, half + 1, n).astype(float)
    if change == "linear":
        if family == "const":
            return 10 + 1e-4 * x
        return 0.01 * x + rng.integers(0, 21, n).astype(float)
    if change == "quadratic":
        if family == "const":
            return 1.17 * np.exp(4e-5 * x) - 1.0
        c = 2.5e-7 if family == "pow" else 4e-8
        return c * x**2 + rng.integers(-500, 501, n).astype(float)
    raise ValueError(f"unknown change {change!r}")


def perun_pairs(seed: int = 0, repetitions: int = 1) -> list[LabeledPair]:
    """The 36 ordered pairs of Perun's artificial benchmark, regenerated (6 families × 3 changes × ±)."""
    rng = np.random.default_rng(seed)
    x = perun_x(repetitions)
    out = []
    for fam in FAMILY_NAMES:
        base = baseline_curve(fam, x) + noise(fam, x, rng)
        for change in ("constant", "linear", "quadratic"):
            tgt = base + _perun_change(fam, change, x, rng)
            kind = "exponential" if (fam == "const" and change == "quadratic") else change
            b, t = Samples.of(x, base), Samples.of(x, tgt)
            out.append(LabeledPair(f"{fam}+{change}", fam, b, t, +1, kind, change))
            out.append(LabeledPair(f"{fam}-{change}", fam, t, b, -1, kind, change))
    return out


def null_pair(family: str, seed: int, noise_kind: str = "perun", repetitions: int = 1) -> LabeledPair:
    """Two independent noise draws of the same baseline: the truth is no change."""
    rng = np.random.default_rng(seed)
    x = perun_x(repetitions)
    c = baseline_curve(family, x)
    return LabeledPair(f"{family} null ({noise_kind})", family, Samples.of(x, c + noise(family, x, rng, noise_kind)),
                       Samples.of(x, c + noise(family, x, rng, noise_kind)), 0, "")


_SHAPES: dict[str, Callable[[Arr], Arr]] = {
    "constant": np.ones_like,
    "linear": lambda u: u,
    "quadratic": lambda u: u * u,
    "sqrt": np.sqrt,
    "localized": lambda u: ((u >= 0.4) & (u <= 0.6)).astype(float),
    "negative-quadratic": lambda u: -(u * u),
}


def changed_pair(
    family: str, shape: str, size: float, seed: int, noise_kind: str = "perun", repetitions: int = 1
) -> LabeledPair:
    """Baseline plus a change of a given shape whose mean over x is ``size`` × the baseline mean.

    Parameters
    ----------
    family : str
        One of :data:`FAMILY_NAMES`.
    shape : str
        ``constant``, ``linear``, ``quadratic``, ``sqrt``, ``logarithmic``, ``localized`` (only on the middle
        20 % of the x range; ``size`` is then the relative change *inside* that range) or
        ``negative-quadratic`` (target = base − c·x², ``size`` is the magnitude of the mean decrease).
    size : float
        Relative size, e.g. 0.05 for 5 %.
    """
    rng = np.random.default_rng(seed)
    x = perun_x(repetitions)
    c = baseline_curve(family, x)
    u = (x - x.min()) / np.ptp(x)
    g = np.log(x) if shape == "logarithmic" else _SHAPES[shape](u)
    mean_b = float(np.mean(c))
    if shape == "localized":
        mask = g > 0
        g = g * size * float(np.mean(c[mask]))
    else:
        g = g / abs(float(np.mean(g))) * size * abs(mean_b)
    base = c + noise(family, x, rng, noise_kind)
    tgt = c + g + noise(family, x, rng, noise_kind)
    direction = -1 if shape == "negative-quadratic" else (1 if size > 0 else -1)
    kind = "quadratic" if shape == "negative-quadratic" else shape
    return LabeledPair(f"{family} {shape} {size:+.0%} ({noise_kind})", family, Samples.of(x, base),
                       Samples.of(x, tgt), direction, kind)
