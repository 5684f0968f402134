"""Reading the YAML files quiho is configured with, with one set of error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from quiho.errors import QuihoError


def read_yaml_mapping(path: Path, *, what: str, error: type[QuihoError], shape: str) -> dict[str, Any]:
    """Load ``path`` and require a mapping at the top.

    Parameters
    ----------
    path : Path
        The file.
    what : str
        How the file is named in messages ("catalog", "application spec" ...).
    error : type of QuihoError
        Raised, with a one-line message, for an unreadable file, bad YAML or a non-mapping.
    shape : str
        What the mapping should hold, appended to the non-mapping message.
    """
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not UTF-8 text (bad byte at offset {exc.start})") from exc
    except RecursionError as exc:
        raise error(f"{what} {path} is nested too deeply to be a {what}") from exc
    if not isinstance(raw, dict):
        raise error(f"{what} {path} must be a mapping {shape}")
    return raw
