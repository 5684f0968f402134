"""Fingerprint history, drift alerts and retention on seeded histories with known truth."""

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from quiho.cli.main import main
from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
from quiho.schedule.drift import detect_drift, drift_lines, max_t_split
from quiho.store import open_store
from quiho.store.compact import compact_runs

MEMORY = {"stream", "memcpy", "vm", "zero"}


@pytest.fixture()
def drifted(tmp_path):
    st = open_store(tmp_path / "q.db")
    store_fingerprint_history(st, fingerprint_history(drift_host="h3", drift_at=18, drift_factor=0.85,
                                                      random_state=11))
    yield st
    st.close()


def test_fifteen_percent_memory_drop_is_found_with_host_stressors_and_time(drifted):
    rep = detect_drift(drifted)
    assert set(rep.drifted_hosts()) == {"h3"}
    found = rep.drifted_hosts()["h3"]
    assert {d.stressor for d in found} == MEMORY
    for d in found:
        assert d.index == 18 and d.batch == "synthetic-0018"
        assert d.when.startswith("2026-01-19")
        assert d.magnitude == pytest.approx(-0.15, abs=0.03)
        assert d.p_adjusted < 0.05 and d.primary in ("memory", "vm")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_steady_fleet_raises_no_alert_over_30_runs(tmp_path, seed):
    st = open_store(tmp_path / "q.db")
    store_fingerprint_history(st, fingerprint_history(n_runs=30, drift_host=None, random_state=seed))
    rep = detect_drift(st)
    assert rep.runs == 30 and rep.series_tested == 6 * 12
    assert rep.drifts == ()
    assert rep.group_changes == ()


def test_detector_from_the_history_registry_also_works(drifted):
    rep = detect_drift(drifted, method="binseg")
    assert "h3" in rep.drifted_hosts()


def test_max_t_exact_on_noise_free_step_and_null_on_constant():
    step = np.r_[np.full(12, 100.0), np.full(10, 80.0)] * np.exp(np.linspace(0, 1e-9, 22))
    s = max_t_split(step, n_perm=999)
    assert s.index == 12 and s.magnitude == pytest.approx(-0.2, abs=1e-6) and s.p_value <= 0.002
    rng = np.random.default_rng(0)
    noise = 100 * np.exp(rng.normal(0, 0.03, 30))
    assert max_t_split(noise, n_perm=999).p_value > 0.01


def test_look_alike_and_stale_hosts(tmp_path):
    st = open_store(tmp_path / "q.db")
    hist = fingerprint_history(n_hosts=4, n_runs=10, random_state=3)
    # From run 5 on, h1 becomes a copy of h0 (e.g. re-imaged onto the same hardware type).
    late = hist["run"] >= 5
    h0 = hist[late & (hist["host"] == "h0")].set_index(["run", "repetition", "stressor"])["value"]
    mask = late & (hist["host"] == "h1")
    keys = list(zip(hist.loc[mask, "run"], hist.loc[mask, "repetition"], hist.loc[mask, "stressor"], strict=True))
    hist.loc[mask, "value"] = h0.loc[keys].to_numpy() * 1.001
    store_fingerprint_history(st, hist)
    rep = detect_drift(st, max_age=timedelta(days=3), now=datetime(2026, 1, 20, tzinfo=UTC))
    kinds = {(g.host, g.kind) for g in rep.group_changes}
    assert ("h1", "look-alike") in kinds and ("h0", "look-alike") in kinds
    assert {s.host for s in rep.stale} == {"h0", "h1", "h2", "h3"}  # last run 2026-01-10


def test_compaction_keeps_history_and_drift_verdict(drifted):
    before = detect_drift(drifted)
    rows0 = drifted.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    s = compact_runs(drifted, older_than=timedelta(days=0), now=datetime(2027, 1, 1, tzinfo=UTC))
    assert s.runs == 30 and s.rows_before == rows0 and s.rows_after == rows0 // 2  # 2 repetitions -> 1 median
    after = detect_drift(drifted)
    assert [(d.host, d.stressor, d.index) for d in after.drifts] == [(d.host, d.stressor, d.index)
                                                                    for d in before.drifts]
    again = compact_runs(drifted, older_than=timedelta(days=0), now=datetime(2027, 1, 1, tzinfo=UTC))
    assert again.runs == 0
    extra = json.loads(drifted.conn.execute("SELECT extra_json FROM measurements LIMIT 1").fetchone()[0])
    assert extra["compacted_from"] == 2 and extra["min"] <= extra["max"]


def test_cli_drift_json(drifted, capsys):
    assert main(["fleet", "drift", "--store", str(drifted.path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["drifted_hosts"]) == {"h3"} and doc["schema_version"] == 1
    assert main(["store", "compact", "--older-than", "0", "--store", str(drifted.path)]) == 0


def test_drift_without_history_is_a_clear_error(tmp_path, capsys):
    open_store(tmp_path / "q.db").close()
    assert main(["fleet", "drift", "--store", str(tmp_path / "q.db")]) == 1
    assert "run quiho fingerprint first" in capsys.readouterr().err


def test_drift_warnings_name_only_the_drifted_hosts_asked_about(drifted, tmp_path):
    from quiho.schedule.drift import drift_warnings

    warnings = drift_warnings(drifted, ["h1", "h3"])
    assert len(warnings) == 1 and "host h3" in warnings[0] and "stream" in warnings[0]
    assert drift_warnings(drifted, ["h1"]) == []
    empty = open_store(tmp_path / "empty.db")
    assert drift_warnings(empty, ["h1"]) == []  # no history: nothing to warn about, no error


def test_drift_lines_name_host_stressors_size_and_p(tmp_path) -> None:
    with open_store(tmp_path / "q.db") as st:
        store_fingerprint_history(st, fingerprint_history(drift_host="h3", drift_at=18, drift_factor=0.85,
                                                          random_state=11))
        rep = detect_drift(st)
    lines = drift_lines(rep)
    assert lines[0].startswith("30 fingerprint runs, 6 hosts, ")
    assert "h3: 4 stressor(s) changed" in lines
    changed = [s for s in lines if s.startswith("  ")]
    assert len(changed) == 4 and all("at run synthetic-0018" in s and "(Bonferroni)" in s for s in changed)
    assert all("-1" in s.split(")")[1].split("%")[0] for s in changed)  # about -15 %
    assert "no drift" not in lines
