"""Steps 3-5 of ``quiho profile`` on runs already measured: nothing here runs anything.

3. **Metric change** per host and across hosts (:mod:`quiho.profile.stats`).
4. **IRUP per version** (seeds, validity) and their comparison (:mod:`quiho.irup`); on a designed fleet, each
   version's response to its factors (:mod:`quiho.design`).
5. **Hints** from the stressor catalog (:mod:`quiho.profile.hints`), fleet-size advice when a profile is not
   meaningful, and per-function trace verdicts when given.

:func:`analyse_data` is the store-free core (a :class:`ProfileData` in, a
:class:`~quiho.profile.result.ProfileResult` out); :func:`analyse_profile` assembles a stored batch for it, so a
profile can be recomputed (other seeds, another floor) without running anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from quiho.design import DesignAnalysis, DesignSettings, analyse_design, factor_table, local_fleet_vars
from quiho.errors import NotEnoughData, QuihoError, UsageError
from quiho.fingerprint.catalog import Catalog, load_catalog
from quiho.fleet.local.calibrate import axes_kept
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
from quiho.profile.interleave import store_label
from quiho.profile.options import AnalysisOptions
from quiho.profile.result import HostStatus, ProfileResult
from quiho.profile.stats import metric_change
from quiho.store import Store, utcnow
from quiho.store.app_runs import profile_runs
from quiho.store.calibrations import calibration_for_hosts
from quiho.store.fingerprints import fingerprint_run_age, skipped_hosts

__all__ = ["ProfileData", "Measured", "analyse_data", "analyse_profile", "host_fingerprints"]


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
    skipped_fingerprints : mapping, optional
        Host -> why its fingerprint run left it out on purpose: such a host without a fingerprint is said once,
        not counted as missing.
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
    skipped_fingerprints: Mapping[str, str] | None = None


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
    settings = DesignSettings(alpha=opts.alpha, floor=opts.min_change, random_state=opts.random_state,
                              looks=opts.stages)
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
    skipped = data.skipped_fingerprints or {}
    statuses = _host_statuses(data.runs, data.version_a, label_b, set(fp_hosts or []), set(skipped))
    notes.extend(_host_notes(statuses, fp_hosts is not None))
    left = [hs.host for hs in statuses if hs.fingerprint_skipped]
    if left:
        why = "; ".join(sorted({skipped[h] for h in left}))
        counted = "the metric test and the design" if design is not None else "the metric test"
        design_notes.append(f"{len(left)} of {len(statuses)} hosts not fingerprinted on purpose ({why}): their runs "
                            f"count in {counted}, not in the IRUPs")
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


def _host_notes(statuses: Sequence[HostStatus], fingerprints_known: bool) -> list[str]:
    """Why the profile is partial, host by host: failed runs, and a fingerprint missing (not one left out)."""
    out = []
    for hs in statuses:
        if hs.failed_a or hs.failed_b:
            out.append(f"host {hs.host}: {hs.failed_a + hs.failed_b} failed run(s): {'; '.join(hs.reasons)}")
        if fingerprints_known and not hs.fingerprinted and not hs.fingerprint_skipped:
            out.append(f"host {hs.host} has no fingerprint: its runs count in the metric test, not in the IRUPs")
    return out


def _host_statuses(runs: pd.DataFrame, version_a: str, label_b: str, fp_hosts: set[str],
                   skipped: set[str]) -> list[HostStatus]:
    """What each host contributed: runs ok and failed per version, fingerprint (or left out on purpose), reasons."""
    statuses = []
    for host, sub in runs.groupby("host", sort=True):
        a = sub[sub["version"] == version_a]
        b = sub[sub["version"] == label_b]
        reasons = tuple(sorted({str(r) for r in sub.loc[sub["status"] != "ok", "reason"].dropna()}))
        statuses.append(HostStatus(
            str(host), str(host) in fp_hosts, int((a["status"] == "ok").sum()), int((b["status"] == "ok").sum()),
            int((a["status"] != "ok").sum()), int((b["status"] != "ok").sum()), reasons,
            str(host) not in fp_hosts and str(host) in skipped,
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
    runs = profile_runs(store, application, (version_a, label_b), batch)
    if runs.empty:
        raise UsageError(f"profile batch {batch!r} has no runs of {application}@{version_a} / @{version_b}")
    fleet_axes, design_vars = m.fleet_axes, m.design_vars
    cal = calibration_for_hosts(store, set(runs["host"]))
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
        skipped_fingerprints=skipped_hosts(store, fp_ids),
    ), opts)
    res = _with_fleet_traces(store, res, runs, unit, m.trace_messages, opts.random_state)
    fp = fingerprint_run_age(store, fingerprint_run_id) if fingerprint_run_id else None
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
