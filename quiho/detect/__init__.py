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

__all__ = [
    "DEFAULT_METHODS",
    "PROFILE_DETECTORS",
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
]

#: Methods run when none are named.
DEFAULT_METHODS: tuple[str, ...] = ("joint",)


def detect(
    baseline: Profile,
    target: Profile,
    methods: Sequence[str] = DEFAULT_METHODS,
    params: dict[str, dict[str, Any]] | None = None,
) -> list[Change]:
    """Run the named detectors on two profiles.

    Parameters
    ----------
    baseline, target : Profile
    methods : sequence of str
        Names in :data:`PROFILE_DETECTORS` (``"all"`` runs every one).
    params : dict, optional
        Per-method threshold overrides, e.g. ``{"joint": {"alpha": 0.001}}``.

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
    return out
