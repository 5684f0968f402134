"""The settings of one profile, as one frozen object: what is measured and how it is analysed.

Built once at the boundary (``quiho profile`` builds it with :meth:`ProfileOptions.build` from its options over
``quiho.yml``'s ``profile:`` section) and passed down whole, so a new setting is one field here, not a
parameter threaded through every call. The defaults live on these models and nowhere else.

Example
-------
>>> opts = ProfileOptions.build(seeds=3, max_age="6h")
>>> opts.analysis.seeds, opts.measure.max_age_s, opts.analysis.alpha
(3, 21600.0, 0.05)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quiho.errors import UsageError
from quiho.irup import ModelParams

if TYPE_CHECKING:
    from quiho.profile.project import ProfileDefaults

__all__ = ["MeasureOptions", "AnalysisOptions", "ProfileOptions", "parse_age"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str | float | int) -> float:
    """Seconds from ``"90"``, ``"30m"``, ``"6h"`` or ``"2d"``.

    Raises
    ------
    UsageError
        Not a non-negative number with an optional s/m/h/d suffix.
    """
    if isinstance(text, int | float):
        return float(text)
    t = str(text).strip().lower()
    mult = _AGE_UNITS.get(t[-1:], None)
    num = t[:-1] if mult else t
    try:
        val = float(num) * (mult or 1)
    except ValueError:
        raise UsageError(f"--max-age {text!r}: use seconds or a number with s/m/h/d (e.g. 6h)") from None
    if val < 0:
        raise UsageError("--max-age must not be negative")
    return val


class MeasureOptions(BaseModel):
    """What a profile measures, and how (steps 1-2 of :func:`quiho.profile.run_profile`).

    ``inventory`` None is the local fleet calibrated to this machine; ``repetitions`` None the application
    spec's own; ``fingerprint_seconds`` / ``fingerprint_repetitions`` None the battery's; ``resume`` the batch
    of an interrupted profile to continue; ``trace`` a checked :class:`quiho.trace.fleet.TracePlan` to run
    after the measured runs; ``rounds`` how many blocked measurement rounds a fleet that shares this machine is
    visited in (each round every host in a new order, the repetitions split over the rounds), so a slow minute
    of the machine lands in a round effect instead of in one host. ``fingerprint_hosts`` ``first-round``
    fingerprints only the hosts a designed fleet's first round visits (its fold-over's hosts are measured but
    not fingerprinted: the design's answer reads no fingerprint, the IRUPs rest on half the hosts).
    """

    model_config = _FROZEN

    inventory: str | None = None
    battery: str = "resources"
    max_age: str | float = "24h"
    fingerprint_seconds: int | None = Field(default=None, ge=1)
    fingerprint_repetitions: int | None = Field(default=None, ge=1)
    repetitions: int | None = Field(default=None, ge=1)
    warmup: int = Field(default=1, ge=0)
    rounds: int = Field(default=2, ge=1, le=20)
    resume: str | None = None
    trace: Any = None
    fingerprint_hosts: Literal["all", "first-round"] = "all"

    @property
    def max_age_s(self) -> float:
        """``max_age`` in seconds: reuse a fingerprint run at most this old (0: always fingerprint)."""
        return parse_age(self.max_age)


class AnalysisOptions(BaseModel):
    """How a profile is analysed (steps 3-5; :func:`quiho.profile.analyse_data`).

    ``min_change``, ``alpha``, ``confidence``, ``n_boot`` and ``min_hosts`` are the metric test's
    (:func:`quiho.profile.metric_change`); ``seeds``, ``importance``, ``model_params`` and ``n_jobs`` the
    IRUPs' (:func:`quiho.irup.compute_irup`); ``random_state`` seeds all of them; ``advise`` runs the
    fleet-size advisor for a profile that is not meaningful; ``stages`` how many passes over a designed fleet's
    hosts a profile may take: with 2 the design's changes are tested at ``alpha / 2`` and the hosts are visited
    again when the first pass is inconclusive (:func:`quiho.profile.run_profile`); ``trace_changes``
    (``quiho.detect.Change``) and ``trace_note`` are per-function trace verdicts to join into the hints
    (:func:`quiho.profile.traces.join_traces`), resolved before anything runs.
    """

    model_config = _FROZEN

    min_change: float = Field(default=0.05, ge=0, lt=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    n_boot: int = Field(default=4000, ge=1)
    min_hosts: int = Field(default=3, ge=1)
    seeds: int = Field(default=10, ge=1)
    random_state: int = Field(default=0, ge=0)
    importance: str = "classic"
    model_params: ModelParams | None = None
    advise: bool = True
    stages: int = Field(default=2, ge=1, le=2)
    n_jobs: int = -1
    trace_changes: tuple[Any, ...] = ()
    trace_note: str | None = None

    def params(self) -> dict[str, Any]:
        """The settings a profile report records (its ``params``)."""
        return {"min_change": self.min_change, "alpha": self.alpha, "seeds": self.seeds,
                "random_state": self.random_state, "importance": self.importance, "stages": self.stages,
                "model": (self.model_params or ModelParams()).__dict__}


class ProfileOptions(BaseModel):
    """Everything a profile is told: :class:`MeasureOptions` and :class:`AnalysisOptions`."""

    model_config = _FROZEN

    measure: MeasureOptions = Field(default_factory=MeasureOptions)
    analysis: AnalysisOptions = Field(default_factory=AnalysisOptions)

    @classmethod
    def build(cls, defaults: ProfileDefaults | None = None, **given: Any) -> ProfileOptions:
        """Options given (None: not given) over ``defaults`` (a ``quiho.yml`` section) over the models' defaults.

        ``given`` names fields of either model (``seeds=3``, ``inventory="hosts.yml"`` ...).

        Raises
        ------
        UsageError
            An unknown name, a value out of range, or a ``max_age`` that is not an age.
        """
        set_in_file = defaults.model_dump(exclude_none=True) if defaults is not None else {}
        merged = {**set_in_file, **{k: v for k, v in given.items() if v is not None}}
        parts: dict[str, dict[str, Any]] = {"measure": {}, "analysis": {}}
        for name, value in merged.items():
            part = next((p for p, m in (("measure", MeasureOptions), ("analysis", AnalysisOptions))
                         if name in m.model_fields), None)
            if part is None:
                raise UsageError(f"unknown profile option {name!r}")
            parts[part][name] = value
        try:
            opts = cls(measure=MeasureOptions(**parts["measure"]), analysis=AnalysisOptions(**parts["analysis"]))
        except ValidationError as exc:
            raise UsageError("; ".join(f"--{'.'.join(str(x) for x in e['loc']).replace('_', '-')}: {e['msg']}"
                                       for e in exc.errors())) from None
        opts.measure.max_age_s  # noqa: B018 -- a bad age is a usage error here, before anything runs
        return opts
