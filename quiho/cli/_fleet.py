"""``quiho fingerprint``, ``quiho run``, ``quiho fleet show``: fleet execution through Ansible."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number

if TYPE_CHECKING:
    from quiho.store import Store

InventoryOpt = Annotated[
    Path | None,
    typer.Option("-i", "--inventory", help="Ansible inventory file or directory (default: the local fleet)."),
]
ForksOpt = Annotated[int, typer.Option("--forks", min=1, max=4096, help="Hosts in parallel; keep 1 when hosts share "
                                                                       "hardware.")]
InsecureOpt = Annotated[
    bool,
    typer.Option(
        "--insecure-no-host-key-check",
        help="Turn SSH host-key checking OFF (only for throw-away test hosts; never on a real fleet).",
    ),
]


@contextmanager
def _progress(total_hosts: int, label: str) -> Iterator[Callable[[object], None]]:
    """Host-level progress on stderr (a rich bar on a TTY, one line per finished host otherwise).

    On the way out (also on an error or interrupt) every exited child is reaped: orphans of the
    run were adopted by this process (:mod:`quiho.fleet.shutdown`), and zombies left at exit would
    go to a PID 1 that may never reap them.
    """
    from quiho.fleet.shutdown import reap_all_children

    try:
        with _display(total_hosts, label) as on_event:
            yield on_event
    finally:
        reap_all_children()


@contextmanager
def _display(total_hosts: int, label: str) -> Iterator[Callable[[object], None]]:
    from quiho.fleet.runner import FleetEvent

    counts = {"done": 0, "failed": 0, "unreachable": 0}
    seen: set[tuple[str, str]] = set()

    def count(ev: object) -> str | None:
        assert isinstance(ev, FleetEvent)
        if ev.kind in counts and ev.host and (ev.host, ev.kind) not in seen:
            seen.add((ev.host, ev.kind))
            counts[ev.kind] += 1
            return f"{ev.host}: {ev.kind}" + (f" ({ev.message})" if ev.message else "")
        return None

    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(), console=Console(stderr=True), transient=False,
        ) as prog:
            task = prog.add_task(label, total=total_hosts, status="")

            def on_rich(ev: object) -> None:
                line = count(ev)
                if line is None:
                    if isinstance(ev, FleetEvent) and ev.kind == "task":
                        prog.update(task, status=f"{ev.host}: {ev.task}")
                    return
                prog.update(
                    task,
                    completed=counts["done"],
                    status=f"done {counts['done']} · failed {counts['failed']} · unreachable {counts['unreachable']}",
                )
                if isinstance(ev, FleetEvent) and ev.kind != "done":
                    prog.console.print(line)

            yield on_rich
    else:

        def on_plain(ev: object) -> None:
            line = count(ev)
            if line is not None:
                err(line)

        yield on_plain


def _fleet_of(inventory: Path | None, st: Store) -> tuple[Path, int]:
    """The inventory a fleet command runs on (``-i``, or the local fleet calibrated to this machine) and its size.

    Without ``-i`` this may probe the machine first (``quiho fleet calibrate``); its lines and warnings go to
    stderr before anything runs.
    """
    from quiho.fleet import load_inventory
    from quiho.fleet.local.calibrate import resolve_inventory

    path = Path(resolve_inventory(inventory, st, lambda msg: err(f"quiho: {printable(msg)}")))
    return path, len(load_inventory(path).hosts)


def fingerprint_cmd(
    inventory: InventoryOpt = None,
    battery: Annotated[str, typer.Option("--battery", help="quick, resources, default or paper.")] = "default",
    seconds: Annotated[int | None, typer.Option("--seconds", min=1, max=86400, help="Seconds per stressor.")] = None,
    repetitions: Annotated[int | None, typer.Option("--repetitions", min=1, max=10_000, help="Repetitions.")] = None,
    warmup: Annotated[int | None, typer.Option("--warmup", min=0, max=86400, help="Warm-up seconds per stressor "
                                               "(0: none).")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Rerun only what RUN_ID is missing.")] = None,
    forks: ForksOpt = 1,
    insecure: InsecureOpt = False,
    quick_local: Annotated[bool, typer.Option("--quick-local", help="Fingerprint this machine only, directly (no "
                                              "fleet; battery quick unless --battery names another); reused while "
                                              "its facts hold and it is younger than --max-age.")] = False,
    max_age: Annotated[float, typer.Option("--max-age", callback=number(0, 24 * 366), help="Hours a --quick-local "
                                           "fingerprint is reused (0: measure anew).")] = 168.0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fingerprint every host with a stress-ng battery (one job per host per repetition)."""
    if quick_local:  # this machine, not a fleet: quiho.fingerprint.local
        from quiho.cli._machines import quick_local as run_quick_local

        return run_quick_local(store, battery, seconds, repetitions, max_age, json_out)
    from quiho.fingerprint import FingerprintPlan, fingerprint, load_battery
    from quiho.fleet import FleetAccess, load_inventory
    from quiho.store import open_store

    if inventory is not None:
        load_inventory(inventory)  # validate before touching the store
    if resume is None:
        load_battery(battery)  # an unknown name must not cost a calibration first
    with open_store(store) as st:
        path: Path | None
        if resume is None:
            path, n_hosts = _fleet_of(inventory, st)
        else:  # the run's own inventory and hosts, unless -i says otherwise
            import json

            from quiho.store.fingerprints import fingerprint_run

            path, n_hosts = inventory, len(json.loads(fingerprint_run(st, resume)["params_json"])["hosts"])
        with _progress(n_hosts, "fingerprint") as on_event:
            plan = FingerprintPlan(battery=battery, seconds=seconds, repetitions=repetitions, warmup_seconds=warmup)
            run = fingerprint(path, store=st, resume=resume, on_event=on_event, plan=plan,
                              access=FleetAccess(forks=forks, host_key_checking=not insecure))
    if json_out:
        emit_json(run.to_dict())
    else:
        print(f"fingerprint {run.batch} (run id {run.run_id}): {run.status} in {run.elapsed_s:.0f} s")
        for h in run.hosts:
            why = f"  {h.reason}" if h.reason else ""
            print(f"  {printable(h.name):24} {h.status:12} ok {h.ok:4}  failed {h.failed:3}  missing {h.missing:3}"
                  f"{printable(why)}")
        if run.status != "complete":
            print(f"  resume with: quiho fingerprint --resume {run.batch}")
    for e in run.errors:
        err(f"quiho: {printable(e)}")


def run_cmd(
    app_spec: Annotated[Path, typer.Argument(help="Application spec (YAML).")],
    version: Annotated[str, typer.Option("--version", help="Version name from the spec.")],
    inventory: InventoryOpt = None,
    forks: ForksOpt = 1,
    insecure: InsecureOpt = False,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run one version of an application on every host, with repetitions and a timeout."""
    from quiho.app import load_app_spec, run_app
    from quiho.fleet import load_inventory
    from quiho.store import open_store

    spec = load_app_spec(app_spec)
    if inventory is not None:
        load_inventory(inventory)  # validate before touching the store
    with open_store(store) as st:
        path, n_hosts = _fleet_of(inventory, st)
        with _progress(n_hosts, f"{spec.name} {version}") as on_event:
            run = run_app(spec, version, path, store=st, forks=forks, host_key_checking=not insecure,
                          on_event=on_event)
    if json_out:
        emit_json(run.to_dict())
        return
    fp = f"fingerprint run {run.fingerprint_run_id}" if run.fingerprint_run_id else "no fingerprint yet"
    print(f"{run.application} {printable(run.version)} {run.batch}: {run.status} in {run.elapsed_s:.0f} s ({fp})")
    for r in run.results:
        val = f"{r.value:.4g} {printable(spec.metric.unit)}" if r.value is not None else printable(r.reason)
        print(f"  {printable(r.host):24} rep {r.repetition}  {r.status:6} {val}")
        if r.status == "failed" and r.stderr_tail and r.stderr_tail.strip():
            print("    stderr: " + printable(r.stderr_tail.strip().splitlines()[-1][:200]))
    for h, (st_, reason) in run.hosts.items():
        if st_ != "ok":
            print(f"  {printable(h)}: {st_} {printable(reason or '')}")


def fleet_show_cmd(store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """Hosts, their groups, facts and the age of their last fingerprint."""
    from dataclasses import asdict

    from quiho.fleet import fleet_show
    from quiho.fleet.show import calibration_info, calibration_lines, show_lines
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        hosts = fleet_show(st)
        cal = calibration_info(st)
    if json_out:
        emit_json({"hosts": [asdict(h) for h in hosts], "calibration": cal})
        return
    print("\n".join(show_lines(hosts) + calibration_lines(cal)))


def fleet_calibrate_cmd(
    force: Annotated[bool, typer.Option("--force", help="Probe again even if this machine's facts are unchanged.")]
    = False,
    knobs: Annotated[bool, typer.Option(
        "--knobs/--no-knobs", help="Also measure the knob catalogue (core sharing, storage, kernel entry, network, "
                                   "memory capacity): "
                                   "each knob's effect on its probe and on the CPU probe, kept or dropped with the "
                                   "reason (~1 min); kept knobs make the hosts a screening design. --no-knobs: the "
                                   "quota x page size x co-runner grid only.")]
    = True,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Calibrate the local fleet to this machine (probes each emulation axis and knob; ~1-2 min; needs root).

    Done by itself before the first local run; reused while the machine's facts stay the same.
    """
    from quiho.fleet.local.calibrate import calibrate
    from quiho.fleet.show import calibration_info, calibration_lines
    from quiho.store import open_store

    with open_store(store) as st:
        c = calibrate(st, force=force, on_step=lambda msg: err(f"quiho: {printable(msg)}"), knobs=knobs)
        info = calibration_info(st)
    if json_out:
        emit_json({**(info or {}), "reused": c.reused, "probe_runs": c.probe_runs})
        return
    print(("reused" if c.reused else f"measured ({c.probe_runs} probe runs)") + ": " +
          "\n".join(calibration_lines(info)))


def register(app: typer.Typer) -> None:
    app.command("fingerprint")(fingerprint_cmd)
    app.command("run")(run_cmd)
    fleet = typer.Typer(help="What quiho knows about the fleet.", no_args_is_help=True)
    app.add_typer(fleet, name="fleet")
    fleet.command("show")(fleet_show_cmd)
    fleet.command("calibrate")(fleet_calibrate_cmd)
