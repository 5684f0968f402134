"""Performance-history shape: builds with repetitions, lone slow builds, degenerate inputs."""

import json
from pathlib import Path

import numpy as np
import pytest

from quiho.cli.main import main
from quiho.datasets.perf_history import NEGATIVE_SHAPES, SHAPES, make_perf_history, make_perf_suite
from quiho.history import DETECTORS, History, detect, list_series
from quiho.store import open_store

# the default and the detectors built for performance histories (winsorised cost, rank tests)
SPIKE_SAFE = ["auto", "pelt", "combo"]


def builds_csv(path: Path, levels: list[float], runs: list[list[float]] | None = None) -> Path:
    """One row per run: ``revision,value``; build ``i`` has level ``levels[i]`` times each of its run factors."""
    rows = ["revision,value"]
    for i, lv in enumerate(levels):
        for f in (runs[i] if runs else [1.0, 1.002, 0.998]):
            rows.append(f"b{i:03d},{lv * f:.6f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_repetitions_of_one_build_are_one_revision(tmp_path, capsys):
    # 40 builds x 3 runs, step at build 20: the change is build 20 (row 60), and a build whose runs spread
    # over both levels (build 10: 100, 130, 100) is still one point, not a split inside it
    levels = [100.0] * 20 + [120.0] * 20
    runs = [[1.0, 1.002, 0.998] for _ in levels]
    runs[10] = [1.0, 1.3, 1.0]
    csv = builds_csv(tmp_path / "h.csv", levels, runs)
    assert main(["history", "detect", str(csv), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n"] == 40
    assert [(c["index"], c["revision"]) for c in doc["change_points"]] == [(20, "b020")]


@pytest.mark.parametrize("method", sorted(DETECTORS))
def test_changes_fall_between_builds(method):
    # per-build means are what every detector sees: a change index is a build index, n is the number of builds
    case = make_perf_history("step", 120, runs=5, random_state=3)
    h = case.history()
    d = detect(h, method)
    assert d.n == len(case.orders) == len(h)
    assert all(0 < c.index < len(h) and c.revision == h.revisions[c.index] for c in d.change_points)


@pytest.mark.parametrize("method", SPIKE_SAFE)
@pytest.mark.parametrize("shape", ["step", "step+spikes", "step+missing"])
def test_noise_free_generated_signal_is_recovered(method, shape):
    # the true per-build levels hold exactly the truth's changes; with lone slow builds, every change is
    # found and none added, within min_size (auto's rank split can move a step to a spike 4 builds away:
    # ranks of a noise-free series are mostly ties)
    for seed in range(3):
        case = make_perf_history(shape, 150, runs=3, random_state=seed)
        found = [c.index for c in detect(case.signal, method).change_points]
        if shape == "step+spikes":
            assert len(found) == len(case.truth)
            assert all(abs(f - t) <= 5 for f, t in zip(found, case.truth, strict=True))
        else:
            assert found == list(case.truth)


@pytest.mark.parametrize("method", SPIKE_SAFE)
def test_a_lone_slow_build_is_not_a_change(method):
    rng = np.random.default_rng(0)
    levels = list(100 * (1 + rng.normal(0, 0.01, 60)))
    levels[30] *= 1.4  # every run of build 30 is 40 % slower
    h = History("h", tuple(f"b{i}" for i in range(60)), np.arange(60),
                tuple(np.array([lv * (1 + e) for e in rng.normal(0, 0.005, 3)]) for lv in levels))
    assert detect(h, method).change_points == ()
    # next to a real step: one change, at the step (within min_size: Pettitt's rank location lands at 41
    # here, where four pre-step builds rank high; pelt puts it at 45)
    levels2 = [lv * (1.1 if i >= 45 else 1.0) for i, lv in enumerate(levels)]
    (cp,) = detect(np.array(levels2), method).change_points
    assert abs(cp.index - 45) <= 5 and cp.magnitude > 0.05


def test_generator_is_seeded_and_truth_is_consistent():
    a, b = make_perf_suite(2, 100, random_state=7), make_perf_suite(2, 100, random_state=7)
    assert all(np.array_equal(x.values, y.values) for x, y in zip(a, b, strict=True))
    for c in a:
        assert (c.truth == ()) == (c.shape in NEGATIVE_SHAPES)
        assert np.all(np.diff(c.orders) > 0) and c.orders[0] == 0 and c.orders[-1] == 99
        # the signal changes level exactly at the truth (spikes aside): consecutive builds differ there
        for t in c.truth:
            assert c.signal[t] != c.signal[t - 1]
    assert {c.shape for c in a} == set(SHAPES)
    with pytest.raises(ValueError, match="unknown shape"):
        make_perf_history("nope")


CONSTANT = "revision,value\n" + "".join(f"r{i},5\n" for i in range(12))


@pytest.mark.parametrize("text,rc,verdict", [
    (CONSTANT, 0, "  no change with p <= 0.01"),
    ("revision,value\na,5\nb,6\n", 0, "  not meaningful: 2 revisions cannot hold two segments of min_size=5"),
    ("revision,value\na,\nb,NaN\nc,null\n", 1, "series 'e' has no values (3 missing skipped)"),
    ("revision,value\na,5\nb,inf\nc,5\n", 1, "line 3: value 'inf' in column 'value' is not finite"),
    ("revision,value\na,5\nb,-inf\nc,5\n", 1, "line 3: value '-inf' in column 'value' is not finite"),
], ids=["constant", "two-points", "all-missing", "+inf", "-inf"])
def test_degenerate_inputs_one_line_nothing_stored(tmp_path, capsys, text, rc, verdict):
    p = tmp_path / "e.csv"
    p.write_text(text)
    db = tmp_path / "q.db"
    with open_store(db):
        pass
    assert main(["history", "detect", str(p), "--store", str(db)]) == rc
    out, err = capsys.readouterr()
    if rc == 0:  # the header and exactly one verdict line
        assert out.splitlines()[1:] == [verdict] and err == ""
    else:  # one error line, nothing on stdout
        assert out == "" and len(err.strip().splitlines()) == 1 and verdict in err
        assert main(["history", "import", str(p), "--store", str(db)]) == 1
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with open_store(db) as st:
        assert list_series(st) == []  # detect never stores; a refused import stores nothing
