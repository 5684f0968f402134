"""Application specs (YAML, validated with pydantic) and running one version on the fleet.

Example spec::

    schema_version: 1
    name: triad
    versions:
      v1: {command: [python3, examples/apps/triad.py, "20"], workdir: /work/main}
      v2: {command: [python3, examples/apps/triad.py, "40"], setup: [make, triad], workdir: /work/main}
    metric: {kind: runtime, unit: s, higher_is_better: false}
    repetitions: 3
    timeout: 120

``metric.kind`` is ``runtime`` (wall time of the command), ``regex`` (first
group of ``pattern`` on stdout) or ``json`` (dotted ``path`` into a JSON
document on stdout). Commands are argv lists and are never passed to a shell.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quiho._yaml import read_yaml_mapping
from quiho.errors import AppSpecError, UsageError
from quiho.fleet._store import host_id, remember_hosts, set_host_status
from quiho.fleet.emulate import cleanup_emulation, local_fleet_lock
from quiho.fleet.inventory import load_inventory
from quiho.fleet.runner import FleetEvent, run_playbook
from quiho.store._db import Store, dumps

__all__ = ["AppSpec", "AppVersion", "Metric", "AppRun", "AppRepResult", "load_app_spec", "run_app", "extract_metric"]

APP_SCHEMA_VERSION = 1
STDERR_TAIL = 2000


class AppVersion(BaseModel):
    """One version of the application: how to run it (and optionally build it first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: tuple[str, ...] = Field(min_length=1)
    setup: tuple[str, ...] = ()
    workdir: str | None = None


class Metric(BaseModel):
    """What number a repetition yields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["runtime", "regex", "json"] = "runtime"
    name: str | None = None
    pattern: str | None = None
    path: str | None = None
    unit: str = "s"
    higher_is_better: bool = False

    @model_validator(mode="after")
    def _needs(self) -> Metric:
        if self.kind == "regex":
            if not self.pattern:
                raise ValueError("metric kind 'regex' needs 'pattern'")
            try:
                rx = re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern is not a regular expression: {exc}") from exc
            if rx.groups < 1:
                raise ValueError("pattern needs one capturing group around the number")
        if self.kind == "json" and not self.path:
            raise ValueError("metric kind 'json' needs 'path' (dotted, e.g. results.0.seconds)")
        return self

    @property
    def test(self) -> str:
        """The ``app_runs.test`` name: ``name`` if given, else ``runtime`` or the kind."""
        return self.name or ("runtime" if self.kind == "runtime" else "metric")


class AppSpec(BaseModel):
    """An application: versions, metric, repetitions and a per-repetition timeout in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = APP_SCHEMA_VERSION
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    versions: dict[str, AppVersion] = Field(min_length=1)
    metric: Metric = Metric()
    repetitions: int = Field(3, ge=1, le=100)
    timeout: int = Field(600, ge=1, le=86400)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != APP_SCHEMA_VERSION:
            raise ValueError(f"this quiho reads application specs of schema_version {APP_SCHEMA_VERSION}")
        return v


def load_app_spec(path: str | os.PathLike[str]) -> AppSpec:
    """Read and validate an application spec YAML file.

    Raises
    ------
    AppSpecError
        Missing file, bad YAML or invalid fields (all problems in one message).
    """
    p = Path(path)
    raw = read_yaml_mapping(p, what="application spec", error=AppSpecError, shape="(name, versions, metric, ...)")
    if isinstance(raw.get("versions"), dict):
        raw["versions"] = {str(k): v for k, v in raw["versions"].items()}
        for body in raw["versions"].values():
            # a relative workdir is relative to the spec file (meaningful on the local and netns fleets,
            # which share the controller's filesystem)
            if isinstance(body, dict) and isinstance(body.get("workdir"), str) and not os.path.isabs(body["workdir"]):
                body["workdir"] = str((p.parent / body["workdir"]).resolve())
    try:
        return AppSpec.model_validate(raw)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'spec'}: {e['msg']}" for e in exc.errors())
        raise AppSpecError(f"application spec {p}: {msgs}") from exc


def extract_metric(metric: Metric, stdout: str, wall_s: float) -> tuple[float | None, str | None]:
    """The metric value of one repetition, or None and the reason it could not be read."""
    if metric.kind == "runtime":
        return wall_s, None
    if metric.kind == "regex":
        m = re.search(metric.pattern or "", stdout)
        if not m:
            return None, f"pattern {metric.pattern!r} not found on stdout"
        try:
            return float(m.group(1)), None
        except ValueError:
            return None, f"pattern matched {m.group(1)!r}, not a number"
    try:
        node: Any = json.loads(stdout)
    except json.JSONDecodeError as exc:
        return None, f"stdout is not JSON: {exc}"
    for part in (metric.path or "").split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None, f"JSON path {metric.path!r} not found (stopped at {part!r})"
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None, f"JSON path {metric.path!r} is {node!r}, not a number"
    return float(node), None


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

    def as_dict(self) -> dict[str, Any]:
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


def latest_fingerprint(store: Store, host_ids: list[int]) -> int | None:
    """The most recent complete or partial fleet fingerprint run with data for any of ``host_ids``."""
    if not host_ids:
        return None
    marks = ",".join("?" * len(host_ids))
    row = store.conn.execute(
        f"SELECT r.id FROM fingerprint_runs r WHERE r.source='fleet' AND r.status IN ('complete','partial') "
        f"AND EXISTS (SELECT 1 FROM measurements m WHERE m.run_id=r.id AND m.host_id IN ({marks})) "
        "ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
        host_ids,
    ).fetchone()
    return int(row["id"]) if row else None


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

    Returns
    -------
    AppRun
        ``status`` is ``complete`` (every host and repetition ok), ``partial`` or ``failed``.
    """
    if version not in spec.versions:
        raise UsageError(f"application {spec.name} has no version {version!r}; known: {', '.join(spec.versions)}")
    v = spec.versions[version]
    inv = load_inventory(inventory)
    ids = remember_hosts(store, inv)
    fp_run = latest_fingerprint(store, list(ids.values()))
    batch = f"app-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    t0 = datetime.now(UTC)
    reps = list(range(1, spec.repetitions + 1))
    extravars = {
        "quiho_batch": batch,
        "quiho_remote_root": f"/tmp/quiho-remote/{batch}",
        "quiho_app": {"command": list(v.command), "setup": list(v.setup), "workdir": v.workdir or ""},
        "quiho_reps": reps,
        "quiho_app_timeout": spec.timeout,
        "quiho_cgroup_prefix": cgroup_prefix,
        "quiho_emulate_seconds": spec.timeout * (len(reps) + 1) + 60,
    }
    per_host = spec.timeout * (len(reps) + 1) + 30 * (len(reps) + 2) + 120
    groups = [[h] for h in inv.names] if inv.shares_machine else [inv.names]
    results: list[AppRepResult] = []
    statuses: dict[str, tuple[str, str | None]] = {}
    for group in groups:
        local = any(inv.host(h).connection == "local" for h in group)
        try:
            with local_fleet_lock() if local else nullcontext():
                res = run_playbook(
                    "run.yml",
                    inv.path,
                    extravars,
                    limit=group,
                    forks=forks,
                    timeout_s=per_host * len(group),
                    host_key_checking=host_key_checking,
                    on_event=on_event,
                    python_interpreter=sys.executable
                    if all(inv.host(h).connection == "local" for h in group)
                    else "auto_silent",
                )
        finally:
            if any(inv.host(h).emulated for h in group):
                cleanup_emulation(f"{cgroup_prefix}-{batch}-")
        for h in group:
            out = res.hosts.get(h)
            statuses[h] = (out.status, out.reason) if out else ("unreachable", "no events for this host")
        for data in res.items("quiho app run"):
            h = str(data.get("host"))
            r = data.get("res") or {}
            rep = int(r.get("item", 0))
            rc = r.get("rc")
            wall = command_wall(r)
            tail = str(r.get("stderr", ""))[-STDERR_TAIL:] or None
            if rc == 124 or rc == 137:
                results.append(AppRepResult(h, rep, "failed", None, f"timed out after {spec.timeout} s", tail))
            elif rc != 0:
                results.append(AppRepResult(h, rep, "failed", None, f"exit code {rc}", tail))
            elif wall is None:
                results.append(AppRepResult(h, rep, "failed", None, "no wall time reported", tail))
            else:
                value, why = extract_metric(spec.metric, strip_markers(str(r.get("stdout", ""))), wall)
                results.append(AppRepResult(h, rep, "ok" if why is None else "failed", value, why, tail))
    with store.transaction() as conn:
        for rr in results:
            hid = host_id(conn, rr.host)
            conn.execute(
                "INSERT INTO app_runs(source, batch, fingerprint_run_id, host_id, application, version, test, "
                "repetition, value, unit, higher_is_better, status, reason, stderr_tail, started_at, extra_json) "
                "VALUES ('fleet',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (batch, fp_run, hid, spec.name, version, spec.metric.test, rr.repetition, rr.value, spec.metric.unit,
                 int(spec.metric.higher_is_better), rr.status, rr.reason, rr.stderr_tail, t0.isoformat(),
                 dumps({"command": list(v.command), "timeout_s": spec.timeout, "metric": spec.metric.kind})),
            )
        for h, (st, reason) in statuses.items():
            set_host_status(conn, "app", batch, ids[h], st if st in ("ok", "failed", "unreachable", "timeout")
                            else "failed", reason)
    n_ok = sum(r.status == "ok" for r in results)
    status = "complete" if n_ok == len(inv.names) * len(reps) else ("partial" if n_ok else "failed")
    return AppRun(batch, spec.name, version, fp_run, status, tuple(results), statuses,
                  (datetime.now(UTC) - t0).total_seconds())
