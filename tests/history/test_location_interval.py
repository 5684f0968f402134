"""The 95 % location interval of a change point: where the new level may start."""

import numpy as np

from quiho.cli.main import main
from quiho.history import History, detect, location_interval


def _step(n=60, at=40, k=1.5, seed=0):
    rng = np.random.default_rng(seed)
    return 100 + np.where(np.arange(n) >= at, k, 0.0) + rng.normal(size=n)


def test_noise_free_step_is_located_exactly():
    y = np.r_[np.full(20, 10.0), np.full(15, 12.0)]
    assert location_interval(y, 0, 20, y.size) == (20, 20)
    (cp,) = detect(y).change_points
    assert (cp.low, cp.high, cp.low_revision, cp.high_revision) == (20, 20, "20", "20")
    assert cp.location_text() == ""


def test_interval_narrows_as_the_step_grows():
    rng = np.random.default_rng(3)
    noise = rng.normal(size=60)
    widths = []
    for k in (1.0, 2.0, 4.0):
        y = 100 + np.where(np.arange(60) >= 40, k, 0.0) + noise
        lo, hi = location_interval(y, 0, 40, 60)
        assert lo <= 40 <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[2] and widths == sorted(widths, reverse=True)


def test_coverage_near_nominal_on_gaussian_steps():
    # nominal 95 %: a wrong critical value (e.g. chi-square(1)'s 3.84) or a variance over the wrong degrees of
    # freedom falls well below 0.88 here; 300 series give a standard error of about 1.3 %
    hits = 0
    for seed in range(300):
        y = _step(k=1.5, seed=seed)
        x = y - y.mean()
        t = np.arange(1, y.size)
        s = np.cumsum(x)[:-1]
        tau = int(t[np.argmax(s ** 2 / t + s ** 2 / (y.size - t))])
        lo, hi = location_interval(y, 0, tau, y.size)
        hits += lo <= 40 <= hi
    assert 0.88 <= hits / 300 <= 0.995


def test_detectors_index_is_always_inside():
    y = _step(k=3.0)
    lo, hi = location_interval(y, 0, 8, y.size)
    assert lo <= 8 and hi >= 38


def test_only_the_adjacent_segments_are_searched():
    y = np.r_[np.full(20, 10.0), np.full(20, 14.0), np.full(20, 11.0)] + np.random.default_rng(1).normal(0, .5, 60)
    cps = detect(y).change_points
    assert [c.index for c in cps] == [20, 40]
    for c, (a, b) in zip(cps, [(0, 40), (20, 60)], strict=True):
        assert a < c.low <= c.index <= c.high < b


def test_degenerate_input_gives_the_index():
    assert location_interval(np.array([1.0, 2.0]), 0, 1, 2) == (1, 1)
    assert location_interval(np.full(10, 3.0), 0, 5, 10) == (5, 5)


def test_cli_text_says_where_to_bisect(tmp_path, capsys):
    y = _step(k=1.5, seed=2)
    path = tmp_path / "h.csv"
    path.write_text("commit,time\n" + "".join(f"c{i:02d},{v:.6f}\n" for i, v in enumerate(y)))
    assert main(["history", "detect", str(path), "--revision-col", "commit", "--value-col", "time"]) == 0
    out = capsys.readouterr().out
    (cp,) = detect(History.from_values(y, [f"c{i:02d}" for i in range(60)])).change_points
    assert cp.low < cp.high
    assert f"starts in c{cp.low:02d}..c{cp.high:02d} (95 %)" in out


def test_ci_markdown_names_the_range(tmp_path, capsys):
    y = _step(k=1.5, seed=2)
    path = tmp_path / "h.csv"
    path.write_text("commit,time\n" + "".join(f"c{i:02d},{v:.6f}\n" for i, v in enumerate(y)))
    db = str(tmp_path / "q.db")
    assert main(["history", "import", str(path), "--series", "s", "--revision-col", "commit", "--value-col", "time",
                 "--store", db]) == 0
    capsys.readouterr()
    main(["history", "detect", "--all", "--store", db, "--format", "markdown"])
    (cp,) = detect(History.from_values(y, [f"c{i:02d}" for i in range(60)])).change_points
    assert f"starts in c{cp.low:02d}..c{cp.high:02d} (95 %))" in capsys.readouterr().out
