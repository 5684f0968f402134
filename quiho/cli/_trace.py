"""``quiho trace``, ``quiho detect``, ``quiho models``: per-function traces, change detection, fitted models."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from quiho._plotting import literal_text, save_figure
from quiho._text import printable
from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, plot_path, timeout_s
from quiho.errors import UsageError


def _profile(ref: str, store: str | None, x: str, amount: str) -> Any:
    from quiho.trace import load_perun_profile, load_trace_profile, perun_file

    if (p := perun_file(ref)) is not None:  # no store needed
        return load_perun_profile(p)
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        return load_trace_profile(st, ref, x, amount)


def _params(items: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for it in items:
        key, sep, val = it.partition("=")
        meth, dot, name = key.partition(".")
        if not sep or not dot:
            raise UsageError(f"--set expects METHOD.PARAM=VALUE, got {it!r}")
        try:
            num = float(val) if "." in val or "e" in val.lower() or "n" in val.lower() else int(val)
        except ValueError as exc:
            raise UsageError(f"--set {it!r}: value is not a number") from exc
        if not math.isfinite(num) or abs(num) > 1e12:
            raise UsageError(f"--set {it!r}: value is not a finite number of sensible size")
        out.setdefault(meth, {})[name] = num
    return out


def _fmt(v: float) -> str:
    return "n/a" if not math.isfinite(v) else f"{v:+.1%}"


def trace_cmd(
    target: Annotated[str, typer.Argument(help="APP@VERSION under which to store the run.")],
    command: Annotated[list[str], typer.Argument(help="Command to run and trace (after --).")],
    functions: Annotated[str | None, typer.Option("--functions", help="Comma-separated function names.")] = None,
    matching: Annotated[str | None, typer.Option("--functions-matching", help="Regex over the binary's "
                                                 "function symbols.")] = None,
    sample: Annotated[int, typer.Option("--sample", min=1, max=10**9, help="Record every N-th call per "
                                        "function and thread.")] = 1,
    binary: Annotated[Path | None, typer.Option("--binary", help="Binary holding the functions (default: "
                                                "the command's executable).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", callback=timeout_s,
                                                help="Seconds before the traced run is killed.")] = 600,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Trace function entry/exit of a command with bpftrace (root) and store the calls (times in ns)."""
    from quiho.store import open_store
    from quiho.trace import CallStats, parse_app_version, trace_command

    parse_app_version(target)  # a bad APP@VERSION is said before the store is opened
    fl = [f.strip() for f in functions.split(",") if f.strip()] if functions is not None else None
    with open_store(store) as st:
        run = trace_command(st, target, list(command), binary=binary, functions=fl,
                            matching=matching, sample=sample, timeout=timeout)
    s = CallStats(*run.stats)
    doc = {"run": run.id, "application": run.application, "version": run.version,
           "functions": list(run.functions), "calls_path": str(run.calls_path), **s.to_dict(),
           "tracer_ns_per_call": run.probe_ns}
    if json_out:
        emit_json(doc)
        return
    print(f"trace run {run.id}: {printable(target)}, {s.calls} calls of {len(run.functions)} function(s) from "
          f"{s.events} events -> {run.calls_path}")
    print("tracer's own time per call: " + (f"{run.probe_ns / 1e3:.1f} µs" if run.probe_ns is not None else
                                            "not measured (its run on libc's abs() failed)"))
    if s.unmatched_entries or s.unmatched_exits or s.mismatched or s.bad_lines:
        err(f"quiho: warning: {s.unmatched_entries} entries and {s.unmatched_exits} exits unmatched, "
            f"{s.mismatched} mismatched pairs, {s.bad_lines} bad lines")


def detect_cmd(
    baseline: Annotated[str, typer.Argument(help="Stored trace run id, APP@VERSION (all its runs pooled) or "
                                            "Perun .perf file.")],
    target: Annotated[str, typer.Argument(help="Stored trace run id, APP@VERSION (all its runs pooled) or "
                                          "Perun .perf file.")],
    method: Annotated[list[str] | None, typer.Option("--method", "-m", help="Detector name (repeatable; "
                                                     "'all' for every one). Default: joint.")] = None,
    x: Annotated[str, typer.Option("--x", help="Independent variable of trace runs: order, arg, sort-order, "
                                   "sliding-window.")] = "order",
    exclusive: Annotated[bool, typer.Option("--exclusive", help="Model exclusive instead of inclusive "
                                            "durations.")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Threshold override METHOD.PARAM=VALUE "
                                                   "(repeatable), e.g. joint.alpha=0.001.")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also list functions without a change.")] = False,
    fail_on_change: Annotated[bool, typer.Option("--fail-on-change", help="Exit 3 if any function is "
                                                 "flagged.")] = False,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Which functions changed between two versions, how (kind) and by how much."""
    from quiho.detect import DEFAULT_METHODS, detect

    params = _params(set_ or [])  # option values first: a typo must not wait for two profiles to load
    amount = "exclusive_ns" if exclusive else "inclusive_ns"
    pb = _profile(baseline, store, x, amount)
    pt = _profile(target, store, x, amount)
    changes = detect(pb, pt, method or list(DEFAULT_METHODS), params)
    if json_out:
        emit_json({"baseline": pb.source, "target": pt.source, "unit": pb.unit,
                   "tracer_ns_per_call": {"baseline": pb.tracer_ns, "target": pt.tracer_ns},
                   "changes": [c.to_dict() for c in changes]})
    else:
        print(printable(f"baseline {pb.source}  ->  target {pt.source}   (amounts in {pb.unit})"))
        if pb.tracer_ns is not None and pt.tracer_ns is not None:
            print(f"tracer's own time per call: {pb.tracer_ns / 1e3:.1f} µs (baseline), {pt.tracer_ns / 1e3:.1f} µs "
                  "(target)")
        print(f"{'function':32} {'method':6} {'state':15} {'kind':14} {'magnitude':>10} {'confidence':>11}")
        for c in changes:
            if c.state.value == "no-change" and not show_all:
                continue
            print(f"{printable(c.function)[:32]:32} {c.method:6} {c.state.value:15} {c.kind[:14]:14} "
                  f"{_fmt(c.magnitude):>10} {c.confidence:>11.4f}")
        for c in changes:
            if "tracer_ns_per_call" in c.support:
                print(printable(f"  {c.function} ({c.method}): not judged: {c.support['why']}"))
        nflag = sum(c.flagged for c in changes)
        print(f"{nflag} change(s) flagged over {len({c.function for c in changes})} function(s)")
    if fail_on_change and any(c.flagged for c in changes):
        from quiho.cli.main import ChangeFound

        raise ChangeFound()


def models_cmd(
    run: Annotated[str, typer.Argument(help="Stored trace run (id or APP@VERSION) or Perun .perf file.")],
    function: Annotated[str, typer.Option("--function", "-f", help="Function to model.")],
    plot: Annotated[Path | None, typer.Option("--plot", callback=plot_path,
                                                     help="Write a PNG/SVG of points and models.")] = None,
    x: Annotated[str, typer.Option("--x", help="Independent variable: order, arg, sort-order, "
                                   "sliding-window.")] = "order",
    exclusive: Annotated[bool, typer.Option("--exclusive", help="Model exclusive durations.")] = False,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the parametric and non-parametric models of one function and report their fit quality."""
    from quiho.models import fit_parametric, kernel_regression, moving_average, regressogram

    prof = _profile(run, store, x, "exclusive_ns" if exclusive else "inclusive_ns")
    s = prof.functions.get(function)
    if s is None:
        raise UsageError(f"no function {function!r} in {prof.source}; have: "
                         f"{', '.join(sorted(prof.functions))[:300]}")
    if len(s) < 3:
        raise UsageError(f"{function} has {len(s)} call(s): too few to fit models")
    par = fit_parametric(s.x, s.y)
    curves = [regressogram(s.x, s.y), moving_average(s.x, s.y), kernel_regression(s.x, s.y)]
    rows = [{"model": f.family, "formula": f.formula(), "r2": f.r2, "aic": f.aic, "bic": f.bic,
             "best": par.best is f} for f in par.fits]
    rows += [{"model": c.kind, "formula": ", ".join(f"{k}={v}" for k, v in c.params.items()), "r2": c.r2,
              "aic": None, "bic": None, "best": False} for c in curves]
    if plot is not None:
        _plot(plot, function, prof.unit, s, par, curves, x)
    if json_out:
        emit_json({"function": function, "source": prof.source, "unit": prof.unit, "n": len(s), "models": rows})
        return
    print(printable(f"{function} in {prof.source}: {len(s)} points, y in {prof.unit}, x = {x}"))
    for r in rows:
        mark = "*" if r["best"] else " "
        print(f"{mark} {r['model']:12} R²={r['r2']:8.4f}  {printable(r['formula'])}")
    print("* = lowest BIC among the parametric families")


def register(app: typer.Typer) -> None:
    app.command("trace")(trace_cmd)
    app.command("detect")(detect_cmd)
    app.command("models")(models_cmd)


@literal_text()
def _plot(path: Path, function: str, unit: str, s: Any, par: Any, curves: list[Any], x: str) -> None:
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 5))
    ax.scatter(s.x, s.y, s=6, c="0.6", label="calls")
    grid = np.linspace(float(s.x.min()), float(s.x.max()), 400)
    styles = ["-", "--", "-.", ":"]
    shown = [f for f in par.fits if f.meaningful]
    shown.sort(key=lambda f: f.bic)
    for i, f in enumerate(shown[:3]):
        ax.plot(grid, f.predict(grid), styles[i % 4], c="0.0", lw=1.5, label=f"{f.family} (R²={f.r2:.3f})")
    for i, c in enumerate(curves):
        ax.plot(grid, c.predict(grid), styles[(i + 1) % 4], c="0.35", lw=1.2, label=f"{c.kind} (R²={c.r2:.3f})")
    ax.set_xlabel({"order": "call order", "arg": "first argument"}.get(x, x))
    ax.set_ylabel(f"duration [{unit}]")
    ax.set_title(function)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
