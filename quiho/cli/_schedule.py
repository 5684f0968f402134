"""``quiho schedule ...``, ``quiho fleet drift``, ``quiho store compact``, ``quiho store copy``."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number, probability

RootOpt = Annotated[Path, typer.Option("--root", help="Install below this directory (a sandbox); default /.")]


def _schedule_name(value: str) -> str:
    """Option callback: a schedule name is a plain file name (it is joined to system directories)."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", value) or set(value) == {"."}:
        raise typer.BadParameter(f"{printable(value)!r} is not a schedule name (letters, digits, '.', '_', '-')")
    return value


NameOpt = Annotated[str, typer.Option("--name", callback=_schedule_name, help="Timer / cron entry name.")]


def _store_path(store: str | None) -> Path:
    """The SQLite file a schedule writes into; a PostgreSQL store is refused (its URL would go into a unit file)."""
    from quiho.errors import UsageError
    from quiho.store import parse_location

    loc = parse_location(store)
    if loc.backend != "sqlite":
        raise UsageError(f"schedule install/run take a SQLite store, not {loc}: for a PostgreSQL store run "
                         "'quiho fingerprint' from your own timer with QUIHO_STORE set and the password in PGPASSFILE")
    return loc.path


def _drift_method(value: str) -> str:
    """Option callback: ``fleet drift --method`` is maxt or a history detector (checked before the store is read)."""
    from quiho.history import DETECTORS

    if value != "maxt" and value not in DETECTORS:
        raise typer.BadParameter(f"{value!r} is not maxt or a history detector ({', '.join(sorted(DETECTORS))})")
    return value


def _group(app: typer.Typer, name: str, help_: str) -> typer.Typer:
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    sub = typer.Typer(help=help_, no_args_is_help=True)
    app.add_typer(sub, name=name)
    return sub


def install(
    inventory: Annotated[Path | None, typer.Option("-i", "--inventory", help="Ansible inventory.")] = None,
    every: Annotated[str, typer.Option("--every", help="DAILY or a number of hours (1-23).")] = "daily",
    battery: Annotated[str, typer.Option("--battery", help="quick, resources, default or paper.")] = "default",
    store: StoreOpt = None,
    name: NameOpt = "quiho-fingerprint",
    root: RootOpt = Path("/"),
    backend: Annotated[str, typer.Option("--backend", help="auto, systemd or cron.")] = "auto",
    json_out: JsonOpt = False,
) -> None:
    """Install a timer that fingerprints the fleet on a schedule."""
    from quiho.fleet import load_inventory
    from quiho.schedule import install_schedule

    load_inventory(inventory)  # refuse a broken inventory now, not at 3 am
    s = install_schedule(store=_store_path(store), inventory=inventory, every=every, battery=battery,
                         name=name, root=root, backend=backend)
    if json_out:
        emit_json(s.to_dict())
    else:
        print(f"installed {s.name} ({s.backend}, every {s.every}): {', '.join(map(str, s.files))}")


def status(name: NameOpt = "quiho-fingerprint", root: RootOpt = Path("/"), store: StoreOpt = None,
           json_out: JsonOpt = False) -> None:
    """Show the installed schedule and the store's latest fingerprint run."""
    from quiho.schedule import schedule_status
    from quiho.store import open_store, parse_location
    from quiho.store.fingerprints import latest_fleet_run

    s = schedule_status(name=name, root=root)
    last = None
    loc = parse_location(store)
    if loc.backend != "sqlite" or loc.path.exists():
        with open_store(store, create=False) as st:
            last = latest_fleet_run(st)
    if json_out:
        emit_json({"schedule": s.to_dict() if s else None, "last_run": last})
        return
    print(f"{name}: " + (f"installed ({s.backend}, every {s.every})" if s else "not installed"))
    if last:
        print(f"last fingerprint: {last['batch']} {last['status']} at {last['started_at']}")


def remove(name: NameOpt = "quiho-fingerprint", root: RootOpt = Path("/")) -> None:
    """Remove the schedule and its files."""
    from quiho.schedule import remove_schedule

    removed = remove_schedule(name=name, root=root)
    print(f"removed {', '.join(map(str, removed))}" if removed else f"{name}: nothing installed")


def run(
    inventory: Annotated[Path | None, typer.Option("-i", "--inventory", help="Ansible inventory.")] = None,
    battery: Annotated[str, typer.Option("--battery", help="quick, resources, default or paper.")] = "default",
    store: StoreOpt = None,
    if_busy: Annotated[str, typer.Option("--if-busy", help="skip or wait when another measurement runs.")]
    = "skip",
    log: Annotated[Path | None, typer.Option("--log", help="Append one line per firing here.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """What the timer runs: a fingerprint under the measurement lock."""
    from quiho.errors import UsageError
    from quiho.fingerprint import FingerprintPlan
    from quiho.schedule import scheduled_fingerprint

    if if_busy not in ("skip", "wait"):
        raise UsageError("--if-busy takes skip or wait")
    from quiho.fleet.shutdown import reap_all_children

    try:
        out = scheduled_fingerprint(_store_path(store), inventory=inventory, plan=FingerprintPlan(battery=battery),
                                    wait=if_busy == "wait", log=log)
    finally:
        reap_all_children()  # orphans the run left to this process (see quiho.fleet.shutdown)
    if json_out:
        emit_json(out.__dict__)
    else:
        (err if out.status == "skipped" else print)(out.message)


def drift(
    store: StoreOpt = None,
    method: Annotated[str, typer.Option("--method", callback=_drift_method, help="maxt, or a history detector "
                                        "name.")] = "maxt",
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Family-wise error rate over "
                                         "all series.")] = 0.05,
    min_change: Annotated[float, typer.Option("--min-change", callback=number(0, 1000), help="Smallest "
                                              "relative change.")] = 0.05,
    max_age: Annotated[float | None, typer.Option("--max-age", callback=number(0, 100 * 366 * 24),
                                                  help="Hours; older hosts are stale.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Hosts whose fingerprints changed (which stressors, when, how much), regrouped or stale hosts."""
    from quiho.schedule.drift import detect_drift, drift_lines
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        rep = detect_drift(st, method=method, alpha=alpha, min_change=min_change,
                           max_age=None if max_age is None else timedelta(hours=max_age))
    if json_out:
        emit_json(rep.to_dict())
        return
    print("\n".join(drift_lines(rep)))


def compact(
    older_than: Annotated[float, typer.Option("--older-than", help="Days; runs started earlier are compacted.")]
    = 30.0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fold old fingerprint runs into per-host medians (history is kept; raw repetitions are not)."""
    from quiho.store import open_store
    from quiho.store.compact import compact_runs, older_than_days

    age = older_than_days(older_than)  # a usage error before the store is opened
    with open_store(store, create=False) as st:
        s = compact_runs(st, older_than=age)
    if json_out:
        emit_json(s.__dict__)
    else:
        print(f"compacted {s.runs} run(s): {s.rows_before} rows → {s.rows_after}")


def copy(
    source: Annotated[str, typer.Argument(help="Store to copy from: a SQLite file or postgresql://... URL.")],
    destination: Annotated[str, typer.Argument(help="Empty store to copy into (created if new).")],
    json_out: JsonOpt = False,
) -> None:
    """Copy every row and trace file of one store into an empty one (SQLite ↔ PostgreSQL); counts are checked."""
    from quiho.store import open_store
    from quiho.store.copy import copy_store

    with open_store(source, create=False) as src, open_store(destination) as dst:
        s = copy_store(src, dst)
    if json_out:
        emit_json(s.to_dict())
    else:
        print(f"copied {sum(s.rows.values())} rows in {len(s.rows)} tables and {s.files} trace file(s) "
              f"from {printable(s.source)} to {printable(s.destination)}; row counts equal on both")


def register(app: typer.Typer) -> None:
    sched = typer.Typer(help="Scheduled fleet fingerprinting (systemd timer, or cron).", no_args_is_help=True)
    app.add_typer(sched, name="schedule")
    sched.command("install")(install)
    sched.command("status")(status)
    sched.command("remove")(remove)
    sched.command("run")(run)
    fleet = _group(app, "fleet", "What quiho knows about the fleet.")
    fleet.command("drift")(drift)
    store_grp = _group(app, "store", "Maintain the store.")
    store_grp.command("compact")(compact)
    store_grp.command("copy")(copy)
