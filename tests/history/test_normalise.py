"""Hardware-normalised history detection: planted machine effects, refusals, real stress-ng fingerprints, the CLI."""

import json

import numpy as np
import pandas as pd
import pytest

from quiho.cli.main import main
from quiho.errors import UsageError
from quiho.history import History, detect
from quiho.history.normalise import (
    MachineFingerprint,
    NormaliseOptions,
    attach_machine,
    detect_normalised,
    detect_series_normalised,
    local_machine,
    normalised_lines,
    normalised_markdown,
    stored_host,
)
from quiho.store import open_store

STRESSORS = ("cpu", "stream", "vm", "zero")


def _rotating(n=60, at=40, shift=1.10, n_machines=8, seed=0, lean_on="stream", noise=0.01, hidden=0.0):
    """Revisions on random machines whose runtime is 1/speed of ``lean_on`` (times a ``hidden`` machine factor no
    stressor measures, log sd); a ``shift`` from ``at`` on."""
    rng = np.random.default_rng(seed)
    speeds = np.exp(rng.normal(0, 0.4, size=(n_machines, len(STRESSORS))))
    missed = np.exp(rng.normal(0, hidden, size=n_machines)) if hidden else np.ones(n_machines)
    fps = [MachineFingerprint(f"m{k}", pd.Series(1000 * speeds[k], index=list(STRESSORS)))
           for k in range(n_machines)]
    pick = rng.integers(0, n_machines, size=n)
    j = STRESSORS.index(lean_on)
    samples = []
    for i, k in enumerate(pick):
        base = 10.0 / speeds[k, j] * missed[k] * (shift if i >= at else 1.0)
        samples.append(base * np.exp(rng.normal(0, noise, size=3)))
    h = History("bench", tuple(f"r{i:03d}" for i in range(n)), np.arange(n), tuple(samples), "s")
    return h, [fps[k] for k in pick]


def test_planted_change_found_only_after_normalising():
    h, ms = _rotating()
    raw = detect(h, "auto")
    assert not any(abs(c.index - 40) <= 2 for c in raw.change_points)  # machines drown the 10 %
    nd = detect_normalised(h, ms)
    assert nd.normalised and "stream" in nd.effect.stressors and nd.effect.cv_ratio < 0.5
    (cp,) = nd.detection.change_points
    assert abs(cp.index - 40) <= 2 and 0.07 < cp.magnitude < 0.13
    assert nd.to_dict()["change_points"][0]["normalised"] is True


def test_no_change_no_alarm_after_normalising():
    for seed in range(3):
        h, ms = _rotating(shift=1.0, seed=seed)
        nd = detect_normalised(h, ms)
        assert nd.normalised and nd.detection.change_points == ()


def test_one_machine_is_raw_and_said():
    h, ms = _rotating(n_machines=1)
    nd = detect_normalised(h, ms)
    assert not nd.normalised and "one machine" in nd.reason
    assert nd.detection == detect(h, "auto") and nd.used is h  # nothing lost, nothing changed


def test_revision_without_fingerprint_is_raw_and_said():
    h, ms = _rotating()
    ms[7] = None
    nd = detect_normalised(h, ms)
    assert not nd.normalised and "1 of 60 revisions have no machine fingerprint" in nd.reason
    assert nd.detection.n == len(h)


def test_failed_stressors_are_left_out_and_named():
    h, orig = _rotating()
    first = orig[0].key
    ms = [MachineFingerprint(m.key, m.values.drop("stream"), ("stream",)) if m.key == first else m for m in orig]
    nd = detect_normalised(h, ms)
    assert any("stream" in n for n in nd.notes)
    assert nd.effect is None or "stream" not in nd.effect.stressors
    only_stream = [MachineFingerprint(m.key, m.values[["stream"]].drop("stream") if m.key == first
                                      else m.values[["stream"]], ("stream",) if m.key == first else ()) for m in orig]
    nd = detect_normalised(h, only_stream)
    assert not nd.normalised and "no stressor" in nd.reason


def test_fingerprints_that_explain_nothing_are_not_used():
    for seed in range(8):  # the vuetify lesson: a fixed host must never be "normalised" by noise
        h, ms = _rotating(n_machines=1, shift=1.0, seed=seed)  # one real machine ...
        rng = np.random.default_rng(seed + 100)  # ... reported with fingerprints that differ by measurement noise
        ms = [MachineFingerprint(f"run{i}", m.values * np.exp(rng.normal(0, 0.02, len(STRESSORS))))
              for i, m in enumerate(ms)]
        nd = detect_normalised(h, ms)
        assert not nd.normalised and "not better" in nd.reason, seed
    assert nd.effect is not None and nd.effect.cv_ratio > NormaliseOptions().max_cv_ratio


def _pool_shift(seed, code=1.0, n=60, at=30, same_pool=False, shared=0):
    """Revisions on 4 random machines of 8, then on the other 4 from ``at`` (a runner pool moving; ``shared`` of
    the machines in both pools), the metric leaning on a resource no stressor measures; ``code`` from ``at`` on."""
    rng = np.random.default_rng(seed)
    speeds = np.exp(rng.normal(0, 0.4, size=(8, len(STRESSORS))))
    hidden = np.exp(rng.normal(0, 0.2, size=8))
    fps = [MachineFingerprint(f"m{k}", pd.Series(1000 * speeds[k], index=list(STRESSORS))) for k in range(8)]
    order = rng.permutation(8)
    pick = (rng.choice(order, size=n) if same_pool
            else np.r_[rng.choice(order[:4 + shared], size=at), rng.choice(order[4 - shared:], size=n - at)])
    samples = [10.0 / hidden[k] * (code if i >= at else 1.0) * np.exp(rng.normal(0, 0.01, 3))
               for i, k in enumerate(pick)]
    h = History("bench", tuple(f"r{i:03d}" for i in range(n)), np.arange(n), tuple(samples), "s")
    return h, [fps[k] for k in pick]


def test_a_step_where_the_machines_changed_is_set_apart_not_lost():
    at_boundary = 0
    for seed in range(12):
        h, ms = _pool_shift(seed)
        raw = [c for c in detect(h, "auto").change_points if abs(c.index - 30) <= 5]
        nd = detect_normalised(h, ms)
        at_boundary += len(raw)
        assert nd.detection.change_points == (), seed  # no code change was made
        assert [m.change for m in nd.machine_changes] == raw, seed  # kept, with why
        for m in nd.machine_changes:
            assert m.mix > 0.5 and m.t < m.critical
            assert any(f"revision {m.change.revision}" in n and "machines changed there too" in n for n in nd.notes)
        assert len(nd.to_dict()["machine_changes"]) == len(raw)
        for m in nd.machine_changes:  # one story: text, Markdown and JSON say it
            assert any("machines changed there too" in line for line in normalised_lines(nd))
            assert f"revision {m.change.revision}" in normalised_markdown(nd, [x.key for x in ms])
    assert at_boundary >= 2  # the raw detector does call the pool's step a change


@pytest.mark.parametrize("same_pool, shared", [(True, 0), (False, 2)])
def test_a_code_change_on_machines_seen_on_both_sides_is_kept(same_pool, shared):
    found = 0
    for seed in range(12):
        h, ms = _pool_shift(seed, code=1.3, same_pool=same_pool, shared=shared)
        nd = detect_normalised(h, ms)
        assert nd.machine_changes == (), seed
        found += any(abs(c.index - 30) <= 2 and c.magnitude > 0.2 for c in nd.detection.change_points)
    assert found >= 7


def test_machine_intercepts_remove_what_the_fingerprint_misses():
    hits = {False: 0, True: 0}
    for seed in range(10):  # recurring machines, each 5 % off what its fingerprint predicts
        h, ms = _rotating(seed=seed, hidden=0.05, noise=0.01)
        for on in (False, True):
            nd = detect_normalised(h, ms, NormaliseOptions(intercepts=on))
            assert nd.normalised, seed
            hits[on] += [abs(c.index - 40) <= 1 for c in nd.detection.change_points] == [True]
    assert hits[True] >= 9 and hits[True] > hits[False]


def test_machine_intercepts_add_no_alarm():
    for seed in range(6):
        for hidden in (0.0, 0.05):
            h, ms = _rotating(shift=1.0, seed=seed, hidden=hidden)
            nd = detect_normalised(h, ms, NormaliseOptions(intercepts=True))
            assert nd.detection.change_points == () and nd.machine_changes == (), (seed, hidden)


def test_intercepts_shrink_by_what_a_machine_has_shown():
    from quiho.history.normalise._detect import _intercepts

    rng = np.random.default_rng(1)
    effects = np.array([0.1, -0.1, 0.05, -0.05, 0.08])
    keys = np.array([f"m{i % 4}" for i in range(40)] + ["m4"])  # m0-m3 seen 10 times, m4 once
    e = effects[[*(np.arange(40) % 4), 4]] + rng.normal(0, 0.05, 41)
    u = _intercepts(e, keys)
    means = np.array([e[keys == k].mean() for k in ("m0", "m1", "m2", "m3", "m4")])
    kept = u[[0, 1, 2, 3, 40]] / (means - np.average(means, weights=[10, 10, 10, 10, 1]))
    assert np.all(kept[:4] > 0.9) and 0 < kept[4] < kept[0] - 0.2  # ten revisions are believed, one less so
    noise = _intercepts(rng.normal(0, 0.01, 40), keys[:40])
    assert np.abs(noise).max() < 0.005  # no spread beyond noise: next to nothing removed


def test_options_reach_the_detector():
    h, ms = _rotating()
    nd = detect_normalised(h, ms, NormaliseOptions(method="binseg", min_size=8))
    assert nd.detection.method == "binseg"


@pytest.fixture
def popper_db(tmp_path, popper_csv):
    path = tmp_path / "q.db"
    assert main(["import", "quiho-popper", str(popper_csv), "--store", str(path)]) == 0
    return path


def test_cli_import_with_host_then_detect_normalised(popper_db, tmp_path, capsys):
    csv = tmp_path / "h.csv"
    pd.DataFrame({"revision": [f"r{i:02d}" for i in range(12)], "value": np.linspace(10, 11, 12)}).to_csv(csv)
    host = "c220g1.quiho.schedock-PG0.wisc.cloudlab.us"
    assert main(["history", "import", str(csv), "--series", "s", "--host", host, "--store", str(popper_db)]) == 0
    assert "recorded machine" in capsys.readouterr().err
    assert main(["history", "detect", "s", "--normalise", "--json", "--store", str(popper_db)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["normalised"] is False and "one machine" in doc["normalise_reason"] and doc["n"] == 12


def test_cli_rotating_hosts_markdown_and_plot(popper_db, tmp_path, capsys):
    csv = tmp_path / "h.csv"
    pd.DataFrame({"revision": [f"r{i:02d}" for i in range(20)], "value": np.linspace(10, 11, 20)}).to_csv(csv)
    assert main(["history", "import", str(csv), "--series", "s", "--store", str(popper_db)]) == 0
    with open_store(popper_db) as st:
        hosts = ["c220g1.quiho.schedock-PG0.wisc.cloudlab.us", "m510.quiho.schedock-PG0.utah.cloudlab.us", "nope"]
        for i in range(20):
            attach_machine(st, ["s"], [f"r{i:02d}"], stored_host(st, hosts[i % 3]))
        nd = detect_series_normalised(st, "s")
    assert not nd.normalised and "6 of 20 revisions have no machine fingerprint" in nd.reason  # 'nope' has none
    assert main(["history", "detect", "s", "--normalise", "--format", "markdown", "--store", str(popper_db)]) == 0
    md = capsys.readouterr().out
    assert "| revision | machine | raw | normalised |" in md and "unknown" in md
    png = tmp_path / "n.png"
    assert main(["history", "plot", "s", "--normalise", "-o", str(png), "--store", str(popper_db)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_usage_errors(popper_db, tmp_path, capsys):
    csv = tmp_path / "h.csv"
    pd.DataFrame({"revision": ["a"], "value": [1.0]}).to_csv(csv)
    assert main(["history", "import", str(csv), "--fingerprint", "--host", "x", "--store", str(popper_db)]) == 2
    assert main(["history", "detect", "nope", "--normalise", "--store", str(popper_db)]) == 1
    err = capsys.readouterr().err
    assert "not both" in err and "no history series" in err


@pytest.mark.stressng
def test_real_quick_fingerprint_on_every_revision(tmp_path, capsys):
    db = str(tmp_path / "q.db")
    csv = tmp_path / "h.csv"
    values = np.r_[np.full(20, 1.0), np.full(20, 1.2)] * np.exp(np.random.default_rng(0).normal(0, 0.01, 40))
    pd.DataFrame({"revision": [f"r{i:02d}" for i in range(40)], "value": values}).to_csv(csv)
    assert main(["history", "import", str(csv), "--series", "s", "--fingerprint", "--store", db]) == 0
    with open_store(db) as st:
        m = local_machine(st)  # reused: the import measured it
        nd = detect_series_normalised(st, "s")
    assert "fingerprint run" in capsys.readouterr().err and m.fingerprint_run_id is not None
    assert not nd.normalised and "one machine" in nd.reason
    assert len(nd.detection.change_points) == 1  # the raw series is still detected


def test_cli_result_file_records_the_machine_on_its_revision_only(popper_db, capsys):
    from pathlib import Path

    from quiho.store.history import revision_machines, series_id

    gbench = Path(__file__).parent / "data" / "formats" / "gbench.json"
    host = "m510.quiho.schedock-PG0.utah.cloudlab.us"
    db = str(popper_db)
    outs = []
    for rev, h in (("a1", host), ("a2", "nope")):
        assert main(["history", "import", str(gbench), "--revision", rev, "--host", h, "--store", db, "--json"]) == 0
        outs.append(capsys.readouterr())
    names = [s["name"] for s in json.loads(outs[0].out)["series"]]
    assert "host nope has no stored fingerprint" in outs[1].err
    with open_store(popper_db) as st:
        recs = revision_machines(st, series_id(st, names[0]))
    assert recs["a1"].host == host and recs["a1"].fingerprint_run_id is not None
    assert recs["a2"].host == "nope" and recs["a2"].fingerprint_run_id is None


def test_cli_predict_from_a_fingerprint_file(popper_db, tmp_path, capsys):
    from quiho.store.fingerprints import host_fingerprint

    host = "c220g1.quiho.schedock-PG0.wisc.cloudlab.us"
    with open_store(popper_db) as st:
        fp = host_fingerprint(st, host)
    path = tmp_path / "fp.json"
    path.write_text(json.dumps({"values": fp.medians().to_dict()}))
    assert main(["predict", "hpccg", "--fingerprint", str(path), "--seeds", "2", "--json", "--store",
                 str(popper_db)]) == 0
    from_file = json.loads(capsys.readouterr().out)["predictions"][0]
    assert main(["predict", "hpccg", "--host", host, "--seeds", "2", "--json", "--store", str(popper_db)]) == 0
    stored = json.loads(capsys.readouterr().out)["predictions"][0]
    assert from_file["source"] == "file" and from_file["predicted"] == pytest.approx(stored["predicted"])


def test_values_that_do_not_vary_are_raw_and_said_so():
    """Every revision the same value on several machines: nothing to explain, and the reason says that (not that
    machines are too few)."""
    h, ms = _rotating(n=30, shift=1.0, noise=0.0, lean_on="stream")
    flat = History(h.name, h.revisions, h.orders, tuple(np.full(3, 5.0) for _ in h.samples), h.unit)
    nd = detect_normalised(flat, ms)
    assert not nd.normalised and "do not vary" in nd.reason and not nd.detection.change_points


@pytest.mark.parametrize("model", ["ridge", "gbm"])
def test_the_machine_effect_is_fitted_once_per_iteration_and_fold(model, monkeypatch):
    # each iteration fits the effect once and each held-out machine once; the effect reported is the one removed
    # (a refit on the converged deviations doubled the last fit, and its stressors could differ from the effect's)
    from quiho.history.normalise import _detect

    kind = _detect.EFFECT_MODELS[model]
    fits, detections = [], []
    orig_fit, orig_detect = kind.fit, _detect.detect

    def fit(self, Z, r):
        fits.append(len(r))
        return orig_fit(self, Z, r)

    def counted_detect(*args, **kwargs):
        detections.append(1)
        return orig_detect(*args, **kwargs)

    monkeypatch.setattr(kind, "fit", fit)
    monkeypatch.setattr(_detect, "detect", counted_detect)
    h, ms = _rotating()
    nd = detect_normalised(h, ms, NormaliseOptions(model=model))
    e = nd.effect
    assert nd.normalised and e.iterations >= 2
    assert len(fits) == e.iterations + e.machines  # every one of the 8 machines is held out once
    assert fits.count(len(h)) == e.iterations  # the full-series fits: one per iteration, no refit
    assert len(detections) == e.iterations  # the last iteration's detection is the one reported
    assert e.stressors == tuple(e.columns[c] for c in e.model.columns_)
    assert np.allclose(e.effect, e.model.predict(np.log(np.array([m.values[list(e.columns)] for m in ms],
                                                                  dtype=float))) - e.offset)


def test_max_iterations_below_one_is_refused():
    h, ms = _rotating()
    with pytest.raises(UsageError, match="max_iterations"):
        detect_normalised(h, ms, NormaliseOptions(model="ridge", max_iterations=0))
