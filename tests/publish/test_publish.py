"""``quiho publish``: a store with histories, a fleet and profiles becomes a static site that renders cleanly.

The Chromium tests load every kind of page from ``file://`` through the DevTools protocol (``_cdp.py``) and fail
on any console message, script error, CSP violation or request that is not a local file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from quiho.errors import QuihoError, UsageError
from quiho.publish import MANIFEST, IrupSettings, PublishOptions, publish
from quiho.store import history as history_store
from quiho.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from _build import add_fleet, add_histories, add_profiles  # noqa: E402

#: Series names: plain ones and hostile ones (HTML, a path, control characters, 5,000 characters).
HOSTILE = ["<img src=x onerror=alert(1)>", "../../../etc/passwd", "tab\tnl\nesc\x1b[31m nul\x00", "x" * 5000,
           "</script><script>alert(2)</script>", "' onmouseover='alert(3)"]
NAMES = [f"bench{i}" for i in range(6)] + HOSTILE
BATCHES = ["p-1", "p-2", "<b>batch</b>/../x"]


def series_name(name: str) -> str:
    """The stored name of a generated series (the CSV importer names it ``suite[bench=NAME]``)."""
    return f"suite[bench={name}]"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory, planted_result) -> Path:
    tmp = tmp_path_factory.mktemp("pubstore")
    with open_store(tmp / "q.db") as st:
        add_histories(st, tmp, NAMES, n=60)
        add_fleet(st, hosts=4, runs=12, drift_host="h1")
        add_profiles(st, planted_result, BATCHES)
    return tmp / "q.db"


@pytest.fixture(scope="module")
def site(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("site") / "site"
    with open_store(store_path, create=False) as st:
        res = publish(st, out)
    return out, res


def all_files(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(root) for f in fs]


def test_counts_files_and_manifest(site):
    root, res = site
    assert (res.series, res.hosts, res.profiles) == (len(NAMES), 4, len(BATCHES))
    # pages: 1 overview + 4 lists + 1 per series, host and profile (+ its JSON) + 2 assets + 3 of uPlot
    assert res.pages == 1 + 4 + len(NAMES) + 4 + 2 * len(BATCHES) + 2 + 3
    assert len(res.written) == res.pages and res.unchanged == 0
    manifest = json.loads((root / MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(res.written)
    files = {str(p.relative_to(root)) for p in all_files(root)}
    assert files == set(res.written) | {MANIFEST}
    assert all(re.fullmatch(r"(?:[a-z]+/)?[a-z0-9][a-z0-9.-]*", f) for f in files)


def test_names_are_escaped_everywhere(site):
    root, _ = site
    text = "\n".join(p.read_text(encoding="utf-8") for p in all_files(root) if p.suffix == ".html")
    for raw in ("<img src=x", "<script>alert", "onmouseover='alert", "<b>batch</b>", "\x1b", "\x00"):
        assert raw not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "\\x1b[31m" in text and "\\x00" in text
    # the only script elements are the site's own file and JSON data
    scripts = re.findall(r"<script[^>]*>", text)
    assert set(scripts) <= {"<script src='../assets/site.js'>", "<script src='assets/site.js'>",
                            "<script src='../assets/uplot.min.js'>",
                            "<script type='application/json' id='series-data'>"}
    # embedded JSON cannot close its element, and it parses back to the names
    data = re.findall(r"id='series-data'>(.*?)</script>", text, flags=re.S)
    assert len(data) == len(NAMES) and all("<" not in d for d in data)


def test_republish_rewrites_only_what_changed(store_path, tmp_path):
    shutil.copy(store_path, tmp_path / "q.db")
    with open_store(tmp_path / "q.db", create=False) as st:
        first = publish(st, tmp_path / "site")
        again = publish(st, tmp_path / "site")
        assert again.written == () and again.unchanged == first.pages and again.removed == ()
        # one new revision of one series: its page, the series list and the overview change, nothing else
        sid = history_store.series_id(st, series_name("bench0"))
        assert sid is not None
        history_store.append_revision(st, sid, "rev-new")
        history_store.record_measurement(st, sid, "rev-new", [150.0, 151.0, 149.0])
        third = publish(st, tmp_path / "site")
    from quiho.publish._series import series_file

    assert series_file(series_name("bench0")) in third.written
    assert set(third.written) <= {series_file(series_name("bench0")), "series/index.html", "index.html"}
    assert third.unchanged == first.pages - len(third.written)
    page = (tmp_path / "site" / series_file(series_name("bench0"))).read_text()
    assert "rev-new" in page and "regression" in page  # +50 % on a lower-is-better unit


def test_refuses_a_foreign_or_newer_directory(store_path, tmp_path):
    with open_store(store_path, create=False) as st:
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "keep.txt").write_text("mine")
        with pytest.raises(UsageError, match="not empty and holds no quiho site"):
            publish(st, tmp_path / "notes")
        assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == ["keep.txt"]
        (tmp_path / "file").write_text("x")
        with pytest.raises(UsageError, match="is a file"):
            publish(st, tmp_path / "file")
    before = store_path.read_bytes()
    with open_store(store_path, create=False) as st:
        # refused before the store is read: nothing computed, so nothing cached (the store stays byte for byte)
        with pytest.raises(QuihoError, match="file is not a directory"):
            publish(st, tmp_path / "file" / "site")
        with pytest.raises(QuihoError, match="too long"):
            publish(st, tmp_path / ("n" * 300) / "site")
    assert store_path.read_bytes() == before
    with open_store(store_path, create=False) as st:
        publish(st, tmp_path / "site")
        m = tmp_path / "site" / MANIFEST
        m.write_text(m.read_text().replace('"schema_version": 1', '"schema_version": 99'))
        with pytest.raises(UsageError, match="v99"):
            publish(st, tmp_path / "site")


def test_cli_publishes_and_reports_json(store_path, tmp_path):
    import subprocess

    r = subprocess.run([sys.executable, "-m", "quiho", "publish", str(tmp_path / "site"), "--store", str(store_path),
                        "--json"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["series"], doc["hosts"], doc["profiles"]) == (len(NAMES), 4, len(BATCHES))
    r = subprocess.run([sys.executable, "-m", "quiho", "publish", str(store_path), "--store", str(store_path)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert r.returncode == 2 and "is a file" in r.stderr and "Traceback" not in r.stderr


# --- in headless Chromium ------------------------------------------------------------------------------------------


def _shot_ok(path: Path) -> None:
    """A screenshot that is more than a background: text, rules and plot lines in several greys."""
    import matplotlib.image

    px = (matplotlib.image.imread(path)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    assert (px != px[0]).any(axis=1).mean() > 0.02
    assert len(np.unique(px, axis=0)) > 20
    if os.environ.get("QUIHO_KEEP_SCREENSHOT"):
        keep = Path(os.environ["QUIHO_KEEP_SCREENSHOT"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, keep / path.name)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    from _cdp import Browser

    with Browser(tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


@pytest.mark.chromium
def test_pages_render_cleanly_with_the_right_counts(site, browser, tmp_path, planted_result):
    from _cdp import Tab

    from quiho.publish._fleet import host_file
    from quiho.publish._profiles import profile_file

    root, res = site
    counts = {"index.html": None, "series/index.html": "#series tbody tr", "fleet/index.html": "#hosts-0 tbody tr",
              "profiles/index.html": "#profiles tbody tr"}
    want = {"series/index.html": len(NAMES), "fleet/index.html": 4, "profiles/index.html": len(BATCHES)}
    for rel, rows in counts.items():
        tab = Tab(browser, (root / rel).as_uri())
        assert tab.problems() == [], rel
        if rows:
            assert tab.eval(f"document.querySelectorAll('{rows}').length") == want[rel]
        _shot_ok(tab.screenshot(tmp_path / f"{rel.replace('/', '-')}.png"))
    tab = Tab(browser, (root / "index.html").as_uri())
    got = tab.eval("['n-series','n-hosts','n-profiles'].map(function(i){return document.getElementById(i)"
                   ".textContent})")
    assert got == [str(len(NAMES)), "4", str(len(BATCHES))]
    assert tab.eval("document.querySelectorAll('img').length") == 0  # no name became an element
    # the drifted host's page: its alerts (memory stressors) and a plot per stressor
    tab = Tab(browser, (root / host_file("h1")).as_uri())
    assert tab.problems() == []
    assert tab.eval("document.querySelectorAll('#stressors svg').length") == 6
    drifted = tab.eval("Array.from(document.querySelectorAll('#drift tbody tr td:nth-child(2)'))"
                       ".map(function(td){return td.textContent})")
    assert drifted and set(drifted) <= {"stream", "memcpy", "vm"}
    # a profile with a hostile batch label: verdict, IRUP shift, class story
    batch = BATCHES[-1]
    from quiho.publish._collect import ProfileView

    tab = Tab(browser, (root / profile_file(ProfileView({"batch": batch}, None))).as_uri())
    assert tab.problems() == []
    assert tab.eval("document.getElementById('verdict').textContent").count(batch) == 1
    assert tab.eval("document.querySelectorAll('#class-shares tbody tr').length") >= 2
    # the report's plots, drawn from the document: a mark per successful run, a bar per version and stressor
    ok = sum(1 for r in planted_result.runs.to_dict(orient="records") if r["status"] == "ok")
    assert tab.eval("document.querySelectorAll('#runs-plot .run-a, #runs-plot .run-b').length") == ok
    assert tab.eval("document.querySelectorAll('#irup-bars rect.bar-0').length") >= 3
    assert tab.eval("document.querySelectorAll('#irup-bars rect.bar-1').length") >= 3
    _shot_ok(tab.screenshot(tmp_path / "profile.png"))


@pytest.mark.chromium
def test_series_page_shows_the_change_point(site, browser, tmp_path):
    from _cdp import Tab

    from quiho.publish._series import series_file

    root, _ = site
    tab = Tab(browser, (root / series_file(series_name("bench0"))).as_uri())
    assert tab.problems() == []
    # the planted step (+15 % at revision 40 of 60, lower is better) is a change point: a row and a tooltip
    rows = tab.eval("Array.from(document.querySelectorAll('#changepoints tbody tr')).map(function(r){"
                    "return Array.from(r.cells).map(function(c){return c.textContent})})")
    assert len(rows) == 1
    idx, mag = int(rows[0][2]), float(rows[0][5].rstrip("%"))
    assert abs(idx - 40) <= 1 and 12 < mag < 18
    tip = tab.eval("document.querySelector('svg.plot g.cp title').textContent")
    assert rows[0][1] in tip and "p = " in tip and rows[0][5] in tip
    # with scripts, the uPlot chart replaces the static plot; its readout follows the cursor and names the change
    assert tab.eval("document.querySelectorAll('#chart canvas').length") == 1
    assert tab.eval("document.getElementById('plot-static').hidden") is True
    box = tab.eval("(function(){var r=document.querySelector('#chart .u-over').getBoundingClientRect();"
                   "return [r.left, r.top, r.width, r.height]})()")
    tab.mouse(box[0] + box[2] - 1, box[1] + box[3] / 2)
    assert tab.eval("document.getElementById('readout').textContent").startswith("rev0059: mean")
    tab.mouse(box[0] + box[2] * idx / 59, box[1] + box[3] / 2)
    assert tip in tab.eval("document.getElementById('readout').textContent")
    assert tab.problems() == []
    _shot_ok(tab.screenshot(tmp_path / "series.png"))
    # without scripts: the static SVG plot with its tooltip, no chart
    tab = Tab(browser, (root / series_file(series_name("bench0"))).as_uri(), scripts=False)
    page = tab.html()
    assert "<svg class=\"plot\"" in page and "id=\"chart\"" not in page and rows[0][5] in page
    assert tab.problems() == []
    _shot_ok(tab.screenshot(tmp_path / "series-nojs.png"))


@pytest.mark.chromium
def test_filter_by_name_and_pages_without_javascript(site, browser, tmp_path):
    from _cdp import Tab

    root, _ = site
    tab = Tab(browser, (root / "series/index.html").as_uri())
    def shown(query: str) -> int:
        return tab.eval(f"(function(){{var i=document.querySelector('input.filter');i.value={json.dumps(query)};"
                        "i.dispatchEvent(new Event('input'));return document.querySelectorAll("
                        "'#series tbody tr:not([hidden])').length})()")

    assert shown("bench=bench") == 6 and shown("passwd") == 1 and shown("") == len(NAMES)
    assert tab.problems() == []
    # scripts off: every row is there, no filter box, the plot and its tooltip too
    tab = Tab(browser, (root / "series/index.html").as_uri(), scripts=False)
    page = tab.html()
    assert page.count("<tr data-name=") == len(NAMES) and "class=\"filter\"" not in page
    assert tab.problems() == []
    _shot_ok(tab.screenshot(tmp_path / "series-index-nojs.png"))


@pytest.mark.chromium
def test_the_problem_check_can_fail(site, browser, tmp_path):
    """A page with an inline script (blocked by the CSP), a console message and a remote image is caught."""
    from _cdp import Tab

    root, _ = site
    bad = root / "series" / "index.html"
    planted = tmp_path / "planted"
    shutil.copytree(root, planted)
    page = (planted / "series" / "index.html")
    page.write_text(bad.read_text().replace("</main>", "<script>console.log('hi')</script>"
                                            "<img src='http://192.0.2.1/x.png'></main>"))
    tab = Tab(browser, page.as_uri())
    problems = "\n".join(tab.problems())
    assert "Content Security Policy" in problems or "Refused" in problems
    (planted / "assets" / "site.js").write_text("console.error('boom'); fetch('http://192.0.2.1/');")
    tab = Tab(browser, (planted / "index.html").as_uri())
    problems = "\n".join(tab.problems())
    assert "console.error" in problems and "192.0.2.1" in problems


@pytest.mark.chromium
def test_a_real_fleet_from_quiho_popper(shared_data, tmp_path, browser):
    """The quiho paper's CloudLab fingerprints (51 hosts, 6 batches): hosts, hardware groups, pages clean."""
    from _cdp import Tab

    from quiho.store.popper import SOURCE, import_quiho_popper

    csv = shared_data("quiho-popper/pipelines/single-node/datapackage/quiho/results.csv")
    with open_store(tmp_path / "p.db") as st:
        imp = import_quiho_popper(st, csv)
        res = publish(st, tmp_path / "site", PublishOptions(fingerprints=SOURCE, irup=IrupSettings(enabled=False)))
    assert res.hosts == imp.hosts and res.series == 0 and res.profiles == 0
    tab = Tab(browser, (tmp_path / "site" / "fleet" / "index.html").as_uri())
    assert tab.problems() == []
    assert tab.eval("document.querySelectorAll('#hosts-0 tbody tr').length") == imp.hosts
    groups = tab.eval("document.querySelectorAll('#hardware-0 li').length")
    assert 1 < groups < imp.hosts
    _shot_ok(tab.screenshot(tmp_path / "popper-fleet.png"))


def test_empty_store_and_series_without_values(tmp_path):
    """An empty store publishes; series with no, pending-only, failed-only, one or constant revisions too."""
    from quiho.publish._series import series_file

    with open_store(tmp_path / "q.db") as st:
        r = publish(st, tmp_path / "site")
        assert (r.series, r.hosts, r.profiles) == (0, 0, 0) and (tmp_path / "site" / "index.html").is_file()
        history_store.ensure_series(st, "none", "test")
        sid = history_store.ensure_series(st, "pending", "test")
        history_store.add_revisions(st, sid, ["a", "b"])
        sid = history_store.ensure_series(st, "failed", "test")
        history_store.add_revisions(st, sid, ["a"])
        history_store.record_failure(st, sid, "a", "build <b>failed</b>")
        sid = history_store.ensure_series(st, "constant", "test")
        history_store.add_revisions(st, sid, [str(i) for i in range(20)])
        for i in range(20):
            history_store.record_measurement(st, sid, str(i), [5.0, 5.0])
        r = publish(st, tmp_path / "site")
    assert r.series == 4
    failed = (tmp_path / "site" / series_file("failed")).read_text()
    assert "<table id='failed'>" in failed and "build &lt;b&gt;failed&lt;/b&gt;" in failed
    assert "No change point" in (tmp_path / "site" / series_file("constant")).read_text()


def test_an_unknown_detector_is_a_usage_error(store_path, tmp_path):
    with open_store(store_path, create=False) as st, pytest.raises(UsageError, match="unknown detector 'nope'"):
        publish(st, tmp_path / "site", PublishOptions(method="nope"))
    assert not (tmp_path / "site" / "index.html").exists()


def test_fleet_hosts_older_than_the_schedule_period_are_stale(store_path, tmp_path):
    """A host is stale once its newest fingerprint is older than ``stale_after_hours`` at ``now``, not before."""
    from datetime import datetime, timedelta

    from quiho.publish._collect import read_fleets

    with open_store(store_path, create=False) as st:
        (fleet,) = read_fleets(st, PublishOptions(fingerprints="fleet"))
        newest = max(datetime.fromisoformat(str(h.last_time)) for h in fleet.hosts)
        for hours, stale in ((23, 0), (25, 4)):
            opts = PublishOptions(now=newest + timedelta(hours=hours), stale_after_hours=24.0)
            (fleet,) = read_fleets(st, dataclasses.replace(opts, fingerprints="fleet"))
            assert sum(h.stale for h in fleet.hosts) == stale
            publish(st, tmp_path / f"site{hours}", opts)
            page = (tmp_path / f"site{hours}" / "fleet" / "index.html").read_text()
            assert page.count("class='badge stale'") == stale
        (fleet,) = read_fleets(st, PublishOptions(fingerprints="fleet", stale_after_hours=None))
        assert not any(h.stale for h in fleet.hosts)


def test_unchanged_series_pages_stay_without_being_read_again(store_path, tmp_path):
    """A republish keeps a series page whose key is unchanged and whose file is as written; anything else is redone."""
    from quiho.publish._collect import read_site
    from quiho.publish._series import series_file

    shutil.copy(store_path, tmp_path / "q.db")
    site = tmp_path / "site"
    with open_store(tmp_path / "q.db", create=False) as st:
        first = publish(st, site)
        keys = json.loads((site / MANIFEST).read_text())["keys"]
        assert set(keys) == {series_file(series_name(n)) for n in NAMES}
        kept = []
        data = read_site(st, PublishOptions(), lambda rel, key: kept.append(rel) is None and keys.get(rel) == key)
        assert all(s.reused for s in data.series) and sorted(kept) == sorted(keys)
        # the verdicts read back from the cache are the ones judged: same cells on the lists
        assert [s.verdict for s in data.series] == [s.verdict for s in read_site(st, PublishOptions()).series]
        gone = site / series_file(series_name("bench1"))
        gone.unlink()
        (site / series_file(series_name("bench2"))).write_text("edited by hand")
        again = publish(st, site)
        assert sorted(again.written) == sorted([series_file(series_name("bench1")), series_file(series_name("bench2"))])
        assert again.pages == first.pages and gone.is_file()
        retitled = publish(st, site, PublishOptions(title="another title"))
        assert set(keys) <= set(retitled.written)


def test_a_republish_forgets_the_cached_answers_of_what_left_the_store(store_path, tmp_path):
    """The cache keeps one answer per series, target and fingerprint source the store still holds."""
    shutil.copy(store_path, tmp_path / "q.db")
    with open_store(tmp_path / "q.db", create=False) as st:
        publish(st, tmp_path / "site")

        def cached(kind: str) -> set[str]:
            return {str(r[0]) for r in st.conn.execute("SELECT subject FROM site_results WHERE kind = ?",
                                                        (kind,)).fetchall()}

        assert cached("series") == {series_name(n) for n in NAMES} and cached("drift") == {"fleet"}
        with st.transaction() as c:  # a series removed, and a drift report of a source no longer stored
            c.execute("DELETE FROM history_series WHERE name = ?", (series_name("bench3"),))
            c.execute("INSERT INTO site_results(input_key, kind, subject, result_json, created_at, quiho_version) "
                      "VALUES ('old', 'drift', 'gone-import', '{}', '', '')")
        publish(st, tmp_path / "site")
        assert cached("series") == {series_name(n) for n in NAMES if n != "bench3"}
        assert cached("drift") == {"fleet"}


def test_series_pages_show_their_open_alerts_with_state(store_path, tmp_path):
    """An open alert is on its series' page with its state; acknowledging it changes that page (and no other)."""
    from quiho.publish._series import series_file
    from quiho.store.alerts import AlertRow, insert_alert, update_alert

    shutil.copy(store_path, tmp_path / "q.db")
    name = series_name("bench0")
    with open_store(tmp_path / "q.db", create=False) as st:
        first = publish(st, tmp_path / "site")
        row = AlertRow(id=0, series=name, first_bad="rev0040", baseline_from="rev0010", last_revision="rev0059",
                       found_by="test", baseline=100.0, level=115.0, magnitude=0.15, ci_low=0.12, ci_high=0.18,
                       p_value=1e-6, n_baseline=30, state="new", fixed_at=None, fixed_by=None,
                       fix_magnitude=float("nan"), fix_ci_low=float("nan"), fix_ci_high=float("nan"),
                       fix_p_value=float("nan"), created_at="2026-11-28T10:00:00+00:00",
                       updated_at="2026-11-28T10:00:00+00:00")
        aid = insert_alert(st, row)
        second = publish(st, tmp_path / "site")
        page = (tmp_path / "site" / series_file(name)).read_text()
        assert "<table id='series-alerts'>" in page and f"#{aid}" in page and "badge new'>new" in page
        assert "rev0040" in page and "+15.0% [+12.0%, +18.0%]" in page
        assert set(second.written) == {series_file(name), "index.html"}
        update_alert(st, aid, state="acknowledged")
        third = publish(st, tmp_path / "site")
        page = (tmp_path / "site" / series_file(name)).read_text()
        assert "badge acknowledged'>acknowledged" in page and "badge new'>new" not in page
        assert series_file(name) in third.written and series_file(series_name("bench2")) not in third.written
    other = (tmp_path / "site" / series_file(series_name("bench1"))).read_text()
    assert "<h2>Open alerts</h2><p>None.</p>" in other and first.pages == third.pages


def test_a_profile_page_tabulates_its_traced_functions(planted_result):
    """The report's trace section, from the stored document: one row per function with its verdict and share."""
    from quiho.publish._collect import ProfileView
    from quiho.publish._profiles import profile_page

    doc = json.loads(json.dumps(planted_result.to_dict(), default=str))
    doc["traces"] = {"functions": [
        {"function": "parse", "verdict": "degradation", "kind": "shift", "magnitude": 0.3, "ci": [0.2, 0.4],
         "hosts_flagged": 3, "hosts": 4, "share": 0.8},
        {"function": "<b>emit</b>", "verdict": "no change", "kind": None, "magnitude": None, "ci": [None, None],
         "hosts_flagged": 0, "hosts": 4, "share": None}], "hosts": {"h1": "no traced run"}, "traced_runs": 8}
    row = {"batch": "b", "application": "app", "version_a": "v1", "version_b": "v2", "status": "complete",
           "verdict": "regression", "irup_verdict": "different", "created_at": "now"}
    page = profile_page(ProfileView(row, doc), "site")
    body = page[page.index("<table id='trace-functions'>"):]
    body = body[:body.index("</table>")]
    assert body.count("<tr>") == 3 and "+30.0%" in body and "+20.0%, +40.0%" in body and "3 of 4" in body
    assert "&lt;b&gt;emit&lt;/b&gt;" in body and "<b>emit" not in page and "h1: no traced run" in page


def _traced_profile_page(planted_result, **view):
    """A profile page whose document traced two functions, with 1,000 and 40 calls per version on host ``h<1>``."""
    from quiho.publish._collect import ProfileView
    from quiho.publish._profiles import profile_page

    doc = json.loads(json.dumps(planted_result.to_dict(), default=str))
    doc["traces"] = {"functions": [
        {"function": "<i>quiet</i>", "verdict": "no change", "magnitude": 0.01, "share": None},
        {"function": "parse", "verdict": "degradation", "magnitude": 0.3, "share": 0.8}], "traced_runs": 4}
    a, b = str(doc["version_a"]), str(doc["label_b"])
    rng = np.random.default_rng(0)
    ys = rng.normal(100_000, 5_000, 1000)
    ys[:7] = 1e9  # seven preempted calls: above the axis, said as such
    order = np.arange(1000.0)
    calls = {"host": "h<1>", "functions": {
        "parse": {a: (order, ys), b: (order, ys * 1.3)},
        "<i>quiet</i>": {a: (order[:40], ys[100:140]), b: (order[:40], ys[100:140])}}}
    row = {"batch": "b", "application": "app", "version_a": a, "version_b": b, "status": "complete",
           "verdict": "regression", "irup_verdict": "different", "created_at": "now"}
    return profile_page(ProfileView(row, doc, **(view or {"calls": calls})), "site")


def test_a_traced_profile_page_draws_each_functions_calls_as_the_report_does(planted_result):
    """The report's functions figure as SVG: flagged first, marks thinned, axis at 1.5 x p99, names escaped."""
    page = _traced_profile_page(planted_result)
    figs = page[page.index("<div class='smalls' id='calls'>"):]
    figs = figs[:figs.index("</div>")]
    first, second = figs.split("</figure>")[:2]
    assert "<figcaption>parse</figcaption>" in first and "&lt;i&gt;quiet&lt;/i&gt;" in second
    assert "<i>" not in page and "h&lt;1&gt;" in page
    # thinned to 300 marks a version, minus those of the 7 preempted calls the thinning kept (not drawn)
    assert 293 <= first.count("class='run-a'") < 300 and first.count("class='run-a'") == first.count("class='run-b'")
    assert second.count("class='run-a'") == 40 and "fit fit-0" in first and "fit fit-1" in first
    assert "14 call(s) above the axis" in first and "above the axis" not in second  # 7 per version
    # the fits leave the preempted calls out: A's line stays level (with them it falls steeply)
    y1, y2 = (float(v) for v in re.search(r"class='fit fit-0'[^>]*y1='([\d.]+)'[^>]*y2='([\d.]+)'", first).groups())
    assert abs(y1 - y2) < 5
    gone = _traced_profile_page(planted_result, calls_note="the traced calls cannot be read: gone")
    assert "id='calls-note'>the traced calls cannot be read: gone" in gone and "id='calls'" not in gone


@pytest.mark.chromium
def test_a_traced_profile_page_renders_cleanly_in_chromium(site, browser, planted_result):
    from _cdp import Tab

    page = _traced_profile_page(planted_result)
    out = site[0] / "profiles" / "traced-functions-test.html"  # beside the site's profile pages and their assets
    out.write_text(page)
    try:
        tab = Tab(browser, out.as_uri())
        assert tab.problems() == []
        assert tab.eval("document.querySelectorAll('#calls svg').length") == 2
        calls = page[page.index("id='calls'"):page.index("</div>", page.index("id='calls'"))]
        assert tab.eval("document.querySelectorAll('#calls svg circle.run-a').length") == calls.count("class='run-a'")
        assert tab.eval("document.querySelectorAll('#calls svg line.fit').length") == 4
    finally:
        out.unlink()
