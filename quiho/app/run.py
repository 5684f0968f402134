"""Running one version of an application on every host of a fleet, and reading the playbook's results."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from quiho.app.spec import AppSpec, extract_metric
from quiho.fleet.inventory import load_inventory
from quiho.fleet.local.calibrate import resolve_inventory
from quiho.fleet.runner import FleetEvent, PlaybookResult
from quiho.fleet.session import (
    FleetSession,
    app_budget,
    limit_failure,
    measuring,
    new_batch,
    rc_failure,
    remember_inventory,
    run_rc,
    stderr_tail,
)
from quiho.store import Store
from quiho.store.app_runs import AppRunBatch, AppRunRow, insert_app_runs
from quiho.store.fingerprints import applicable_fingerprint_run

__all__ = ["AppRepResult", "AppRun", "app_records", "command_wall", "run_app", "strip_markers"]


@dataclass(frozen=True)
class AppRepResult:
    """One repetition on one host."""

    host: str
    repetition: int
    status: str
    value: float | None
    reason: str | None
    stderr_tail: str | None


@dataclass(frozen=True)
class AppRun:
    """Result of :func:`run_app`."""

    batch: str
    application: str
    version: str
    fingerprint_run_id: int | None
    status: str
    results: tuple[AppRepResult, ...]
    hosts: dict[str, tuple[str, str | None]]
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "batch": self.batch,
            "application": self.application,
            "version": self.version,
            "fingerprint_run_id": self.fingerprint_run_id,
            "status": self.status,
            "elapsed_s": round(self.elapsed_s, 2),
            "hosts": {h: {"status": s, "reason": r} for h, (s, r) in self.hosts.items()},
            "results": [r.__dict__ for r in self.results],
        }


def _parse_delta(delta: str | None) -> float | None:
    # ansible's command module reports "H:MM:SS.ffffff"
    if not delta:
        return None
    try:
        h, m, s = delta.split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)
    except ValueError:
        return None


#: Printed by the emulation wrapper (playbooks' ``qh_join``) after its prefault, right before the command starts.
_EXEC_AT = re.compile(r"^quiho-exec-at: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})\n?", re.M)


def command_wall(result: dict[str, Any]) -> float | None:
    """Wall time of one ``ansible.builtin.command`` result, in seconds.

    Ansible's ``delta`` covers the whole argv, including the emulation wrapper's
    memory prefault (~0.1 s per 512 MiB, slower under a CPU quota). When the wrapper
    printed its ``quiho-exec-at`` marker, the time is measured from that marker to
    the module's ``end`` instead (both are the target's local clock), so a
    ``runtime`` metric is the command's own time.
    """
    m = _EXEC_AT.search(str(result.get("stdout", "")))
    if m and result.get("end"):
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        try:
            wall = (datetime.strptime(str(result["end"]), fmt) - datetime.strptime(m.group(1), fmt)).total_seconds()
        except ValueError:
            wall = None
        if wall is not None and wall >= 0:
            return wall
    return _parse_delta(result.get("delta"))


def strip_markers(stdout: str) -> str:
    """The command's own stdout: without the emulation wrapper's marker line."""
    return _EXEC_AT.sub("", stdout)


def app_records(
    res: PlaybookResult, spec: AppSpec, version: str, *, fingerprint_run_id: int | None = None
) -> list[AppRepResult]:
    """One :class:`AppRepResult` per run of ``quiho app run`` in ``res`` (timeout, exit code, metric or its absence)."""
    out = []
    for data in res.runs("quiho app run"):
        r = data.get("res") or {}
        tail = stderr_tail(r)
        why = rc_failure(run_rc(r), spec.timeout) or limit_failure(r)
        wall = command_wall(r)
        value = None
        if why is None and wall is None:
            why = "no wall time reported"
        elif why is None:
            value, why = extract_metric(spec.metric, strip_markers(str(r.get("stdout", ""))), wall or 0.0)
        out.append(AppRepResult(str(data.get("host")), int(r.get("item", 0)), "ok" if why is None else "failed",
                                value, why, tail))
    return out


def run_app(
    spec: AppSpec,
    version: str,
    inventory: str | os.PathLike[str] | None = None,
    *,
    store: Store,
    forks: int = 1,
    host_key_checking: bool = True,
    cgroup_prefix: str = "quiho",
    on_event: Callable[[FleetEvent], None] | None = None,
) -> AppRun:
    """Run one version of ``spec`` on every host, ``spec.repetitions`` times each, and store the results.

    A repetition that exits non-zero, times out or yields no metric is stored as
    failed with its reason and stderr tail; the other hosts and repetitions are kept.
    Holds the store's measurement lock; the runs are paired with the fingerprint run
    that applies to the hosts (:func:`quiho.store.fingerprints.applicable_fingerprint_run`, any age).

    Returns
    -------
    AppRun
        ``status`` is ``complete`` (every host and repetition ok), ``partial`` or ``failed``.

    Raises
    ------
    AppSpecError
        ``version`` is not in the spec (nothing is run).
    """
    spec.require_versions(version)
    v = spec.versions[version]
    inventory = resolve_inventory(inventory, store)  # None: the calibrated local fleet
    inv = load_inventory(inventory)
    with measuring(store, f"quiho run {spec.name}@{version}"):
        remember_inventory(store, inv)
        fp = applicable_fingerprint_run(store, inv.names)
        session = FleetSession(inv, "run.yml", new_batch("app"), cgroup_prefix=cgroup_prefix,
                               host_key_checking=host_key_checking, forks=forks, on_event=on_event)
        t0 = datetime.now(UTC)
        reps = list(range(1, spec.repetitions + 1))
        per_host, emulate_s = app_budget(spec.timeout, len(reps))
        extravars = {
            "quiho_app": {"command": list(v.command), "setup": list(v.setup), "workdir": v.workdir or ""},
            "quiho_reps": reps,
            "quiho_app_timeout": spec.timeout,
            "quiho_emulate_seconds": emulate_s,
        }
        results: list[AppRepResult] = []
        statuses: dict[str, tuple[str, str | None]] = {}
        for group in session.groups(inv.names):
            res = session.run(group, extravars, per_host * len(group))
            statuses.update(session.host_statuses(res, group))
            results.extend(app_records(res, spec, version))
        extra = {"command": list(v.command), "timeout_s": spec.timeout, "metric": spec.metric.kind}
        head = AppRunBatch("fleet", session.batch, fp.run_id if fp else None, spec.name, spec.metric.test,
                           spec.metric.unit, spec.metric.higher_is_better, t0.isoformat())
        insert_app_runs(
            store, head,
            [AppRunRow(r.host, version, r.repetition, r.status, r.value, r.reason, r.stderr_tail, extra)
             for r in results],
            statuses,
        )
    n_ok = sum(r.status == "ok" for r in results)
    status = "complete" if n_ok == len(inv.names) * len(reps) else ("partial" if n_ok else "failed")
    return AppRun(session.batch, spec.name, version, fp.run_id if fp else None, status, tuple(results), statuses,
                  (datetime.now(UTC) - t0).total_seconds())
