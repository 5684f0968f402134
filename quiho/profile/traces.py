"""Per-function trace verdicts for a profile: stored ``quiho trace`` runs of both versions, compared.

``quiho profile APP@V1 APP@V2`` joins them into its hints when the store holds trace
runs of both versions (``quiho trace APP@V1 -- ...``), or when they are named explicitly
(a run id, ``APP@VERSION`` or a Perun profile file). Repeated trace runs of one version
are pooled as repetitions and a flagged change must also hold across them (:func:`quiho.detect.runs_agree`),
exactly as ``quiho detect`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from quiho.store import Store

__all__ = ["FleetTraceSettings", "FleetTraces", "TraceJoin", "fleet_traces", "join_traces", "trace_samples"]


@dataclass(frozen=True)
class TraceJoin:
    """What was compared and the detectors' verdicts (every function, flagged or not)."""

    baseline: str
    target: str
    changes: tuple[Any, ...]

    @property
    def flagged(self) -> int:
        """How many verdicts flag a change."""
        return sum(bool(c.flagged) for c in self.changes)

    def note(self) -> str:
        """One line for the profile's notes."""
        functions = len({c.function for c in self.changes})
        return (f"per-function traces joined: {self.baseline} -> {self.target}, {functions} function(s), "
                f"{self.flagged} change(s) flagged")


def _has_trace_runs(store: Store, app: str, version: str) -> bool:
    from quiho.store.traces import has_trace_run

    return has_trace_run(store, app, version)


def join_traces(
    store: Store,
    application: str,
    version_a: str,
    version_b: str,
    *,
    baseline: str | None = None,
    target: str | None = None,
    methods: Sequence[str] | None = None,
) -> TraceJoin | None:
    """Compare the per-function traces of two versions with the default detectors.

    The calls are modelled on their order (``x = order``) with their inclusive time, as ``quiho detect`` does by
    default.

    Parameters
    ----------
    store : Store
    application, version_a, version_b : str
        The profiled versions; their stored trace runs are used unless ``baseline`` / ``target`` name others.
    baseline, target : str, optional
        A trace run id, ``APP@VERSION`` or a Perun profile file.
    methods : sequence of str, optional
        Detector names (default :data:`quiho.detect.DEFAULT_METHODS`).

    Returns
    -------
    TraceJoin or None
        None when neither reference was given and the store lacks trace runs of either version.

    Raises
    ------
    UnknownTargetError
        A named reference does not exist (a missing automatic one gives None instead).
    TraceParseError, StoreError
        A trace that cannot be read.
    """
    from quiho.detect import DEFAULT_METHODS, detect
    from quiho.trace import load_trace_profile

    ref_a = baseline or f"{application}@{version_a}"
    ref_b = target or f"{application}@{version_b}"
    if baseline is None and target is None and not (
        _has_trace_runs(store, application, version_a) and _has_trace_runs(store, application, version_b)
    ):
        return None
    pa = load_trace_profile(store, ref_a, "order", "inclusive_ns")
    pb = load_trace_profile(store, ref_b, "order", "inclusive_ns")
    changes = detect(pa, pb, list(methods or DEFAULT_METHODS), {})
    return TraceJoin(str(pa.source), str(pb.source), tuple(changes))


_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class FleetTraces:
    """The per-function answer of a profile traced on the fleet (``quiho profile --trace``).

    Attributes
    ----------
    functions : tuple of quiho.detect.FleetFunctionVerdict
        One fleet verdict per traced function (joint detector per host, default settings; vote across hosts).
    per_host : dict
        ``{host: [Change, ...]}``, the per-host joint verdicts the vote combined.
    overhead : dict
        ``{host: {"traced_s", "untraced_s", "ratio"}}`` (medians over runs) and ``median_ratio`` over hosts.
    host_messages : dict
        Hosts that could not trace (or only partly), with the reason.
    traced_runs : int
        Traced runs stored for this profile.
    samples : dict
        For the report's plots: ``{"host": h, "functions": {function: {version: (order, inclusive_ns)}}}`` of
        one host (the first in name order that traced both versions), at most 2000 calls per series.
    """

    functions: tuple[Any, ...]
    per_host: dict[str, list[Any]]
    overhead: dict[str, Any]
    host_messages: dict[str, str]
    traced_runs: int
    samples: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``traces`` entry of ``report.json``."""
        return {"functions": [f.to_dict() for f in self.functions], "overhead": self.overhead,
                "hosts": dict(self.host_messages), "traced_runs": self.traced_runs,
                "detector": "joint (default settings) per host; strict-majority vote across hosts"}

    def hints(self, limit: int = 5) -> tuple[Any, ...]:
        """Flagged functions as profile hints, ranked by their share of the metric change (then magnitude)."""
        import math

        from quiho.profile.hints import Hint

        def key(f: Any) -> tuple[float, float]:
            return (-abs(f.share) if math.isfinite(f.share) else 0.0, -abs(f.magnitude))

        out = []
        for f in sorted((f for f in self.functions if f.flagged), key=key)[:limit]:
            ci = (f" (95 % CI {f.ci[0]:+.1%} to {f.ci[1]:+.1%} over hosts)"
                  if math.isfinite(f.ci[0]) and math.isfinite(f.ci[1]) else "")
            share = f"; explains {f.share:.0%} of the metric change" if math.isfinite(f.share) else ""
            out.append(Hint(
                "trace", f"function {f.function}: {f.verdict.value} of {f.magnitude:+.1%}{ci}, flagged on "
                f"{f.hosts_flagged} of {f.hosts} hosts ({f.kind or 'no kind'}){share}.",
                direction="gained" if f.verdict.value == "degradation" else "lost", subject=f.function,
                evidence=f.to_dict()))
        return tuple(out)


def _median(xs: Sequence[float]) -> float:
    import numpy as np

    return float(np.median(np.asarray(xs, dtype=float))) if len(xs) else float("nan")


@dataclass(frozen=True)
class FleetTraceSettings:
    """How :func:`fleet_traces` judges: the metric's unit, the bootstrap seed, the change floor, the run check.

    ``min_effect`` is the profile's ``--min-change`` floor, which a function's fleet change must clear as the
    metric's does; ``run_check=False`` reads the calls alone (a host's flag need not show across its runs).
    """

    unit: str = ""
    random_state: int = 0
    min_effect: float = 0.05
    run_check: bool = True


def fleet_traces(store: Store, application: str, version_a: str, label_b: str, batch: str, *,
                 metric_values: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                 host_messages: dict[str, str] | None = None,
                 settings: FleetTraceSettings = FleetTraceSettings()) -> FleetTraces | None:
    """Fleet verdicts per function from the runs profile ``batch`` traced (None when it traced nothing).

    Per host, both versions' traced runs are pooled as repetitions (``x = order``) and compared with the
    joint detector at its default settings; a host's flagged change that its runs do not show
    (:func:`quiho.detect.runs_agree`) becomes ``maybe`` (``run_check=False``: the calls alone);
    :func:`quiho.detect.fleet_function_verdicts` then votes across hosts.
    The share of the metric change uses each function's exclusive time per baseline run and, for a metric in a
    time unit, the per-host change of the median metric of the untraced runs (``metric_values``:
    ``{host: (values of version_a, values of label_b)}``). Overhead per host = median traced wall / median
    untraced wall (both versions pooled).
    """
    from quiho.detect import detect, fleet_function_verdicts
    from quiho.store.traces import batch_trace_runs, untraced_walls
    from quiho.trace import profile_from_calls, tracer_ns_of

    rows = batch_trace_runs(store, application, batch)
    if not rows:
        return None
    by_host = _runs_by_host(rows)
    per_host: dict[str, list[Any]] = {}
    exclusive: dict[str, dict[str, float]] = {}
    metric_change: dict[str, float] = {}
    scale = _TIME_UNITS_NS.get(settings.unit)
    messages = dict(host_messages or {})
    for host in sorted(metric_values or {}):  # measured but never traced: say so, also when re-analysed (--batch)
        if host not in by_host:
            messages.setdefault(host, "no traced runs in this batch (its tracing failed or never ran)")
    samples: dict[str, Any] = {}
    tracer: dict[str, float] = {}
    for host, vers in sorted(by_host.items()):
        ra, rb = vers.get(version_a, []), vers.get(label_b, [])
        if not ra or not rb:
            messages.setdefault(host, f"traced runs of only one version ({len(ra)} / {len(rb)})")
            continue
        frames = _host_frames(store, ra, rb)
        pa = profile_from_calls(frames["a"], source=f"{host} {version_a}", tracer_ns=tracer_ns_of(ra))
        pb = profile_from_calls(frames["b"], source=f"{host} {label_b}", tracer_ns=tracer_ns_of(rb))
        per_host[host] = detect(pa, pb, ["joint"], {}, run_check=settings.run_check)
        if (cost := tracer_ns_of([*ra, *rb])) is not None:
            tracer[host] = cost
        if not samples:
            samples = {"host": host, "functions": _samples(frames, version_a, label_b)}
        exclusive[host] = {str(f): float(v) / len(ra)
                           for f, v in frames["a"].groupby("function")["exclusive_ns"].sum().items()}
        if scale is not None and metric_values and host in metric_values:
            va, vb = metric_values[host]
            metric_change[host] = (_median(vb) - _median(va)) * scale
    verdicts = [_say_tracer_cost(v, per_host) for v in fleet_function_verdicts(
        per_host, exclusive, metric_change or None, random_state=settings.random_state,
        min_effect=settings.min_effect)]
    walls: dict[str, list[float]] = {}
    for h, _v, w in untraced_walls(store, application, batch):
        walls.setdefault(h, []).append(w)
    overhead: dict[str, Any] = {}
    ratios = []
    for host, vers in sorted(by_host.items()):
        traced = [r.wall_s for rs in vers.values() for r in rs if r.wall_s is not None]
        t, u = _median(traced), _median(walls.get(host, []))
        ratio = t / u if traced and walls.get(host) and u > 0 else float("nan")
        overhead[host] = {"traced_s": t if traced else None, "untraced_s": u if walls.get(host) else None,
                          "ratio": ratio if ratio == ratio else None, "tracer_ns_per_call": tracer.get(host)}
        if ratio == ratio:
            ratios.append(ratio)
    overhead_doc = {"hosts": overhead, "median_ratio": _median(ratios) if ratios else None}
    return FleetTraces(tuple(verdicts), per_host, overhead_doc, messages, len(rows), samples)


def _say_tracer_cost(v: Any, per_host: dict[str, list[Any]]) -> Any:
    """A fleet verdict whose hosts left a function out for the tracer's cost, with that said first in its reason."""
    from dataclasses import replace

    within = [c.support for cs in per_host.values() for c in cs
              if c.function == v.function and "tracer_ns_per_call" in c.support]
    if not within or v.flagged:
        return v
    call = _median([w["median_call_ns"] for w in within]) / 1e3
    cost = _median([w["tracer_ns_per_call"] for w in within]) / 1e3
    traced = sum(any(c.function == v.function for c in cs) for cs in per_host.values())
    return replace(v, reason=(
        f"its calls are within the tracer's own time on {len(within)} of {traced} hosts (median call {call:.1f} µs, "
        f"the tracer's {cost:.1f} µs a call): a change of the tracer's cost would read as one of the function; "
        f"{v.reason}"))


def _runs_by_host(rows: Sequence[Any]) -> dict[str, dict[str, list[Any]]]:
    """A batch's traced runs as ``{host: {version: [run, ...]}}``."""
    by_host: dict[str, dict[str, list[Any]]] = {}
    for row in rows:
        by_host.setdefault(row.host, {}).setdefault(row.version, []).append(row)
    return by_host


def _host_frames(store: Store, runs_a: Sequence[Any], runs_b: Sequence[Any]) -> dict[str, Any]:
    """One host's traced calls per version (``"a"``, ``"b"``): its runs' calls concatenated, a ``run`` column added."""
    import pandas as pd

    from quiho.trace import find_trace_run, read_calls

    frames = {}
    for key, rs in (("a", runs_a), ("b", runs_b)):
        parts = []
        for row in rs:
            df = read_calls(find_trace_run(store, str(row.id)))
            df["run"] = row.id
            parts.append(df)
        frames[key] = pd.concat(parts, ignore_index=True)
        frames[key]["function"] = frames[key]["function"].astype(str)
    return frames


def trace_samples(store: Store, application: str, version_a: str, label_b: str, batch: str,
                  cap: int = 2000) -> dict[str, Any]:
    """The calls behind the report's functions figure (:attr:`FleetTraces.samples`), read again from the store.

    Same host and thinning as :func:`fleet_traces` (the first host in name order that traced both versions);
    ``{}`` when the batch traced nothing. Raises :class:`~quiho.errors.StoreError` when a run's calls are gone.
    """
    from quiho.store.traces import batch_trace_runs

    for host, vers in sorted(_runs_by_host(batch_trace_runs(store, application, batch)).items()):
        ra, rb = vers.get(version_a, []), vers.get(label_b, [])
        if ra and rb:
            return {"host": host, "functions": _samples(_host_frames(store, ra, rb), version_a, label_b, cap)}
    return {}


def _samples(frames: dict[str, Any], version_a: str, label_b: str, cap: int = 2000) -> dict[str, Any]:
    """Per function and version: (call order, inclusive ns), evenly thinned to at most ``cap`` calls."""
    import numpy as np

    out: dict[str, dict[str, tuple[Any, Any]]] = {}
    for key, label in (("a", version_a), ("b", label_b)):
        for fn, g in frames[key].groupby("function"):
            idx = np.linspace(0, len(g) - 1, min(cap, len(g))).astype(int) if len(g) else np.array([], int)
            out.setdefault(str(fn), {})[label] = (g["order"].to_numpy(float)[idx],
                                                  g["inclusive_ns"].to_numpy(float)[idx])
    return out
