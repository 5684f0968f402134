"""The profile's one options object: precedence, validation, immutability; the calibration resolved in one place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from quiho.errors import UsageError
from quiho.profile import AnalysisOptions, MeasureOptions, ProfileOptions
from quiho.profile.project import ProfileDefaults

REPO = Path(__file__).resolve().parents[2]


def test_given_over_project_file_over_model_defaults():
    from_file = ProfileDefaults(battery="full", max_age="6h", seeds=4, min_change=0.1)
    opts = ProfileOptions.build(from_file, seeds=7, alpha=None, warmup=0)
    m, a = opts.measure, opts.analysis
    assert (a.seeds, a.min_change, a.alpha) == (7, 0.1, AnalysisOptions().alpha)  # given, file, model
    assert (m.battery, m.max_age_s, m.warmup, m.inventory) == ("full", 6 * 3600.0, 0, None)
    assert ProfileOptions.build() == ProfileOptions()  # nothing given, no file: the models' defaults


def test_bad_settings_are_usage_errors_that_name_the_option():
    with pytest.raises(UsageError, match="--min-change"):
        ProfileOptions.build(min_change=1.5)
    with pytest.raises(UsageError, match="--max-age 'soon'"):
        ProfileOptions.build(max_age="soon")
    with pytest.raises(UsageError, match="unknown profile option 'sedes'"):
        ProfileOptions.build(sedes=3)
    with pytest.raises(ValidationError):  # built directly (a library caller): pydantic's own error
        AnalysisOptions(alpha=0)


def test_options_are_frozen():
    opts = ProfileOptions()
    with pytest.raises(ValidationError):
        opts.analysis.seeds = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        MeasureOptions(battery="quick", colour="red")  # type: ignore[call-arg]


def test_cli_help_states_the_models_defaults():
    """The help text says the defaults in words; they must be the models' (the only place they are set)."""
    from typer.testing import CliRunner

    from quiho.cli.main import app

    out = re.sub(r"\s+", " ", CliRunner().invoke(app, ["profile", "--help"], env={"COLUMNS": "200"}).output)
    a, m = AnalysisOptions(), MeasureOptions()
    for said in (f"(default {a.alpha:g})", f"(default {a.seeds})", f"Master seed (default {a.random_state})",
                 f"(default {a.min_change:g} = 5 %)", f"(default {m.warmup})", f"(default {m.battery})",
                 f"Default {m.max_age}"):
        assert said in out, said
    assert a.n_jobs == -1 and "-1 = all cores; the default" in out


def test_the_calibration_is_resolved_in_one_place(tmp_path):
    """``resolve_fleet``: an inventory given is used as is (no calibration, axes unknown); none given is the
    calibrated local fleet with the number of axes its calibration kept. No other module calibrates."""
    from quiho.fleet.local.calibrate import choose, inventory_text, load_responses, resolve_fleet
    from quiho.fleet.local.probes import facts_key, machine_facts
    from quiho.store import open_store
    from quiho.store.calibrations import save_calibration

    store = open_store(tmp_path / "q.db")
    given = resolve_fleet("inventories/local.yml", store)
    assert (given.inventory, given.axes) == ("inventories/local.yml", None)
    facts = machine_facts()
    choice = choose(load_responses(REPO / "tests" / "data" / "calibration" / "quiet-vm-amd-epyc-1710.json"))
    path = tmp_path / "local.yml"
    save_calibration(store, facts_key=facts_key(facts), facts=facts,
                                 result={"choice": {**choice.to_dict(), "knobs": []},  # knobs screened
                                         "inventory_text": inventory_text(choice, facts, facts_key(facts))},
                                 inventory=str(path), elapsed_s=1.0, schema_version=1, quiho_version="test")
    local = resolve_fleet(None, store)
    assert (local.inventory, local.axes) == (str(path), len(choice.kept)) and local.axes == 2
    callers = [p.relative_to(REPO) for p in (REPO / "quiho").rglob("*.py")
               if "calibrated_fleet(" in p.read_text() and p.name != "calibrate.py"]
    assert callers == []

