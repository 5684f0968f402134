"""``quiho import ...``: bring existing data into the store."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err


def register(app: typer.Typer) -> None:
    imp = typer.Typer(help="Import data from other tools into the store.", no_args_is_help=True)
    app.add_typer(imp, name="import")

    @imp.command("quiho-popper")
    def quiho_popper(
        results_csv: Annotated[Path, typer.Argument(help="results.csv of ivotron/quiho-popper")],
        store: StoreOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Import the quiho paper's CloudLab results (stress-ng + applications)."""
        from quiho.store import open_store
        from quiho.store.popper import import_quiho_popper, read_quiho_popper

        read_quiho_popper(results_csv)  # validate before creating or touching the store
        with open_store(store) as st:
            s = import_quiho_popper(st, results_csv)
        if json_out:
            emit_json(asdict(s))
            return
        err(printable(
            f"imported {s.path}: {s.batches} batches, {s.hosts} hosts, {s.measurements} stress-ng values, "
            f"{s.app_runs} application values over {s.targets} targets into {st}"
        ))
        for dup, orig in s.duplicate_batches.items():
            err(printable(f"  batch {dup} has the same stress-ng values as batch {orig}: marked duplicate"))
