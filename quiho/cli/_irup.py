"""``quiho irup``, ``quiho compare``, ``quiho advise``, ``quiho targets``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from quiho.cli._common import JsonOpt, StoreOpt, emit_json, err, number, plot_path

ImportanceOpt = Annotated[
    str, typer.Option("--importance", help="classic (paper), impurity (current scikit-learn) or permutation.")
]
SeedsOpt = Annotated[int, typer.Option("--seeds", min=1, max=10_000, help="Model fits; spread and stability are "
                                                                         "over these.")]
RandomOpt = Annotated[int, typer.Option("--random-state", min=0, max=2**32 - 1, help="Master seed, 0..2**32-1 "
                                                                                  "(same seed, same result).")]
ResampleOpt = Annotated[
    str, typer.Option("--resample", help="groups: each seed bootstraps hardware groups; none: paper (all rows).")
]
BatchOpt = Annotated[str | None, typer.Option("--batch", help="Only rows of this batch / fingerprint run.")]


def _jobs(value: int) -> int:
    if value == 0 or value < -1:
        raise typer.BadParameter(f"{value} is not a number of workers: use -1 (all cores) or a count ≥ 1")
    return value


JobsOpt = Annotated[int, typer.Option("--jobs", callback=_jobs, help="Parallel workers (-1 = all cores).")]
ModelOpt = Annotated[
    str, typer.Option("--model", help="quiho (default: the paper's 1000 trees, lr 0.01, batched engine), paper (the "
                                      "same on scikit-learn, the reference) or fast (250 scikit-learn trees, lr 0.04).")
]


def _irup(store: str | None, target: str, batch: str | None, model: str, **fit: Any):
    """The IRUP of ``target`` (``fit``: importance, seeds, random_state, resample, n_jobs)."""
    from quiho.irup import ModelParams, irup_for_target
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        return irup_for_target(st, target, batch=batch, params=ModelParams.preset(model), **fit)


def _print_irup(irup, top: int) -> None:
    out = Console(highlight=False)
    v = irup.validity
    out.print(f"IRUP of {escape(irup.target)}  ({irup.importance}, {irup.seeds} seeds, resample={irup.resample}, "
              f"{irup.rows} rows, metric in {escape(irup.unit)})")
    t = Table(show_edge=False, pad_edge=False)
    for col in ("rank", "stressor", "importance", "± sd", "class", "top-3 share"):
        t.add_column(col, justify="right" if col in ("rank", "importance", "± sd", "top-3 share") else "left")
    from quiho.fingerprint import load_catalog

    cat = load_catalog()
    for i, f in enumerate(irup.top(top), 1):
        t.add_row(str(i), escape(f.stressor) + (" (noisy)" if f.noisy else ""), f"{f.importance:.1f}",
                  f"{f.std:.1f}", escape(f.primary), f"{f.top3_frequency:.0%}")
    out.print(t)
    out.print("where to look first:")
    for f in irup.top(3):
        entry = cat.get(f.stressor)
        out.print(f"  {escape(f.stressor)}: {escape(entry.hint if entry else 'not in the stressor catalog')}")
    out.print(f"validity: {v.verdict.upper()} — {escape(v.reason)}")
    if irup.dropped:
        out.print("dropped: " + escape(", ".join(f"{d.stressor} ({d.reason})" for d in irup.dropped)))
    for n in irup.notes:
        out.print("note: " + escape(n))


def comparison_lines(c) -> list[str]:
    """What ``quiho compare`` prints (names escaped for the terminal)."""
    from quiho._text import printable as p

    lines = [f"{p(c.target_a)} vs {p(c.target_b)}: {c.verdict.upper()}", p(c.reason)]
    if c.shift is not None:
        t = c.shift
        lines.append(f"profile-shift test: p = {t.p_value:.3g} (host × version interaction, B = {t.permutations} "
                     f"within-host permutations, {t.hosts_shared} shared hosts); IRUP distance {t.distance:.3f} "
                     f"(p = {t.distance_p:.3g}), null {1 - t.alpha:.0%} quantile {t.null_quantile:.3f}")
    else:
        lines.append("profile-shift test: not run (--permutations 0): the verdict is the uncalibrated walk")
    lines += [f"  rank {s.rank}: {'same' if s.same else 'DIFFERENT'} — {p(s.why)}" for s in c.steps]
    lines.append(f"Spearman ρ = {c.spearman:.2f} (p = {c.spearman_p:.2g}), Kendall τ = {c.kendall:.2f} "
                 f"(p = {c.kendall_p:.2g}) over all stressors")
    shifts = ", ".join(f"{k} {v:+.0%}" for k, v in c.class_shift.items() if abs(v) >= 0.005)
    lines.append(f"class-share shift (B − A): {shifts or 'none'}")
    return lines


def targets(store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """List the targets (APP, APP@VERSION, APP/TEST) that have application runs in the store."""
    from quiho.irup import list_targets
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        df = list_targets(st)
    if json_out:
        emit_json(df[["target", "runs", "hosts", "unit"]].to_dict(orient="records"))
        return
    for r in df.itertuples():
        print(f"{r.target}\t{r.runs} runs\t{r.hosts} hosts\t{r.unit}")


def irup_cmd(
    target: Annotated[str, typer.Argument(help="BENCHMARK/TEST, or BENCHMARK where the test is named alike.")],
    store: StoreOpt = None,
    importance: ImportanceOpt = "classic",
    seeds: SeedsOpt = 10,
    random_state: RandomOpt = 0,
    resample: ResampleOpt = "groups",
    batch: BatchOpt = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Rows shown in the text output.")] = 10,
    plot: Annotated[Path | None, typer.Option("--plot", callback=plot_path, help="Write the IRUP bars (PNG or "
                                              "SVG).")] = None,
    model: ModelOpt = "quiho",
    jobs: JobsOpt = -1,
    json_out: JsonOpt = False,
) -> None:
    """Infer the resource utilization profile of TARGET from the fleet's fingerprints."""
    irup = _irup(store, target, batch, model, importance=importance, seeds=seeds, random_state=random_state,
                 resample=resample, n_jobs=jobs)
    if plot is not None:
        from quiho.report.plots import irup_bars, save

        err(f"plot written to {save(irup_bars(irup), plot)}")
    if json_out:
        emit_json(irup.to_dict())
    else:
        _print_irup(irup, top)


def compare_cmd(
    target_a: Annotated[str, typer.Argument(help="First target.")],
    target_b: Annotated[str, typer.Argument(help="Second target.")],
    store: StoreOpt = None,
    importance: ImportanceOpt = "classic",
    seeds: SeedsOpt = 10,
    random_state: RandomOpt = 0,
    random_state_b: Annotated[
        int | None, typer.Option("--random-state-b", min=0, max=2**32 - 1, help="Seed for B (default: same as A).")
    ] = None,
    resample: ResampleOpt = "groups",
    top_k: Annotated[int, typer.Option("--top-k", min=1, help="A divergence at rank ≤ K means different.")] = 3,
    permutations: Annotated[int, typer.Option(
        "--permutations", min=0, max=100_000, help="Within-host permutations of the profile-shift test (0 = "
        "uncalibrated walk only, e.g. for targets measured on different hosts).")] = 200,
    alpha: Annotated[float, typer.Option("--alpha", callback=number(0, 1, lo_open=True, hi_open=True),
                                         help="Level of the profile-shift test.")] = 0.05,
    plot: Annotated[Path | None, typer.Option("--plot", callback=plot_path, help="Write both IRUPs side by "
                                              "side.")] = None,
    model: ModelOpt = "quiho",
    jobs: JobsOpt = -1,
    json_out: JsonOpt = False,
) -> None:
    """Compare the IRUPs of two targets: permutation test of a profile shift, rank walk, class shares, verdict."""
    from quiho.irup import ModelParams, ShiftSettings, compare_irups, compute_irup, load_target, save_irup, shift_test
    from quiho.store import open_store

    params = ModelParams.preset(model)
    rs_b = random_state if random_state_b is None else random_state_b
    with open_store(store, create=False) as st:
        da, db = load_target(st, target_a), load_target(st, target_b)
        settings = ShiftSettings(importance=importance, permutations=permutations, alpha=alpha,
                                 random_state=random_state, n_jobs=jobs)
        test = shift_test(da, db, settings) if permutations else None
        a = compute_irup(da, importance=importance, seeds=seeds, random_state=random_state, resample=resample,
                         n_jobs=jobs, params=params)
        b = compute_irup(db, importance=importance, seeds=seeds, random_state=rs_b, resample=resample,
                         n_jobs=jobs, params=params)
        save_irup(st, a)
        save_irup(st, b)
    c = compare_irups(a, b, shift=test, top_k=top_k)
    if plot is not None:
        from quiho.report.plots import irup_pair, save

        err(f"plot written to {save(irup_pair(a, b), plot)}")
    if json_out:
        emit_json(c.to_dict())
        return
    for line in comparison_lines(c):
        print(line)


def advise_cmd(
    target: Annotated[str, typer.Argument(help="Target to advise on.")],
    store: StoreOpt = None,
    draws: Annotated[int, typer.Option("--draws", min=1, max=10_000, help="Random group subsets per fleet "
                                                               "size.")] = 8,
    random_state: RandomOpt = 0,
    jobs: JobsOpt = -1,
    json_out: JsonOpt = False,
) -> None:
    """Advise how many distinct machines TARGET needs for a stable IRUP (kept in the store for ``quiho publish``)."""
    from quiho.irup import advise_fleet_size, load_target
    from quiho.publish import save_advice
    from quiho.store import open_store

    with open_store(store, create=False) as st:
        data = load_target(st, target)
        adv = advise_fleet_size(data, draws=draws, random_state=random_state, n_jobs=jobs)
        save_advice(st, target, {**adv.to_dict(), "draws": draws, "random_state": random_state})
    if json_out:
        emit_json(adv.to_dict())
        return
    print(f"fleet-size advice for {target} (full fleet: {adv.full_groups} hardware groups, "
          f"top 3: {', '.join(adv.full_top3)})")
    if adv.rows:
        print("groups  draws  top-1 agreement  top-3 overlap")
    for r in adv.rows:
        print(f"{r.n_groups:>6}  {r.draws:>5}  {r.top1_agreement:>15.0%}  {r.top3_overlap:>13.0%}")
    print(adv.reason)


def register(app: typer.Typer) -> None:
    app.command("targets")(targets)
    app.command("irup")(irup_cmd)
    app.command("compare")(compare_cmd)
    app.command("advise")(advise_cmd)
