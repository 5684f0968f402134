"""The stressor catalog (``stressors/catalog.yaml``) as validated, typed data."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from quiho._yaml import read_yaml_mapping
from quiho.errors import CatalogError

__all__ = ["Stressor", "Catalog", "load_catalog", "stressors_dir", "ANALYSIS_CLASSES"]

CATALOG_SCHEMA_VERSION = 1
#: The classes an IRUP is summarised by (class shares, colours). The last three are the local fleet's knob
#: classes, named as the designed fleet names them, so both views of a profile speak of the same resources.
ANALYSIS_CLASSES: tuple[str, ...] = ("cpu", "cpu-cache", "memory", "vm", "os", "storage", "network", "memory-capacity")

PrimaryClass = Literal["cpu", "cpu-cache", "memory", "vm", "os", "storage", "network", "memory-capacity"]


class Stressor(BaseModel):
    """One catalog entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    classes: tuple[str, ...]
    primary: PrimaryClass
    subsystem: str
    hint: str


class Catalog(BaseModel):
    """All known stressors, keyed by stress-ng name."""

    model_config = ConfigDict(frozen=True)

    schema_version: int
    stressors: dict[str, Stressor]

    def get(self, name: str) -> Stressor | None:
        """The entry for ``name``, or None if not catalogued."""
        return self.stressors.get(name)

    def primary(self, name: str) -> str:
        """Primary analysis class of ``name`` (``"unknown"`` if not catalogued)."""
        s = self.stressors.get(name)
        return s.primary if s else "unknown"

    def classes(self, name: str) -> tuple[str, ...]:
        """stress-ng classes of ``name`` (empty if not catalogued)."""
        s = self.stressors.get(name)
        return s.classes if s else ()


def stressors_dir() -> Path:
    """The ``stressors/`` data folder of this checkout."""
    here = Path(__file__).resolve().parents[2] / "stressors"
    if not here.is_dir():
        raise CatalogError(
            f"stressor data folder not found at {here}; install quiho from a checkout (pip install -e .)"
        )
    return here


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"])
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the catalog.

    Parameters
    ----------
    path : Path, optional
        Catalog YAML; default ``stressors/catalog.yaml``.

    Raises
    ------
    CatalogError
        Missing file, malformed YAML, unknown schema version or invalid entries.
    """
    if path is None:
        return _default_catalog()
    return _load(Path(path))


@lru_cache(maxsize=1)
def _default_catalog() -> Catalog:
    return _load(stressors_dir() / "catalog.yaml")


def _load(path: Path) -> Catalog:
    raw = read_yaml_mapping(path, what="catalog", error=CatalogError,
                            shape="with 'schema_version' and 'stressors'")
    if "stressors" not in raw:
        raise CatalogError(f"catalog {path} must be a mapping with 'schema_version' and 'stressors'")
    version = raw.get("schema_version")
    if version != CATALOG_SCHEMA_VERSION:
        raise CatalogError(
            f"catalog {path} has schema_version {version!r}; this quiho reads {CATALOG_SCHEMA_VERSION}"
        )
    entries = {}
    for name, body in (raw["stressors"] or {}).items():
        # YAML reads an unquoted `null` key as None: the stressor really is called "null".
        key = "null" if name is None else str(name)
        if not isinstance(body, dict):
            raise CatalogError(f"catalog {path}: entry {key!r} must be a mapping")
        entries[key] = {"name": key, **body}
    try:
        return Catalog.model_validate({"schema_version": version, "stressors": entries})
    except ValidationError as exc:
        raise CatalogError(f"catalog {path}: {_format_validation(exc)}") from exc
