"""A target measured by a profile on a designed fleet shows that profile's factor effects on its page (issue 49).

The profile is a planted designed-fleet analysis (the one-story tests' pair: v1 memory-bound, v2 CPU-bound), saved
as ``quiho profile`` saves one, with its runs stored under its batch; the page must cite the stored numbers.
"""

from __future__ import annotations

import dataclasses
import html
import sys
from pathlib import Path

import pytest

from quiho.datasets.design import planted_design, planted_fingerprints, planted_hosts
from quiho.profile import save_profile
from quiho.profile.analysis import ProfileData, analyse_data
from quiho.profile.options import AnalysisOptions
from quiho.publish import publish
from quiho.publish._profiles import effect_text
from quiho.publish._targets import target_file
from quiho.store import open_store
from quiho.store.app_runs import AppRunBatch, AppRunRow, insert_app_runs

sys.path.insert(0, str(Path(__file__).parent))

APP = "db<b>&"  # markup in the application's name: escaped on every page


@pytest.fixture(scope="module")
def designed_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A store holding one planted designed-fleet profile and its runs, published; (site, the profile's design)."""
    tmp = tmp_path_factory.mktemp("designed")
    runs, table = planted_design(effects_a={"cpu-quota": 0.40, "huge-pages": -0.20, "co-runner": 0.22},
                                 effects_b={"cpu-quota": 0.43, "huge-pages": -0.02}, rounds=2, change=1.9,
                                 random_state=4)
    runs = runs.assign(reason=None, order=runs["repetition"])
    data = ProfileData(runs, None, None, application=APP, version_a="v1", version_b="v2",
                       design_vars={h: {"quiho_factors": lv} for h, lv in planted_hosts().items()},
                       fingerprint_rows=planted_fingerprints(table))
    res = dataclasses.replace(analyse_data(data, AnalysisOptions(n_boot=200, advise=False)), batch="profile-1")
    with open_store(tmp / "q.db") as st:
        save_profile(st, res)
        insert_app_runs(st, AppRunBatch("profile", "profile-1", None, APP, "latency", "s", False, "2026-11-29"),
                        [AppRunRow(r.host, r.version, int(r.repetition) + 10 * int(r["round"]), "ok", float(r.value),
                                   None, None, {}) for _, r in runs.iterrows()])
        out = publish(st, tmp / "site")
    assert out.targets == 2
    return tmp / "site", res.to_dict()["design"]


def test_a_designed_profile_puts_each_versions_factor_effects_on_its_target_page(designed_site) -> None:
    site, doc = designed_site
    for version, side in (("v1", "a"), ("v2", "b")):
        page = html.unescape((site / target_file(f"{APP}@{version}/latency")).read_text())
        story = doc["story"][side]
        assert "On a designed fleet" in page and "profile profile-1" in page
        assert f"<b>{story['label']}</b> — {story['evidence']}" in page
        for e in doc["effects"][side]["effects"]:
            assert effect_text(e) in page, (version, e)
    raw = (site / target_file(f"{APP}@v1/latency")).read_text()
    assert APP not in raw and html.escape(APP) in raw


@pytest.mark.chromium
def test_the_designed_section_renders_cleanly_and_links_its_profile(designed_site) -> None:
    from _cdp import Browser, Tab

    site, doc = designed_site
    with Browser(site.parent / "chromium-profile") as b:
        tab = Tab(b, (site / target_file(f"{APP}@v2/latency")).as_uri())
        assert tab.problems() == []
        assert tab.eval("document.querySelectorAll('#designed-0 tbody tr').length") == len(doc["factors"]["factors"])
        href = tab.eval("document.querySelector('h2 + p a').getAttribute('href')")
    assert (site / "targets" / href).resolve().is_file()
