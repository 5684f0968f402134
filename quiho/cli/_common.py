"""Options and output helpers shared by the command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", help="SQLite store file (default $QUIHO_STORE or ./.quiho/quiho.db)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]


def emit_json(doc: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")


def err(msg: str) -> None:
    """Logs, warnings and progress go to stderr."""
    print(msg, file=sys.stderr)
