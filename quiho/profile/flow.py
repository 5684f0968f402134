"""``quiho profile APP@V1 APP@V2``: the end-to-end comparison of two versions on a fleet.

Steps (each kept, and marked, when a later one is partial):

1. **Fingerprints**: reuse the newest fleet fingerprint run younger than ``max_age``
   that covers the inventory's hosts; otherwise fingerprint first.
2. **Runs**: both versions on every host, interleaved (:mod:`quiho.profile.interleave`).
   On a fleet whose hosts share this machine (the local fleet) a new fingerprint and the
   runs go host by host: each host's runs right after its fingerprint.
3. **Metric change** per host and across hosts (:mod:`quiho.profile.stats`).
4. **IRUP per version** (seeds, validity) and their comparison (:mod:`quiho.irup`).
5. **Hints** from the stressor catalog (:mod:`quiho.profile.hints`), fleet-size advice
   when a profile is not meaningful, and per-function trace verdicts when given.

:func:`analyse_profile` does 3-5 on runs already in the store, so a profile can be
recomputed (other seeds, another floor) without running anything. The settings of every
step travel as one :class:`~quiho.profile.options.ProfileOptions`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quiho._version import __version__
from quiho.app import AppSpec
from quiho.design import DesignAnalysis, DesignSettings, analyse_design, factor_table, local_fleet_vars
from quiho.errors import NotEnoughData, QuihoError, UsageError
from quiho.fingerprint import FingerprintPlan, HostReport, fingerprint
from quiho.fingerprint.catalog import Catalog, load_catalog
from quiho.fleet import FleetEvent, Inventory, load_inventory
from quiho.fleet.local.calibrate import ResolvedFleet, axes_kept, resolve_fleet
from quiho.fleet.session import measuring, new_batch
from quiho.irup import (
    Advice,
    Comparison,
    Irup,
    ShiftSettings,
    TargetData,
    advise_fleet_size,
    compare_runs,
    compute_irup,
    load_fingerprints,
    load_target,
)
from quiho.profile.hints import Hint, design_hints, root_cause_hints, trace_hints
from quiho.profile.interleave import InterleavePlan, run_interleaved, store_label
from quiho.profile.options import AnalysisOptions, MeasureOptions, ProfileOptions, parse_age
from quiho.profile.stats import MetricChange, metric_change
from quiho.schedule.drift import drift_warnings
from quiho.store import Store, utcnow
from quiho.store import fleet as fleet_store

__all__ = ["ProfileResult", "ProfileData", "Measured", "HostStatus", "analyse_profile", "analyse_data", "run_profile",
           "host_fingerprints", "find_fingerprint_run", "save_profile", "parse_age", "load_profile", "REPORT_SCHEMA",
           "REPORT_SCHEMA_VERSION"]

REPORT_SCHEMA = "quiho.profile"
REPORT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class HostStatus:
    """What one host contributed: fingerprint present, runs ok per version, and why not."""

    host: str
    fingerprinted: bool
    ok_a: int
    ok_b: int
    failed_a: int
    failed_b: int
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {**self.__dict__, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class ProfileResult:
    """Everything ``quiho profile`` found, with the evidence (see :meth:`to_dict` for the JSON contract)."""

    application: str
    version_a: str
    version_b: str
    label_b: str
    batch: str
    verdict: str
    metric: MetricChange
    irup_a: Irup | None
    irup_b: Irup | None
    comparison: Comparison | None
    hints: tuple[Hint, ...]
    advice: dict[str, Advice]
    hosts: tuple[HostStatus, ...]
    partial: tuple[str, ...]
    irup_errors: dict[str, str]
    runs: pd.DataFrame = field(repr=False)
    fingerprints: pd.DataFrame = field(repr=False)
    fingerprint_run_id: int | None = None
    fingerprint_batch: str | None = None
    fingerprint_age_s: float | None = None
    fingerprinted_now: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    notes: tuple[str, ...] = ()
    traces: Any = field(default=None, repr=False)  # quiho.profile.traces.FleetTraces of --trace, or None
    design: DesignAnalysis | None = None

    @property
    def status(self) -> str:
        """``complete``, ``partial`` (some hosts, runs or fingerprints missing) or ``failed`` (no usable runs)."""
        if self.metric.hosts_used == 0:
            return "failed"
        return "partial" if self.partial else "complete"

    @property
    def profile_source(self) -> str:
        """What the resource-profile verdict rests on: ``design`` (factor effects) or ``irup`` (the paper's view).

        On a designed fleet whose analysis can answer, the factors quiho set are the direct evidence; the IRUPs
        stay beside it.
        """
        return "design" if self.design is not None and self.design.verdict != "not-meaningful" else "irup"

    @property
    def profile_verdict(self) -> str:
        """The resource-profile verdict of :attr:`profile_source`."""
        return self.design.verdict if self.design is not None and self.profile_source == "design" \
            else self.irup_verdict

    @property
    def irup_verdict(self) -> str:
        """Verdict of the IRUP comparison (``different``/``equivalent``/``inconclusive``), or ``unavailable``."""
        return self.comparison.verdict if self.comparison else "unavailable"

    def to_dict(self) -> dict[str, Any]:
        """The schema-versioned JSON document (``report.json`` and ``--json``)."""
        return {
            "schema": REPORT_SCHEMA, "schema_version": REPORT_SCHEMA_VERSION, "quiho_version": __version__,
            "created_at": self.created_at, "application": self.application,
            "version_a": self.version_a, "version_b": self.version_b, "label_b": self.label_b, "batch": self.batch,
            "verdict": self.verdict, "status": self.status, "partial": list(self.partial), "notes": list(self.notes),
            "metric": self.metric.to_dict(),
            "irup": {
                "verdict": self.irup_verdict,
                "a": self.irup_a.to_dict() if self.irup_a else None,
                "b": self.irup_b.to_dict() if self.irup_b else None,
                "comparison": self.comparison.to_dict() if self.comparison else None,
                "errors": dict(self.irup_errors),
            },
            "resource_profile": {"source": self.profile_source, "verdict": self.profile_verdict},
            "design": self.design.to_dict() if self.design is not None else None,
            "hints": [h.to_dict() for h in self.hints],
            "advice": {k: v.to_dict() for k, v in self.advice.items()},
            "hosts": [h.to_dict() for h in self.hosts],
            "fingerprint": {"run_id": self.fingerprint_run_id, "batch": self.fingerprint_batch,
                            "age_s": None if self.fingerprint_age_s is None else round(self.fingerprint_age_s, 1),
                            "fresh": self.fingerprinted_now},
            "runs": _records(self.runs),
            "params": self.params,
            "traces": self.traces.to_dict() if self.traces is not None else None,
        }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in rec.items()})
    return out


def find_fingerprint_run(store: Store, hosts: Sequence[str], max_age_s: float) -> tuple[int, str, float] | None:
    """(run id, batch, age in seconds) of the fingerprint run that applies to ``hosts``, at most ``max_age_s`` old.

    The rule is :func:`quiho.store.fleet.applicable_fingerprint_run` (most hosts covered, then newest).
    """
    ref = fleet_store.applicable_fingerprint_run(store, hosts, max_age_s)
    return None if ref is None else (ref.run_id, ref.batch, ref.age_s)


def host_fingerprints(data: TargetData) -> pd.DataFrame:
    """The median fingerprint of each host of ``data``'s training rows: hosts as rows, stressors as columns."""
    return data.X.groupby(data.meta["host"].to_numpy()).median().rename_axis("host")


def _host_median_rows(td: TargetData) -> TargetData:
    """Every row of a host gets the host's median fingerprint.

    ``load_target`` pairs application repetition *i* with fingerprint repetition *i* (the
    paper's rule, right when both ran in the same batch iteration). A profile's runs come
    from a separate session minutes after the fingerprint, so that pairing is arbitrary and
    only adds the fingerprint's repetition noise to every row; the host's median is the best
    estimate of the host.
    """
    key = td.meta["run_id"].astype(str) + "|" + td.meta["host"].astype(str)
    X = td.X.groupby(key.to_numpy()).transform("median")
    meta = td.meta.assign(paired=False)
    notes = tuple(n for n in td.notes if "median fingerprint" not in n)
    return dataclasses.replace(td, X=X.reset_index(drop=True), meta=meta, notes=notes)


def _single_axis_guard(comparison: Comparison, fleet_axes: int | None) -> Comparison:
    """No ``equivalent`` on a fleet whose hosts differ along fewer than two independent axes.

    On such a fleet (the calibrated local fleet says how many axes it kept) every stressor follows the same
    ordering of the hosts, so any application's IRUP ties them: two versions' IRUPs then agree whatever
    resources the versions lean on, and "same profile" would be a statement about the fleet, not the versions
    (measured: on 5-host quota-only fleets nadds1 and nadds30 both came out stream 100, matrix 100, zero 100,
    "equivalent", p = 0.53 and 0.90). A calibrated ``different`` still stands: the versions did order the hosts
    differently.
    """
    if fleet_axes is None or fleet_axes >= 2 or comparison.verdict != "equivalent":
        return comparison
    return dataclasses.replace(comparison, verdict="inconclusive", reason=(
        f"the fleet's hosts differ along {fleet_axes} independent axis (its calibration): every stressor orders "
        "the hosts alike, so the IRUPs cannot tell resources apart and equivalence is not shown; " + comparison.reason))


@dataclass(frozen=True)
class ProfileData:
    """The evidence of one profile, assembled (the store-free input of :func:`analyse_data`).

    Parameters
    ----------
    runs : DataFrame
        One row per run: ``host``, ``version`` (``version_a`` or ``label_b``), ``status`` (ok/failed),
        ``value``, optional ``reason``, ``repetition``, ``order``.
    data_a, data_b : TargetData or None
        IRUP training rows of each version (None: no IRUP, e.g. no fingerprints).
    application, version_a, version_b : str
        Names for the report.
    label_b : str, optional
        Version label of the candidate's rows in ``runs`` (default ``version_b``).
    batch, unit : str
        The runs' batch and the metric's unit (reported only).
    higher_is_better : bool, default False
        Direction of the metric.
    fingerprints : DataFrame, optional
        Median fingerprint per host (rows) and stressor (columns), for the report
        (:func:`host_fingerprints` of training rows).
    fingerprinted_hosts : sequence of str, optional
        Hosts with a fingerprint (known: each host without one gets a note). Default: the hosts of
        ``fingerprints`` when that is given, else unknown.
    partial : sequence of str
        Reasons already known why the profile is partial.
    fleet_axes : int, optional
        Independent axes the fleet's hosts differ along, when its calibration says (fewer than 2: no
        ``equivalent``).
    design_vars : mapping, optional
        Host -> its known conditions (emulation knobs, ``quiho_factors``): the fleet is a designed experiment
        and :func:`quiho.design.analyse_design` measures each version's response to each factor.
    fingerprint_rows : DataFrame, optional
        Long fingerprints (``host``, ``stressor``, ``value``): which resource class each factor loads.
    """

    runs: pd.DataFrame
    data_a: TargetData | None
    data_b: TargetData | None
    application: str
    version_a: str
    version_b: str
    label_b: str | None = None
    batch: str = ""
    unit: str = ""
    higher_is_better: bool = False
    fingerprints: pd.DataFrame | None = None
    fingerprinted_hosts: Sequence[str] | None = None
    partial: Sequence[str] = ()
    fleet_axes: int | None = None
    design_vars: Any = None
    fingerprint_rows: pd.DataFrame | None = None


def _design(data: ProfileData, label_b: str, opts: AnalysisOptions, catalog: Catalog,
            notes: list[str]) -> DesignAnalysis | None:
    """The design analysis of ``data`` when its hosts carry factors (None otherwise); left-out factors noted."""
    if not data.design_vars:
        return None
    hosts = sorted({str(h) for h in data.runs["host"]})
    table = factor_table(local_fleet_vars(data.design_vars), hosts)
    notes.extend(f"warning: design: {n}" for n in table.notes)
    if not table:
        return None
    fp = data.fingerprint_rows
    primary = {str(s): catalog.primary(str(s)) for s in fp["stressor"].unique()} if fp is not None else {}
    settings = DesignSettings(alpha=opts.alpha, floor=opts.min_change, random_state=opts.random_state)
    runs = data.runs[data.runs["version"].isin([data.version_a, label_b])]
    return analyse_design(runs, data.version_a, label_b, table, fingerprints=fp, primary=primary, settings=settings,
                          higher_is_better=data.higher_is_better)


def analyse_data(data: ProfileData, options: AnalysisOptions | None = None, *,
                 catalog: Catalog | None = None) -> ProfileResult:
    """Analyse runs and training data already assembled (the store-free core of a profile): steps 3-5.

    Parameters
    ----------
    data : ProfileData
        The runs, each version's IRUP training rows and what is known about them.
    options : AnalysisOptions, optional
        Metric test, IRUP and hint settings (default ``AnalysisOptions()``).
    catalog : Catalog, optional
        Stressor catalog (default ``stressors/catalog.yaml``).

    Returns
    -------
    ProfileResult

    Examples
    --------
    >>> from quiho.datasets import planted_profile
    >>> runs, a, b = planted_profile(n_groups=6, stressors=("cpu", "stream", "zero"))
    >>> res = analyse_data(ProfileData(runs, None, None, application="planted", version_a="v1", version_b="v2"))
    >>> res.verdict, res.irup_verdict
    ('regression', 'unavailable')
    """
    opts = options or AnalysisOptions()
    label_b = data.label_b or data.version_b
    catalog = catalog or load_catalog()
    notes = list(data.partial)
    ok = data.runs[data.runs["status"] == "ok"]
    mc = metric_change(ok.assign(version=ok["version"]), version_a=data.version_a, version_b=label_b,
                       higher_is_better=data.higher_is_better, unit=data.unit, options=opts)
    names = {"a": data.version_a, "b": data.version_b}
    datas = {"a": data.data_a, "b": data.data_b}
    irups, errors = _irups(datas, opts, catalog)
    ia, ib = irups["a"], irups["b"]
    notes.extend(f"IRUP of {names[key]} unavailable: {why}" for key, why in errors.items())
    comparison = None
    if ia is not None and ib is not None and data.data_a is not None and data.data_b is not None:
        settings = ShiftSettings(random_state=opts.random_state, n_jobs=opts.n_jobs)
        comparison, shift_note = compare_runs(ia, ib, data.data_a, data.data_b, settings)
        notes.extend([shift_note] if shift_note else [])
        comparison = _single_axis_guard(comparison, data.fleet_axes)
    advice = _advice(irups, datas, opts, notes) if opts.advise else {}
    design_notes: list[str] = []
    design = _design(data, label_b, opts, catalog, design_notes)
    if design is not None and design.verdict != "not-meaningful":
        # one story: on a designed fleet that can answer, the hints come from the factor effects alone
        hints = design_hints(design, names["a"], names["b"], metric_verdict=mc.verdict)
    else:
        hints = root_cause_hints(ia, ib, comparison, catalog=catalog, advice=advice, metric_verdict=mc.verdict)
        if design is not None:
            hints = design_hints(design, names["a"], names["b"], metric_verdict=mc.verdict) + hints
    if ia is None or ib is None:
        no_irup = Hint("validity", "No IRUP comparison: " + "; ".join(f"{names[k]}: {v}" for k, v in errors.items())
                       + ". The metric verdict stands on its own; fingerprint the hosts (or add hosts) to get IRUPs.",
                       subject="irup")
        # the designed fleet's answer, when it has one, stays first
        answered = design is not None and design.verdict != "not-meaningful"
        hints = hints + (no_irup,) if answered else (no_irup,) + hints
    if opts.trace_changes:
        hints = hints + trace_hints(opts.trace_changes)
    fp_hosts = data.fingerprinted_hosts
    if fp_hosts is None and data.fingerprints is not None:
        fp_hosts = [str(h) for h in data.fingerprints.index]
    statuses = _host_statuses(data.runs, data.version_a, label_b, set(fp_hosts or []))
    for hs in statuses:
        if hs.failed_a or hs.failed_b:
            notes.append(f"host {hs.host}: {hs.failed_a + hs.failed_b} failed run(s): {'; '.join(hs.reasons)}")
        if fp_hosts is not None and not hs.fingerprinted:
            notes.append(f"host {hs.host} has no fingerprint: its runs count in the metric test, not in the IRUPs")
    notes.extend(f"host {host} left out of the metric test: {why}" for host, why in mc.excluded_hosts.items())
    return ProfileResult(
        application=data.application, version_a=data.version_a, version_b=data.version_b, label_b=label_b,
        batch=data.batch, verdict=mc.verdict, metric=mc, irup_a=ia, irup_b=ib, comparison=comparison, hints=hints,
        advice=advice, hosts=tuple(statuses), partial=tuple(dict.fromkeys(notes)), irup_errors=errors,
        runs=data.runs.reset_index(drop=True),
        fingerprints=data.fingerprints if data.fingerprints is not None else pd.DataFrame(),
        params=opts.params(), created_at=utcnow(),
        notes=((opts.trace_note,) if opts.trace_note else ()) + tuple(design_notes), design=design,
    )


def _irups(
    datas: dict[str, TargetData | None], opts: AnalysisOptions, catalog: Catalog,
) -> tuple[dict[str, Irup | None], dict[str, str]]:
    """The IRUP of each version's training data, or why there is none."""
    irups: dict[str, Irup | None] = {}
    errors: dict[str, str] = {}
    for key, data in datas.items():
        if data is None:
            irups[key] = None
            errors[key] = "no training rows (no fingerprints paired with this version's runs)"
            continue
        try:
            irups[key] = compute_irup(data, importance=opts.importance, seeds=opts.seeds,
                                      random_state=opts.random_state, params=opts.model_params, n_jobs=opts.n_jobs,
                                      catalog=catalog)
        except NotEnoughData as exc:  # includes NotEnoughMachines
            irups[key] = None
            errors[key] = str(exc)
    return irups, errors


def _advice(
    irups: dict[str, Irup | None], datas: dict[str, TargetData | None], opts: AnalysisOptions, notes: list[str],
) -> dict[str, Advice]:
    """Fleet-size advice for each IRUP that is not meaningful (a failure becomes a note)."""
    advice: dict[str, Advice] = {}
    for key, irup in irups.items():
        data = datas[key]
        if irup is not None and data is not None and irup.validity.verdict == "not-meaningful":
            try:
                advice[irup.target] = advise_fleet_size(data, full=irup, draws=4, params=opts.model_params,
                                                       random_state=opts.random_state, n_jobs=opts.n_jobs)
            except QuihoError as exc:
                notes.append(f"fleet-size advice for {irup.target} unavailable: {exc}")
    return advice


def _host_statuses(runs: pd.DataFrame, version_a: str, label_b: str, fp_hosts: set[str]) -> list[HostStatus]:
    """What each host contributed: ok and failed runs per version, fingerprint present, failure reasons."""
    statuses = []
    for host, sub in runs.groupby("host", sort=True):
        a = sub[sub["version"] == version_a]
        b = sub[sub["version"] == label_b]
        reasons = tuple(sorted({str(r) for r in sub.loc[sub["status"] != "ok", "reason"].dropna()}))
        statuses.append(HostStatus(
            str(host), str(host) in fp_hosts, int((a["status"] == "ok").sum()), int((b["status"] == "ok").sum()),
            int((a["status"] != "ok").sum()), int((b["status"] != "ok").sum()), reasons,
        ))
    return statuses


@dataclass(frozen=True)
class Measured:
    """What the measuring steps of :func:`run_profile` tell the analysis of their batch.

    ``fingerprint_run_id``: the fingerprint run the batch's runs are paired with (default: the lowest the runs
    name); ``partial``: why the profile is partial so far; ``trace_messages``: hosts that could not trace, and
    why; ``fleet_axes``: independent axes of the calibrated local fleet (None: look the batch's hosts up in the
    stored calibrations); ``design_vars``: each host's known conditions (None: the stored calibration's, if any).
    """

    fingerprint_run_id: int | None = None
    partial: Sequence[str] = ()
    trace_messages: dict[str, str] | None = None
    fleet_axes: int | None = None
    design_vars: dict[str, dict[str, Any]] | None = None


def analyse_profile(
    store: Store,
    application: str,
    version_a: str,
    version_b: str,
    batch: str,
    options: AnalysisOptions | None = None,
    *,
    measured: Measured | None = None,
) -> ProfileResult:
    """Analyse the interleaved runs of ``batch`` already in the store (steps 3-5; nothing is run).

    ``options`` as for :func:`analyse_data`; ``measured``: what the run that measured ``batch`` knows
    (:func:`run_profile` passes it; a re-analysis does not). Runs the batch traced (``--trace``) become fleet
    verdicts per function (:func:`quiho.profile.traces.fleet_traces`), joined into the hints.

    Raises
    ------
    UsageError
        ``batch`` has no runs of these versions.
    """
    opts = options or AnalysisOptions()
    m = measured or Measured()
    label_b = store_label(version_a, version_b)
    runs = fleet_store.profile_runs(store, application, (version_a, label_b), batch)
    if runs.empty:
        raise UsageError(f"profile batch {batch!r} has no runs of {application}@{version_a} / @{version_b}")
    fleet_axes, design_vars = m.fleet_axes, m.design_vars
    cal = fleet_store.calibration_for_hosts(store, set(runs["host"]))
    if fleet_axes is None and cal is not None:  # a stored batch of a calibrated local fleet
        fleet_axes = axes_kept(cal["result"]["choice"])
    if design_vars is None and cal is not None:  # its calibration says which conditions each host had
        design_vars = {h["name"]: h["vars"] for h in cal["result"]["choice"].get("hosts") or []}
    ok = runs[runs["status"] == "ok"]
    unit = str(ok["unit"].iloc[0]) if len(ok) else str(runs["unit"].iloc[0])
    fp_ids = sorted({int(x) for x in runs["fingerprint_run_id"].dropna()})
    fingerprint_run_id = m.fingerprint_run_id if m.fingerprint_run_id is not None or not fp_ids else fp_ids[0]
    fps = load_fingerprints(store, fp_ids)
    wide = (fps.pivot_table(index="host", columns="stressor", values="value", aggfunc="median")
            if len(fps) else pd.DataFrame())
    notes, info = list(m.partial), list[str]()
    data = {key: _training_rows(store, f"{application}@{label}", batch, notes, info)
            for key, label in (("a", version_a), ("b", label_b))}
    res = analyse_data(ProfileData(
        runs.drop(columns=["unit", "higher_is_better", "fingerprint_run_id"]), data["a"], data["b"],
        application=application, version_a=version_a, version_b=version_b, label_b=label_b, batch=batch, unit=unit,
        higher_is_better=bool(runs["higher_is_better"].iloc[0]), fingerprints=wide,
        fingerprinted_hosts=sorted(set(fps["host"])) if len(fps) else [], partial=notes, fleet_axes=fleet_axes,
        design_vars=design_vars, fingerprint_rows=fps if len(fps) else None,
    ), opts)
    res = _with_fleet_traces(store, res, runs, unit, m.trace_messages, opts.random_state)
    fp = fleet_store.fingerprint_run_age(store, fingerprint_run_id) if fingerprint_run_id else None
    return dataclasses.replace(res, fingerprint_run_id=fingerprint_run_id,
                               params={**res.params, "fingerprint_rows": "host median (the runs and the "
                                       "fingerprint are separate sessions)"},
                               fingerprint_batch=fp[0] if fp else None, fingerprint_age_s=fp[1] if fp else None,
                               notes=res.notes + tuple(info))


def _training_rows(store: Store, target: str, batch: str, notes: list[str], info: list[str]) -> TargetData | None:
    """``target``'s IRUP rows of ``batch`` (host medians), or None; its load notes go to ``notes`` or ``info``."""
    try:
        td = load_target(store, target, batch=batch)
    except QuihoError:
        return None
    for n in td.notes:
        # a median fingerprint for an extra app repetition loses nothing; dropped rows do
        (info if "median fingerprint" in n else notes).append(f"{target}: {n}")
    return _host_median_rows(td)


def _with_fleet_traces(store: Store, res: ProfileResult, runs: pd.DataFrame, unit: str,
                       messages: dict[str, str] | None, random_state: int) -> ProfileResult:
    """``res`` with the fleet verdicts per function of its batch's traced runs (unchanged when there are none)."""
    from quiho.profile.traces import FleetTraceSettings, fleet_traces

    ok = runs[runs["status"] == "ok"]
    values = {str(h): (g.loc[g["version"] == res.version_a, "value"].astype(float).tolist(),
                       g.loc[g["version"] == res.label_b, "value"].astype(float).tolist())
              for h, g in ok.groupby("host")}
    settings = FleetTraceSettings(unit=unit, random_state=random_state,
                                  min_effect=float(res.params.get("min_change", 0.05)))
    ft = fleet_traces(store, res.application, res.version_a, res.label_b, res.batch, metric_values=values,
                      host_messages=messages, settings=settings)
    if ft is None:
        return res
    flagged = sum(f.flagged for f in ft.functions)
    note = (f"per-function traces on the fleet: {len(ft.functions)} function(s), {flagged} flagged; "
            f"{ft.traced_runs} traced run(s), not in the metric")
    partial = tuple(f"traces of host {h}: {m}" for h, m in sorted(ft.host_messages.items()))
    return dataclasses.replace(res, traces=ft, hints=res.hints + ft.hints(), notes=res.notes + (note,),
                               partial=res.partial + partial)


def save_profile(store: Store, result: ProfileResult) -> int:
    """Record a profile (verdict, status, partial reasons, full result) in the store; returns its id."""
    return fleet_store.save_profile_row(store, fleet_store.ProfileRow(
        batch=result.batch, application=result.application, version_a=result.version_a,
        version_b=result.version_b, status=result.status, verdict=result.verdict, irup_verdict=result.irup_verdict,
        partial=list(result.partial), fingerprint_run_id=result.fingerprint_run_id, document=result.to_dict(),
        schema_version=REPORT_SCHEMA_VERSION, quiho_version=__version__,
    ))


def load_profile(store: Store, batch: str) -> dict[str, Any]:
    """The stored JSON document of profile ``batch``.

    Raises
    ------
    UsageError
        Unknown batch, or a document of a schema version this quiho does not read.
    """
    row = fleet_store.profile_row(store, batch)
    if row is None:
        raise UsageError(f"no profile {batch!r} in {store}")
    if int(row["schema_version"]) != REPORT_SCHEMA_VERSION:
        raise UsageError(f"profile {batch!r} has schema v{row['schema_version']}; this quiho reads "
                         f"v{REPORT_SCHEMA_VERSION}: rerun 'quiho profile'")
    doc: dict[str, Any] = json.loads(row["result_json"])
    return doc


@dataclass(frozen=True)
class _Job:
    """One profile being measured: what every measuring step needs."""

    spec: AppSpec
    version_a: str
    version_b: str
    store: Store
    inv: Inventory
    batch: str
    measure: MeasureOptions
    on_event: Callable[[FleetEvent], None] | None
    step: Callable[[str], None]

    def fingerprint(self, **where: Any) -> Any:
        """A new fingerprint run of the options' battery (``where``: ``resume``, ``hosts``)."""
        m = self.measure
        plan = FingerprintPlan(battery=m.battery, seconds=m.fingerprint_seconds, repetitions=m.fingerprint_repetitions)
        return fingerprint(self.inv, store=self.store, on_event=self.on_event, plan=plan, **where)

    def interleave(self, hosts: Sequence[str], fingerprint_run_id: int | None, *, round_: int = 0,
                   repetitions: int | None = None, offset: int = 0, setup: bool = True,
                   ) -> dict[str, tuple[str, str | None]]:
        """Both versions on ``hosts``, interleaved (:func:`run_interleaved`); the status per host."""
        plan = InterleavePlan(repetitions=repetitions or self.measure.repetitions, warmup=self.measure.warmup,
                              hosts=list(hosts), fingerprint_run_id=fingerprint_run_id, round=round_,
                              repetition_offset=offset, setup=setup)
        return run_interleaved(self.spec, self.version_a, self.version_b, self.inv, store=self.store,
                               batch=self.batch, plan=plan, on_event=self.on_event).hosts


def _fingerprints_for(job: _Job, found: fleet_store.FingerprintRunRef | None) -> tuple[int | None, bool, list[str]]:
    """Step 1: (fingerprint run id, fingerprinted now, notes): reuse ``found`` (the applicable run) or fingerprint."""
    notes: list[str] = []
    if found is not None:
        job.step(f"reusing fingerprint run {found.batch} ({found.age_s / 60:.0f} min old)")
        return found.run_id, False, notes
    job.step(f"fingerprinting {len(job.inv.names)} host(s) with the {job.measure.battery} battery (no fingerprint "
             f"younger than {job.measure.max_age_s:g} s)")
    fp = job.fingerprint()
    if fp.status == "failed":
        notes.append(f"fingerprint run {fp.batch} failed: {'; '.join(fp.errors) or 'no stressor succeeded'}")
        return None, False, notes
    notes.extend(n for h in fp.hosts if (n := _host_note(h)))
    return fp.run_id, True, notes


def _host_note(h: HostReport) -> str | None:
    """Why a host's fingerprint is not complete, or None when it is."""
    if h.status == "ok" and not h.missing:
        return None
    return (f"fingerprint of host {h.name}: {h.status}" + (f" ({h.reason})" if h.reason else "")
            + (f", {h.missing} missing" if h.missing else ""))


def round_plan(hosts: Sequence[str], rounds: int, repetitions: int, seed: str) -> list[tuple[int, list[str], int]]:
    """(round, host order, runs per version) of a blocked design: every host once per round, in a new order.

    The order is shuffled per round (seeded by the batch, so a resume replays it). Every visit runs the same
    number of runs, ``ceil(repetitions / rounds)``, so visits weigh alike in the analysis.
    """
    import random

    rng = random.Random(seed)
    rounds = max(1, min(rounds, repetitions))
    per_visit = -(-repetitions // rounds)
    out = []
    for r in range(rounds):
        order = list(hosts)
        if r:  # the first round keeps the inventory's order (first-run alternation is planned along it)
            rng.shuffle(order)
        out.append((r, order, per_visit))
    return out


def _fingerprint_and_run(
    job: _Job, hosts: Sequence[str], *, fingerprint_run_id: int | None = None,
) -> tuple[int | None, list[str], dict[str, tuple[str, str | None]]]:
    """Steps 1-2 on a fleet that shares one machine, in blocked rounds: each round visits every host once.

    Returns (fingerprint run id, notes, run status per host). A host's first visit fingerprints it right before
    its runs, so both see the same moment of the machine (a fingerprint minutes apart meets other tenants,
    page-cache and THP state); one fingerprint run holds all hosts. Each visit runs both versions interleaved
    (:func:`round_plan` splits the repetitions), so a slow minute of the machine hits the versions of one visit
    alike and, across hosts, lands in its round. With ``fingerprint_run_id`` (a fingerprint young enough to
    reuse) no host is fingerprinted.
    """
    fp_batch: str | None = None
    run_id: int | None = fingerprint_run_id
    notes: list[str] = []
    statuses: dict[str, tuple[str, str | None]] = {}
    reps = int(job.measure.repetitions or job.spec.repetitions)
    # every host is this machine: what the first good visit's setup built in the versions' own workdirs serves
    # the later visits (an app without a workdir runs in the visit's directory, which goes with the visit)
    keeps_build = all(job.spec.versions[v].workdir for v in (job.version_a, job.version_b))
    built = False
    done = fleet_store.visits_with_runs(job.store, job.batch, job.spec.name) if job.measure.resume else set()
    fp_done = {h for h, _r in done} | (set(hosts) if fingerprint_run_id is not None else set())
    for rnd, order, n in round_plan(hosts, job.measure.rounds, reps, job.batch):
        for host in order:
            if (host, rnd) in done:
                continue
            if host not in fp_done:
                fp = job.fingerprint(resume=fp_batch, hosts=[host])
                fp_batch, run_id = fp.batch, fp.run_id
                fp_done.add(host)
                notes.extend(n_ for h in fp.hosts if h.name == host and (n_ := _host_note(h)))
                notes.extend(fp.errors)  # this call measured only this host
            got = job.interleave([host], run_id, round_=rnd, repetitions=n, offset=rnd * n, setup=not built)
            built = built or (keeps_build and all(st == "ok" for st, _ in got.values()))
            for h, st in got.items():  # a host stays failed once a visit failed
                if statuses.get(h, ("ok", None))[0] == "ok":
                    statuses[h] = st
    return run_id, notes, statuses


def _trace_batch(job: _Job) -> dict[str, str]:
    """After the measured runs: trace both versions on every host the batch has no traced run of; host messages."""
    from quiho.store.traces import batch_trace_runs
    from quiho.trace.fleet import run_fleet_traces

    trace, spec = job.measure.trace, job.spec
    # a resume traces every host the batch has no traced run of: those measured now, and those measured
    # before whose tracing was cut off or failed (no root, no tracer ... fixed since, or said again)
    seen = {r.host for r in batch_trace_runs(job.store, spec.name, job.batch)} if job.measure.resume else set()
    trace_hosts = [h for h in job.inv.names if h not in seen]
    job.step(f"tracing {len(trace.functions)} function(s), {trace.runs} traced run(s) per version per host "
             f"(not in the metric) on {len(trace_hosts)} host(s)")
    plan = dataclasses.replace(trace, labels={"1": job.version_a, "2": store_label(job.version_a, job.version_b)})
    traced = run_fleet_traces(spec, plan, job.inv, store=job.store, batch=job.batch, hosts=trace_hosts,
                              on_event=job.on_event)
    messages: dict[str, str] = traced.host_messages()
    return messages


def _measure(job: _Job) -> tuple[int | None, bool, bool, list[str], dict[str, str] | None]:
    """Steps 1-2 (and the traces) under the store's measurement lock.

    Returns (fingerprint run id, fingerprinted now, back to back, notes, trace host messages).
    """
    spec, m, store, inv = job.spec, job.measure, job.store, job.inv
    with measuring(store, f"quiho profile {spec.name}@{job.version_a} @{job.version_b}"):
        done = fleet_store.hosts_with_runs(store, job.batch, spec.name) if m.resume else set()
        todo = [h for h in inv.names if h not in done]
        if inv.shares_machine and m.rounds > 1 and m.resume:  # a resume of a blocked design finishes its visits
            todo = list(inv.names)
        found = fleet_store.applicable_fingerprint_run(store, inv.names, m.max_age_s)
        rounds = f"in {m.rounds} blocked rounds" if m.rounds > 1 else "host by host"
        if found is None and inv.shares_machine and todo:
            job.step(f"fingerprinting {len(inv.names)} host(s) with the {m.battery} battery (no fingerprint younger "
                     f"than {m.max_age_s:g} s) and running {spec.name}@{job.version_a} and @{job.version_b} "
                     f"interleaved, {rounds} (each host's first runs right after its fingerprint), batch {job.batch}")
            back_to_back = fresh = True
            run_id, notes, hosts_run = _fingerprint_and_run(job, todo)
        elif inv.shares_machine and todo:
            back_to_back = False
            run_id, fresh, notes = _fingerprints_for(job, found)
            job.step(f"running {spec.name}@{job.version_a} and @{job.version_b} interleaved on {len(todo)} host(s) "
                     f"{rounds}, batch {job.batch}")
            run_id, more, hosts_run = _fingerprint_and_run(job, todo, fingerprint_run_id=run_id)
            notes.extend(more)
        else:
            back_to_back = False
            run_id, fresh, notes = _fingerprints_for(job, found)
            job.step(f"running {spec.name}@{job.version_a} and @{job.version_b} interleaved on {len(todo)} host(s), "
                     f"batch {job.batch}")
            hosts_run = job.interleave(todo, run_id)
        trace_messages = _trace_batch(job) if m.trace is not None else None
    for name, (st, why) in hosts_run.items():
        if st != "ok":
            notes.append(f"host {name}: {st}" + (f" ({why})" if why else ""))
    return run_id, fresh, back_to_back, notes, trace_messages


def run_profile(
    spec: AppSpec,
    version_a: str,
    version_b: str,
    *,
    store: Store,
    options: ProfileOptions | None = None,
    fleet: ResolvedFleet | None = None,
    on_event: Callable[[FleetEvent], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> ProfileResult:
    """Profile ``version_b`` against ``version_a`` of ``spec`` on a fleet (steps 1-5) and save the result.

    Holds the store's measurement lock while measuring. Interrupted (Ctrl-C, SIGTERM), the
    cleanup runs, the hosts already measured stay stored under the batch (``on_step`` names
    it before the runs start; ``options.measure.resume`` continues it) and a fingerprint in progress is
    marked ``partial`` (the next profile's fingerprint step resumes nothing: it reuses a
    partial run that is young enough, or fingerprints anew).

    Parameters
    ----------
    spec : AppSpec
        The application; both versions must be in it.
    version_a, version_b : str
        Baseline and candidate (the same version twice is a false-positive check).
    store : Store
        Where fingerprints, runs and the profile go.
    options : ProfileOptions, optional
        What is measured and how it is analysed (default ``ProfileOptions()``: the calibrated local fleet,
        the quick battery, fingerprints up to a day old ...).
    fleet : ResolvedFleet, optional
        The fleet already resolved from ``options.measure.inventory``
        (:func:`quiho.fleet.local.calibrate.resolve_fleet`; a CLI does it first to size its progress bar);
        default: resolved here.
    on_event, on_step : callable, optional
        Fleet progress events and one line per step (for a CLI's stderr).

    Raises
    ------
    AppSpecError
        A version is not in the spec (nothing is run).
    InventoryError, UsageError, StoreError
        Bad input; nothing is run.
    """
    spec.require_versions(version_a, version_b)
    opts = options or ProfileOptions()
    m = opts.measure
    step = on_step or (lambda _msg: None)
    fleet = fleet or resolve_fleet(m.inventory, store, step)  # no inventory: the calibrated local fleet
    batch = m.resume or new_batch("profile")
    job = _Job(spec, version_a, version_b, store, load_inventory(fleet.inventory), batch, m, on_event, step)
    run_id, fresh, back_to_back, notes, trace_messages = _measure(job)
    step("computing the metric change, both IRUPs and their comparison")
    res = analyse_profile(store, spec.name, version_a, version_b, batch, opts.analysis, measured=Measured(
        fingerprint_run_id=run_id, partial=notes, trace_messages=trace_messages, fleet_axes=fleet.axes,
        design_vars=job.inv.design_vars()))
    warm_note = (f"{m.warmup} warm-up run(s) per version per host were run first and discarded",) if m.warmup else ()
    # Hosts whose fingerprint history shows drift: their older fingerprints describe another machine.
    drift = tuple(f"warning: {w}" for w in drift_warnings(store, job.inv.names))
    res = dataclasses.replace(res, fingerprinted_now=fresh, notes=res.notes + warm_note + drift,
                              params={**res.params, "warmup": m.warmup,
                                      "repetitions": m.repetitions or spec.repetitions})
    if back_to_back:
        res = dataclasses.replace(res, params={**res.params, "fingerprint_rows": (
            "host median (each host fingerprinted right before its runs)")})
    save_profile(store, res)
    return res
