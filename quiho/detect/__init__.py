"""Per-function change detectors, baseline vs target, chosen by name from :data:`PROFILE_DETECTORS`.

Every detector returns one :class:`Change` per function with a state (no-change, maybe, degradation,
optimization, or not-meaningful), the change kind, a relative magnitude, a confidence and the supporting
numbers. ``joint`` (change-model regression) is the recommended per-function method; ``eto`` compares
functions with each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from quiho.detect import _classic, _eto, _joint, _local  # noqa: F401  (import registers the detectors)
from quiho.detect._base import (
    PROFILE_DETECTORS,
    Change,
    PerFunctionProfileDetector,
    Profile,
    ProfileDetector,
    Samples,
    State,
    classify,
    get_profile_detector,
    register_profile_detector,
)
from quiho.detect._fleet import FleetFunctionVerdict, fleet_function_verdicts
from quiho.detect._joint import ChangeModelFit, fit_change_model
from quiho.detect._runs import RUN_ALPHA, TRACER_RATIO, beyond_tracer, run_medians, runs_agree

__all__ = [
    "DEFAULT_METHODS",
    "PROFILE_DETECTORS",
    "RUN_ALPHA",
    "Change",
    "ChangeModelFit",
    "FleetFunctionVerdict",
    "ProfileDetector",
    "PerFunctionProfileDetector",
    "Profile",
    "Samples",
    "State",
    "classify",
    "detect",
    "fit_change_model",
    "fleet_function_verdicts",
    "get_profile_detector",
    "register_profile_detector",
    "run_medians",
    "runs_agree",
    "beyond_tracer",
    "TRACER_RATIO",
]

#: Methods run when none are named.
DEFAULT_METHODS: tuple[str, ...] = ("joint",)


def detect(
    baseline: Profile,
    target: Profile,
    methods: Sequence[str] = DEFAULT_METHODS,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    run_check: bool = True,
) -> list[Change]:
    """Run the named detectors on two profiles; a flagged change must also hold across runs.

    Where both sides' samples carry run labels (repeated traced runs), every flagged change goes through
    :func:`runs_agree`: the run, not the call, is the unit of replication. Where both profiles know their
    tracer's time per call, a function whose calls are mostly that time is ``not-meaningful``
    (:func:`beyond_tracer`).

    Parameters
    ----------
    baseline, target : Profile
    methods : sequence of str
        Names in :data:`PROFILE_DETECTORS` (``"all"`` runs every one).
    params : dict, optional
        Per-method threshold overrides, e.g. ``{"joint": {"alpha": 0.001}}``.
    run_check : bool, default True
        False: the detectors' verdicts from the calls alone (to measure what the run check removes).

    Returns
    -------
    list of Change
        Grouped by method in the given order, functions sorted within a method.

    Raises
    ------
    UsageError
        Unknown method name or bad parameters.
    """
    names = sorted(PROFILE_DETECTORS) if list(methods) == ["all"] else list(methods)
    params = params or {}
    out: list[Change] = []
    for m in names:
        out.extend(get_profile_detector(m, **params.get(m, {})).compare(baseline, target))
    fa, fb = baseline.functions, target.functions
    if run_check:
        out = [runs_agree(c, fa[c.function], fb[c.function]) if c.flagged and c.function in fa and c.function in fb
               else c for c in out]
    return [beyond_tracer(c, fa[c.function], fb[c.function], baseline.tracer_ns, target.tracer_ns)
            if c.function in fa and c.function in fb else c for c in out]
