"""``quiho.yml``: the project file naming the application specs and defaults for ``quiho profile``.

Example::

    schema_version: 1
    applications:
      stream: examples/stream/stream.yml     # relative to quiho.yml
    profile:
      inventory: inventories/local.yml
      battery: quick
      max_age: 6h
      min_change: 0.05
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quiho._yaml import read_yaml_mapping
from quiho.app import AppSpec, load_app_spec
from quiho.errors import AppSpecError

__all__ = ["ProjectFile", "ProfileDefaults", "load_project", "resolve_spec", "PROJECT_SCHEMA_VERSION"]

PROJECT_SCHEMA_VERSION = 1


class ProfileDefaults(BaseModel):
    """``quiho.yml``'s ``profile:`` section: the settings a project fixes for ``quiho profile``.

    A field left out (None) is not set: the command-line option, else the default of
    :class:`quiho.profile.options.ProfileOptions` (the one place the defaults live), applies.
    :meth:`ProfileOptions.build <quiho.profile.options.ProfileOptions.build>` merges them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    inventory: str | None = None
    battery: str | None = None
    max_age: str | None = None
    min_change: float | None = Field(default=None, ge=0, lt=1)
    repetitions: int | None = Field(default=None, ge=1)
    seeds: int | None = Field(default=None, ge=1)
    warmup: int | None = Field(default=None, ge=0)
    stages: int | None = Field(default=None, ge=1, le=2)
    fingerprint_hosts: Literal["all", "first-round"] | None = None


class ProjectFile(BaseModel):
    """A parsed ``quiho.yml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = PROJECT_SCHEMA_VERSION
    applications: dict[str, str] = Field(default_factory=dict)
    profile: ProfileDefaults = Field(default_factory=lambda: ProfileDefaults())
    path: str = "quiho.yml"

    def spec_path(self, app: str) -> Path | None:
        """Spec file of ``app`` (relative paths are relative to ``quiho.yml``), or None."""
        rel = self.applications.get(app)
        return None if rel is None else (Path(self.path).resolve().parent / rel)


def load_project(path: str | Path | None = None) -> ProjectFile | None:
    """Read ``path`` (default ``./quiho.yml``; None when that default does not exist).

    Raises
    ------
    AppSpecError
        Unreadable file, bad YAML, unknown schema version or fields.
    """
    p = Path(path) if path is not None else Path("quiho.yml")
    if path is None and not p.exists():
        return None
    raw = read_yaml_mapping(p, what="project file", error=AppSpecError,
                            shape="(schema_version, applications, profile)")
    if raw.get("schema_version", PROJECT_SCHEMA_VERSION) != PROJECT_SCHEMA_VERSION:
        raise AppSpecError(f"project file {p} has schema_version {raw.get('schema_version')!r}; this quiho reads "
                           f"{PROJECT_SCHEMA_VERSION}")
    try:
        return ProjectFile.model_validate({**raw, "path": str(p)})
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise AppSpecError(f"project file {p}: {msg}") from exc


def resolve_spec(app: str, *, spec: str | Path | None = None, project: ProjectFile | None = None) -> AppSpec:
    """The spec of ``app``: the ``spec`` file if given, else the one ``quiho.yml`` names.

    Raises
    ------
    AppSpecError
        No spec for ``app``, or the spec describes another application.
    """
    path = Path(spec) if spec is not None else (project.spec_path(app) if project else None)
    if path is None:
        known = ", ".join(project.applications) if project and project.applications else "none"
        raise AppSpecError(f"no application spec for {app!r}: pass --spec FILE or list it under 'applications' in "
                           f"quiho.yml (known there: {known})")
    s = load_app_spec(path)
    if s.name != app:
        raise AppSpecError(f"spec {path} describes application {s.name!r}, not {app!r}")
    return s
