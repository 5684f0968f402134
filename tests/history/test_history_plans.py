"""The settings objects of ``quiho history sample``/``bisect`` hold the defaults; the CLI's options must agree.

The CLI imports ``quiho.history`` lazily (start-up time), so its typer defaults are written out again; this
test keeps the two copies equal.
"""

import dataclasses
import inspect

import pytest

from quiho.cli._history import bisect_, sample_
from quiho.history import BisectPlan, GitBench, SamplingPlan


def _field_defaults(cls: type) -> dict[str, object]:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


@pytest.mark.parametrize("command,classes,shared", [
    (sample_, (GitBench, SamplingPlan),
     {"rev_range", "repetitions", "metric", "timeout", "strategy", "kernel", "stop_sigma", "random_state"}),
    (bisect_, (GitBench, BisectPlan), {"rev_range", "repetitions", "metric", "timeout", "alpha", "kernel", "confirm"}),
])
def test_cli_defaults_are_the_objects_defaults(command, classes, shared):
    params = inspect.signature(command).parameters
    checked = set()
    for cls in classes:
        for name, default in _field_defaults(cls).items():
            if name in params:
                assert params[name].default == default, f"{command.__name__} --{name}: {params[name].default!r} " \
                                                        f"but {cls.__name__}.{name} = {default!r}"
                checked.add(name)
    assert checked == shared


def test_settings_are_frozen_and_argv_become_tuples(tmp_path):
    target = GitBench(str(tmp_path), [], ["make", "bench"])
    assert target.repo == tmp_path and target.bench == ("make", "bench") and target.build == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.metric = "cpu"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SamplingPlan(5).budget = 6  # type: ignore[misc]
    assert hash(target) == hash(GitBench(tmp_path, (), ("make", "bench")))
