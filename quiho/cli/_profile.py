"""``quiho profile APP@V1 APP@V2``: did performance change, how much, how sure, and where to look."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from quiho.app import AppSpec
    from quiho.profile import ProfileOptions, ProfileResult
    from quiho.store import Store


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
    battery: Annotated[str | None, typer.Option("--battery", help="Battery of a new fingerprint (default resources)."
                                                )] = None,
    max_age: Annotated[str | None, typer.Option("--max-age", help="Reuse fingerprints at most this old (e.g. 6h; "
                                                                  "0 = always fingerprint). Default 24h.")] = None,
    fp_seconds: Annotated[int | None, typer.Option("--fingerprint-seconds", min=1, max=86400, help="Seconds per "
                                                   "stressor of a new fingerprint (default: the battery's).")] = None,
    fp_repetitions: Annotated[int | None, typer.Option("--fingerprint-repetitions", min=1, max=10_000,
                                                       help="Repetitions of a new fingerprint (default: the "
                                                       "battery's).")] = None,
    fp_hosts: Annotated[str | None, typer.Option("--fingerprint-hosts", metavar="all|first-round",
                                                 help="Hosts a new fingerprint covers on a designed local fleet: "
                                                 "all, or first-round (the fold-over's hosts are measured but not "
                                                 "fingerprinted: faster; the IRUPs rest on half the hosts). "
                                                 "Default all.")] = None,
    repetitions: Annotated[int | None, typer.Option("--repetitions", min=1, max=10_000, help="Runs per version per "
                                                    "host (default: the spec's).")] = None,
    warmup: Annotated[int | None, typer.Option("--warmup", min=0, max=10_000, help="Discarded warm-up runs per "
                                               "version per host visit (default 1).")] = None,
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, max=20, help="Blocked measurement rounds on a "
                                               "fleet that shares this machine: every host visited once per "
                                               "round in a new order, the repetitions split over the rounds "
                                               "(default 2).")] = None,
    stages: Annotated[int | None, typer.Option("--stages", min=1, max=2, help="Passes over a designed fleet's "
                                               "hosts: 2 tests the design's changes at half the level and visits "
                                               "every host again when the first pass is inconclusive; 1 never "
                                               "does (default 2).")] = None,
    min_change: Annotated[float | None, typer.Option("--min-change", callback=number(0, 1, hi_open=True),
                                                     help="Magnitude floor as a fraction (default 0.05 = 5 %).")]
    = None,
    alpha: Annotated[float | None, typer.Option("--alpha", callback=probability, help="Significance level of the "
                                                "paired test (default 0.05).")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", min=1, max=10_000, help="IRUP model fits per version "
                                              "(default 10).")] = None,
    random_state: Annotated[int | None, typer.Option("--random-state", callback=seed, help="Master seed (default 0)."
                                                     )] = None,
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
    jobs: Annotated[int | None, typer.Option("--jobs", callback=worker_count, help="Parallel model fits (-1 = all "
                                             "cores; the default).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Output: text, or markdown (a CI job summary / PR "
                                                      "comment).")] = "text",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare two versions of an application on a fleet: metric change, IRUPs, root-cause hints."""
    from quiho.cli.main import ChangeFound
    from quiho.errors import UsageError
    from quiho.profile import ProfileOptions, analyse_profile, load_project, resolve_spec, save_profile
    from quiho.store import open_store

    if fmt not in ("text", "markdown"):
        raise UsageError(f"--format must be text or markdown, got {fmt!r}")
    app_a, v1 = _split(a)
    app_b, v2 = _split(b)
    if app_a != app_b:
        raise UsageError(f"both versions must be of one application ({app_a!r} vs {app_b!r})")
    proj = load_project(project)
    with open_store(store) as st:
        joined = None
        if traces or trace_baseline or trace_target:
            from quiho.profile.traces import join_traces

            # before anything runs: a bad trace reference must not cost a fleet run
            joined = join_traces(st, app_a, v1, v2, baseline=trace_baseline, target=trace_target)
        spec_ = plan = None
        if batch is not None:
            if trace or trace_matching or trace_binary or trace_runs:
                raise UsageError("--trace options trace new runs; --batch re-analyses stored ones (its traces "
                                 "included) and runs nothing")
        else:
            from quiho.trace.fleet import resolve_trace, trace_from_options

            spec_ = resolve_spec(app_a, spec=spec, project=proj)
            spec_.require_versions(v1, v2)
            # checked before anything runs: unknown function, not ELF, stripped binary exporting nothing
            want = trace_from_options(trace, trace_matching, trace_binary, trace_runs, spec_.trace)
            plan = resolve_trace(spec_, v1, v2, want) if want is not None else None
        # the one place the settings are put together: options given over quiho.yml over the models' defaults
        opts = ProfileOptions.build(
            proj.profile if proj else None, inventory=str(inventory) if inventory is not None else None,
            battery=battery, max_age=max_age, fingerprint_seconds=fp_seconds, fingerprint_repetitions=fp_repetitions,
            fingerprint_hosts=fp_hosts,
            repetitions=repetitions, warmup=warmup, rounds=rounds, resume=resume, trace=plan, min_change=min_change,
            alpha=alpha, stages=stages,
            seeds=seeds, random_state=random_state, n_jobs=jobs,
            trace_changes=joined.changes if joined is not None else None,
            trace_note=joined.note() if joined is not None else None)
        if spec_ is None:
            from quiho.profile import Measured

            # a re-analysis of a real fleet's batch: its inventory (if given) says which factors the hosts carry
            measured = Measured(design_vars=_design_vars(inventory)) if inventory is not None else None
            res = analyse_profile(st, app_a, v1, v2, str(batch), opts.analysis, measured=measured)
            save_profile(st, res)
        else:
            res = _measure(st, spec_, v1, v2, opts)
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


def _measure(st: Store, spec: AppSpec, v1: str, v2: str, opts: ProfileOptions) -> ProfileResult:
    """Run the profile on the fleet with progress on stderr."""
    from quiho.cli._fleet import _progress
    from quiho.fingerprint import load_battery
    from quiho.fleet import load_inventory
    from quiho.fleet.local.calibrate import resolve_fleet
    from quiho.profile import run_profile

    def say(msg: str) -> None:
        err(f"quiho profile: {msg}")

    load_battery(opts.measure.battery)  # an unknown name must not cost a calibration first
    # no -i: the local fleet calibrated to this machine (probes it first if needed; says so on stderr)
    fleet = resolve_fleet(opts.measure.inventory, st, say)
    with _progress(len(load_inventory(fleet.inventory).names), "profile") as on_event:
        return run_profile(spec, v1, v2, store=st, options=opts, fleet=fleet, on_event=on_event, on_step=say)


def register(app: typer.Typer) -> None:
    app.command("profile")(profile_cmd)


def _design_vars(inventory: Path) -> dict[str, dict[str, object]] | None:
    """The inventory's hosts' known conditions, or None when it names none (the stored calibration decides)."""
    from quiho.fleet import load_inventory

    found = load_inventory(inventory).design_vars()
    return found if any(found.values()) else None
