"""``quiho irup``, ``quiho compare``, ``quiho advise`` (filled in by the IRUP engine)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
