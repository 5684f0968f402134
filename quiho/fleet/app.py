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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quiho._yaml import read_yaml_mapping
from quiho.errors import AppSpecError
from quiho.fleet.calibrate import resolve_inventory
from quiho.fleet.inventory import load_inventory
from quiho.fleet.runner import FleetEvent, PlaybookResult
from quiho.fleet.session import (
    FleetSession,
    app_budget,
    measuring,
    new_batch,
    rc_failure,
    remember_inventory,
    stderr_tail,
)
from quiho.fleet.trace import TraceSpec
from quiho.store import Store
from quiho.store import fleet as fleet_store
from quiho.store.fleet import AppRunRow

__all__ = ["AppSpec", "AppVersion", "Metric", "AppRun", "AppRepResult", "app_records", "load_app_spec", "run_app",
           "extract_metric"]

APP_SCHEMA_VERSION = 1


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
    trace: TraceSpec | None = None  # per-function traces for `quiho profile` (quiho.fleet.trace)

    def require_versions(self, *names: str) -> None:
        """The one check that ``names`` are versions of this application.

        Raises
        ------
        AppSpecError
            A name is not in ``versions`` (says which ones are).
        """
        for v in names:
            if v not in self.versions:
                raise AppSpecError(f"application {self.name!r} has no version {v!r}; known versions: "
                                   f"{', '.join(self.versions)}")

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
    """One :class:`AppRepResult` per ``quiho app run`` item in ``res`` (timeout, exit code, metric or its absence)."""
    out = []
    for data in res.items("quiho app run"):
        r = data.get("res") or {}
        tail = stderr_tail(r)
        why = rc_failure(r.get("rc"), spec.timeout)
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
    that applies to the hosts (:func:`quiho.store.fleet.applicable_fingerprint_run`, any age).

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
        fp = fleet_store.applicable_fingerprint_run(store, inv.names)
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
        fleet_store.insert_app_runs(
            store, source="fleet", batch=session.batch, fingerprint_run_id=fp.run_id if fp else None,
            application=spec.name, test=spec.metric.test, unit=spec.metric.unit,
            higher_is_better=spec.metric.higher_is_better, started_at=t0.isoformat(),
            rows=[AppRunRow(r.host, version, r.repetition, r.status, r.value, r.reason, r.stderr_tail, extra)
                  for r in results],
            host_statuses=statuses,
        )
    n_ok = sum(r.status == "ok" for r in results)
    status = "complete" if n_ok == len(inv.names) * len(reps) else ("partial" if n_ok else "failed")
    return AppRun(session.batch, spec.name, version, fp.run_id if fp else None, status, tuple(results), statuses,
                  (datetime.now(UTC) - t0).total_seconds())
