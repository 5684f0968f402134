"""Fingerprint a fleet: plan what is missing, run ``playbooks/fingerprint.yml``, store what came back.

One stress-ng job per host per repetition (plus one warm-up pass per host and
invocation). A run is resumable: the plan is always "every (host, repetition,
stressor) without a row", so a resume reruns only what is missing. A stressor
recorded failed (it ran and failed, or hung) is not missing and is not rerun.
"""

from __future__ import annotations

import base64
import io
import json
import os
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quiho._facts import HOST_KEYS, parse_facts
from quiho._version import __version__
from quiho.errors import FingerprintParseError, UsageError
from quiho.fingerprint.battery import load_battery, render_job
from quiho.fingerprint.parse import last_started, parse_stressng_yaml, running_stressor
from quiho.fleet.inventory import Inventory, load_inventory
from quiho.fleet.local.calibrate import resolve_inventory
from quiho.fleet.runner import FleetEvent, PlaybookResult
from quiho.fleet.session import (
    TIMEOUT_RCS,
    FleetAccess,
    FleetSession,
    measuring,
    new_batch,
    remember_inventory,
    run_rc,
)
from quiho.store import Store, utcnow
from quiho.store.fingerprints import (
    UNSTABLE_COV,
    create_fingerprint_run,
    fingerprint_run,
    host_counts,
    missing_measurements,
    set_run_status,
    summarise_run,
    upsert_measurements,
)

__all__ = ["FingerprintPlan", "FingerprintRun", "HostRecords", "HostReport", "fingerprint", "fingerprint_records",
           "outer_timeout", "summarise_run", "unpack_artifacts", "UNSTABLE_COV"]

MAX_PASSES = 3


def outer_timeout(n_stressors: int, seconds: int) -> int:
    """Outer time limit of one job: twice the budget plus 2 s per stressor plus 10 s.

    Generous beyond the worst overrun measured (2.5x at -t 1 for a few stressors),
    bounded so that a hanging stressor costs minutes, not forever.
    """
    return int(n_stressors * seconds * 2 + 2 * n_stressors + 10)


@dataclass(frozen=True)
class HostReport:
    """One host's part of a fingerprint run."""

    name: str
    status: str
    reason: str | None
    ok: int
    failed: int
    missing: int


@dataclass(frozen=True)
class FingerprintRun:
    """Result of :func:`fingerprint`."""

    run_id: int
    batch: str
    status: str
    hosts: tuple[HostReport, ...]
    elapsed_s: float
    passes: int
    errors: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "run_id": self.run_id,
            "batch": self.batch,
            "status": self.status,
            "elapsed_s": round(self.elapsed_s, 2),
            "passes": self.passes,
            "errors": list(self.errors),
            "hosts": [h.__dict__ for h in self.hosts],
        }


def _start(
    store: Store, inventory: str | os.PathLike[str] | Inventory | None, resume: str | None, battery: str,
    battery_file: Path | None, overrides: dict[str, int | None], forks: int, only: Sequence[str] | None = None,
) -> tuple[Inventory, int, str, dict[str, Any]]:
    """Open a new run (validated parameters) or reopen ``resume``; return inventory, run id, batch and params."""
    if resume is not None:
        run = fingerprint_run(store, resume)
        params = json.loads(run["params_json"])
        inv = load_inventory(inventory if inventory is not None else params["inventory"])
        _check_hosts(only, params["hosts"], f"fingerprint run {run['batch']}")
        set_run_status(store, int(run["id"]), "running")
        return inv, int(run["id"]), str(run["batch"]), params
    # None: the calibrated local fleet
    inv = load_inventory(inventory if isinstance(inventory, Inventory) else resolve_inventory(inventory, store))
    _check_hosts(only, inv.names, f"inventory {inv.path}")
    bat = load_battery(battery, battery_file)
    secs = int(overrides["seconds"] if overrides["seconds"] is not None else bat.seconds)
    reps = int(overrides["repetitions"] if overrides["repetitions"] is not None else bat.repetitions)
    if secs < 1 or reps < 1:
        raise UsageError("--seconds and --repetitions must be at least 1")
    warm = overrides["warmup_seconds"]
    params = {
        "schema": 1,
        "battery": bat.name,
        "stressors": list(bat.stressors),
        "options": bat.options,
        "seconds": secs,
        "repetitions": reps,
        "warmup_seconds": int(warm if warm is not None else bat.warmup_seconds),
        "outer_timeout_s": overrides["outer_timeout_s"] or outer_timeout(len(bat.stressors), secs),
        "inventory": str(Path(inv.path).resolve()),
        "hosts": inv.names,
        "forks": forks,
        "value": "bogo-ops-per-second-real-time",
    }
    batch = new_batch("fp")
    return inv, create_fingerprint_run(store, batch, bat.name, params, __version__), batch, params


def _check_hosts(only: Sequence[str] | None, names: Sequence[str], where: str) -> None:
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise UsageError(f"{where} has no host(s) {', '.join(unknown)}")


@dataclass(frozen=True)
class FingerprintPlan:
    """What a fingerprint run measures: the battery and the overrides of its settings.

    Attributes
    ----------
    battery : str, default "default"
        Battery name in ``stressors/batteries.yaml`` (``quick``, ``default``, ``paper``).
    battery_file : Path, optional
        Battery YAML other than ``stressors/batteries.yaml``.
    seconds, repetitions, warmup_seconds : int, optional
        Override the battery's per-stressor seconds, repetitions and warm-up seconds (0 = no warm-up).
    outer_timeout_s : int, optional
        Kill one host's job after this many seconds (default :func:`outer_timeout`).
    run_timeout_s : float, optional
        Cancel a whole playbook invocation after this many seconds (default: sum of job limits + 120 s/host).
    """

    battery: str = "default"
    battery_file: Path | None = None
    seconds: int | None = None
    repetitions: int | None = None
    warmup_seconds: int | None = None
    outer_timeout_s: int | None = None
    run_timeout_s: float | None = None


def fingerprint(
    inventory: str | os.PathLike[str] | Inventory | None = None,
    *,
    store: Store,
    plan: FingerprintPlan = FingerprintPlan(),
    access: FleetAccess = FleetAccess(),
    resume: str | None = None,
    hosts: Sequence[str] | None = None,
    on_event: Callable[[FleetEvent], None] | None = None,
) -> FingerprintRun:
    """Fingerprint every host of ``inventory`` (default: the local fleet) and store the results.

    Holds the store's measurement lock for the whole run (waiting for another holder).
    Interrupted (Ctrl-C, SIGTERM), the run is marked ``partial`` after the cleanup and the
    interrupt propagates; ``resume`` completes it.

    Parameters
    ----------
    inventory : path-like or Inventory, optional
        Ansible inventory (or one already loaded); default the calibrated local fleet. On resume, default the
        run's own.
    store : Store
        Open quiho store.
    plan : FingerprintPlan
        Battery and overrides of its settings and time limits.
    access : FleetAccess
        Parallel hosts, SSH host-key checking, cgroup prefix of emulated hosts.
    resume : str, optional
        Batch label or id of an earlier run: rerun only its missing hosts/repetitions/stressors.
    hosts : sequence of str, optional
        Measure only these of the run's hosts now (the others stay missing until a ``resume`` measures them):
        ``quiho profile`` fingerprints a shared-machine fleet one host at a time, each right before its runs.
    on_event : callable, optional
        Progress events.

    Returns
    -------
    FingerprintRun
        Status ``complete`` (every host, repetition and stressor has a row), ``partial`` or ``failed``.

    Raises
    ------
    InventoryError, CatalogError, UsageError, StoreError
        Bad input; nothing is run.
    """
    t_start = datetime.now(UTC)
    overrides = {"seconds": plan.seconds, "repetitions": plan.repetitions, "warmup_seconds": plan.warmup_seconds,
                 "outer_timeout_s": plan.outer_timeout_s}
    with measuring(store, "quiho fingerprint"):
        inv, run_id, batch, params = _start(store, inventory, resume, plan.battery, plan.battery_file, overrides,
                                            access.forks, hosts)
        if plan.outer_timeout_s is not None:
            params["outer_timeout_s"] = plan.outer_timeout_s
        session = FleetSession(inv, "fingerprint.yml", batch, cgroup_prefix=access.cgroup_prefix,
                               host_key_checking=access.host_key_checking, forks=access.forks, on_event=on_event)
        try:
            passes, statuses, errors = _measure(store, session, run_id, params, plan.run_timeout_s, hosts)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                set_run_status(store, run_id, "partial",
                                           note=f"interrupted ({exc}) at {utcnow()}; resumable")
            raise
        reports, gone = _reports(store, run_id, inv, params, statuses)
        errors = [f"host {h} is no longer in inventory {inv.path}" for h in gone] + errors
        total_missing = sum(r.missing for r in reports) + len(gone) * int(params["repetitions"]) * len(
            params["stressors"])
        total_ok = sum(r.ok for r in reports)
        status = "complete" if total_missing == 0 and total_ok > 0 else ("partial" if total_ok > 0 else "failed")
        summarise_run(store, run_id)
        set_run_status(store, run_id, status)
    elapsed = (datetime.now(UTC) - t_start).total_seconds()
    return FingerprintRun(run_id, batch, status, tuple(reports), elapsed, passes, tuple(errors))


def _measure(
    store: Store, session: FleetSession, run_id: int, params: dict[str, Any], run_timeout_s: float | None,
    only: Sequence[str] | None = None,
) -> tuple[int, dict[str, tuple[str, str | None]], list[str]]:
    """Up to :data:`MAX_PASSES` passes over what is missing (only hosts ``only``); passes, statuses, errors."""
    inv = session.inventory
    hosts = [h for h in params["hosts"] if h in inv.names and (only is None or h in only)]
    ids = remember_inventory(store, inv)
    stressors: list[str] = list(params["stressors"])
    reps = int(params["repetitions"])
    artifacts = store.files_dir / "fleet" / session.batch
    errors: list[str] = []
    statuses: dict[str, tuple[str, str | None]] = {}
    passes = 0
    retry = set(hosts)
    # hosts on this machine report the controller's machine: its facts once, from the first that reports them
    machine_facts: dict[str, Any] = {}
    while retry and passes < MAX_PASSES:
        plan = {h: missing_measurements(store, run_id, ids[h], stressors, reps)
                for h in hosts if h in retry}  # inventory order
        plan = {h: m for h, m in plan.items() if m}
        if not plan:
            break
        passes += 1
        warm = int(params["warmup_seconds"]) if passes == 1 else 0
        retry = set()
        for group in session.groups(list(plan)):
            extravars, budget = _plan_vars(group, plan, params, warm)
            local = session.is_local(group)
            if local and machine_facts:
                extravars["quiho_facts_known"] = True
            res = session.run(group, extravars, run_timeout_s or budget, collect_to=artifacts)
            unpack_artifacts(res, group, artifacts)
            for h in group:
                rec = fingerprint_records(res, h, plan[h], params, artifacts)
                facts = rec.facts
                if local:
                    machine_facts = machine_facts or facts
                    facts = facts or machine_facts
                upsert_measurements(store, run_id, h, rec.rows, facts=facts, status=rec.status,
                                                reason=rec.reason)
                statuses[h] = (rec.status, rec.reason)
                errors.extend(rec.errors)
                if rec.status == "ok" and rec.rows and missing_measurements(
                        store, run_id, ids[h], stressors, reps):
                    retry.add(h)  # e.g. a hung stressor was recorded: run the rest of that repetition again
    return passes, statuses, errors


def _reports(
    store: Store, run_id: int, inv: Inventory, params: dict[str, Any], statuses: dict[str, tuple[str, str | None]]
) -> tuple[list[HostReport], list[str]]:
    ids = remember_inventory(store, inv)
    stressors, reps = list(params["stressors"]), int(params["repetitions"])
    reports = []
    skipped = params.get("skipped_hosts") or {}
    for h in [h for h in params["hosts"] if h in inv.names]:
        n_ok, n_failed = host_counts(store, run_id, ids[h])
        if h in skipped and n_ok + n_failed == 0:  # left out on purpose (note_skipped_hosts), not missing
            continue
        missing = sum(len(v) for v in missing_measurements(store, run_id, ids[h], stressors, reps).values())
        st, reason = statuses.get(h, ("ok", None))
        if missing == 0 and st in ("ok", "failed") and reason is None:
            st = "ok"
        elif missing:
            st = st if st != "ok" else "partial"
        reports.append(HostReport(h, st, reason, n_ok, n_failed, missing))
    return reports, [h for h in params["hosts"] if h not in inv.names]


def _plan_vars(
    group: list[str], plan: dict[str, dict[int, list[str]]], params: dict[str, Any], warm: int
) -> tuple[dict[str, Any], float]:
    """Extra variables of one invocation (per-host job list) and its outer time budget."""
    secs = int(params["seconds"])
    options = params.get("options") or {}
    cap = int(params["outer_timeout_s"])
    host_plan: dict[str, list[dict[str, Any]]] = {}
    budget = 0.0
    for h in group:
        items: list[dict[str, Any]] = []
        if warm > 0:
            all_s = sorted({s for v in plan[h].values() for s in v}, key=list(params["stressors"]).index)
            items.append(_item(0, render_job(all_s, warm, options), outer_timeout(len(all_s), warm)))
        for rep, miss in sorted(plan[h].items()):
            outer = cap if len(miss) == len(params["stressors"]) else min(outer_timeout(len(miss), secs), cap)
            items.append(_item(rep, render_job(miss, secs, options), outer))
        host_plan[h] = items
        budget += sum(int(it["outer"]) + 15 for it in items) + 120
    outers = [int(it["outer"]) for items in host_plan.values() for it in items]
    extravars = {
        "quiho_plan": host_plan,
        "quiho_task_timeout": max(outers, default=0) + 30,
        "quiho_emulate_seconds": int(sum(outers) + 60),
    }
    return extravars, budget


def _item(rep: int, job: str, outer: int) -> dict[str, Any]:
    """One job of a host's plan: ``args`` are what fingerprint.yml's measure script gets after the directory."""
    return {"rep": rep, "outer": outer, "args": [f"rep{rep}", job, str(outer)]}


def unpack_artifacts(res: PlaybookResult, group: list[str], artifacts: Path) -> None:
    """Unpack each host's ``quiho collect`` archive (stress-ng YAML, logs, /proc/stat) into ``artifacts/<host>``."""
    for ev in res.events:
        data = ev.get("event_data") or {}
        name = str(data.get("host"))
        if ev.get("event") != "runner_on_ok" or data.get("task") != "quiho collect" or name not in group:
            continue
        dest = artifacts / name
        dest.mkdir(parents=True, exist_ok=True)
        try:
            blob = base64.b64decode(str((data.get("res") or {}).get("stdout", "")), validate=True)
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
                _extract_data(tf, dest)
        except (ValueError, tarfile.TarError, OSError, EOFError) as exc:
            # A damaged archive: whatever was unpacked is parsed (and named in errors) below.
            (dest / "unpack-error.txt").write_text(str(exc))


def _extract_data(tf: tarfile.TarFile, dest: Path) -> None:
    """Extract only regular files and directories below ``dest`` (the ``"data"`` filter's intent).

    ``extractall(filter=...)`` exists from Python 3.11.4 on; Debian 12's Python is 3.11.2, so where it is missing
    the members are checked here: no absolute or ``..`` paths, no links, devices or FIFOs.
    """
    if hasattr(tarfile, "data_filter"):
        tf.extractall(dest, filter="data")
        return
    root = dest.resolve()
    members = []
    for m in tf.getmembers():
        target = (root / m.name).resolve()
        if not (m.isfile() or m.isdir()) or m.name.startswith("/") or not target.is_relative_to(root):
            raise tarfile.TarError(f"refusing archive member {m.name!r} (not a plain file below the destination)")
        m.mode = (m.mode | 0o600) & 0o755  # no set-id bits, like the data filter
        members.append(m)
    tf.extractall(dest, members=members)



def _stat_busy(path0: Path, path1: Path) -> tuple[float, float] | None:
    try:
        a = [int(x) for x in path0.read_text().split()[1:]]
        b = [int(x) for x in path1.read_text().split()[1:]]
    except (OSError, ValueError):
        return None
    d = [y - x for x, y in zip(a, b, strict=False)]
    total = sum(d[:8])
    idle = d[3] + (d[4] if len(d) > 4 else 0)
    if total <= 0:
        return None
    return (total - idle) / total, total / 100.0  # busy share of all CPUs, CPU-seconds elapsed (USER_HZ=100)


@dataclass(frozen=True)
class HostRecords:
    """What one invocation yielded for one host: measurement rows, facts, status and errors."""

    status: str
    reason: str | None
    rows: tuple[tuple[int, str, float | None, str, str | None, dict[str, Any]], ...]
    facts: dict[str, Any]
    errors: tuple[str, ...]


def _host_results(res: PlaybookResult, host: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    facts: dict[str, Any] = {}
    rcs: dict[int, dict[str, Any]] = {}
    for ev in res.events:
        data = ev.get("event_data") or {}
        if data.get("host") != host:
            continue
        task = data.get("task")
        r = data.get("res") or {}
        if ev.get("event") == "runner_on_ok" and task == "quiho facts":
            facts.update(parse_facts(str(r.get("stdout", ""))).to_dict(HOST_KEYS))
    for data in res.runs("quiho measure"):
        r = data["res"]
        item = r.get("item") or {}
        if data.get("host") == host and isinstance(item, dict) and "rep" in item:
            rcs[int(item["rep"])] = r
    return facts, rcs


def fingerprint_records(
    res: PlaybookResult, host: str, plan: dict[int, list[str]], params: dict[str, Any], artifacts: Path
) -> HostRecords:
    """Map one host's events and unpacked files to measurement rows (no store access).

    A job killed by the outer timeout (rc 124/137) blames the stressor its log shows
    running: that one is recorded failed, the ones before it keep their results and the
    later ones stay missing (run again in the next pass). A job that wrote no YAML on an
    ok host fails every stressor it was asked for, with the stderr tail.
    """
    outcome = res.hosts.get(host)
    status = outcome.status if outcome else ("timeout" if res.timed_out else "unreachable")
    reason = outcome.reason if outcome else "no events for this host"
    errors: list[str] = []
    facts, rcs = _host_results(res, host)
    secs = float(params["seconds"])
    rows: list[tuple[int, str, float | None, str, str | None, dict[str, Any]]] = []
    hostdir = artifacts / host
    for rep, requested in sorted(plan.items()):
        yaml_path = hostdir / f"rep{rep}.yaml"
        r = rcs.get(rep)
        rc = run_rc(r) if r else None
        busy = _stat_busy(hostdir / f"rep{rep}.stat0", hostdir / f"rep{rep}.stat1")
        rep_extra = {"job_rc": rc, "machine_busy_share": busy[0] if busy else None}
        if r and r.get("limit_events"):  # the memory-capacity group met its limit: kept, marked (see limit_failure)
            rep_extra["memory_limit_events"] = int(r["limit_events"])
        keep = list(requested)
        if rc in TIMEOUT_RCS:
            log_path = hostdir / f"rep{rep}.log"
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            hung = running_stressor(log) or last_started(log)
            if hung not in requested:
                errors.append(f"host {host} rep {rep}: job killed by the outer timeout; no stressor to blame in "
                              f"{log_path}")
                continue
            why = f"hung: still running when the outer timeout ({_outer(r)} s) killed the job"
            rows.append((rep, hung, None, "failed", why, rep_extra))
            keep = requested[: requested.index(hung)]
            if not keep:
                continue
        if yaml_path.exists():
            try:
                results, _info = parse_stressng_yaml(
                    yaml_path.read_text(errors="replace"), keep, secs, host=host, path=str(yaml_path)
                )
            except FingerprintParseError as exc:
                errors.append(str(exc))
                status, reason = "failed", str(exc)
                continue
            rows.extend((rep, sr.stressor, sr.value, sr.status, sr.reason, {**sr.extra, **rep_extra})
                        for sr in results)
        elif rc in TIMEOUT_RCS:
            continue  # no YAML after a timeout: the stressors before the hung one stay missing
        elif r is not None and status == "ok":
            tail = str(r.get("stderr", "")).strip()[-300:]
            rows.extend((rep, s, None, "failed", f"stress-ng rc {rc} wrote no YAML: {tail}", rep_extra)
                        for s in requested)
    return HostRecords(status, reason, tuple(rows), facts, tuple(errors))


def _outer(r: dict[str, Any] | None) -> str:
    try:
        return str((r or {}).get("item", {}).get("outer", "?"))
    except AttributeError:
        return "?"
