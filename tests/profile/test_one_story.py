"""One story everywhere: text, Markdown, the HTML report, the hints and JSON cite the same design estimates."""

from __future__ import annotations

import html
import json
import re

import pytest

from quiho.datasets.design import planted_design, planted_fingerprints, planted_hosts
from quiho.design.analysis import effect_table
from quiho.profile.analysis import ProfileData, analyse_data
from quiho.profile.options import AnalysisOptions
from quiho.profile.text import summary_lines, summary_markdown
from quiho.report.html import write_report

MEMORY_BOUND = {"cpu-quota": 0.40, "huge-pages": -0.20, "co-runner": 0.22}
CPU_BOUND = {"cpu-quota": 0.43, "huge-pages": -0.02}


def _profile(effects_b: dict[str, float], seed: int = 4):
    runs, table = planted_design(effects_a=MEMORY_BOUND, effects_b=effects_b, rounds=2, change=1.9,
                                 random_state=seed)
    runs = runs.assign(reason=None, order=runs["repetition"])
    design_vars = {h: {"quiho_factors": levels} for h, levels in planted_hosts().items()}
    fps = planted_fingerprints(table)
    data = ProfileData(runs, None, None, application="stream", version_a="v1", version_b="v2",
                       design_vars=design_vars, fingerprint_rows=fps)
    return analyse_data(data, AnalysisOptions(n_boot=200, advise=False))


@pytest.mark.parametrize("effects_b", [CPU_BOUND, MEMORY_BOUND], ids=["shift", "same"])
def test_text_markdown_html_json_and_hints_agree(tmp_path, effects_b):
    res = _profile(effects_b)
    doc = res.to_dict()
    d = doc["design"]
    text = "\n".join(summary_lines(res))
    md = summary_markdown(res)
    write_report(res, tmp_path)
    page = html.unescape((tmp_path / "report.html").read_text())
    report_json = json.loads((tmp_path / "report.json").read_text())
    # the report's JSON is the same document (up to the clock)
    assert report_json["design"] == json.loads(json.dumps(d))
    assert doc["resource_profile"] == {"source": "design", "verdict": d["verdict"]}
    md_plain = md.replace("\\", "")
    for out in (text, md_plain, page):
        assert f"resource profile: {d['verdict']}" in out.replace("**", "") or d["verdict"] in out
        assert d["story"]["a"]["label"] in out and d["story"]["b"]["label"] in out
        assert d["reason"] in out
    # every cell of the effect table, in Markdown and HTML, is the JSON's numbers formatted once
    for row in effect_table(res.design):
        for cell in row:
            assert cell in md_plain and cell in page
    for c in d["changes"]:
        shown = f"{100 * c['effect']:+.0f} % [{100 * c['ci'][0]:+.0f}, {100 * c['ci'][1]:+.0f}]"
        assert shown in md_plain and shown in page
    # the hints cite the moved factors with the same change and p, and nothing from the IRUPs
    for c in d["changes"]:
        if c["factor"] in d["moved"]:
            hint = next(h for h in doc["hints"] if h["evidence"].get("factor") == c["factor"])
            assert hint["evidence"]["change"] == c
            assert f"p = {c['p_value']:.3g}" in hint["message"]
    assert not [h for h in doc["hints"] if h["kind"] == "stressor"]
    if effects_b is CPU_BOUND:
        assert d["verdict"] == "different" and d["class_shift"]
    else:
        assert d["verdict"] != "different"
    # no statement of a class in any output that the JSON does not make
    labels = {d["story"]["a"]["label"], d["story"]["b"]["label"]}
    for out in (text, md_plain):
        for found in re.findall(r"([A-Za-z/-]+-bound)", out):
            assert found in labels, found


def test_a_planted_disagreement_fails(tmp_path):
    """The check above can fail: a report rendered from another profile's design does not match this JSON."""
    res, other = _profile(CPU_BOUND), _profile(MEMORY_BOUND)
    write_report(other, tmp_path)
    page = html.unescape((tmp_path / "report.html").read_text())
    assert res.to_dict()["design"]["reason"] not in page


def test_a_fleet_without_factor_variables_keeps_todays_analysis():
    """Hosts that carry no factors (a real inventory without quiho_factors): no design section, same document."""
    from quiho.datasets import planted_profile

    runs, a, b = planted_profile(n_groups=6, stressors=("cpu", "stream", "zero"))
    base = dict(application="planted", version_a="v1", version_b="v2")
    opts = AnalysisOptions(n_boot=200, seeds=2, advise=False)
    plain = analyse_data(ProfileData(runs, a, b, **base), opts).to_dict()
    empty = analyse_data(ProfileData(runs, a, b, design_vars={h: {} for h in runs["host"].unique()}, **base),
                         opts).to_dict()
    for doc in (plain, empty):
        doc.pop("created_at")
    assert empty == plain
    assert plain["design"] is None and plain["resource_profile"]["source"] == "irup"


def test_bad_factors_are_said_in_one_line_and_lose_nothing():
    runs, _table = planted_design(effects_a=MEMORY_BOUND, effects_b=CPU_BOUND, rounds=2, random_state=2)
    runs = runs.assign(reason=None, order=runs["repetition"])
    hosts = planted_hosts()
    design_vars = {h: {"quiho_factors": {**levels, "rack": "r1", "twin": levels["huge-pages"]}}
                   for h, levels in hosts.items()}
    del design_vars["h-000"]["quiho_factors"]["co-runner"]
    res = analyse_data(ProfileData(runs, None, None, application="stream", version_a="v1", version_b="v2",
                                   design_vars=design_vars), AnalysisOptions(n_boot=200, advise=False))
    warnings = [n for n in res.notes if n.startswith("warning: design:")]
    assert len(warnings) == 3
    assert any("co-runner: host(s) h-000 have no value" in w for w in warnings)
    assert any("rack does not vary" in w for w in warnings)
    assert any("twin is confounded with huge-pages" in w for w in warnings)
    assert all("\n" not in w for w in warnings)
    assert res.design is not None and res.design.factors.names == ["cpu-quota", "huge-pages"]
    assert len(res.runs) == len(runs) and res.metric.hosts_used == 8
    assert any(line.startswith("warning: design:") for line in summary_lines(res))


def test_the_published_site_cites_the_same_design_estimates(tmp_path):
    from quiho.profile.result import save_profile
    from quiho.publish import publish
    from quiho.store import open_store

    res = _profile(CPU_BOUND)
    with open_store(tmp_path / "q.db") as st:
        save_profile(st, res)
        publish(st, tmp_path / "site")
    pages = [html.unescape(p.read_text()) for p in (tmp_path / "site" / "profiles").glob("profile-*.html")]
    assert len(pages) == 1
    for row in effect_table(res.design):
        for cell in row[2:]:  # the effects, their change and p, formatted once from the same numbers
            assert cell in pages[0], cell
    assert res.design.reason in pages[0] and res.design.story_b.label in pages[0]
