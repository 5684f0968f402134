"""``quiho profile APP@V1 APP@V2``: did performance change, how much, how sure, and where to look."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from quiho.cli._common import (
    JsonOpt,
    StoreOpt,
    emit_json,
    err,
    number,
    output_dir,
    probability,
    seed,
    worker_count,
)


def _split(target: str) -> tuple[str, str]:
    from quiho.errors import UsageError

    app, sep, version = target.partition("@")
    if not sep or not app or not version or "/" in version:
        raise UsageError(f"{target!r}: name a version as APP@VERSION (e.g. stream@nadds1)")
    return app, version


def profile_cmd(
    a: Annotated[str, typer.Argument(metavar="APP@V1", help="Baseline version.")],
    b: Annotated[str, typer.Argument(metavar="APP@V2", help="Candidate version (the same twice: a false-positive "
                                                            "check).")],
    spec: Annotated[Path | None, typer.Option("--spec", help="Application spec YAML (default: from quiho.yml).")]
    = None,
    project: Annotated[Path | None, typer.Option("--project", help="Project file (default ./quiho.yml).")] = None,
    inventory: Annotated[Path | None, typer.Option("-i", "--inventory", help="Ansible inventory (default: the "
                                                                              "local fleet).")] = None,
    battery: Annotated[str | None, typer.Option("--battery", help="Battery of a new fingerprint (default quick)."
                                                )] = None,
    max_age: Annotated[str | None, typer.Option("--max-age", help="Reuse fingerprints at most this old (e.g. 6h; "
                                                                  "0 = always fingerprint). Default 24h.")] = None,
    fp_seconds: Annotated[int | None, typer.Option("--fingerprint-seconds", min=1, max=86400, help="Seconds per "
                                                   "stressor of a new fingerprint (default: the battery's).")] = None,
    fp_repetitions: Annotated[int | None, typer.Option("--fingerprint-repetitions", min=1, max=10_000,
                                                       help="Repetitions of a new fingerprint (default: the "
                                                       "battery's).")] = None,
    repetitions: Annotated[int | None, typer.Option("--repetitions", min=1, max=10_000, help="Runs per version per "
                                                    "host (default: the spec's).")] = None,
    warmup: Annotated[int | None, typer.Option("--warmup", min=0, max=10_000, help="Discarded warm-up runs per "
                                               "version per host (default 1).")] = None,
    min_change: Annotated[float | None, typer.Option("--min-change", callback=number(0, 1, hi_open=True),
                                                     help="Magnitude floor as a fraction (default 0.05 = 5 %).")]
    = None,
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Significance level of the paired "
                                         "test.")] = 0.05,
    seeds: Annotated[int | None, typer.Option("--seeds", min=1, max=10_000, help="IRUP model fits per version "
                                              "(default 10).")] = None,
    random_state: Annotated[int, typer.Option("--random-state", callback=seed, help="Master seed.")] = 0,
    batch: Annotated[str | None, typer.Option("--batch", help="Re-analyse the runs of an earlier profile "
                                                              "(nothing is run).")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue an interrupted profile BATCH: run "
                                                                "only the hosts it has no runs of.")] = None,
    report: Annotated[Path | None, typer.Option("--report", callback=output_dir, help="Write report.html, "
                                                "report.json and PNGs here.")] = None,
    fail_on_change: Annotated[bool, typer.Option("--fail-on-change", help="Exit 3 when a regression is found."
                                                 )] = False,
    traces: Annotated[bool, typer.Option("--traces/--no-traces", help="Join per-function verdicts of stored "
                                         "'quiho trace' runs of both versions into the hints (when the store "
                                         "has them).")] = True,
    trace_baseline: Annotated[str | None, typer.Option("--trace-baseline", help="Trace of the baseline instead: "
                                                       "run id, APP@VERSION or Perun file.")] = None,
    trace_target: Annotated[str | None, typer.Option("--trace-target", help="Trace of the candidate instead: "
                                                     "run id, APP@VERSION or Perun file.")] = None,
    trace: Annotated[str | None, typer.Option("--trace", metavar="F1,F2", help="After the measured runs, trace "
                                              "these functions on every host (bpftrace; SystemTap where only stap "
                                              "exists), v1/v2 interleaved; fleet verdict per function.")] = None,
    trace_matching: Annotated[str | None, typer.Option("--trace-matching", metavar="RE", help="Trace every "
                                                       "function of the binary matching RE.")] = None,
    trace_binary: Annotated[str | None, typer.Option("--trace-binary", help="Executable or shared library "
                                                     "holding the functions (default: each version's command).")]
    = None,
    trace_runs: Annotated[int | None, typer.Option("--trace-runs", min=1, max=100, help="Traced runs per version "
                                                   "per host (default 3).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", callback=worker_count, help="Parallel model fits (-1 = all "
                                      "cores).")] = -1,
    fmt: Annotated[str, typer.Option("--format", help="Output: text, or markdown (a CI job summary / PR "
                                                      "comment).")] = "text",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare two versions of an application on a fleet: metric change, IRUPs, root-cause hints."""
    from quiho.cli.main import ChangeFound
    from quiho.errors import UsageError
    from quiho.profile import analyse_profile, load_project, resolve_spec, save_profile
    from quiho.profile.project import DEFAULTS
    from quiho.store import open_store

    if fmt not in ("text", "markdown"):
        raise UsageError(f"--format must be text or markdown, got {fmt!r}")
    app_a, v1 = _split(a)
    app_b, v2 = _split(b)
    if app_a != app_b:
        raise UsageError(f"both versions must be of one application ({app_a!r} vs {app_b!r})")
    proj = load_project(project)
    d = (proj.profile if proj else DEFAULTS).with_options(
        min_change=min_change, seeds=seeds, battery=battery, max_age=max_age, repetitions=repetitions,
        warmup=warmup, inventory=str(inventory) if inventory is not None else None)
    analysis: dict[str, Any] = dict(min_change=d.min_change, alpha=alpha, seeds=d.seeds,
                                    random_state=random_state, n_jobs=jobs)
    with open_store(store) as st:
        if traces or trace_baseline or trace_target:
            from quiho.profile.traces import join_traces

            # before anything runs: a bad trace reference must not cost a fleet run
            joined = join_traces(st, app_a, v1, v2, baseline=trace_baseline, target=trace_target)
            if joined is not None:
                analysis.update(trace_changes=joined.changes, trace_note=joined.note())
        if batch is not None:
            if trace or trace_matching or trace_binary or trace_runs:
                raise UsageError("--trace options trace new runs; --batch re-analyses stored ones (its traces "
                                 "included) and runs nothing")
            res = analyse_profile(st, app_a, v1, v2, batch, **analysis)
            save_profile(st, res)
        else:
            from quiho.trace.fleet import resolve_trace, trace_from_options

            s = resolve_spec(app_a, spec=spec, project=proj)
            s.require_versions(v1, v2)
            # checked before anything runs: unknown function, not ELF, stripped binary exporting nothing
            want = trace_from_options(trace, trace_matching, trace_binary, trace_runs, s.trace)
            plan = resolve_trace(s, v1, v2, want) if want is not None else None
            res = _measure(st, s, v1, v2, d, resume=resume, fp_seconds=fp_seconds, fp_repetitions=fp_repetitions,
                           analysis={**analysis, "trace": plan})
    if report is not None:
        from quiho.report.html import write_report

        write_report(res, report)
    if json_out:
        emit_json(res.to_dict())
    elif fmt == "markdown":
        from quiho.profile.text import summary_markdown

        print(summary_markdown(res, report), end="")
    else:
        from quiho.profile.text import summary_lines

        print("\n".join(summary_lines(res, report)))
    if fail_on_change and res.verdict == "regression":
        raise ChangeFound()


def _measure(st: Any, spec: Any, v1: str, v2: str, d: Any, *, resume: str | None, fp_seconds: int | None,
             fp_repetitions: int | None, analysis: dict[str, Any]) -> Any:
    """Run the profile on the fleet with progress on stderr (``d``: the merged ProfileDefaults)."""
    from quiho.cli._fleet import _progress
    from quiho.fleet import load_inventory
    from quiho.fleet.local.calibrate import axes_kept, calibrated_fleet
    from quiho.profile import parse_age, run_profile

    age = parse_age(d.max_age)
    inventory = d.inventory
    if inventory is None:
        # the local fleet calibrated to this machine (probes it first if needed; says so on stderr); the number of
        # axes it kept goes to the analysis (no 'equivalent' on a one-axis fleet), which only run_profile's own
        # calibration passed on before, and the CLI never let it calibrate
        cal = calibrated_fleet(st, lambda msg: err(f"quiho profile: {msg}"))
        inventory = cal.inventory
        analysis = {**analysis, "fleet_axes": axes_kept(cal.choice)}
    with _progress(len(load_inventory(inventory).names), "profile") as on_event:
        return run_profile(
            spec, v1, v2, store=st, inventory=inventory, max_age_s=age, battery=d.battery,
            repetitions=d.repetitions, on_event=on_event, resume=resume, fingerprint_seconds=fp_seconds,
            fingerprint_repetitions=fp_repetitions, warmup=d.warmup,
            on_step=lambda msg: err(f"quiho profile: {msg}"), **analysis,
        )


def register(app: typer.Typer) -> None:
    app.command("profile")(profile_cmd)
