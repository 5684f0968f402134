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
import math
import os
import secrets
import statistics
import sys
import tarfile
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from quiho._version import __version__
from quiho.errors import FingerprintParseError, UsageError
from quiho.fingerprint.battery import load_battery, render_job
from quiho.fingerprint.parse import StressorResult, last_started, parse_stressng_yaml, running_stressor
from quiho.fleet._store import host_id, parse_facts, remember_hosts, set_host_status
from quiho.fleet.emulate import cleanup_emulation, local_fleet_lock
from quiho.fleet.inventory import Inventory, load_inventory
from quiho.fleet.runner import FleetEvent, PlaybookResult, reap_cwd, run_playbook
from quiho.store._db import Store, dumps, utcnow

__all__ = ["FingerprintRun", "HostReport", "fingerprint", "outer_timeout", "summarise_run", "UNSTABLE_COV"]

#: pyperf's stability rule: spread ≥ 10 % of the mean is flagged.
UNSTABLE_COV = 0.10
_TIMEOUT_RCS = (124, 137)
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

    def as_dict(self) -> dict[str, Any]:
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


def _new_batch() -> str:
    return f"fp-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def _load_run(store: Store, ref: str) -> dict[str, Any]:
    conn = store.conn
    row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND batch = ?", (ref,)).fetchone()
    if row is None and ref.isdigit():
        row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND id = ?", (int(ref),)).fetchone()
    if row is None:
        raise UsageError(f"no fleet fingerprint run {ref!r} in {store.path} (see 'quiho fleet show')")
    return dict(row)


def _missing(store: Store, run_id: int, hid: int, stressors: list[str], reps: int) -> dict[int, list[str]]:
    have = {
        (r["repetition"], r["stressor"])
        for r in store.conn.execute(
            "SELECT repetition, stressor FROM measurements WHERE run_id = ? AND host_id = ?", (run_id, hid)
        )
    }
    out: dict[int, list[str]] = {}
    for rep in range(1, reps + 1):
        miss = [s for s in stressors if (rep, s) not in have]
        if miss:
            out[rep] = miss
    return out


def fingerprint(
    inventory: str | os.PathLike[str] | None = None,
    *,
    store: Store,
    battery: str = "default",
    seconds: int | None = None,
    repetitions: int | None = None,
    warmup_seconds: int | None = None,
    resume: str | None = None,
    forks: int = 1,
    outer_timeout_s: int | None = None,
    run_timeout_s: float | None = None,
    host_key_checking: bool = True,
    cgroup_prefix: str = "quiho",
    battery_file: Path | None = None,
    on_event: Callable[[FleetEvent], None] | None = None,
) -> FingerprintRun:
    """Fingerprint every host of ``inventory`` (default: the local fleet) and store the results.

    Parameters
    ----------
    inventory : path-like, optional
        Ansible inventory; default ``inventories/local.yml``. On resume, default the run's own.
    store : Store
        Open quiho store.
    battery : str, default "default"
        Battery name in ``stressors/batteries.yaml`` (``quick``, ``default``, ``paper``).
    seconds, repetitions, warmup_seconds : int, optional
        Override the battery's per-stressor seconds, repetitions and warm-up seconds (0 = no warm-up).
    resume : str, optional
        Batch label or id of an earlier run: rerun only its missing hosts/repetitions/stressors.
    forks : int, default 1
        Hosts measured in parallel; 1 whenever hosts share hardware.
    outer_timeout_s : int, optional
        Kill one host's job after this many seconds (default :func:`outer_timeout`).
    run_timeout_s : float, optional
        Cancel a whole playbook invocation after this many seconds (default: sum of job limits + 120 s/host).
    host_key_checking : bool, default True
        SSH host-key checking; turn off only through an explicit opt-in.
    cgroup_prefix : str, default "quiho"
        Prefix of the cgroups made for emulated hosts.
    battery_file : Path, optional
        Battery YAML other than ``stressors/batteries.yaml``.
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
    if resume is not None:
        run = _load_run(store, resume)
        params = json.loads(run["params_json"])
        inv = load_inventory(inventory if inventory is not None else params["inventory"])
        run_id, batch = int(run["id"]), str(run["batch"])
        with store.transaction() as conn:
            conn.execute("UPDATE fingerprint_runs SET status='running', finished_at=NULL WHERE id=?", (run_id,))
    else:
        inv = load_inventory(inventory)
        bat = load_battery(battery, battery_file)
        secs = int(seconds if seconds is not None else bat.seconds)
        reps = int(repetitions if repetitions is not None else bat.repetitions)
        if secs < 1 or reps < 1:
            raise UsageError("--seconds and --repetitions must be at least 1")
        params = {
            "schema": 1,
            "battery": bat.name,
            "stressors": list(bat.stressors),
            "options": bat.options,
            "seconds": secs,
            "repetitions": reps,
            "warmup_seconds": int(warmup_seconds if warmup_seconds is not None else bat.warmup_seconds),
            "outer_timeout_s": outer_timeout_s or outer_timeout(len(bat.stressors), secs),
            "inventory": str(Path(inv.path).resolve()),
            "hosts": inv.names,
            "forks": forks,
            "value": "bogo-ops-per-second-real-time",
        }
        batch = _new_batch()
        with store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, quiho_version) "
                "VALUES ('fleet', ?, ?, 'running', ?, ?, ?)",
                (batch, bat.name, dumps(params), utcnow(), __version__),
            )
            run_id = int(cur.lastrowid or 0)
    if outer_timeout_s is not None:
        params["outer_timeout_s"] = outer_timeout_s
    hosts = [h for h in params["hosts"] if h in inv.names]
    gone = [h for h in params["hosts"] if h not in inv.names]
    ids = remember_hosts(store, inv)
    stressors: list[str] = list(params["stressors"])
    reps = int(params["repetitions"])
    artifacts = store.path.parent / "fleet" / batch
    errors: list[str] = [f"host {h} is no longer in inventory {inv.path}" for h in gone]
    statuses: dict[str, tuple[str, str | None]] = {}

    passes = 0
    retry = set(hosts)
    while retry and passes < MAX_PASSES:
        plan = {h: _missing(store, run_id, ids[h], stressors, reps) for h in hosts if h in retry}  # inventory order
        plan = {h: m for h, m in plan.items() if m}
        if not plan:
            break
        passes += 1
        warm = int(params["warmup_seconds"]) if passes == 1 else 0
        groups = [[h] for h in plan] if inv.shares_machine else [list(plan)]
        retry = set()
        for group in groups:
            res = _invoke(inv, group, plan, params, batch, warm, forks, run_timeout_s, host_key_checking,
                          cgroup_prefix, on_event, artifacts)
            for h in group:
                st, reason, progressed, errs = _record(store, run_id, ids[h], h, plan[h], params, res, artifacts)
                statuses[h] = (st, reason)
                errors.extend(errs)
                if st == "ok" and progressed and _missing(store, run_id, ids[h], stressors, reps):
                    retry.add(h)  # e.g. a hung stressor was recorded: run the rest of that repetition again

    reports = []
    for h in hosts:
        n_ok, n_failed = _counts(store, run_id, ids[h])
        missing = sum(len(v) for v in _missing(store, run_id, ids[h], stressors, reps).values())
        st, reason = statuses.get(h, ("ok", None))
        if missing == 0 and st in ("ok", "failed") and reason is None:
            st = "ok"
        elif missing:
            st = st if st != "ok" else "partial"
        reports.append(HostReport(h, st, reason, n_ok, n_failed, missing))
    total_missing = sum(r.missing for r in reports) + len(gone) * reps * len(stressors)
    total_ok = sum(r.ok for r in reports)
    status = "complete" if total_missing == 0 and total_ok > 0 else ("partial" if total_ok > 0 else "failed")
    summarise_run(store, run_id)
    with store.transaction() as conn:
        conn.execute(
            "UPDATE fingerprint_runs SET status=?, finished_at=? WHERE id=?", (status, utcnow(), run_id)
        )
    elapsed = (datetime.now(UTC) - t_start).total_seconds()
    return FingerprintRun(run_id, batch, status, tuple(reports), elapsed, passes, tuple(errors))


def _counts(store: Store, run_id: int, hid: int) -> tuple[int, int]:
    row = store.conn.execute(
        "SELECT SUM(status='ok') AS ok, SUM(status='failed') AS failed FROM measurements "
        "WHERE run_id=? AND host_id=?",
        (run_id, hid),
    ).fetchone()
    return int(row["ok"] or 0), int(row["failed"] or 0)


def _invoke(
    inv: Inventory,
    group: list[str],
    plan: dict[str, dict[int, list[str]]],
    params: dict[str, Any],
    batch: str,
    warm: int,
    forks: int,
    run_timeout_s: float | None,
    host_key_checking: bool,
    cgroup_prefix: str,
    on_event: Callable[[FleetEvent], None] | None,
    artifacts: Path,
) -> tuple[PlaybookResult, Path]:
    secs = int(params["seconds"])
    options = params.get("options") or {}
    host_plan: dict[str, list[dict[str, Any]]] = {}
    budget = 0.0
    max_outer = 0
    for h in group:
        items: list[dict[str, Any]] = []
        if warm > 0:
            all_s = sorted({s for v in plan[h].values() for s in v}, key=list(params["stressors"]).index)
            outer = outer_timeout(len(all_s), warm)
            items.append({"rep": 0, "job": render_job(all_s, warm, options), "outer": outer})
        for rep, miss in sorted(plan[h].items()):
            outer = int(params["outer_timeout_s"]) if len(miss) == len(params["stressors"]) else outer_timeout(
                len(miss), secs
            )
            outer = min(outer, int(params["outer_timeout_s"]))
            items.append({"rep": rep, "job": render_job(miss, secs, options), "outer": outer})
        host_plan[h] = items
        outers = [int(it["outer"]) for it in items]
        max_outer = max([max_outer, *outers])
        budget += sum(o + 15 for o in outers) + 120
    emulate_s = int(sum(it["outer"] for h in group for it in host_plan[h]) + 60)
    extravars = {
        "quiho_batch": batch,
        "quiho_remote_root": f"/tmp/quiho-remote/{batch}",
        "quiho_plan": host_plan,
        "quiho_task_timeout": max_outer + 30,
        "quiho_cgroup_prefix": cgroup_prefix,
        "quiho_emulate_seconds": emulate_s,
    }
    local = any(inv.host(h).connection == "local" for h in group)
    res: PlaybookResult | None = None
    try:
        with local_fleet_lock() if local else nullcontext():
            res = run_playbook(
                "fingerprint.yml",
                inv.path,
                extravars,
                limit=group,
                forks=forks,
                timeout_s=run_timeout_s or budget,
                host_key_checking=host_key_checking,
                on_event=on_event,
                python_interpreter=sys.executable
                if all(inv.host(h).connection == "local" for h in group)
                else "auto_silent",
            )
    finally:
        if any(inv.host(h).emulated for h in group):
            cleanup_emulation(f"{cgroup_prefix}-{batch}-")
        if res is None or res.timed_out:
            # stressors of a cancelled run on this machine (local/netns hosts) outlive ansible's process group
            reap_cwd(f"/tmp/quiho-remote/{batch}")
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
                tf.extractall(dest, filter="data")
        except (ValueError, tarfile.TarError, OSError, EOFError) as exc:
            # A damaged archive: whatever was unpacked is parsed (and named in errors) below.
            (dest / "unpack-error.txt").write_text(str(exc))
    return res, artifacts


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


def _record(
    store: Store,
    run_id: int,
    hid: int,
    host: str,
    plan: dict[int, list[str]],
    params: dict[str, Any],
    invocation: tuple[PlaybookResult, Path],
    artifacts: Path,
) -> tuple[str, str | None, bool, list[str]]:
    res, _ = invocation
    outcome = res.hosts.get(host)
    status = outcome.status if outcome else ("timeout" if res.timed_out else "unreachable")
    reason = outcome.reason if outcome else "no events for this host"
    errors: list[str] = []
    facts: dict[str, Any] = {}
    rcs: dict[int, dict[str, Any]] = {}
    for ev in res.events:
        data = ev.get("event_data") or {}
        if data.get("host") != host:
            continue
        task = data.get("task")
        r = data.get("res") or {}
        if ev.get("event") == "runner_on_ok" and task == "quiho facts":
            facts.update(parse_facts(str(r.get("stdout", ""))))
        elif ev.get("event") in ("runner_item_on_ok", "runner_item_on_failed") and task == "quiho measure":
            item = r.get("item") or {}
            if "rep" in item:
                rcs[int(item["rep"])] = r
    secs = float(params["seconds"])
    rows: list[tuple[int, StressorResult, dict[str, Any]]] = []
    hostdir = artifacts / host
    for rep, requested in sorted(plan.items()):
        yaml_path = hostdir / f"rep{rep}.yaml"
        r = rcs.get(rep)
        rc = r.get("rc") if r else None
        busy = _stat_busy(hostdir / f"rep{rep}.stat0", hostdir / f"rep{rep}.stat1")
        rep_extra = {"job_rc": rc, "machine_busy_share": busy[0] if busy else None}
        keep = list(requested)
        if rc in _TIMEOUT_RCS:
            log_path = hostdir / f"rep{rep}.log"
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            hung = running_stressor(log) or last_started(log)
            if hung not in requested:
                errors.append(f"host {host} rep {rep}: job killed by the outer timeout; no stressor to blame in "
                              f"{log_path}")
                continue
            why = f"hung: still running when the outer timeout ({_outer(r)} s) killed the job"
            rows.append((rep, StressorResult(hung, "failed", None, why), rep_extra))
            # stressors before it keep their results (if stress-ng still wrote them); later ones stay
            # missing and run again in the next pass
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
            for sr in results:
                rows.append((rep, sr, rep_extra))
        elif rc in _TIMEOUT_RCS:
            continue  # no YAML after a timeout: the stressors before the hung one stay missing
        elif r is not None and status == "ok":
            tail = str(r.get("stderr", "")).strip()[-300:]
            for s in requested:
                rows.append((rep, StressorResult(s, "failed", None, f"stress-ng rc {rc} wrote no YAML: {tail}"),
                             rep_extra))
    with store.transaction() as conn:
        if facts:
            host_id(conn, host, facts)
        for rep, sr, rep_extra in rows:
            extra = {**sr.extra, **rep_extra}
            conn.execute(
                "INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                "extra_json) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id, host_id, repetition, stressor) DO UPDATE "
                "SET value=excluded.value, status=excluded.status, reason=excluded.reason, "
                "extra_json=excluded.extra_json",
                (run_id, hid, rep, sr.stressor, sr.value, "bogo-ops/s", sr.status, sr.reason, dumps(extra)),
            )
        set_host_status(conn, "fingerprint", _batch_of(store, run_id), hid, status, reason)
    return status, reason, bool(rows), errors


def _outer(r: dict[str, Any] | None) -> str:
    try:
        return str((r or {}).get("item", {}).get("outer", "?"))
    except AttributeError:
        return "?"


def _batch_of(store: Store, run_id: int) -> str:
    row = store.conn.execute("SELECT batch FROM fingerprint_runs WHERE id=?", (run_id,)).fetchone()
    return str(row["batch"])


def summarise_run(store: Store, run_id: int) -> None:
    """Median and spread per host and stressor of one run into ``fleet_fingerprint_summary``.

    ``cov`` is the population standard deviation over the mean of the ok
    repetitions; ``unstable`` flags cov ≥ 10 % or a value ≥ 50 % away from the median.
    """
    rows = store.conn.execute(
        "SELECT host_id, stressor, status, value FROM measurements WHERE run_id=?", (run_id,)
    ).fetchall()
    groups: dict[tuple[int, str], list[tuple[str, float | None]]] = {}
    for r in rows:
        groups.setdefault((r["host_id"], r["stressor"]), []).append((r["status"], r["value"]))
    with store.transaction() as conn:
        conn.execute("DELETE FROM fleet_fingerprint_summary WHERE run_id=?", (run_id,))
        for (hid, s), vals in groups.items():
            ok = [float(v) for st, v in vals if st == "ok" and v is not None]
            n_failed = sum(1 for st, _ in vals if st == "failed")
            med = statistics.median(ok) if ok else None
            mean = statistics.fmean(ok) if ok else None
            cov = statistics.pstdev(ok) / mean if ok and mean else None
            far = bool(med) and any(abs(v - med) / med >= 0.5 for v in ok)  # type: ignore[operator]
            unstable = int((cov is not None and cov >= UNSTABLE_COV) or far)
            conn.execute(
                "INSERT INTO fleet_fingerprint_summary(run_id, host_id, stressor, n_ok, n_failed, median, cov, min, "
                "max, unstable) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, hid, s, len(ok), n_failed, med, None if cov is None or math.isnan(cov) else cov,
                 min(ok) if ok else None, max(ok) if ok else None, unstable),
            )
