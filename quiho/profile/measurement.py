"""``quiho profile APP@V1 APP@V2``: the end-to-end comparison of two versions on a fleet (:func:`run_profile`).

Steps (each kept, and marked, when a later one is partial):

1. **Fingerprints**: reuse the newest fleet fingerprint run younger than ``max_age``
   that covers the inventory's hosts; otherwise fingerprint first.
2. **Runs**: both versions on every host, interleaved (:mod:`quiho.profile.interleave`).
   On a fleet whose hosts share this machine (the local fleet) a new fingerprint and the
   runs go host by host: each host's runs right after its fingerprint.
3. **Analysis** of the stored runs (:func:`quiho.profile.analysis.analyse_profile`, steps 3-5 there: metric
   change, IRUPs, hints), then the result is saved (:func:`quiho.profile.result.save_profile`).

Steps 1-2 run under the store's measurement lock. The settings of every step travel as one
:class:`~quiho.profile.options.ProfileOptions`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quiho.app import AppSpec
from quiho.fingerprint import FingerprintPlan, HostReport, fingerprint
from quiho.fleet import FleetEvent, Inventory, load_inventory
from quiho.fleet.local.calibrate import ResolvedFleet, resolve_fleet
from quiho.fleet.session import measuring, new_batch
from quiho.profile.analysis import Measured, analyse_profile
from quiho.profile.interleave import InterleavePlan, run_interleaved, store_label
from quiho.profile.options import MeasureOptions, ProfileOptions
from quiho.profile.result import ProfileResult, save_profile
from quiho.schedule.drift import drift_warnings
from quiho.store import Store
from quiho.store.app_runs import hosts_with_runs, visits_with_runs
from quiho.store.fingerprints import (
    FingerprintRunRef,
    applicable_fingerprint_run,
    note_skipped_hosts,
    skipped_hosts,
)

__all__ = ["run_profile", "find_fingerprint_run", "round_plan"]


def find_fingerprint_run(store: Store, hosts: Sequence[str], max_age_s: float) -> tuple[int, str, float] | None:
    """(run id, batch, age in seconds) of the fingerprint run that applies to ``hosts``, at most ``max_age_s`` old.

    The rule is :func:`quiho.store.fingerprints.applicable_fingerprint_run` (most hosts covered, then newest).
    """
    ref = applicable_fingerprint_run(store, hosts, max_age_s)
    return None if ref is None else (ref.run_id, ref.batch, ref.age_s)


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
    #: Which pass over the hosts this is (2: a designed fleet visited again, :func:`_second_pass`).
    stage: int = 1

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
                              repetition_offset=offset, setup=setup, stage=self.stage)
        return run_interleaved(self.spec, self.version_a, self.version_b, self.inv, store=self.store,
                               batch=self.batch, plan=plan, on_event=self.on_event).hosts


def _fingerprints_for(job: _Job, found: FingerprintRunRef | None) -> tuple[int | None, bool, list[str]]:
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


#: Why ``fingerprint_hosts="first-round"`` leaves a host unfingerprinted (stored with the fingerprint run).
FIRST_ROUND_ONLY = ("--fingerprint-hosts first-round: only the first round's hosts are fingerprinted; "
                    "the design's answer reads no fingerprint")


def _left_out(job: _Job) -> list[str]:
    """The hosts a new fingerprint leaves out: with ``first-round``, those a designed fleet's first round skips."""
    if job.measure.fingerprint_hosts != "first-round":
        return []
    return [h.name for h in job.inv.hosts if h.design_rounds and 0 not in h.design_rounds]


def round_plan(hosts: Sequence[str], rounds: int, repetitions: int, seed: str,
               visited_in: Mapping[str, Sequence[int]] | None = None, stages: int = 1,
               ) -> list[tuple[int, list[str], int]]:
    """(round, host order, runs per version) of a blocked design: every host once per round, in a new order.

    The order is shuffled per round (seeded by the batch, so a resume replays it). Every visit runs the same
    number of runs, ``ceil(repetitions / rounds)``, so visits weigh alike in the analysis. ``visited_in`` gives
    the rounds of hosts that belong to some rounds only (a screening design's fold-over: its second round visits
    8 other hosts); a host none of whose rounds is run is visited in the last one. ``stages`` repeats the plan:
    round ``r + k * rounds`` visits the hosts of round ``r`` (the first stage's orders are unchanged).
    """
    import random

    rng = random.Random(seed)
    rounds = max(1, min(rounds, repetitions))
    per_visit = -(-repetitions // rounds)
    only = {h: set(r) for h, r in (visited_in or {}).items() if r}

    def visits(h: str, r: int) -> bool:
        own = only.get(h)
        return own is None or r in own or (r == rounds - 1 and min(own) >= rounds)

    out = []
    for r in range(rounds * stages):
        order = [h for h in hosts if visits(h, r % rounds)]
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
    done = visits_with_runs(job.store, job.batch, job.spec.name) if job.measure.resume else set()
    left_out = _left_out(job) if fingerprint_run_id is None else []
    fp_done = {h for h, _r in done} | (set(hosts) if fingerprint_run_id is not None else set(left_out))
    visited_in = {h.name: h.design_rounds for h in job.inv.hosts if h.design_rounds}
    if job.stage > 1:  # a later pass skips the visits the earlier ones stored
        done |= visits_with_runs(job.store, job.batch, job.spec.name)
    for rnd, order, n in round_plan(hosts, job.measure.rounds, reps, job.batch, visited_in, job.stage):
        for host in order:
            if (host, rnd) in done:
                continue
            if host not in fp_done:
                fp = job.fingerprint(resume=fp_batch, hosts=[host])
                if left_out and fp_batch is None:  # said before the run's last host sets its status
                    note_skipped_hosts(job.store, fp.run_id, left_out, FIRST_ROUND_ONLY)
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
        done = hosts_with_runs(store, job.batch, spec.name) if m.resume else set()
        todo = [h for h in inv.names if h not in done]
        if inv.shares_machine and m.rounds > 1 and m.resume:  # a resume of a blocked design finishes its visits
            todo = list(inv.names)
        found = applicable_fingerprint_run(store, inv.names, m.max_age_s)
        if (found is not None and m.fingerprint_hosts == "all" and found.hosts_covered < len(inv.names)
                and set(skipped_hosts(store, [found.run_id])) & set(inv.names)):
            job.step(f"fingerprint run {found.batch} left hosts out on purpose (--fingerprint-hosts first-round); "
                     "fingerprinting every host")
            found = None
        rounds = f"in {m.rounds} blocked rounds" if m.rounds > 1 else "host by host"
        if found is None and inv.shares_machine and todo:
            left_out = _left_out(job)
            which = (f"{len(inv.names) - len(left_out)} of {len(inv.names)} host(s) (the first round's)" if left_out
                     else f"{len(inv.names)} host(s)")
            job.step(f"fingerprinting {which} with the {m.battery} battery (no fingerprint younger "
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


def _all_runs_ok(res: ProfileResult) -> bool:
    """True when every host ran every run of both versions and has its fingerprint."""
    return all((h.fingerprinted or h.fingerprint_skipped) and not h.failed_a and not h.failed_b for h in res.hosts)


def _second_pass(job: _Job, fingerprint_run_id: int | None) -> list[str]:
    """Every host of a fleet on this machine visited again in the same rounds (``job.stage`` 2); notes.

    The fingerprints of the first pass are the hosts'; the visits stored already (a resume) are skipped.
    """
    with measuring(job.store, f"quiho profile {job.spec.name}@{job.version_a} @{job.version_b}"):
        _, notes, hosts_run = _fingerprint_and_run(job, job.inv.names, fingerprint_run_id=fingerprint_run_id)
    notes.extend(f"host {name} (pass 2): {st}" + (f" ({why})" if why else "")
                 for name, (st, why) in hosts_run.items() if st != "ok")
    return notes


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
        the resources battery, fingerprints up to a day old ...).
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
    if not job.inv.shares_machine and opts.analysis.stages > 1:  # only a fleet on this machine is visited again
        opts = opts.model_copy(update={"analysis": opts.analysis.model_copy(update={"stages": 1})})
    run_id, fresh, back_to_back, notes, trace_messages = _measure(job)

    def analyse() -> ProfileResult:
        step("computing the metric change, both IRUPs and their comparison")
        return analyse_profile(store, spec.name, version_a, version_b, batch, opts.analysis, measured=Measured(
            fingerprint_run_id=run_id, partial=notes, trace_messages=trace_messages, fleet_axes=fleet.axes,
            design_vars=job.inv.design_vars()))

    # A resume cut off in the second pass continues it: its first pass was judged inconclusive already, and
    # judging the first pass with part of the second would be a third look the level split does not cover.
    stored = visits_with_runs(store, batch, spec.name) if m.resume and opts.analysis.stages > 1 else set()
    if any(r >= m.rounds for _h, r in stored):
        first_visits = sum(r < m.rounds for _h, r in stored)
        step(f"resuming the second pass over the hosts (pass 2 of 2; the first {first_visits} visits were "
             f"inconclusive), batch {batch}")
        stage = 2
    else:
        res = analyse()
        first_visits = res.design.visits if res.design is not None else 0
        stage = 1
        if (res.design is not None and res.design.verdict == "inconclusive" and opts.analysis.stages > 1
                and _all_runs_ok(res)):  # a failing host is not noise: visited again it fails alike
            step(f"the designed fleet's answer after {first_visits} visits is inconclusive at Holm level "
                 f"{res.design.settings.level:.3g}: visiting every host again (pass 2 of 2), batch {batch}")
            stage = 2
    if stage == 2:
        notes = notes + _second_pass(dataclasses.replace(job, stage=2), run_id)
        res = analyse()
    warm_note = (f"{m.warmup} warm-up run(s) per version per host were run first and discarded",) if m.warmup else ()
    # Hosts whose fingerprint history shows drift: their older fingerprints describe another machine.
    drift = tuple(f"warning: {w}" for w in drift_warnings(store, job.inv.names))
    passes: tuple[str, ...] = ()
    if res.design is not None and opts.analysis.stages > 1 and stage == 1 and res.design.verdict == "inconclusive":
        passes = ("one pass: inconclusive at Holm level "
                  f"{res.design.settings.level:.3g}, and not visited again because some of its runs failed",)
    elif res.design is not None and opts.analysis.stages > 1:
        passes = ((f"pass 2 of 2: the first {first_visits} visits were inconclusive at Holm level "
                   f"{res.design.settings.level:.3g}, so every host was visited again; the design's verdict is on "
                   f"all {res.design.visits}") if stage == 2 else
                  (f"one pass: its verdict came at Holm level {res.design.settings.level:.3g} (the level split over "
                   "two passes; a second is measured only when the first is inconclusive)"),)
    res = dataclasses.replace(res, fingerprinted_now=fresh, notes=res.notes + warm_note + passes + drift,
                              params={**res.params, "warmup": m.warmup, "design_stage": stage,
                                      "repetitions": m.repetitions or spec.repetitions})
    if back_to_back:
        res = dataclasses.replace(res, params={**res.params, "fingerprint_rows": (
            "host median (each host fingerprinted right before its runs)")})
    save_profile(store, res)
    return res
