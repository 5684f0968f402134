"""Numeric options: nan, ±inf and absurd values are usage errors (exit 2) before any store or file is read."""

from __future__ import annotations

import pytest
import typer

from quiho.cli._common import number, probability, seed
from quiho.cli.main import main

# (argv before the bad value, option, bad values). The store named does not exist: a run that got past option
# validation would fail with exit 1 ("no store"), so exit 2 proves the option was refused first.
NO_STORE = "/nonexistent-h5/q.db"
CASES = [
    (["fleet", "drift", "--store", NO_STORE], "--alpha", ["2", "0", "nan", "-0.1", "inf"]),
    (["fleet", "drift", "--store", NO_STORE], "--max-age", ["nan", "1e300", "-1", "inf"]),
    (["fleet", "drift", "--store", NO_STORE], "--min-change", ["nan", "-1", "inf"]),
    (["fleet", "drift", "--store", NO_STORE], "--method", ["nope", ""]),
    (["trace", "a@1", "--store", NO_STORE], "--timeout", ["nan", "inf", "0", "-5", "1e300"]),
    (["trace", "a@1", "--store", NO_STORE], "--sample", ["0", "-1", "99999999999999999999"]),
    (["irup", "t", "--store", NO_STORE], "--top", ["0", "-3"]),
    (["irup", "t", "--store", NO_STORE], "--seeds", ["0", "10000000", "1e3"]),
    (["irup", "t", "--store", NO_STORE], "--random-state", ["-1", "99999999999999999999999"]),
    (["compare", "a", "b", "--store", NO_STORE], "--random-state-b", ["-1", "99999999999999999999999"]),
    (["compare", "a", "b", "--store", NO_STORE], "--top-k", ["0", "-1"]),
    (["advise", "t", "--store", NO_STORE], "--draws", ["0", "99999999"]),
    # profile and fingerprint: refused at parse time, so nothing is ever measured (a bad inventory too, to be sure)
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--alpha", ["nan", "0", "1.5"]),
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--min-change", ["nan", "1", "-0.1"]),
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--jobs", ["0", "-2", "100000"]),
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--random-state", ["-1", "4294967296"]),
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--report", ["/etc/passwd/r", "/proc/1/x"]),
    (["profile", "a@1", "a@2", "--store", NO_STORE, "-i", NO_STORE], "--seeds", ["0", "1000000"]),
    (["fingerprint", "--store", NO_STORE, "-i", NO_STORE], "--seconds", ["0", "1000000000"]),
    (["fingerprint", "--store", NO_STORE, "-i", NO_STORE], "--forks", ["0", "100000"]),
    (["history", "detect", "x.csv"], "--alpha", ["nan", "0", "2"]),
    (["history", "detect", "x.csv"], "--magnitude-floor", ["nan", "-1", "inf"]),
    (["history", "detect", "x.csv"], "--min-size", ["0", "-1"]),
    (["history", "bisect", "--repo", "/nonexistent-h5", "--build", ""], "--bench", ["'unbalanced", 'a "b']),
    (["history", "sample", "--repo", "/nonexistent-h5", "--build", "", "--bench", "x"], "--budget", ["0", "-1"]),
    (["schedule", "remove", "--root", "/nonexistent-h5"], "--name", ["..", "../../etc/passwd", "/etc/x", ".", "a b"]),
]


@pytest.mark.parametrize(("head", "opt", "values"), CASES, ids=[f"{' '.join(h[:2])} {o}" for h, o, _ in CASES])
def test_bad_numeric_option_is_a_usage_error(head, opt, values, capsys):
    for v in values:
        argv = [*head, opt, v]
        if head[0] == "trace":
            argv += ["--", "/bin/true"]
        assert main(argv) == 2, (argv, capsys.readouterr().err)
        err = capsys.readouterr().err
        assert opt in err and "Traceback" not in err, err


def test_fleet_drift_method_nope_exits_2_even_without_series(tmp_path, capsys):
    from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
    from quiho.store import open_store

    db = tmp_path / "q.db"
    with open_store(db) as st:  # two runs: too few to test any series, the case that used to exit 0
        store_fingerprint_history(st, fingerprint_history(n_hosts=2, n_runs=2, stressors=("cpu", "stream")))
    assert main(["fleet", "drift", "--store", str(db), "--method", "nope", "--alpha", "2"]) == 2
    assert main(["fleet", "drift", "--store", str(db)]) == 0


def test_detect_set_refuses_non_finite_values(capsys):
    for v in ("nan", "inf", "-inf", "1e400", "1e300"):
        assert main(["detect", "a", "b", "--set", f"joint.alpha={v}"]) == 2
        assert "finite" in capsys.readouterr().err


def test_number_validator():
    check = number(0, 1, lo_open=True)
    assert check(None) is None and check(1.0) == 1.0 and check([0.5, 1]) == [0.5, 1]
    for bad in (0.0, 1.5, float("nan"), float("inf"), [0.5, 2.0]):
        with pytest.raises(typer.BadParameter):
            check(bad)
    assert probability(0.05) == 0.05
    with pytest.raises(typer.BadParameter, match=r"in \[0, 4294967295\]"):
        seed(-1)


def _numeric_options():  # noqa: ANN202
    import typing

    from typer.main import get_command

    from quiho.cli.main import app

    def leaves(cmd, path=()):  # noqa: ANN001, ANN202
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from leaves(sub, (*path, name))
        else:
            yield " ".join(path), cmd

    def base(ann):  # noqa: ANN001, ANN202
        if typing.get_origin(ann) is typing.Annotated:
            ann = typing.get_args(ann)[0]
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        return base(args[0]) if args else ann

    for name, cmd in leaves(get_command(app)):
        hints = typing.get_type_hints(cmd.callback, include_extras=True)
        for p in cmd.params:
            t = base(hints.get(p.name))
            if t in (int, float):
                yield name, p, t


#: Numeric options validated in the command body before any work, with where.
_CHECKED_IN_BODY = {("store compact", "--older-than"): "quiho.store.compact.older_than_days"}


def test_every_numeric_option_is_validated():
    """A float option needs a callback (typer's min/max let nan through); an int one a lower bound or a callback.

    New options are held to this too: add a bound or ``callback=number(...)`` from ``quiho.cli._common``.
    """
    seen, missing = 0, []
    for name, p, t in _numeric_options():
        seen += 1
        opt = p.opts[0]
        if (name, opt) in _CHECKED_IN_BODY:
            continue
        ok = p.callback is not None or (t is int and getattr(p, "min", None) is not None)
        if not ok:
            missing.append(f"{name} {opt} ({t.__name__})")
    assert seen >= 30
    assert not missing, f"numeric options without validation: {missing}"
