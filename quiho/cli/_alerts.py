"""``quiho history detect --all`` (the CI gate, with alerts) and ``quiho history alert list|ack|invalid``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number, probability

AlertId = Annotated[int, typer.Argument(metavar="ID", callback=number(1, 2**63 - 1),
                                        help="Alert number (see 'quiho history alert list').")]
BaseOpt = Annotated[str | None, typer.Option("--base", help="With --all: compare each series' newest revision "
                                                            "(a PR's) with the level at this revision (the PR's "
                                                            "merge base); raises and closes no alert.")]
NewestAlphaOpt = Annotated[float | None, typer.Option("--newest-alpha", callback=probability,
                                                     help="With --all or --normalise: significance level of the "
                                                          "newest revision against its baseline (default 0.001); "
                                                          "--alpha stays the change points' level.")]


def progress(msg: str) -> None:
    """Progress on a terminal only; warnings and what an interrupt kept always (stderr)."""
    if sys.stderr.isatty() or msg.startswith(("warning", "interrupted")):
        err(msg)


def detect_all(store: str | None, options: object, fmt: str, fail_on_change: bool, json_out: bool,
               rerun: tuple[object, object] | None = None, view: object = None) -> None:
    """Run the gate (:func:`quiho.history.run_gate`) and print it; ``ChangeFound`` while a ``new`` alert is open.

    ``rerun`` (a ``GitBench`` and ``ConfirmOptions``): every ``new`` alert is rerun in pairs first
    (:func:`quiho.history.gate.confirm_gate`) and only those the rerun does not clear fail. ``view``: what the gate
    reads of each series (``--normalise``: :func:`quiho.history.normalise.normalised_view`).
    """
    from quiho.cli.main import ChangeFound
    from quiho.history.gate import (
        ConfirmedGate,
        alert_lines,
        alert_markdown,
        confirm_gate,
        confirmation_lines,
        run_gate,
        verdict_lines,
        verdict_markdown,
    )
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        gate = run_gate(st, options, view=view)  # type: ignore[arg-type]
        # a failed rerun is one line naming the alert it leaves unconfirmed
        cg = ConfirmedGate(gate) if rerun is None else confirm_gate(st, gate, rerun[0], rerun[1],  # type: ignore[arg-type]
                                                                    log=progress)
    r = cg.gate
    if json_out:
        emit_json(cg.to_dict() if rerun is not None else r.to_dict())
    elif fmt == "markdown":
        title = f"quiho history (against {r.base[:12]})" if r.base else "quiho history"
        sys.stdout.write(verdict_markdown(r.verdicts, title=title) + "\n"
                         + alert_markdown(r.open_alerts, confirmations=r.confirmations))
    else:
        print("\n".join(verdict_lines(r.verdicts)))
        if r.open_alerts:
            print()
            print("\n".join(alert_lines(r.open_alerts, confirmations=r.confirmations)))
        for cid in cg.rerun:  # the paired evidence measured now, every pair
            c = next(c for c in r.confirmations.values() if c.id == cid)
            print()
            print("\n".join(printable(ln) for ln in confirmation_lines(c)))
    for v in r.verdicts:
        if v.alert is not None and v.event:
            err(f"alert #{v.alert.id} {v.event}: {printable(v.series)} (first bad {printable(v.alert.first_bad)[:12]})")
    failing = cg.failing if rerun is not None else r.failing  # a stored rerun is shown; it decides with --rerun
    if rerun is not None and r.failing and not failing:
        err("the gate's new alerts were not confirmed by rerunning: passing (the alerts stay open, marked so)")
    if fail_on_change and failing:
        raise ChangeFound()


def list_(
    all_states: Annotated[bool, typer.Option("--all", help="Also fixed and invalid alerts.")] = False,
    series: Annotated[str | None, typer.Option("--series", help="Alerts of this series only.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or markdown (a CI job summary).")] = "text",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the open alerts (new, acknowledged) with their age, state, evidence and newest rerun (confirm)."""
    from quiho.errors import UsageError
    from quiho.history.gate import (
        ALERT_STATES,
        OPEN_STATES,
        alert_lines,
        alert_markdown,
        alert_to_dict,
        latest_confirmations,
        list_alerts,
    )
    from quiho.store import open_store

    if fmt not in ("text", "markdown"):
        raise UsageError(f"--format must be text or markdown, got {fmt!r}")
    with open_store(store, create=False) as st:
        alerts = list_alerts(st, ALERT_STATES if all_states else OPEN_STATES, series)
        conf = latest_confirmations(st, [a.id for a in alerts])
    if json_out:
        emit_json({"alerts": [alert_to_dict(a, confirmation=conf.get(a.id)) for a in alerts]})
    elif fmt == "markdown":
        sys.stdout.write(alert_markdown(alerts, title="Alerts" if all_states else "Open alerts", confirmations=conf))
    else:
        print("\n".join(alert_lines(alerts, confirmations=conf)))


def _set(alert_id: int, state: str, store: str | None, json_out: bool) -> None:
    from quiho.history.gate import alert_to_dict, set_alert_state
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        a = set_alert_state(st, alert_id, state)
    if json_out:
        emit_json(alert_to_dict(a))
    else:
        err(f"alert #{a.id} ({printable(a.series)}, first bad {printable(a.first_bad)[:12]}) is now {a.state}")


def ack(alert_id: AlertId, store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """Acknowledge an alert: it no longer fails the gate, and still closes as fixed when the level comes back."""
    _set(alert_id, "acknowledged", store, json_out)


def invalid(alert_id: AlertId, store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """Mark an alert invalid (not a regression): it no longer fails the gate and is not raised again."""
    _set(alert_id, "invalid", store, json_out)


def register(hist: typer.Typer) -> None:
    """Add ``quiho history alert`` and its commands to the ``history`` group."""
    sub = typer.Typer(help="Regression alerts of the CI gate: list, acknowledge, mark invalid.", no_args_is_help=True)
    hist.add_typer(sub, name="alert")
    for name, fn in (("list", list_), ("ack", ack), ("invalid", invalid)):
        sub.command(name)(fn)
