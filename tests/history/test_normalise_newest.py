"""The newest revision checked on whatever machine it ran: seen, new (refused, or predicted), outside the range."""

import numpy as np
import pandas as pd
import pytest

from quiho.errors import UsageError
from quiho.history import History, check_newest, detect
from quiho.history.gate._levels import compare_levels, variance_components
from quiho.history.normalise import MachineFingerprint, NormaliseOptions, check_newest_normalised

from .test_normalise import STRESSORS, _rotating


def _with_newest(h, ms, machine, shift=1.0, seed=1, lean_on="stream"):
    """``h`` plus one newest revision on ``machine`` (runtime 10/speed of ``lean_on``), ``shift`` planted."""
    rng = np.random.default_rng(seed)
    base = 10.0 / (float(machine.values[lean_on]) / 1000) * shift
    n = len(h)
    runs = base * np.exp(rng.normal(0, 0.01, 3))
    new = History(h.name, (*h.revisions, f"r{n:03d}"), np.arange(n + 1), (*h.samples, runs), h.unit)
    return new, [*ms, machine]


def _raw_check(h):
    before = History(h.name, h.revisions[:-1], h.orders[:-1], h.samples[:-1], h.unit)
    return check_newest(h, alpha=0.001, detection=detect(before, "auto"), test_within="pooled")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_regression_on_a_seen_machine_is_caught_where_raw_sees_machines(seed):
    h, ms = _rotating(shift=1.0, seed=seed)
    for shift, verdict in ((1.0, "no change"), (1.10, "regression")):
        hn, mn = _with_newest(h, ms, ms[7], shift)
        nn = check_newest_normalised(hn, mn)
        assert nn.normalised and nn.seen and nn.machine == ms[7].key, nn.reason
        assert nn.check.verdict == verdict
        if verdict == "regression":
            assert 0 < nn.check.ci[0] < 0.10 < nn.check.ci[1]  # the planted 10 % inside its interval
            assert _raw_check(hn).verdict == "no change"  # the machine spread swamps 10 % raw
    assert nn.to_dict()["machine_seen"] is True and nn.to_dict()["normalised"] is True


def test_a_new_machine_inside_the_range_is_predicted_with_its_error_in_the_interval():
    h, ms = _rotating(shift=1.0, n_machines=12, seed=3)
    keys = {m.key for m in ms}
    # a new machine between two seen ones on every stressor: the geometric mean of two of them
    a, b = ms[0], next(m for m in ms if m.key != ms[0].key)
    new = MachineFingerprint("new", np.sqrt(a.values * b.values))
    assert new.key not in keys
    hn, mn = _with_newest(h, ms, new, 1.25)
    refused = check_newest_normalised(hn, mn)  # the default: a machine new to the history is not compared
    assert refused.check.verdict == "not meaningful" and not refused.normalised and not refused.seen
    assert "has not measured" in refused.check.reason and refused.to_dict()["verdict"] == "not meaningful"
    nn = check_newest_normalised(hn, mn, new_machine="predict")
    assert nn.normalised and not nn.seen and "new: factor predicted" in nn.reason, nn.reason
    assert nn.check.verdict == "regression" and nn.check.ci[0] < 0.25 < nn.check.ci[1]
    seen = check_newest_normalised(*_with_newest(h, ms, a, 1.25))
    width = nn.check.ci[1] - nn.check.ci[0]
    assert width > seen.check.ci[1] - seen.check.ci[0]  # the held-out machines' error widens it


def test_a_new_machine_outside_the_history_is_checked_raw_and_said():
    h, ms = _rotating(shift=1.0, seed=4)
    fast = MachineFingerprint("fast", pd.Series(10 * np.max([m.values.to_numpy() for m in ms], axis=0),
                                                index=list(STRESSORS)))
    hn, mn = _with_newest(h, ms, fast)
    nn = check_newest_normalised(hn, mn, new_machine="predict")
    assert not nn.normalised and "outside the history's machines" in nn.reason and "extrapolated" in nn.reason
    assert nn.check == _raw_check(hn) and nn.factor == 1.0  # the raw check, nothing lost


def test_a_newest_without_fingerprint_or_a_history_on_one_machine_is_raw_and_said():
    h, ms = _rotating(shift=1.0, seed=5)
    hn, _ = _with_newest(h, ms, ms[0])
    nn = check_newest_normalised(hn, [*ms, None])
    assert not nn.normalised and "newest revision has no machine fingerprint" in nn.reason
    assert nn.check == _raw_check(hn)
    one, mo = _rotating(shift=1.0, n_machines=1, seed=5)
    nn = check_newest_normalised(*_with_newest(one, mo, mo[0], 1.10))
    assert not nn.normalised and "one machine" in nn.reason and nn.check.verdict == "regression"


def test_a_new_machine_lacking_a_stressor_of_the_effect_is_raw():
    h, ms = _rotating(shift=1.0, seed=6)
    partial = MachineFingerprint("partial", ms[0].values.drop("stream"))
    hn, mn = _with_newest(h, ms, ms[0])
    nn = check_newest_normalised(hn, [*mn[:-1], partial], new_machine="predict")
    assert not nn.normalised and "no measurement of" in nn.reason and "stream" in nn.reason


def test_bad_arguments_are_refused():
    h, ms = _rotating(shift=1.0, n=10)
    with pytest.raises(ValueError, match="machines for"):
        check_newest_normalised(h, ms[:-1])
    one = History("x", ("a",), np.arange(1), (np.ones(3),))
    with pytest.raises(ValueError, match="revisions before it"):
        check_newest_normalised(one, ms[:1], NormaliseOptions())
    with pytest.raises(UsageError, match="refuse or predict"):
        check_newest_normalised(h, ms, new_machine="guess")


def test_an_extra_variance_term_widens_the_comparison():
    rng = np.random.default_rng(0)
    base = [rng.normal(10, 0.1, 3) for _ in range(20)]
    test = [rng.normal(10.3, 0.1, 3)]
    vc = variance_components(base)
    plain = compare_levels(vc, base, test, 0.01)
    wide = compare_levels(vc, base, test, 0.01, extra=(0.05, 10.0))
    assert wide.magnitude == plain.magnitude and wide.p_value > plain.p_value
    assert wide.ci[0] < plain.ci[0] and wide.ci[1] > plain.ci[1] and wide.df != plain.df


def _history_on_seen_machines(tmp_path, popper_csv):  # noqa: ANN001, ANN202 - pytest fixtures' values
    """A store of the paper's fleet and 31 revisions drawn on 6 of its machines, the newest on one seen before.

    Returns the store's path, each revision's host and its value (1e4 / the host's stream speed, 0.5 % noise).
    """
    from quiho.cli.main import main
    from quiho.store import open_store
    from quiho.store.fingerprints import fingerprinted_hosts, host_fingerprint

    db = str(tmp_path / "q.db")
    assert main(["import", "quiho-popper", str(popper_csv), "--store", db]) == 0
    with open_store(db) as st:
        hosts = fingerprinted_hosts(st)[:6]
        speed = {h: float(host_fingerprint(st, h).medians()["stream"]) for h in hosts}
    rng = np.random.default_rng(7)
    drawn = [hosts[i] for i in rng.integers(0, len(hosts), size=30)]
    drawn.append(drawn[3])  # the newest on a machine the history has seen
    return db, drawn, [1e4 / speed[h] * np.exp(rng.normal(0, 0.005)) for h in drawn]


def test_cli_prints_the_newest_revision_and_exits_3_on_its_regression(tmp_path, popper_csv, capsys):
    import json

    from quiho.cli.main import main
    from quiho.history.normalise import attach_machine, stored_host
    from quiho.store import open_store

    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    for slower, code in ((1.0, 0), (1.3, 3)):
        csv = tmp_path / f"h{code}.csv"
        pd.DataFrame({"revision": [f"r{i:02d}" for i in range(31)], "value": [*values[:-1], values[-1] * slower]}
                     ).to_csv(csv)
        name = f"s{code}"
        assert main(["history", "import", str(csv), "--series", name, "--unit", "s", "--store", db]) == 0
        with open_store(db) as st:
            for rev, h in zip((f"r{i:02d}" for i in range(31)), drawn, strict=True):
                attach_machine(st, [name], [rev], stored_host(st, h))
        capsys.readouterr()
        assert main(["history", "detect", name, "--normalise", "--fail-on-change", "--store", db]) == code
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if "newest r30" in x)
        assert ("regression, +" in line) == (code == 3) and "was seen in the history" in line, out
        assert "(99.9%)" in line  # the gate's newest level by default
        assert main(["history", "detect", name, "--normalise", "--json", "--newest-alpha", "0.01",
                     "--store", db]) == 0
        doc = json.loads(capsys.readouterr().out)["newest"]
        assert doc["revision"] == "r30" and doc["normalised"] is True and doc["machine_seen"] is True
        assert doc["alpha"] == 0.01  # --newest-alpha reaches the check
        assert (doc["verdict"] == "regression") == (code == 3)
        if code == 3:
            assert doc["ci"][0] < 0.3 < doc["ci"][1]


@pytest.mark.parametrize("facts", [True, False])
def test_hosted_runners_fresh_vms_are_known_by_their_kind(tmp_path, popper_csv, capsys, facts):
    """Every revision on a fresh VM (a new host name, its own quick fingerprint): with facts the newest VM's kind is
    seen, an unchanged newest passes and +30 % is caught; without facts every newest VM is new, not compared."""
    import json

    from quiho.cli.main import main
    from quiho.history.normalise import machine_type, revision_fingerprints
    from quiho.store import open_store
    from quiho.store.fingerprints import fingerprinted_hosts, host_fingerprint, write_local_fingerprint
    from quiho.store.history import series_id, set_revision_machine

    db = str(tmp_path / "q.db")
    assert main(["import", "quiho-popper", str(popper_csv), "--store", db]) == 0
    with open_store(db) as st:
        med = {t: host_fingerprint(st, t).medians() for t in fingerprinted_hosts(st)}
    # two CloudLab hardware types, the slowest and fastest at stream (a hosted pool rotates two or three)
    by_speed = sorted(med, key=lambda t: float(med[t]["stream"]))
    kinds = [by_speed[0], by_speed[-1]]
    rng = np.random.default_rng(11)
    drawn = [kinds[i] for i in rng.integers(0, len(kinds), size=30)]
    drawn.append(drawn[5])  # the newest on a fresh VM of a kind the history has measured
    values = [1e4 / float(med[t]["stream"]) * np.exp(rng.normal(0, 0.005)) for t in drawn]
    # each job's fingerprint: its kind's, 1 % apart per stressor
    jobs = [[(0, s, float(v) * float(np.exp(rng.normal(0, 0.01))), "ok", None) for s, v in med[t].items()]
            for t in drawn]
    for slower, code in ((1.0, 0), (1.3, 3)):
        name = f"s{code}"
        csv = tmp_path / f"{name}.csv"
        pd.DataFrame({"revision": [f"r{i:02d}" for i in range(31)], "value": [*values[:-1], values[-1] * slower]}
                     ).to_csv(csv)
        assert main(["history", "import", str(csv), "--series", name, "--unit", "s", "--store", db]) == 0
        with open_store(db) as st:
            sid = series_id(st, name)
            for i, (t, rows) in enumerate(zip(drawn, jobs, strict=True)):
                vm = f"fv-az{code}{i:03d}"  # hosted runners: a host name per job
                f = {"host": vm, "cpu_model": f"CPU of {t}", "vcpus": 4, "memtotal_mb": 16000 + i, "arch": "x86_64"}
                run = write_local_fingerprint(st, vm, f, f"key{code}{i}", {"battery": "quick"}, rows)
                set_revision_machine(st, sid, f"r{i:02d}", vm, run, f if facts else {})
            ms = revision_fingerprints(st, name, [f"r{i:02d}" for i in range(31)])
        assert len({m.key for m in ms}) == 31  # a machine per job
        assert len({m.identity for m in ms}) == (2 if facts else 31)
        assert ms[-1].kind == (machine_type({"cpu_model": f"CPU of {drawn[-1]}", "vcpus": 4, "memtotal_mb": 16030,
                                             "arch": "x86_64"}) if facts else None)
        capsys.readouterr()
        assert main(["history", "detect", name, "--normalise", "--fail-on-change", "--json", "--store", db]) == (
            code if facts else 0)
        doc = json.loads(capsys.readouterr().out)["newest"]
        assert doc["machine_seen"] is facts and doc["normalised"] is facts  # two kinds: validated per job
        if not facts:
            assert doc["verdict"] == "not meaningful" and "has not measured" in doc["reason"]
        elif code == 3:
            assert doc["verdict"] == "regression" and doc["ci"][0] < 0.3 < doc["ci"][1]
        else:
            assert doc["verdict"] == "no change", doc


@pytest.mark.parametrize("model", ["ridge", "gbm"])
def test_the_full_history_fit_absorbs_part_of_the_newest_regression(model):
    """Why ``detect --normalise`` fits twice (quiho.cli._machines.normalised_detect): an effect fitted with the newest
    revision moves its machine's factor towards that revision's regression, which the check would then divide out."""
    from quiho.history.normalise import detect_normalised

    absorbed = []
    for seed in range(6):
        h, ms = _rotating(shift=1.0, seed=seed)
        hn, mn = _with_newest(h, ms, ms[7], 1.3)
        opts = NormaliseOptions(model=model)
        full, before = detect_normalised(hn, mn, opts), detect_normalised(h, ms, opts)
        mine = np.array([m.identity == ms[7].identity for m in mn])
        moved = full.effect.effect[mine].mean() - before.effect.effect[mine[:-1]].mean()
        absorbed.append(moved / np.log(1.3))
    # measured: ridge -0.4 % to 14 %, trees 2 % to 22 % of the step's log; never a factor moved against it by much
    assert max(absorbed) > 0.10 and np.mean(absorbed) > 0.03 and min(absorbed) > -0.02, absorbed


def test_cli_normalise_fits_the_whole_history_once_and_the_history_before_its_newest_once(tmp_path, popper_csv,
                                                                                           capsys, monkeypatch):
    from quiho.cli.main import main
    from quiho.history import normalise
    from quiho.history.normalise import _detect, attach_machine, stored_host
    from quiho.store import open_store

    db, drawn, values = _history_on_seen_machines(tmp_path, popper_csv)
    pd.DataFrame({"revision": [f"r{i:02d}" for i in range(31)], "value": values}).to_csv(tmp_path / "h.csv")
    assert main(["history", "import", str(tmp_path / "h.csv"), "--series", "s", "--unit", "s", "--store", db]) == 0
    with open_store(db) as st:
        for i, h in enumerate(drawn):
            attach_machine(st, ["s"], [f"r{i:02d}"], stored_host(st, h))
    calls, fits, joints = [], [], []
    orig, orig_joint = _detect.detect_normalised, _detect._joint

    def counted(h, machines, opts=None):
        calls.append(len(h))
        return orig(h, machines, opts)

    def joint(h, *args):
        nd = orig_joint(h, *args)
        joints.append((len(h), nd.effect.iterations))
        return nd

    monkeypatch.setattr(normalise, "detect_normalised", counted)  # what the CLI calls
    monkeypatch.setattr(_detect, "detect_normalised", counted)  # what the newest revision's check calls
    monkeypatch.setattr(_detect, "_joint", joint)  # one fit of the effect with the segmentation, per model tried
    for kind in set(_detect.EFFECT_MODELS.values()):
        def fit(self, Z, r, _orig=kind.fit):
            fits.append(len(r))
            return _orig(self, Z, r)

        monkeypatch.setattr(kind, "fit", fit)
    capsys.readouterr()
    assert main(["history", "detect", "s", "--normalise", "--store", db]) == 0
    assert "was seen in the history" in capsys.readouterr().out  # the newest revision's check was normalised
    assert calls == [31, 30]  # once the whole history (its change points), once without the newest (its check)
    # inside each, every model 'auto' tries is fitted jointly once, and its effect once per iteration on all the
    # revisions (the rest of the fits hold a machine out): nothing refitted
    assert sorted(n for n, _ in joints) == [30] * len(_detect.EFFECT_MODELS) + [31] * len(_detect.EFFECT_MODELS)
    for n in (30, 31):
        assert fits.count(n) == sum(it for m, it in joints if m == n) >= len(_detect.EFFECT_MODELS)
    assert max(fits) == 31
