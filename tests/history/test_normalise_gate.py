"""The CI gate on normalised values (``history detect --all --normalise``): alerts on a runner pool."""

import json

import numpy as np
import pandas as pd

from quiho.cli.main import main
from quiho.history import GateOptions, History, run_gate, save_history
from quiho.history.normalise import MachineFingerprint, normalised_view
from quiho.store import alerts as sa
from quiho.store import open_store

from .test_normalise_newest import _history_on_seen_machines


def _import(db, tmp_path, name, values, hosts):  # noqa: ANN001, ANN202 - pytest fixtures' values
    """Series ``name``: revisions r00... with ``values``, each recorded on its stored host of ``hosts``."""
    from quiho.history.normalise import attach_machine, stored_host

    revs = [f"r{i:02d}" for i in range(len(values))]
    csv = tmp_path / f"{name}.csv"
    pd.DataFrame({"revision": revs, "value": values}).to_csv(csv)
    assert main(["history", "import", str(csv), "--series", name, "--unit", "s", "--store", db]) == 0
    with open_store(db) as st:
        for rev, h in zip(revs, hosts, strict=True):
            attach_machine(st, [name], [rev], stored_host(st, h))


def _gate(db, capsys, *extra):  # noqa: ANN001, ANN202
    capsys.readouterr()
    code = main(["history", "detect", "--all", "--fail-on-change", "--json", "--store", db, *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_regression_on_a_seen_runner_raises_a_normalised_alert_the_raw_gate_misses(tmp_path, popper_csv, capsys):
    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    _import(db, tmp_path, "same", values, drawn)
    _import(db, tmp_path, "slower", [*values[:-1], values[-1] * 1.3], drawn)
    raw_code, raw = _gate(db, capsys)
    assert raw_code == 0 and raw["alerts"] == []  # the runners' spread (x3 on stream) hides +30 % in raw values
    code, doc = _gate(db, capsys, "--normalise")
    assert code == 3
    by = {s["series"]: s for s in doc["series"]}
    assert by["same"]["newest"]["verdict"] == "no change" and by["slower"]["newest"]["verdict"] == "regression"
    assert doc["series"][0]["note"].startswith("normalised")
    assert 0.2 < by["slower"]["newest"]["magnitude"] < 0.4
    (alert,) = doc["alerts"]
    assert alert["series"] == "slower" and alert["first_bad"] == "r30"
    assert alert["found_by"] == "newest revision (normalised)"  # its evidence is in normalised values


def test_the_text_gate_says_what_it_read(tmp_path, popper_csv, capsys):
    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    _import(db, tmp_path, "s", values, drawn)
    capsys.readouterr()
    assert main(["history", "detect", "--all", "--normalise", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "s: normalised (the effect fitted on the revisions before it)" in out, out
    assert main(["history", "detect", "--all", "--normalise", "--format", "markdown", "--store", db]) == 0
    assert "- s: normalised" in capsys.readouterr().out


def test_a_newest_revision_on_a_runner_the_history_has_not_measured_is_not_judged(tmp_path, popper_csv, capsys):
    from quiho.store.fingerprints import fingerprinted_hosts

    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    with open_store(db) as st:
        new = next(h for h in fingerprinted_hosts(st) if h not in set(drawn))
    _import(db, tmp_path, "s", [*values[:-1], values[-1] * 3.0], [*drawn[:-1], new])
    code, doc = _gate(db, capsys, "--normalise")
    (s,) = doc["series"]
    assert code == 0 and doc["alerts"] == []
    assert s["newest"]["verdict"] == "not meaningful" and "has not measured" in s["note"], s
    with open_store(db) as st:
        assert sa.alerts_of(st) == []  # nothing raised on another scale


def test_a_history_on_one_runner_is_gated_raw_and_says_so(tmp_path, popper_csv, capsys):
    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    one = [drawn[0]] * len(values)
    rng = np.random.default_rng(3)
    flat = [values[0] * float(np.exp(rng.normal(0, 0.005))) for _ in values]
    _import(db, tmp_path, "s", [*flat[:-1], flat[-1] * 1.3], one)
    code, doc = _gate(db, capsys, "--normalise")
    (s,) = doc["series"]
    assert code == 3 and "one machine" in s["note"], s
    (alert,) = doc["alerts"]
    assert alert["found_by"] == "newest revision"  # raw values: no tag


def test_an_alert_raised_normalised_is_followed_and_closed_on_normalised_values(tmp_path):
    """+25 % on a seen runner raises a tagged alert; the fix, measured on other runners, closes it."""
    rng = np.random.default_rng(5)
    fps = [MachineFingerprint(f"m{i}", pd.Series({"stream": v, "cpu": 5000.0 * (1 + 0.01 * i)}))
           for i, v in enumerate([1000.0, 1500.0, 2200.0, 3000.0])]
    machines: list[MachineFingerprint] = []
    samples: list[np.ndarray] = []
    view = normalised_view(machines_of=lambda store, h: machines[:len(h)])

    def gate_after(m: MachineFingerprint, factor: float):  # noqa: ANN202
        machines.append(m)
        samples.append(1e4 / float(m.values["stream"]) * factor * np.exp(rng.normal(0, 0.005, 3)))
        n = len(samples)
        save_history(st, History("s", tuple(f"r{i:02d}" for i in range(n)), np.arange(n), tuple(samples), "s"), "test")
        return run_gate(st, GateOptions(), view=view).verdicts[0]

    with open_store(tmp_path / "q.db") as st:
        for i in rng.integers(0, len(fps), size=30):
            v = gate_after(fps[i], 1.0)
        assert v.event == "" and v.newest.verdict == "no change" and v.note.startswith("normalised"), v
        v = gate_after(fps[1], 1.25)
        assert v.event == "raised" and v.alert is not None
        assert v.alert.found_by == "newest revision (normalised)" and 0.15 < v.alert.magnitude < 0.35
        events = [gate_after(fps[i], 1.0) for i in (3, 0, 2)]
        assert [e.event for e in events].count("fixed") == 1, [(e.event, e.newest.verdict) for e in events]
        (a,) = sa.alerts_of(st)
        assert a.state == "fixed"
