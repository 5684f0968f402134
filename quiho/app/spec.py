"""Application specs: YAML validated with pydantic, and how a run's metric is read from its output.

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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quiho._yaml import read_yaml_mapping
from quiho.errors import AppSpecError

__all__ = ["APP_SCHEMA_VERSION", "AppSpec", "AppVersion", "Metric", "TraceSpec", "extract_metric", "load_app_spec"]

class TraceSpec(BaseModel):
    """The ``trace:`` key of an application spec (or ``--trace`` / ``--trace-matching`` ...).

    Attributes
    ----------
    functions : tuple of str, optional
        Function names to trace (exactly one of ``functions`` and ``matching``).
    matching : str, optional
        A regular expression: every function of the binary it matches.
    binary : str, optional
        Executable or shared library holding the functions (default: each version's command).
    runs : int, default 3
        Traced runs per version per host.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    functions: tuple[str, ...] | None = None
    matching: str | None = None
    binary: str | None = None
    runs: int = Field(3, ge=1, le=100)

    @model_validator(mode="after")
    def _one(self) -> TraceSpec:
        if (self.functions is None) == (self.matching is None):
            raise ValueError("trace: give exactly one of 'functions' and 'matching'")
        if self.functions is not None and not self.functions:
            raise ValueError("trace: 'functions' is empty")
        return self


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
    trace: TraceSpec | None = None  # per-function traces for `quiho profile` (quiho.trace.fleet)

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


