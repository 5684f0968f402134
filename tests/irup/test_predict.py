"""``quiho predict``: conformal intervals, planted fleets, refusals, fingerprint files, the CLI on the paper data."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from quiho.cli.main import main
from quiho.datasets import planted_bottleneck
from quiho.errors import FingerprintParseError, PredictionRefused, UsageError
from quiho.irup import TargetData
from quiho.irup.importance import ModelParams
from quiho.irup.predict import (
    MachinesToPredict,
    PredictOptions,
    conformal_interval,
    fit_predictor,
    predict_fingerprints,
    read_fingerprint_file,
)

FAST = PredictOptions(seeds=2, params=ModelParams(n_estimators=150, learning_rate=0.05))
DATA = Path(__file__).resolve().parents[1] / "data" / "stressng" / "cpu-null.yaml"


def test_conformal_closed_form_and_unbounded():
    r = np.array([-0.2, -0.1, 0.0, 0.1, 0.3])
    c, h = conformal_interval(r, 0.5)  # rank ceil(6 * 0.5) = 3 of |r - 0| = 0, .1, .1, .2, .3
    assert c == 0.0 and h == pytest.approx(0.1)
    assert math.isinf(conformal_interval(r, 0.9)[1])  # ceil(6 * 0.9) = 6 > 5 residuals
    with pytest.raises(UsageError):
        conformal_interval(r, 1.0)


def test_conformal_covers_exchangeable_residuals():
    rng = np.random.default_rng(0)
    hits = []
    for _ in range(400):
        r = rng.standard_t(3, size=11)  # heavy tails: no Gaussian assumption needed
        c, h = conformal_interval(r[:-1], 0.8)
        hits.append(abs(r[-1] - c) <= h)
    assert 0.78 <= np.mean(hits) <= 0.95


def _planted(seed=0, **kw):
    return planted_bottleneck(n_groups=10, hosts_per_group=1, reps=2, bottleneck="stream", random_state=seed, **kw)


def test_planted_fleet_predicts_a_held_out_machine():
    data = _planted()
    p = fit_predictor(data, FAST)
    assert p.validity.verdict != "not-meaningful"
    assert p.logo_error < p.spread  # beats predicting the fleet mean
    # A machine of the same fleet: its own median fingerprint predicts near its own median metric.
    host = data.meta["host"] == "g3-h0"
    fp = data.X[host.to_numpy()].median()
    pred = predict_fingerprints(p, {"g3-h0": ("test", fp)})
    h = pred.hosts[0]
    assert h.low <= h.predicted <= h.high
    assert abs(math.log(h.predicted / float(data.y[host.to_numpy()].median()))) < 0.2


def test_refuses_a_metric_fingerprints_do_not_explain():
    data = _planted()
    rng = np.random.default_rng(1)
    noise = pd.Series(np.exp(rng.normal(0, 0.5, len(data.y))), name="noise")
    p = fit_predictor(TargetData("noise", data.X, noise, data.meta, "s", False), FAST)
    assert p.validity.verdict == "not-meaningful"
    with pytest.raises(PredictionRefused, match="not meaningful"):
        predict_fingerprints(p, {"m": ("test", data.X.median())})


def test_missing_stressor_skips_the_machine_and_none_left_refuses():
    p = fit_predictor(_planted(), FAST)
    full = _planted().X.median()
    partial = full.drop("stream")
    pred = predict_fingerprints(p, {"full": ("t", full), "partial": ("t", partial)})
    assert [h.host for h in pred.hosts] == ["full"]
    assert "partial" in pred.skipped[0] and "stream" in pred.skipped[0]
    with pytest.raises(PredictionRefused, match="no value for stream"):
        predict_fingerprints(p, {"partial": ("t", partial)})


def test_all_hosts_ranked_best_first_and_extrapolation_named():
    data = _planted()
    p = fit_predictor(data, FAST)
    fps = {h: ("t", data.X[(data.meta["host"] == h).to_numpy()].median()) for h in sorted(set(data.meta["host"]))}
    fast = data.X.median() * 50  # far beyond every stressor of the fleet
    fps["fast"] = ("t", fast)
    pred = predict_fingerprints(p, fps)
    values = [h.predicted for h in pred.hosts]
    assert values == sorted(values)  # runtime: lower is better first
    assert set(next(h for h in pred.hosts if h.host == "fast").outside) == set(p.columns)


def test_fingerprint_files(tmp_path):
    js = tmp_path / "fp.json"
    js.write_text(json.dumps({"values": {"cpu": 100.0, "null": 5.0, "bad": "x"}}))
    assert read_fingerprint_file(js).to_dict() == {"cpu": 100.0, "null": 5.0}
    s = read_fingerprint_file(DATA)  # a real stress-ng 0.15 --yaml result
    assert set(s.index) <= {"cpu", "null"} and (s > 0).all() and len(s) >= 1
    for text in ("", "{not json", "[1, 2]"):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(FingerprintParseError):
            read_fingerprint_file(tmp_path / "bad.json")
    (tmp_path / "bad.yaml").write_text("metrics: 3\n")
    with pytest.raises(FingerprintParseError):
        read_fingerprint_file(tmp_path / "bad.yaml")


def test_machines_named_exactly_once():
    with pytest.raises(UsageError):
        MachinesToPredict().check()
    with pytest.raises(UsageError):
        MachinesToPredict(hosts=("a",), all_hosts=True).check()


@pytest.fixture(scope="module")
def store_file(tmp_path_factory, popper_csv):
    path = tmp_path_factory.mktemp("predict") / "q.db"
    assert main(["import", "quiho-popper", str(popper_csv), "--store", str(path)]) == 0
    return path


def test_cli_predicts_a_paper_host(store_file, capsys):
    host = "c220g1.quiho.schedock-PG0.wisc.cloudlab.us"
    rc = main(["predict", "hpccg", "--host", host, "--store", str(store_file), "--seeds", "2", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["quiho_version"]
    assert doc["validity"]["verdict"] == "meaningful"
    (h,) = doc["predictions"]
    assert h["host"] == host and h["low"] < h["predicted"] < h["high"]
    assert doc["hardware_groups"] >= 5


def test_cli_refuses_in_one_line(store_file, capsys):
    rc = main(["predict", "stream/add-10", "--all-hosts", "--store", str(store_file), "--seeds", "2"])
    out = capsys.readouterr()
    assert rc == 1 and out.out == ""
    assert out.err.count("\n") == 1 and "not meaningful" in out.err


def test_cli_usage_errors(store_file, capsys):
    assert main(["predict", "hpccg", "--store", str(store_file)]) == 2
    assert main(["predict", "hpccg", "--host", "nope", "--store", str(store_file)]) == 2
    assert "no stored fingerprint" in capsys.readouterr().err
