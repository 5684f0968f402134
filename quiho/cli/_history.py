"""``quiho history ...``: import, detect, plot, sample and bisect performance histories."""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer

from quiho._text import printable
from quiho.cli._alerts import BaseOpt, NewestAlphaOpt, detect_all, progress
from quiho.cli._alerts import register as register_alerts
from quiho.cli._common import (
    JsonOpt,
    StoreOpt,
    emit_json,
    err,
    number,
    plot_path,
    probability,
    seed,
    shell_words,
    timeout_s,
)

if TYPE_CHECKING:
    from quiho.history import ChangePoint


RevCol = Annotated[str, typer.Option("--revision-col", help="CSV column with the revision id.")]
ValCol = Annotated[str, typer.Option("--value-col", help="CSV column with the metric.")]
OrderCol = Annotated[str | None, typer.Option("--order-col", help="CSV column with integer revision positions.")]
ConfigCol = Annotated[list[str] | None, typer.Option("--config-col", help="Split into one series per value "
                                                                          "(repeatable).")]
SeriesOpt = Annotated[str | None, typer.Option("--series", help="Series name (pick one of a multi-series CSV).")]
MethodOpt = Annotated[str, typer.Option("--method", "-m", help="Detector: auto, auto-ar1, cusum, binseg, "
                                                              "bottomup, gmm, ttest, mannwhitney, pelt, combo.")]
MinSize = Annotated[int, typer.Option("--min-size", min=1, max=10**6, help="Minimum revisions per segment.")]
Floor = Annotated[float, typer.Option("--magnitude-floor", callback=number(0, 1e6), help="Ignore relative changes "
                                                                                        "below this (0.02 = 2%).")]
Alpha = Annotated[float, typer.Option("--alpha", callback=probability, help="Largest p-value reported.")]
RepoOpt = Annotated[Path, typer.Option("--repo", help="git repository to measure.")]
BuildOpt = Annotated[str, typer.Option("--build", callback=shell_words, help="Build command run in each worktree "
                                                                             "(shell words, no shell); '' for none.")]
BenchOpt = Annotated[str, typer.Option("--bench", callback=shell_words, help="Benchmark command; its wall time "
                                                                             "(see --metric) is the value.")]
RangeOpt = Annotated[str, typer.Option("--range", help="git revision range, oldest first (e.g. v1.0..main).")]
RepsOpt = Annotated[int, typer.Option("--repetitions", "-r", min=1, max=10**6, help="Benchmark runs per "
                                                                                   "revision.")]
MetricOpt = Annotated[str, typer.Option("--metric", help="wall (seconds per run), cpu (user+sys seconds, robust "
                                                         "to other load) or stdout (last number printed).")]
KernelOpt = Annotated[str, typer.Option("--kernel", help="GP kernel: brownian, rbf, rq, matern32, matern52.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", callback=timeout_s, help="Seconds allowed per build or "
                                                                                  "benchmark run.")]
FingerprintOpt = Annotated[bool, typer.Option("--fingerprint", help="Record this machine and its quick local "
                                                                  "fingerprint (reused; see quiho fingerprint "
                                                                  "--quick-local) on the imported revisions.")]
HostOpt = Annotated[str | None, typer.Option("--host", help="Record this stored host and its newest fingerprint on "
                                                            "the imported revisions.")]
MaxAgeOpt = Annotated[float, typer.Option("--max-age", callback=number(0, 24 * 366), help="Hours a --fingerprint "
                                          "of this machine is reused.")]
NormaliseOpt = Annotated[bool, typer.Option("--normalise", help="Remove the machine effect the revisions' "
                                                                "fingerprints explain, where it is validated on "
                                                                "this series (else raw, and why).")]


FormatOpt = Annotated[str, typer.Option("--format", help="Input format: auto (by content), csv, "
                                                         "pytest-benchmark, google-benchmark, hyperfine, asv, go, "
                                                         "jmh, custom, pyperf, criterion (gzip read as its "
                                                         "content; a target/criterion directory: every "
                                                         "benchmark).")]
OutFormat = Annotated[str, typer.Option("--format", help="Output: text or markdown (a CI job summary / PR "
                                                         "comment).")]


def _fmt_cp(cp: ChangePoint) -> str:
    return (f"  revision {printable(cp.revision)} (index {cp.index}): {cp.before:.4g} -> {cp.after:.4g} "
            f"({cp.magnitude:+.1%}), p = {cp.p_value:.2g}{printable(cp.location_text())}")


#: bytes of a file looked at to tell a result file from a CSV (the reader then reads the file once, whole)
_HEAD = 65536


def _is_result_file(path: Path, fmt: str) -> bool:
    """Whether ``path`` is read as a benchmark result file (not as a CSV), by its first bytes."""
    from quiho.errors import ImportDataError
    from quiho.history.sources import FORMATS, GZIP_MAGIC, detect_format

    if fmt != "auto":
        return fmt != "csv"
    if path.is_dir():  # a criterion output directory; the reader says if it is not one
        return True
    try:
        with path.open("rb") as f:
            raw = f.read(_HEAD)
    except OSError:
        return False  # the CSV reader names the problem
    if raw.startswith(GZIP_MAGIC):  # a compressed result file (pyperf -o FILE.json.gz)
        return True
    head = raw.decode("utf-8-sig", errors="replace").lstrip()
    if head.startswith(("{", "[")):
        return True
    try:
        detect_format(head, str(path))  # go's text names its benchmarks in its first lines
        return True
    except ImportDataError:
        first = head.splitlines()[0] if head else ""
        if "," in first:
            return False
        raise ImportDataError(f"{path}: not a result file of a known format (tried: {', '.join(FORMATS)}, "
                              "csv)") from None


def import_(
    file: Annotated[Path | None, typer.Argument(metavar="FILE", readable=False,  # unreadable: our one-line error
                                                help="Result file (see --format) or CSV with one row per "
                                                     "measured value.")] = None,
    fmt: FormatOpt = "auto",
    revision: Annotated[str | None, typer.Option("--revision", help="Revision of a result file (default: the "
                                                                    "file's, else git HEAD where it lies).")] = None,
    revision_col: RevCol = "revision",
    value_col: ValCol = "value",
    order_col: OrderCol = None,
    config_col: ConfigCol = None,
    series: Annotated[str | None, typer.Option("--series", help="Base series name of a CSV (default file "
                                                                "stem).")] = None,
    unit: Annotated[str, typer.Option("--unit", help="Unit of a CSV's values, e.g. s or ops/s.")] = "",
    from_runs: Annotated[str | None, typer.Option("--from-runs", help="APPLICATION/TEST from the store's "
                                                                      "application runs.")] = None,
    append: Annotated[bool, typer.Option("--append", help="Add a result file's values to the revision's stored "
                                                          "ones (another run of it, on the same machine) instead "
                                                          "of replacing them.")] = False,
    fingerprint: FingerprintOpt = False,
    host: HostOpt = None,
    max_age: MaxAgeOpt = 168.0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Store histories: a revision from a benchmark result file, a CSV (replaces same-named series) or runs."""
    from quiho.errors import UsageError
    from quiho.history import (
        import_history_csv,
        import_history_from_runs,
        import_results,
        read_history_csv,
        read_results,
    )
    from quiho.store import open_store

    if (file is None) == (from_runs is None):
        raise UsageError("give either a FILE or --from-runs APPLICATION/TEST")
    no_append = ("--append adds a benchmark result file's values to its revision; a CSV or --from-runs replaces "
                 "whole series")
    if from_runs is not None:
        if append:
            raise UsageError(no_append)
        app_name, _, test = from_runs.partition("/")
        if not test:
            raise UsageError("--from-runs takes APPLICATION/TEST")
        with open_store(store) as st:
            s = import_history_from_runs(st, app_name, test, series)
        doc = asdict(s)
    elif file is not None and _is_result_file(file, fmt):
        rf = read_results(file, fmt)  # validate before the store is opened; read once
        with open_store(store) as st:
            r = import_results(st, file, fmt, revision, rf, append)
        doc = r.to_dict()
        s = None
    else:
        assert file is not None
        if append and file.is_file():  # a missing file: the CSV reader names it
            raise UsageError(no_append)
        hs = read_history_csv(file, revision_col=revision_col, value_col=value_col, order_col=order_col,
                              config_cols=config_col or (), name=series, unit=unit)  # validate first
        with open_store(store) as st:
            s = import_history_csv(st, file, hs)
        doc = {**asdict(s), "skipped": {"missing": sum(h.missing for h in hs)}}
    if fingerprint or host is not None:  # which machine measured these revisions (quiho.history.machines)
        from quiho.cli._machines import record_import_machine

        names = list(s.series) if s is not None else [str(x["name"]) for x in doc["series"]]
        record_import_machine(store, names, None if s is not None else str(doc["revision"]), fingerprint, host,
                              max_age)
    if json_out:
        emit_json(doc)
        return
    if s is not None:
        for name, nrev, nval in zip(s.series, s.revisions, s.values, strict=True):
            err(f"imported {printable(name)}: {nrev} revisions, {nval} values")
    else:
        for ser in doc["series"]:
            err(f"imported {printable(ser['name'])} @ {printable(doc['revision'])[:12]}: {ser['values']} values "
                f"({printable(ser['unit']) or 'no unit'}, {ser['direction']} is better)")
    missing = doc.get("skipped", {}).get("missing", 0)
    if missing:
        err(f"skipped {missing} missing value{'s' if missing != 1 else ''} (empty, NaN or null)")


def list_(store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """List the stored series with their measured, failed and pending revision counts."""
    from quiho.history import list_series
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        rows = list_series(st)
    if json_out:
        emit_json({"series": rows})
        return
    for r in rows:
        print(f"{printable(r['name'])}\t{r['ok'] or 0} ok\t{r['failed'] or 0} failed\t{r['pending'] or 0} pending\t"
              f"{printable(r['source'])}")


def detect_(
    target: Annotated[str | None, typer.Argument(metavar="FILE_OR_SERIES", help="CSV file or stored series "
                                                                                "name.")] = None,
    all_series: Annotated[bool, typer.Option("--all", help="Every series in the store: one verdict table, "
                                                           "regressions kept as alerts; --fail-on-change exits 3 "
                                                           "while an alert is new.")] = False,
    method: MethodOpt = "auto",
    min_size: MinSize = 5,
    magnitude_floor: Floor = 0.0,
    alpha: Alpha = 0.01,
    revision_col: RevCol = "revision",
    value_col: ValCol = "value",
    order_col: OrderCol = None,
    config_col: ConfigCol = None,
    series: SeriesOpt = None,
    fmt: OutFormat = "text",
    fail_on_change: Annotated[bool, typer.Option("--fail-on-change", help="Exit 3 if a change is found (with "
                                                                          "--all: while an alert is new; with "
                                                                          "--base: a regression; with --normalise: "
                                                                          "a change point or the newest revision "
                                                                          "regressing).")] = False,
    base: BaseOpt = None,
    newest_alpha: NewestAlphaOpt = None,
    location: Annotated[str | None, typer.Option("--location", help="Each revision's value in the gate: min "
                                                                    "(default: its best round, the lowest time or "
                                                                    "highest rate, survives a busy runner), q25 "
                                                                    "(q75 of a rate), median, mean, or rounds "
                                                                    "(every round under the random-effects model, "
                                                                    "the earlier default).")] = None,
    normalise: NormaliseOpt = False,
    rerun: Annotated[str | None, typer.Option("--rerun", callback=shell_words, metavar="CMD",
                                              help="With --all: rerun each new alert's first bad revision and the "
                                                   "one before it in pairs with this benchmark command (as "
                                                   "'history confirm'); only a confirmed regression fails.")]
    = None,
    rerun_build: Annotated[str, typer.Option("--rerun-build", callback=shell_words, metavar="CMD",
                                             help="With --rerun: build command run in each worktree.")] = "",
    repo: Annotated[Path, typer.Option("--repo", help="With --rerun: the git repository.")] = Path("."),
    pairs: Annotated[int, typer.Option("--pairs", min=1, max=10_000, help="With --rerun: pairs of runs.")] = 20,
    rerun_metric: Annotated[str, typer.Option("--rerun-metric", help="With --rerun: wall, cpu or stdout (as "
                                                                     "--metric of 'history confirm').")] = "wall",
    rerun_level: Annotated[float, typer.Option("--rerun-level", callback=number(0.5, 1, hi_open=True),
                                               help="With --rerun: confidence of the paired interval.")] = 0.95,
    timeout: Annotated[float, typer.Option("--timeout", callback=timeout_s, help="With --rerun: seconds allowed "
                                                                                "per build or run.")] = 600.0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Find change points in one history, or check every stored series (--all) and keep their alerts."""
    from quiho.cli.main import ChangeFound
    from quiho.errors import UsageError
    from quiho.history import detect, open_history

    if fmt not in ("text", "markdown"):
        raise UsageError(f"--format must be text or markdown, got {fmt!r}")
    if all_series == (target is not None):
        raise UsageError("give either FILE_OR_SERIES or --all")
    if base is not None and not all_series:
        raise UsageError("--base goes with --all")
    if newest_alpha is not None and not (all_series or normalise):
        raise UsageError("--newest-alpha goes with --all or --normalise")
    if location is not None and not (all_series or fmt == "markdown"):
        raise UsageError("--location goes with --all or --format markdown (the gate's verdicts)")
    if rerun is not None and not all_series:
        raise UsageError("--rerun goes with --all: the gate's new alerts are what it reruns")
    if rerun is None and (rerun_build or pairs != 20 or rerun_metric != "wall" or rerun_level != 0.95
                          or timeout != 600.0 or repo != Path(".")):
        raise UsageError("--rerun-build, --repo, --pairs, --rerun-metric, --rerun-level and --timeout go with "
                         "--rerun")
    if all_series:
        from quiho.history import GateOptions

        gate = GateOptions(method, alpha, min_size, magnitude_floor, base)
        gate = replace(gate, location=location) if location is not None else gate
        again = None if rerun is None else _rerun_of(rerun, rerun_build, repo, pairs, rerun_metric, rerun_level,
                                                     timeout, gate)
        gate = gate if newest_alpha is None else replace(gate, newest_alpha=newest_alpha)
        view = None
        if normalise:  # each series' values with its machines' effect removed, where the series validates it
            from quiho.history.normalise import NormaliseOptions, normalised_view

            view = normalised_view(NormaliseOptions(method=method, min_size=min_size,
                                                    magnitude_floor=magnitude_floor, alpha=alpha),
                                   newest_alpha=gate.newest_alpha, test_within=gate.test_within)
        detect_all(store, gate, fmt, fail_on_change, json_out, again, view)
        return
    assert target is not None
    if normalise:  # remove what the machines' fingerprints explain, where validated (quiho.history.normalise)
        from quiho.cli._machines import normalised_detect
        from quiho.history.normalise import NormaliseOptions

        opts = NormaliseOptions(method=method, min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha)
        if normalised_detect(store, target, opts, fmt, json_out, newest_alpha) and fail_on_change:
            raise ChangeFound()
        return
    h, _ = open_history(target, store_path=store, series=series, revision_col=revision_col,
                        value_col=value_col, order_col=order_col, config_cols=config_col or ())
    d = detect(h, method, min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha)
    if json_out:
        emit_json({**d.to_dict(), "skipped": {"missing": h.missing}})
    elif fmt == "markdown":
        from quiho.history.gate import verdict_markdown, verdict_of

        kw = {} if location is None else {"location": location}
        sys.stdout.write(verdict_markdown([verdict_of(h, method, alpha=alpha, min_size=min_size,
                                                      magnitude_floor=magnitude_floor, **kw)]))
    else:
        print("\n".join(detection_lines(d, h.missing, alpha, magnitude_floor)))
    if fail_on_change and d.change_points:
        raise ChangeFound()


def _rerun_of(bench: str, build: str, repo: Path, pairs: int, metric: str, level: float, timeout: float,
              gate: object) -> tuple[object, object]:
    """``detect --all --rerun CMD``'s benchmark and confirmation settings, checked before the gate runs.

    The confirmation's magnitude floor is the gate's: one floor for the one claim.
    """
    from quiho.errors import UsageError
    from quiho.history import GitBench
    from quiho.history.gate import ConfirmOptions, min_pairs

    if not bench.strip():
        raise UsageError("--rerun needs the benchmark command, e.g. --rerun 'python bench.py'")
    if getattr(gate, "base", None) is not None:
        raise UsageError("--rerun goes without --base: a PR's check raises no alert to confirm")
    if pairs < min_pairs(level):
        raise UsageError(f"--pairs {pairs} cannot decide at --rerun-level {level}: at least {min_pairs(level)} "
                         "pairs")
    target = GitBench(repo, tuple(shlex.split(build)), tuple(shlex.split(bench)), metric=metric, timeout=timeout)
    target.runner()  # checks the metric before anything is built
    return target, ConfirmOptions(pairs, level=level, magnitude_floor=getattr(gate, "magnitude_floor", 0.0))


def detection_lines(d: object, missing: int, alpha: float, magnitude_floor: float) -> list[str]:
    """Text output of ``history detect`` for one series."""
    lines = [f"{printable(d.series)}: {d.n} revisions, method {d.method}"]  # type: ignore[attr-defined]
    if missing:
        lines.append(f"  skipped {missing} missing value{'s' if missing != 1 else ''} (empty, NaN or null)")
    if not d.meaningful:  # type: ignore[attr-defined]
        lines.append(f"  {d.reason}")  # type: ignore[attr-defined]
    elif not d.change_points:  # type: ignore[attr-defined]
        lines.append(f"  no change with p <= {alpha}" + (f" and |magnitude| >= {magnitude_floor:.1%}"
                                                        if magnitude_floor else ""))
    lines += [_fmt_cp(cp) for cp in d.change_points]  # type: ignore[attr-defined]
    return lines


def plot_(
    target: Annotated[str, typer.Argument(metavar="FILE_OR_SERIES", help="CSV file or stored series name.")],
    output: Annotated[Path, typer.Option("--output", "-o", callback=plot_path, help="Output .png or .svg.")],
    method: MethodOpt = "auto",
    kernel: KernelOpt = "brownian",
    min_size: MinSize = 5,
    magnitude_floor: Floor = 0.0,
    revision_col: RevCol = "revision",
    value_col: ValCol = "value",
    order_col: OrderCol = None,
    series: SeriesOpt = None,
    unit: Annotated[str, typer.Option("--unit", help="Unit label for a CSV input.")] = "",
    normalise: NormaliseOpt = False,
    store: StoreOpt = None,
) -> None:
    """Plot a history: values, change points, GP mean ± 2σ and which revisions were measured."""
    from quiho.history import detect, open_history, plot_history

    if normalise:  # raw and normalised side by side
        from quiho.cli._machines import normalised_plot
        from quiho.history.normalise import NormaliseOptions

        normalised_plot(store, target, output, NormaliseOptions(method=method, min_size=min_size,
                                                                magnitude_floor=magnitude_floor))
        return

    h, state = open_history(target, store_path=store, series=series, revision_col=revision_col,
                            value_col=value_col, order_col=order_col, unit=unit)
    d = detect(h, method, min_size=min_size, magnitude_floor=magnitude_floor)
    n_orders = max((s.order for s in state), default=-1) + 1 or None
    failed = [s.order for s in state if s.status == "failed"]
    out = plot_history(h, output, detection=d, kernel=kernel, n_orders=n_orders, failed_orders=failed)
    err(f"wrote {printable(out)}")


def sample_(
    repo: RepoOpt,
    build: BuildOpt,
    bench: BenchOpt,
    budget: Annotated[int, typer.Option("--budget", min=1, max=10**6, help="Most revisions to build in total "
                                                                           "(resumed runs count).")],
    series: Annotated[str, typer.Option("--series", help="Series name in the store.")] = "git",
    stop_sigma: Annotated[float | None, typer.Option("--stop-sigma", callback=number(0), help="Stop once the "
                                                     "largest posterior sigma is at most this (metric units).")]
    = None,
    repetitions: RepsOpt = 3,
    rev_range: RangeOpt = "HEAD",
    strategy: Annotated[str, typer.Option("--strategy", help="active (max sigma) or random.")] = "active",
    kernel: KernelOpt = "brownian",
    metric: MetricOpt = "wall",
    timeout: TimeoutOpt = 600.0,
    random_state: Annotated[int, typer.Option("--random-state", callback=seed)] = 0,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Measure the revisions of a git repository that the GP is least sure about."""
    from quiho.history import GitBench, SamplingPlan, sample_git_history
    from quiho.store import open_store

    target = GitBench(repo, tuple(shlex.split(build)), tuple(shlex.split(bench)), rev_range=rev_range,
                      repetitions=repetitions, metric=metric, timeout=timeout)
    plan = SamplingPlan(budget, strategy=strategy, kernel=kernel, stop_sigma=stop_sigma, random_state=random_state)
    with open_store(store) as st:
        r = sample_git_history(st, target, plan, series=series, log=err)
    doc = {
        "series": r.series, "n_revisions": r.n_revisions, "new_builds": r.new_builds,
        "stop_reason": r.stop_reason, "max_sigma": r.max_sigma,
        "loo_mape": r.loo_mape if np.isfinite(r.loo_mape) else None,
        "measured": [{"revision": rev, "index": i, "mean": v} for rev, i, v in r.measured],
        "failed": [{"revision": rev, "index": i, "reason": why} for rev, i, why in r.failed],
        "unstable": list(r.unstable),
        "posterior": [{"index": i, "mean": m if np.isfinite(m) else None, "sigma": s if np.isfinite(s) else None}
                      for i, (m, s) in enumerate(zip(r.mean, r.sigma, strict=True))],
    }
    if json_out:
        emit_json(doc)
        return
    print(f"{r.series}: {len(r.measured)} of {r.n_revisions} revisions measured ({r.new_builds} built now), "
          f"{len(r.failed)} failed; stopped: {r.stop_reason}; largest posterior sigma {r.max_sigma:.3g}")
    if np.isfinite(r.loo_mape):
        print(f"  GP leave-one-out MAPE at the measured revisions: {r.loo_mape:.2f} %")
    if r.unstable:
        print(f"  unstable (repetitions span >= 10 % of the mean): {', '.join(x[:12] for x in r.unstable)}")
    for rev, i, why in r.failed:
        print(f"  skipped [{i}] {rev[:12]}: {why}")

def bisect_(
    repo: RepoOpt,
    build: BuildOpt,
    bench: BenchOpt,
    series: Annotated[str, typer.Option("--series", help="Series whose measurements to reuse.")] = "git",
    repetitions: RepsOpt = 3,
    rev_range: RangeOpt = "HEAD",
    alpha: Alpha = 0.01,
    kernel: KernelOpt = "brownian",
    metric: MetricOpt = "wall",
    timeout: TimeoutOpt = 600.0,
    confirm: Annotated[bool, typer.Option("--confirm/--no-confirm",
                                          help="Measure the two revisions around a meaningful change again (two "
                                               "more builds); the change must hold with those measurements too.")
    ] = False,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Find the commit that introduced the largest change, with the GP choosing what to build."""
    from quiho.history import BisectPlan, GitBench, bisect_git_history
    from quiho.store import open_store

    target = GitBench(repo, tuple(shlex.split(build)), tuple(shlex.split(bench)), rev_range=rev_range,
                      repetitions=repetitions, metric=metric, timeout=timeout)
    with open_store(store) as st:
        r = bisect_git_history(st, target, BisectPlan(alpha=alpha, kernel=kernel, confirm=confirm),
                                series=series, log=err)
    doc = asdict(r)
    for k in ("before", "after", "magnitude", "p_value"):
        if not np.isfinite(doc[k]):
            doc[k] = None
    if json_out:
        emit_json(doc)
        return
    if not r.meaningful:
        print(f"{r.series}: {r.reason}")
    else:
        print(f"{r.series}: first changed revision {r.first_bad} (index {r.first_bad_index}) after {r.last_good}: "
              f"{r.before:.4g} -> {r.after:.4g} ({r.magnitude:+.1%}), p = {r.p_value:.2g}")
        if r.reason:
            print(f"  {r.reason}")
    again = f" ({r.confirm_builds} of them measuring the change's revisions again)" if r.confirm_builds else ""
    print(f"  builds: {r.new_builds} new{again} + {r.reused} reused; plain bisection would build "
          f"{r.plain_bisection_builds}")


def confirm_(
    alert_id: Annotated[int | None, typer.Argument(metavar="[ALERT]", callback=number(1, 2**63 - 1),
                                                   help="Alert to confirm (default: the one open alert); its first "
                                                        "bad revision is the suspect.")] = None,
    repo: RepoOpt = Path("."),
    bench: BenchOpt = "",
    build: BuildOpt = "",
    suspect: Annotated[str | None, typer.Option("--suspect", help="Revision suspected of a regression, instead of "
                                                                  "an alert (with --baseline).")] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Revision to compare with (default with an "
                                                                    "alert: the one before its first bad "
                                                                    "revision).")] = None,
    pairs: Annotated[int, typer.Option("--pairs", min=1, max=10_000, help="Pairs of runs (suspect and baseline "
                                                                          "once each, order alternating); 6 or "
                                                                          "more for a 95 % interval.")] = 20,
    warmup: Annotated[int, typer.Option("--warmup", min=0, max=1000, help="Discarded runs of each revision "
                                                                         "first.")] = 1,
    metric: MetricOpt = "wall",
    level: Annotated[float, typer.Option("--level", callback=number(0.5, 1, hi_open=True),
                                         help="Confidence of the paired interval.")] = 0.95,
    magnitude_floor: Floor = 0.0,
    higher_is_better: Annotated[bool | None, typer.Option("--higher-is-better/--lower-is-better",
                                                          help="Direction of the metric (default: the alert "
                                                               "series' unit, else lower).")] = None,
    timeout: TimeoutOpt = 600.0,
    fail_on_change: Annotated[bool, typer.Option("--fail-on-change", help="Exit 3 if the regression is "
                                                                          "confirmed.")] = False,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Rerun a suspect revision and its baseline in pairs on this machine and confirm (or not) the regression."""
    from quiho.cli.main import ChangeFound
    from quiho.errors import UsageError
    from quiho.history import GitBench
    from quiho.history.gate import ConfirmOptions, confirm_alert, confirm_revisions, confirmation_lines, list_alerts
    from quiho.store import open_store

    if not bench.strip():
        raise UsageError("--bench needs the benchmark command, e.g. --bench 'python bench.py'")
    if suspect is not None and alert_id is not None:
        raise UsageError("give either an ALERT or --suspect, not both")
    if suspect is not None and baseline is None:
        raise UsageError("--suspect needs --baseline")
    opts = ConfirmOptions(pairs, warmup, level, magnitude_floor, higher_is_better)
    target = GitBench(repo, tuple(shlex.split(build)), tuple(shlex.split(bench)), metric=metric, timeout=timeout)
    target.runner()  # checks the metric before anything is built
    with open_store(store, create=suspect is not None) as st:
        if suspect is not None:
            assert baseline is not None
            c = confirm_revisions(st, target, suspect, baseline, opts, log=progress)
        else:
            if alert_id is None:
                open_ = list_alerts(st)
                if len(open_) != 1:
                    names = ", ".join(f"#{a.id}" for a in open_[:5]) or "none"
                    raise UsageError(f"{len(open_)} open alerts ({names}): name one, or give --suspect and "
                                     "--baseline")
                alert_id = open_[0].id
            c = confirm_alert(st, alert_id, target, opts, baseline=baseline, log=progress)
    if json_out:
        emit_json(c.to_dict())
    else:
        print("\n".join(printable(ln) for ln in confirmation_lines(c)))
    if fail_on_change and c.change.verdict == "confirmed":
        raise ChangeFound()


def register(app: typer.Typer) -> None:
    """Add ``quiho history`` and its commands to ``app``."""
    hist = typer.Typer(help="Performance histories: change points and GP revision sampling.", no_args_is_help=True)
    app.add_typer(hist, name="history")
    for name, fn in (("import", import_), ("list", list_), ("detect", detect_), ("plot", plot_),
                     ("sample", sample_), ("bisect", bisect_), ("confirm", confirm_)):
        hist.command(name)(fn)
    register_alerts(hist)
