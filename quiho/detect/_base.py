"""Shared types of the detectors: per-function samples, profiles, verdicts and the registry."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from quiho.errors import UsageError

__all__ = ["Samples", "Profile", "State", "Change", "ProfileDetector", "PerFunctionProfileDetector",
           "PROFILE_DETECTORS", "register_profile_detector", "get_profile_detector", "classify"]


@dataclass(frozen=True)
class Samples:
    """One function's measurements: amount ``y`` (e.g. inclusive ns) against an independent variable ``x``.

    ``exclusive`` (ns per call) is optional and used by exclusive-time detectors. ``run`` (optional) names the
    run each point came from; with it, :func:`quiho.detect.detect` checks flagged changes across runs.
    """

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    exclusive: NDArray[np.float64] | None = None
    run: NDArray[np.int64] | None = None

    @classmethod
    def of(cls, x: ArrayLike, y: ArrayLike, exclusive: ArrayLike | None = None,
           run: ArrayLike | None = None) -> Samples:
        xv = np.asarray(x, dtype=float).ravel()
        yv = np.asarray(y, dtype=float).ravel()
        if xv.shape != yv.shape:
            raise UsageError(f"x and y differ in length ({xv.size} vs {yv.size})")
        ex = None if exclusive is None else np.asarray(exclusive, dtype=float).ravel()
        rv = None if run is None else np.asarray(run, dtype=np.int64).ravel()
        if rv is not None and rv.shape != yv.shape:
            raise UsageError(f"run labels and y differ in length ({rv.size} vs {yv.size})")
        ok = np.isfinite(xv) & np.isfinite(yv)
        return cls(xv[ok], yv[ok], None if ex is None else ex[ok], None if rv is None else rv[ok])

    def __len__(self) -> int:
        return int(self.y.size)


@dataclass(frozen=True)
class Profile:
    """Per-function samples of one version; ``unit`` labels ``y`` (quiho traces: ``ns``).

    ``tracer_ns``: the tracer's own time per traced call where the calls were traced (None: not measured, as in
    Perun's files).
    """

    functions: Mapping[str, Samples]
    unit: str = "ns"
    source: str = ""
    tracer_ns: float | None = None


class State(StrEnum):
    """Verdict of one detector on one function."""

    NO_CHANGE = "no-change"
    MAYBE = "maybe"
    DEGRADATION = "degradation"
    OPTIMIZATION = "optimization"
    #: the data cannot support an answer (too few points, function missing on one side ...)
    NOT_MEANINGFUL = "not-meaningful"


@dataclass(frozen=True)
class Change:
    """A detector's verdict for one function, baseline → target.

    Attributes
    ----------
    function, method : str
    state : State
    kind : str
        Shape of the change (``constant``, ``linear``, ``quadratic``, ``logarithmic``, ``sqrt``,
        ``exponential``, ``localized``, ``other``) or what the method compares when it has no notion of shape
        (``mean-ratio``, ``distribution``, ``model-order``, ``exclusive-time``); ``""`` when no change.
    magnitude : float
        Relative change, target vs baseline, as a fraction (0.2 = 20 % slower); NaN if not meaningful.
    confidence : float
        In [0, 1]; its meaning is ``confidence_type`` (``1-p`` for tests, ``min R²`` for model comparisons).
    confidence_type : str
    p_value : float or None
    support : dict
        The numbers the verdict rests on (means, model formulas, per-interval results, thresholds used).
    """

    function: str
    method: str
    state: State
    kind: str
    magnitude: float
    confidence: float
    confidence_type: str
    p_value: float | None = None
    support: dict[str, Any] = field(default_factory=dict)

    @property
    def flagged(self) -> bool:
        """True for degradation or optimization."""
        return self.state in (State.DEGRADATION, State.OPTIMIZATION)

    def to_dict(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [clean(x) for x in v]
            if isinstance(v, np.generic):
                return clean(v.item())
            return v

        return clean({
            "function": self.function, "method": self.method, "state": self.state.value, "kind": self.kind,
            "magnitude": self.magnitude, "confidence": self.confidence, "confidence_type": self.confidence_type,
            "p_value": self.p_value, "support": self.support,
        })


def classify(significant: bool, magnitude: float, min_effect: float, maybe: bool = False) -> State:
    """State from a significance decision and a relative magnitude.

    Significant and ``|magnitude| >= min_effect`` → degradation/optimization by sign; significant but smaller,
    or only ``maybe`` significant → maybe; otherwise no change.
    """
    if not math.isfinite(magnitude):
        return State.NOT_MEANINGFUL
    if significant and abs(magnitude) >= min_effect:
        return State.DEGRADATION if magnitude > 0 else State.OPTIMIZATION
    if significant or maybe:
        return State.MAYBE
    return State.NO_CHANGE


class ProfileDetector(ABC):
    """Compare two profiles; subclasses set ``name`` and take their thresholds as keyword arguments."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    @abstractmethod
    def compare(self, baseline: Profile, target: Profile) -> list[Change]:
        """One :class:`Change` per function (sorted by function name)."""


class PerFunctionProfileDetector(ProfileDetector):
    """A detector that looks at one function at a time.

    ``threads`` > 1 runs :meth:`compare_function` of several functions at once (for detectors whose work
    releases the GIL, such as LAPACK); each function's verdict is computed exactly as in one thread, and the
    list comes back in function order.
    """

    min_points: ClassVar[int] = 3
    threads: ClassVar[int] = 1

    def compare(self, baseline: Profile, target: Profile) -> list[Change]:
        out: list[Change | None] = []
        todo: list[tuple[int, str, Samples, Samples]] = []
        for f in sorted(set(baseline.functions) | set(target.functions)):
            b, t = baseline.functions.get(f), target.functions.get(f)
            if b is None or t is None:
                where = "baseline" if b is None else "target"
                out.append(self._nm(f, f"not in {where}", kind=f"not-in-{where}"))
            elif len(b) < self.min_points or len(t) < self.min_points:
                out.append(self._nm(f, f"too few calls ({len(b)} baseline, {len(t)} target; need "
                                       f"{self.min_points} each)"))
            else:
                todo.append((len(out), f, b, t))
                out.append(None)
        for (i, *_), change in zip(todo, self._compare_all([w[1:] for w in todo]), strict=True):
            out[i] = change
        return [c for c in out if c is not None]

    def _compare_all(self, work: list[tuple[str, Samples, Samples]]) -> list[Change]:
        n = min(self.threads, len(work))
        if n <= 1:
            return [self.compare_function(*w) for w in work]
        pool = ThreadPoolExecutor(n, thread_name_prefix=f"quiho-{self.name}")
        try:
            return list(pool.map(lambda w: self.compare_function(*w), work))
        finally:  # an interrupt or error does not wait for the functions still queued
            pool.shutdown(wait=True, cancel_futures=True)

    def _nm(self, function: str, why: str, kind: str = "") -> Change:
        return Change(function, self.name, State.NOT_MEANINGFUL, kind, float("nan"), 0.0, "none", None,
                      {"reason": why})

    @abstractmethod
    def compare_function(self, function: str, baseline: Samples, target: Samples) -> Change:
        """Verdict for one function present on both sides with enough points."""


PROFILE_DETECTORS: dict[str, type[ProfileDetector]] = {}


def register_profile_detector(cls: type[ProfileDetector]) -> type[ProfileDetector]:
    """Class decorator adding a detector to :data:`PROFILE_DETECTORS` under ``cls.name``."""
    PROFILE_DETECTORS[cls.name] = cls
    return cls


def get_profile_detector(name: str, **params: Any) -> ProfileDetector:
    """Instantiate a registered detector by name with threshold overrides."""
    try:
        cls = PROFILE_DETECTORS[name]
    except KeyError:
        known = ", ".join(sorted(PROFILE_DETECTORS))
        raise UsageError(f"unknown detection method {name!r}; choose from {known}") from None
    try:
        return cls(**params)
    except TypeError as exc:
        raise UsageError(f"bad parameters for method {name!r}: {exc}") from exc
