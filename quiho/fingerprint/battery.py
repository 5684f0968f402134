"""Fingerprint batteries (``stressors/batteries.yaml``) and the stress-ng job files they become."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quiho._yaml import read_yaml_mapping
from quiho.errors import CatalogError
from quiho.fingerprint.catalog import load_catalog, stressors_dir

__all__ = ["Battery", "load_battery", "battery_names", "render_job"]

BATTERY_SCHEMA_VERSION = 1
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_OPT_VALUE = re.compile(r"^[A-Za-z0-9._%:-]+$")


class Battery(BaseModel):
    """One battery: which stressors, for how long, how often."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    seconds: int = Field(5, ge=1, le=3600)
    repetitions: int = Field(3, ge=1, le=100)
    warmup_seconds: int = Field(1, ge=0, le=3600)
    stressors: tuple[str, ...]
    options: dict[str, dict[str, str]] = Field(default_factory=dict)
    excluded: dict[str, str] = Field(default_factory=dict)


def _key(name: object) -> str:
    # YAML reads an unquoted `null` as None: the stressor really is called "null".
    return "null" if name is None else str(name)


def battery_names(path: Path | None = None) -> list[str]:
    """Names of the batteries defined in ``stressors/batteries.yaml`` (or ``path``)."""
    raw = _read(path or stressors_dir() / "batteries.yaml")
    return sorted((raw.get("batteries") or {}).keys())


def _read(path: Path) -> dict:
    raw = read_yaml_mapping(path, what="battery file", error=CatalogError,
                            shape=f"with schema_version {BATTERY_SCHEMA_VERSION}")
    if raw.get("schema_version") != BATTERY_SCHEMA_VERSION:
        raise CatalogError(
            f"battery file {path} must be a mapping with schema_version {BATTERY_SCHEMA_VERSION} "
            f"(got {raw.get('schema_version')!r})"
        )
    return raw


def load_battery(name: str = "default", path: Path | None = None) -> Battery:
    """Read, validate and return one battery.

    Parameters
    ----------
    name : str
        Battery name (``quick``, ``default``, ``paper`` or one defined in ``path``).
    path : Path, optional
        Battery file; default ``stressors/batteries.yaml``.

    Raises
    ------
    CatalogError
        Unknown battery, uncatalogued or never-run stressors, malformed options.
    """
    file = Path(path) if path is not None else stressors_dir() / "batteries.yaml"
    raw = _read(file)
    never = {_key(k): str(v) for k, v in (raw.get("never") or {}).items()}
    batteries = raw.get("batteries") or {}
    if name not in batteries:
        raise CatalogError(f"no battery {name!r} in {file}; known: {', '.join(sorted(batteries))}")
    body = dict(batteries[name] or {})
    body["stressors"] = [_key(s) for s in body.get("stressors") or []]
    body["options"] = {
        _key(k): {str(ok): str(ov) for ok, ov in (v or {}).items()} for k, v in (body.get("options") or {}).items()
    }
    body["excluded"] = {_key(k): str(v) for k, v in (body.get("excluded") or {}).items()}
    try:
        bat = Battery.model_validate({"name": name, **body})
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise CatalogError(f"battery {name!r} in {file}: {msgs}") from exc
    catalog = load_catalog()
    problems = []
    if len(set(bat.stressors)) != len(bat.stressors):
        problems.append("duplicate stressors")
    for s in bat.stressors:
        if not _NAME.match(s):
            problems.append(f"{s!r} is not a stress-ng stressor name")
        elif s in never:
            problems.append(f"{s} is never run: {never[s]}")
        elif catalog.get(s) is None:
            problems.append(f"{s} is not in stressors/catalog.yaml (add it there first)")
    for s, opts in bat.options.items():
        if s not in bat.stressors:
            problems.append(f"options for {s}, which the battery does not run")
        for k, v in opts.items():
            if not _NAME.match(k) or not _OPT_VALUE.match(v):
                problems.append(f"option {k}={v!r} of {s} is not a plain stress-ng option")
    if not bat.stressors:
        problems.append("no stressors")
    if problems:
        raise CatalogError(f"battery {name!r} in {file}: " + "; ".join(problems))
    return bat


def render_job(stressors: list[str] | tuple[str, ...], seconds: int, options: dict[str, dict[str, str]]) -> str:
    """The stress-ng job file that runs ``stressors`` one after another, ``seconds`` each.

    The YAML and log paths are given on the command line, so the same job text
    serves every host. Names and option values were validated by :func:`load_battery`.

    Examples
    --------
    >>> print(render_job(["cpu", "null"], 2, {}), end="")
    run sequential
    timeout 2
    metrics-brief
    cpu 1
    null 1
    """
    lines = ["run sequential", f"timeout {int(seconds)}", "metrics-brief"]
    for s in stressors:
        if not _NAME.match(s):
            raise CatalogError(f"{s!r} is not a stress-ng stressor name")
        lines.append(f"{s} 1")
        for k, v in sorted(options.get(s, {}).items()):
            lines.append(f"{k} {v}")
    return "\n".join(lines) + "\n"
