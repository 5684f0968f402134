"""``quiho predict``: a target's metric on a machine, from the machine's fingerprint."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number


def _value(v: float) -> str:
    return "unbounded" if not math.isfinite(v) or v <= 0 else f"{v:.4g}"


def prediction_lines(pred) -> list[str]:  # noqa: ANN001 - quiho.irup.predict.Prediction, imported lazily
    """What ``quiho predict`` prints (names made printable)."""
    p = pred.predictor
    better = "higher" if p.higher_is_better else "lower"
    lines = [printable(f"{p.target}: predicted {p.unit} ({better} is better), {p.level:.0%} prediction interval"),
             f"{'host':<52} {'predicted':>10} {'interval':>23}"]
    for h in pred.hosts:
        iv = f"[{_value(h.low)}, {_value(h.high)}]"
        extra = f"  extrapolated in {', '.join(h.outside)}" if h.outside else ""
        lines.append(printable(f"{h.host:<52} {h.predicted:>10.4g} {iv:>23}{extra}"))
    lines.append(printable(
        f"out-of-machine error: median {math.expm1(p.logo_error):.1%} over {len(p.residuals)} held-out hardware "
        f"groups; run-to-run noise on one machine {math.expm1(p.noise):.1%}; predicting the fleet mean errs "
        f"{math.expm1(p.spread):.1%}"))
    lines.append(printable(f"validity: {p.validity.verdict.upper()} — {p.validity.reason}"))
    lines += [printable(f"skipped: {s}") for s in pred.skipped]
    return lines


def predict_cmd(
    target: Annotated[str, typer.Argument(help="APP[@VERSION][/TEST], as `quiho targets` lists them.")],
    host: Annotated[list[str] | None, typer.Option("--host", help="A stored host to predict (repeatable).")] = None,
    fingerprint: Annotated[Path | None, typer.Option(
        "--fingerprint", help="A fingerprint file: stress-ng --yaml output, or JSON {stressor: bogo-ops/s}.")] = None,
    all_hosts: Annotated[bool, typer.Option("--all-hosts", help="Rank every host with a stored fingerprint.")] = False,
    level: Annotated[float, typer.Option("--level", callback=number(0, 1, lo_open=True, hi_open=True),
                                         help="Coverage of the prediction interval.")] = 0.8,
    batch: Annotated[str | None, typer.Option("--batch", help="Train on (and take hosts' fingerprints from) this "
                                                               "batch only.")] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, max=1000, help="Seeds of the validity IRUP.")] = 5,
    random_state: Annotated[int, typer.Option("--random-state", min=0, max=2**32 - 1, help="Master seed.")] = 0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Predict TARGET's metric on machines from their fingerprints; refuses where the IRUP is not meaningful."""
    from quiho.irup.predict import MachinesToPredict, PredictOptions, predict_target
    from quiho.store import open_store

    machines = MachinesToPredict(tuple(host or ()), fingerprint, all_hosts)
    machines.check()
    opts = PredictOptions(level=level, seeds=seeds, random_state=random_state, batch=batch)
    with open_store(store, create=False) as st:
        pred = predict_target(st, target, machines, opts)
    if json_out:
        emit_json(pred.to_dict())
        return
    for line in prediction_lines(pred):
        print(line)
    if pred.predictor.validity.verdict == "weak":
        err("warning: the IRUP is weak; treat the prediction as a rough guide")


def register(app: typer.Typer) -> None:
    app.command("predict")(predict_cmd)
