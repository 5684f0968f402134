"""The resource story of two versions on a designed fleet: which classes each leans on, and what moved.

:func:`analyse_design` combines the factor effects (:mod:`quiho.design.effects`) into the answer a profile gives
on such a fleet: each version's class ("memory-bound (huge pages −19 % [−26, −12], ...)"), a verdict on whether
the resource profile changed (``different`` / ``equivalent`` / ``inconclusive`` / ``not-meaningful``) with the
changed factors' sizes, intervals and p, and class-level hints. Every text, table and JSON field of a profile
that speaks of the design is rendered from the one :class:`DesignAnalysis`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from quiho._text import UNTESTED_CHANGE, holm_weight_note
from quiho.design.effects import (
    AxisClass,
    DesignSettings,
    Effect,
    VersionEffects,
    axis_classes,
    effect_changes,
    pooled_effect,
    stressor_effects,
    version_effects,
)
from quiho.design.factors import FactorTable

__all__ = ["ClassStory", "DesignAnalysis", "analyse_design", "effect_table", "EFFECT_HEAD", "DESIGN_SCHEMA_VERSION"]

DESIGN_SCHEMA_VERSION = 1
#: Fewest residual degrees of freedom the change regression needs before it may say anything.
MIN_DF = 2
_CLASS_NAMES = {"cpu": "CPU", "memory": "memory", "cpu-cache": "cache", "vm": "virtual-memory", "os": "OS",
                "storage": "storage", "kernel-entry": "kernel-entry", "network": "network",
                "memory-capacity": "memory-capacity"}


@dataclass(frozen=True)
class ClassStory:
    """One version's resource class on the fleet and the effects that say so."""

    label: str
    resources: tuple[str, ...]
    evidence: str

    def text(self) -> str:
        """``"memory-bound (huge pages −19 % [−26, −12])"``."""
        return f"{self.label} ({self.evidence})" if self.evidence else self.label

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"label": self.label, "resources": list(self.resources), "evidence": self.evidence}


@dataclass(frozen=True)
class DesignAnalysis:
    """Factor effects of both versions, their changes, the stressors' effects and the verdict built on them."""

    factors: FactorTable
    axes: tuple[AxisClass, ...]
    a: VersionEffects
    b: VersionEffects
    changes: tuple[Effect, ...]
    visits: int
    permutations: int
    stressors: Mapping[str, tuple[Effect, ...]]
    story_a: ClassStory
    story_b: ClassStory
    verdict: str
    reason: str
    settings: DesignSettings
    higher_is_better: bool = False

    def toward(self, effect: Effect) -> float:
        """``effect``'s log estimate in the direction its factor moves its resource: > 0 where a version leans on it."""
        ax = next((ax for ax in self.axes if ax.factor == effect.factor), None)
        return _toward(effect.estimate, ax.slows if ax else None, self.higher_is_better)

    def leans(self, effect: Effect) -> bool:
        """True when ``effect``'s interval excludes 0 on the side its factor moves what leans on its resource."""
        return effect.excludes_zero() and self.toward(effect) > 0

    @property
    def moved(self) -> tuple[Effect, ...]:
        """The changes that count: Holm-adjusted p below the level of a look and at least the floor."""
        return _moved(self.changes, self.settings)

    @property
    def class_shift(self) -> bool:
        """True when a change counts and the two versions' classes differ."""
        return bool(self.moved) and self.story_a.label != self.story_b.label

    def axis_resource(self) -> dict[str, str]:
        """Factor name -> the resource class it loads."""
        return {ax.factor: ax.resource for ax in self.axes}

    def label(self, factor: str) -> str:
        """The factor's human name (``"huge pages"``)."""
        return next((f.label for f in self.factors.factors if f.name == factor), factor)

    def to_dict(self) -> dict[str, Any]:
        """The ``design`` section of a profile's JSON."""
        s = self.settings
        return {
            "schema_version": DESIGN_SCHEMA_VERSION, "verdict": self.verdict, "reason": self.reason,
            "story": {"a": self.story_a.to_dict(), "b": self.story_b.to_dict()}, "class_shift": self.class_shift,
            "factors": self.factors.to_dict(), "axes": [ax.to_dict() for ax in self.axes],
            "effects": {"a": self.a.to_dict(), "b": self.b.to_dict()},
            "changes": [c.to_dict() for c in self.changes], "moved": [c.factor for c in self.moved],
            "visits": self.visits, "permutations": self.permutations,
            "stressors": {st: [e.to_dict() for e in effs] for st, effs in sorted(self.stressors.items())},
            "settings": {"alpha": s.alpha, "looks": s.looks, "level": s.level, "floor": s.floor,
                         "permutations": s.permutations, "random_state": s.random_state, "summary": s.summary},
        }


def _stressor_reference(axis: AxisClass, higher_is_better: bool) -> str:
    """What the factor does to the stressors of its class and to the cpu ones, in the metric's direction.

    A version's effect is read against these. The stressors are throughputs, so for a lower-is-better metric
    their effect is given as time per operation.
    """
    ce = axis.class_effects
    if axis.resource not in ce:
        return ""
    sign, unit = (1.0, "ops/s") if higher_is_better else (-1.0, "time per op")
    parts = [f"{c} stressors {100 * math.expm1(sign * ce[c][0]):+.0f} %" for c in dict.fromkeys((axis.resource, "cpu"))
             if c in ce]
    return ", ".join(parts) + f" in {unit}"


def _toward(estimate: float, slows: bool | None, higher_is_better: bool) -> float:
    """A log effect signed so that > 0 is the way the factor moves its resource (any way when ``slows`` is None)."""
    worse = -estimate if higher_is_better else estimate
    return abs(worse) if slows is None else (worse if slows else -worse)


def _moved(changes: tuple[Effect, ...], settings: DesignSettings) -> tuple[Effect, ...]:
    """The changes that count: Holm-adjusted p below the level of a look and at least the floor."""
    return tuple(c for c in changes
                 if c.p_adjusted is not None and c.p_adjusted < settings.level and c.beyond(settings.floor))


def _story(effects: VersionEffects, axes: Mapping[str, AxisClass], labels: Mapping[str, str],
           floor: float, higher_is_better: bool = False, pooled: frozenset[str] = frozenset()) -> ClassStory:
    """A version's class: the most specific resource whose axes are shown to move it by at least the floor.

    "Shown": the whole 95 % interval lies beyond ±floor (the floor is quiho's smallest change that matters, the
    metric's ``--min-change``), so an effect that only may be that large does not name a class. An effect names its
    class only in the direction the factor moves that class (a version faster with less page cache does not lean
    on page cache). A small effect is cited beside what the factor does to its class's stressors and the cpu ones;
    that is not decisive.
    """
    by = effects.by_factor()
    resource = {f: ax.resource for f, ax in axes.items()}

    def along(f: str) -> bool:
        return _toward(by[f].estimate, axes[f].slows if f in axes else None, higher_is_better) > 0

    shown = {f: e for f, e in by.items() if e.shown_beyond(floor)}
    leaning = {f: e for f, e in shown.items() if along(f)}
    against = [f for f in shown if f not in leaning]
    specific = sorted({resource.get(f, "none") for f in leaning} - {"cpu", "none"})

    def named(f: str) -> str:
        return f"{labels[f]} {by[f].text()}" + (" (both versions)" if f in pooled else "")

    def cite(fs: list[str]) -> str:
        return ", ".join(named(f) for f in fs)

    def opposite(fs: list[str]) -> str:
        return "".join(f"; {named(f)} against the way it moves its resource, so no class" for f in fs)

    if specific:
        fs = [f for f in leaning if resource.get(f) in specific]
        return ClassStory("/".join(_CLASS_NAMES.get(c, c) for c in specific) + "-bound", tuple(specific),
                          cite(fs) + opposite(against))
    mem_axes = [f for f in by if resource.get(f, "none") not in ("cpu", "none") and f not in shown]
    cpu = [f for f in leaning if resource.get(f) == "cpu"]

    def small(f: str) -> str:
        ref = _stressor_reference(axes[f], higher_is_better) if f in axes else ""
        why = ("within the noise" if not by[f].excludes_zero() else f"not shown beyond ±{100 * floor:.0f} %"
               + (f" ({ref})" if ref else ""))
        return f"{named(f)} {why}"

    if cpu and (mem_axes or against):
        parts = [cite(cpu)] + ([", ".join(small(f) for f in mem_axes)] if mem_axes else [])
        return ClassStory("CPU-bound", ("cpu",), "; ".join(parts) + opposite(against))
    if cpu:
        return ClassStory("CPU-time-bound", ("cpu",), cite(cpu) + "; the fleet has no axis that loads another "
                          "class, so which resource is not known")
    if not by:
        return ClassStory("unknown", (), "no factor effect could be estimated")
    tested = sorted({_CLASS_NAMES.get(r, r) for f in by if (r := resource.get(f, "none")) != "none"})
    return ClassStory("not moved by the fleet's axes" + (f" ({', '.join(tested)})" if tested else ""), (),
                      cite([f for f in by if f not in against]) + opposite(against))


def _p_text(c: Effect) -> str:
    """``"p = 0.003, Holm 0.012"``, or why the change was not tested."""
    if not c.tested or c.p_adjusted is None:
        return UNTESTED_CHANGE
    return f"p = {c.p_value:.3g}, Holm {c.p_adjusted:.3g}{holm_weight_note(c.weight)}"


def _verdict(changes: tuple[Effect, ...], visits: int, settings: DesignSettings, story_a: ClassStory,
             story_b: ClassStory, labels: Mapping[str, str], factors: FactorTable) -> tuple[str, str]:
    s = settings
    if not changes or visits == 0:
        return "not-meaningful", "no host ran both versions, or no factor is left"
    df = min(c.df for c in changes)  # the whole design's (an untested factor keeps it)
    hosts = len(factors.hosts)
    if hosts < len(factors.factors) + 2:
        return "not-meaningful", (f"{hosts} hosts for {len(factors.factors)} factor(s): with fewer than factors + 2 "
                                  "hosts each effect would include single hosts' own differences")
    if df < MIN_DF:
        return "not-meaningful", (f"{visits} visit(s) leave {df} residual degree(s) of freedom for "
                                  f"{len(changes)} factor(s): the noise between visits cannot be estimated "
                                  "(measure more rounds or more hosts)")
    moved = list(_moved(changes, s))
    # a level split over looks is said where it decides (a Holm p of 0.03 does not count at 0.025)
    level = f" (Holm level {s.level:.3g}: {s.alpha:g} split over {s.looks} looks)" if s.looks > 1 else ""

    def cite(cs: list[Effect]) -> str:
        return ", ".join(f"{labels[c.factor]} {c.text()} ({_p_text(c)})" for c in cs)

    if moved:
        head = (f"{story_a.label} → {story_b.label}" if story_a.label != story_b.label
                else f"both {story_a.label}, with changed sensitivities")
        return "different", f"{head}: the effect changed for {cite(moved)}{level}"
    if all(c.within(s.floor) for c in changes):
        return "equivalent", (f"every factor's effect changed by less than ±{100 * s.floor:.0f} % (95 % intervals): "
                              + cite(list(changes)))
    return "inconclusive", ("no factor's effect changed beyond the noise and the floor, but not every interval "
                            f"is within ±{100 * s.floor:.0f} %{level}: " + cite(list(changes)))


def _pooled(a: VersionEffects, b: VersionEffects, pooled: frozenset[str]) -> tuple[VersionEffects, VersionEffects]:
    """Both versions' effects with each factor of ``pooled`` replaced by the two versions' mean effect."""
    ea, eb = a.by_factor(), b.by_factor()
    both = {f: pooled_effect(ea[f], eb[f]) for f in pooled if f in ea and f in eb}
    return (dataclasses.replace(a, effects=tuple(both.get(e.factor, e) for e in a.effects)),
            dataclasses.replace(b, effects=tuple(both.get(e.factor, e) for e in b.effects)))


def analyse_design(runs: pd.DataFrame, version_a: str, version_b: str, factors: FactorTable, *,
                   fingerprints: pd.DataFrame | None = None, primary: Mapping[str, str] | None = None,
                   settings: DesignSettings = DesignSettings(), higher_is_better: bool = False) -> DesignAnalysis:
    """The design analysis of one profile's runs on a fleet whose hosts differ by ``factors``.

    Parameters
    ----------
    runs : DataFrame
        One row per run: ``host``, ``version`` (``version_a`` or ``version_b``), ``status``, ``value``, and
        ``round`` when the hosts were measured in rounds.
    version_a, version_b : str
        The two version labels of ``runs``.
    factors : FactorTable
        The coded factors (:func:`quiho.design.factors.factor_table`); must not be empty.
    fingerprints : DataFrame, optional
        Long fingerprints (``host``, ``stressor``, ``value``, optional ``round``): which class each factor loads.
    primary : mapping, optional
        Stressor -> analysis class (the catalog's ``primary``).
    settings : DesignSettings
        Level, floor, permutations and seed.
    higher_is_better : bool, default False
        Direction of the metric (a class story compares the version's speed-up with the stressors').

    Returns
    -------
    DesignAnalysis

    Examples
    --------
    >>> from quiho.datasets import planted_design
    >>> runs, factors = planted_design(effects_a={"huge-pages": -0.2}, effects_b={}, random_state=0)
    >>> res = analyse_design(runs, "v1", "v2", factors)
    >>> res.verdict, res.story_a.label
    ('different', 'memory-bound')
    """
    eff_a = version_effects(runs, version_a, factors, settings.summary)
    eff_b = version_effects(runs, version_b, factors, settings.summary)
    changes, n_visits, B = effect_changes(runs, version_a, version_b, factors, settings)
    st = stressor_effects(fingerprints, factors) if fingerprints is not None and len(fingerprints) else {}
    axes = axis_classes(st, factors, primary or {}, settings.floor)
    by_axis = {ax.factor: ax for ax in axes}
    labels = {f.name: f.label for f in factors.factors}
    # a label may differ between the versions only through a factor whose change the test established: every
    # other factor is labelled from both versions' runs together (else two equal effects either side of a
    # threshold would read as a class shift the test did not find)
    moved = {c.factor for c in _moved(changes, settings)}
    pooled = frozenset(f.name for f in factors.factors if f.name not in moved)
    lab_a, lab_b = _pooled(eff_a, eff_b, pooled)
    story_a = _story(lab_a, by_axis, labels, settings.floor, higher_is_better, pooled)
    story_b = _story(lab_b, by_axis, labels, settings.floor, higher_is_better, pooled)
    verdict, reason = _verdict(changes, n_visits, settings, story_a, story_b, labels, factors)
    return DesignAnalysis(factors, axes, eff_a, eff_b, changes, n_visits, B, st, story_a, story_b, verdict,
                          reason, settings, higher_is_better)


#: Columns of :func:`effect_table`.
EFFECT_HEAD = ("factor", "loads", "effect on a (95 % CI)", "effect on b (95 % CI)", "change (95 % CI)",
               "permutation p")


def effect_table(res: DesignAnalysis) -> list[list[str]]:
    """Rows of the design table every renderer prints: factor, what it loads, effect on a, on b, change, p."""
    a, b = res.a.by_factor(), res.b.by_factor()
    ch = {c.factor: c for c in res.changes}
    rows = []
    for f in res.factors.factors:
        c = ch.get(f.name)
        rows.append([f.describe(), res.axis_resource().get(f.name, "none"),
                     a[f.name].text() if f.name in a else "n/a", b[f.name].text() if f.name in b else "n/a",
                     c.text() if c else "n/a",
                     "n/a" if c is None else UNTESTED_CHANGE if not c.tested
                     else "n/a" if c.p_adjusted is None or math.isnan(c.p_value)
                     else f"{c.p_value:.3g} (Holm {c.p_adjusted:.3g}{holm_weight_note(c.weight)})"])
    return rows
