"""Names that look like matplotlib mathtext are drawn literally by every figure quiho writes.

``$x^$`` and ``$\\foo$`` raise in matplotlib's mathtext parser when a figure is drawn; a series, unit, target,
stressor, host or function with such a name once crashed ``history plot``, ``irup --plot``, ``models --plot`` and
the profile report (after the whole fleet run). Each test below draws one of them with such names.
"""

from __future__ import annotations

import json
import struct

import matplotlib.pyplot as plt
import numpy as np
import pytest

from quiho._plotting import check_plot_path, literal_text, save_figure
from quiho.cli.main import main
from quiho.errors import UsageError

MATH = ["$x^$", "$\\foo$", "a $\\frac{1}{$ b", "$$", "50$ & $"]


def _png_size(path) -> tuple[int, int]:  # noqa: ANN001
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def test_mathtext_really_breaks_matplotlib_without_the_context(tmp_path):
    """The hazard is real: the same title fails outside :func:`literal_text` (so the tests below can fail)."""
    fig, ax = plt.subplots()
    ax.set_title("$x^$")
    with pytest.raises(ValueError):
        fig.savefig(tmp_path / "x.png")
    plt.close(fig)


def test_history_plot_with_mathtext_series_and_unit(tmp_path, capsys):
    csv = tmp_path / "$\\foo$ $x^$.csv"  # the series is named after the file stem
    rng = np.random.default_rng(0)
    rows = [f"r{i},{100 + (i >= 20) * 15 + rng.normal(0, 1):.3f}" for i in range(40)]
    csv.write_text("revision,value\n" + "\n".join(rows) + "\n")
    for ext in ("png", "svg"):
        out = tmp_path / f"h.{ext}"
        assert main(["history", "plot", str(csv), "-o", str(out), "--unit", "$x^$"]) == 0, capsys.readouterr().err
        assert out.stat().st_size > 1000
    assert _png_size(tmp_path / "h.png")[0] > 100


def _perun(path, function: str, unit: str, scale: float = 1.0) -> None:  # noqa: ANN001
    n = 60
    path.write_text(json.dumps({
        "header": {"units": {"mixed(time delta)": unit}},
        "resources": {f"{function}#0": {"amount": [scale * (5 + 3 * i) for i in range(n)],
                                        "structure-unit-size": list(range(n))}},
        "resource_type_map": {f"{function}#0": {"uid": function}},
    }))


@pytest.mark.parametrize("name", MATH)
def test_models_plot_with_mathtext_function_and_unit(name, tmp_path, capsys):
    perf = tmp_path / "p.perf"
    _perun(perf, name, unit=name)
    out = tmp_path / "m.png"
    assert main(["models", str(perf), "-f", name, "--plot", str(out)]) == 0, capsys.readouterr().err
    assert _png_size(out)[0] > 100


def _popper_csv(path, benchmark: str, test: str, stressors: tuple[str, ...]) -> None:  # noqa: ANN001
    """A quiho-popper results.csv: 10 machines of distinct speed; the app's runtime follows the first stressor."""
    rng = np.random.default_rng(1)
    lines = ["timestamp,benchmark,machine,repetition,test,result"]
    for m in range(10):
        speed = rng.uniform(0.5, 2.0, len(stressors))
        for rep in (1, 2, 3):
            for s, v in zip(stressors, speed, strict=True):
                lines.append(f"1000,stressng,host{m},{rep},{json.dumps(s)},{1000 * v * rng.normal(1, 0.01):.3f}")
            lines.append(f"1000,{json.dumps(benchmark)},host{m},{rep},{json.dumps(test)},"
                         f"{50 / speed[0] * rng.normal(1, 0.01):.4f}")
    path.write_text("\n".join(lines) + "\n")


def test_irup_and_compare_plots_with_mathtext_target_and_stressors(tmp_path, capsys):
    csv = tmp_path / "results.csv"
    _popper_csv(csv, "$x^$", "$\\foo$", ("$y^$", "cpu", "$\\bar$", "stream"))
    store = tmp_path / "q.db"
    assert main(["import", "quiho-popper", str(csv), "--store", str(store)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["targets", "--store", str(store), "--json"]) == 0
    targets = [t["target"] for t in json.loads(capsys.readouterr().out)]
    assert len(targets) == 1 and "$x^$" in targets[0]
    out = tmp_path / "irup.png"
    rc = main(["irup", targets[0], "--store", str(store), "--model", "fast", "--seeds", "2", "--jobs", "1",
               "--plot", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert _png_size(out)[0] > 100
    pair = tmp_path / "pair.svg"
    rc = main(["compare", targets[0], targets[0], "--store", str(store), "--model", "fast", "--seeds", "2",
               "--jobs", "1", "--plot", str(pair), "--json"])
    assert rc == 0, capsys.readouterr().err
    assert pair.read_text().startswith("<?xml")


def test_profile_report_with_mathtext_names(tmp_path):
    """``write_report`` (``quiho profile --report``): IRUP pair, metric per host and fingerprint figures."""
    from quiho.datasets import planted_profile
    from quiho.irup import ModelParams
    from quiho.profile import AnalysisOptions, ProfileData, analyse_data, host_fingerprints
    from quiho.report.html import write_report

    stressors = ("cpu", "$x^$", "stream", "$\\foo$", "vm", "cache")
    app = "$\\frac{1}{$ app"
    runs, a, b = planted_profile(n_groups=8, spread=0.5, change=1.5, stressors=stressors, application=app,
                                 version_a="$v^1$", version_b="$\\v2$")
    runs["host"] = runs["host"].map(lambda h: f"${h}^$")
    a.meta["host"] = a.meta["host"].map(lambda h: f"${h}^$")
    res = analyse_data(ProfileData(runs, a, b, application=app, version_a="$v^1$", version_b="$\\v2$", unit="$s^$",
                                   fingerprints=host_fingerprints(a)),
                       AnalysisOptions(seeds=2, model_params=ModelParams(n_estimators=50), n_jobs=1))
    files = write_report(res, tmp_path / "report")
    pngs = sorted((tmp_path / "report").glob("*.png"))
    assert {p.name for p in pngs} >= {"irups.png", "metric.png", "fingerprints.png"}, files
    for p in pngs:
        assert _png_size(p)[0] > 100


def test_literal_text_covers_ticks_created_while_saving(tmp_path):
    with literal_text():
        fig, ax = plt.subplots()
        ax.bar(range(3), [1, 2, 3])
        ax.set_xticks(range(3), MATH[:3])
        ax.legend(["$x^$"])
    save_figure(fig, tmp_path / "t.png")  # outside the block: save_figure re-enters the context
    assert _png_size(tmp_path / "t.png")[0] > 100


@pytest.mark.parametrize(("name", "why"), [("x.txt", "must end in"), ("x", "must end in"), ("x.PDF", "must end in")])
def test_unsupported_plot_suffix(name, why, tmp_path):
    with pytest.raises(UsageError, match=why):
        check_plot_path(tmp_path / name)


def test_plot_below_a_file_or_in_proc(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        check_plot_path(afile / "x.png")
    with pytest.raises(UsageError, match="not a directory"):
        check_plot_path(afile / "deeper" / "x.png")
    with pytest.raises(UsageError, match="cannot write"):
        check_plot_path("/proc/x.png")
    (tmp_path / "d.png").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        check_plot_path(tmp_path / "d.png")
    assert not (tmp_path / "ok.png").exists()
    check_plot_path(tmp_path / "ok.png")
    assert not (tmp_path / "ok.png").exists()  # the probe file is removed again


@pytest.mark.parametrize("argv_tail", [
    ["--plot", "x.txt"], ["--plot", "{afile}/x.png"], ["--plot", "/proc/x.png"],
])
@pytest.mark.parametrize("command", ["irup", "compare", "models", "history-plot"])
def test_bad_plot_paths_are_usage_errors_before_any_work(command, argv_tail, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    tail = [a.format(afile=afile) for a in argv_tail]
    missing = str(tmp_path / "no-store.db")  # the store does not exist: only an early check can answer first
    argv = {
        "irup": ["irup", "t", "--store", missing, *tail],
        "compare": ["compare", "a", "b", "--store", missing, *tail],
        "models": ["models", str(tmp_path / "none.perf"), "-f", "f", *tail],
        "history-plot": ["history", "plot", str(tmp_path / "none.csv"), "-o", tail[1], "--store", missing],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("--plot" in err or "--output" in err), err
