"""``quiho publish DIR``: the store as a static site."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number, probability
from quiho.cli._irup import JobsOpt


def publish_(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Site directory: new, empty, or an earlier "
                                                                  "publish (only changed files are rewritten).")],
    method: Annotated[str, typer.Option("--method", "-m", help="Change-point detector of every series (see "
                                                               "'quiho history detect').")] = "auto",
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Largest p-value reported for a "
                                                                               "series.")] = 0.01,
    min_size: Annotated[int, typer.Option("--min-size", min=1, max=10**6, help="Minimum revisions per "
                                                                               "segment.")] = 5,
    recent: Annotated[int, typer.Option("--recent", min=1, max=10**6, help="A change point within this many newest "
                                                                           "revisions is listed on the front "
                                                                           "page.")] = 10,
    drift_min_change: Annotated[float, typer.Option("--drift-min-change", callback=number(0, 10), help="Smallest "
                                                    "fingerprint drift reported (0.05 = 5%).")] = 0.05,
    fingerprints: Annotated[str | None, typer.Option("--fingerprints-from", help="Show only this source of "
                                                     "fingerprint runs on the fleet pages: fleet, quick-local, or an "
                                                     "import such as quiho-popper (default: every source).")] = None,
    irup_model: Annotated[str, typer.Option("--irup-model", help="Model of each target's IRUP (as 'quiho irup "
                                                                 "--model').")] = "quiho",
    irup_seeds: Annotated[int, typer.Option("--irup-seeds", min=1, max=10_000, help="Model fits per target's IRUP "
                                                                                    "(as 'quiho irup --seeds').")] = 10,
    targets: Annotated[bool, typer.Option("--targets/--no-targets", help="Publish a page per target with its IRUP "
                                                                         "(computed once per changed input, kept in "
                                                                         "the store).")] = True,
    stale_after: Annotated[float, typer.Option("--stale-after", callback=number(0, 10**6, lo_open=True),
                                               help="Hours after which a fleet host's newest fingerprint is stale "
                                                    "(the schedule's period; default daily).")] = 24.0,
    jobs: JobsOpt = -1,
    title: Annotated[str, typer.Option("--title", help="Site name shown on every page.")] = "quiho",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Publish series, fleets, each target's IRUP and profiles as a static site (no server, no network)."""
    from quiho.irup import ModelParams
    from quiho.publish import IrupSettings, PublishOptions, publish
    from quiho.store import open_store

    ModelParams.preset(irup_model)  # a bad preset is a usage error before the store is opened (the cache writes)
    opts = PublishOptions(method=method, alpha=alpha, min_size=min_size, recent=recent,
                          drift_min_change=drift_min_change, fingerprints=fingerprints, title=title,
                          irup=IrupSettings(model=irup_model, seeds=irup_seeds, n_jobs=jobs, enabled=targets),
                          stale_after_hours=stale_after)
    with open_store(store, create=False) as st:
        r = publish(st, directory, opts)
    if json_out:
        emit_json(r.to_dict())
        return
    computed = f" ({r.irups_computed} IRUPs computed, {r.targets - r.irups_computed} cached)" if r.targets else ""
    err(f"published {r.series} series, {r.hosts} hosts, {r.targets} targets{computed}, {r.profiles} profiles into "
        f"{printable(r.directory)}: {len(r.written)} of {r.pages} files written, {r.unchanged} unchanged, "
        f"{len(r.removed)} removed")
    for w in r.warnings:
        err(f"note: {printable(w)}")
    print(printable(r.directory / "index.html"))


def register(app: typer.Typer) -> None:
    """Add ``quiho publish`` to ``app``."""
    app.command("publish")(publish_)
