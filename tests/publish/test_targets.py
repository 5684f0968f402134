"""The walk of issue 49 on the quiho paper's data: import, publish, and every imported target has a page whose IRUP
is the one ``quiho irup`` prints; a republish computes nothing; a changed input recomputes its target only.

The data is the paper's CloudLab ``results.csv`` (every stress-ng row, 51 hosts) with three of its benchmarks, one
renamed to a hostile name, so the walk runs the real import, the real CLI and the real model in seconds.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from quiho.publish._targets import target_file
from quiho.store import open_store

sys.path.insert(0, str(Path(__file__).parent))

#: A benchmark name that is markup, quotes and an ampersand (no ``/`` or ``@``: those split a target name).
HOSTILE = "<img src=x onerror=alert('&')>"
KEEP = {"comd": "comd", "hpccg": "hpccg", "zlog": HOSTILE}
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def quiho(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "quiho", *args], capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r


@pytest.fixture(scope="module")
def walk(shared_data, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """``quiho import quiho-popper`` of the subset, then ``quiho publish`` twice (cold, then unchanged)."""
    src = shared_data("quiho-popper/pipelines/single-node/datapackage/quiho/results.csv")
    tmp = tmp_path_factory.mktemp("walk")
    sub = tmp / "results.csv"
    with src.open(newline="") as f, sub.open("w", newline="") as g:
        rows, out = csv.reader(f), csv.writer(g)
        head = next(rows)
        out.writerow(head)
        b, t = head.index("benchmark"), head.index("test")
        for r in rows:
            if r[b] == "stressng":
                out.writerow(r)
            elif r[b] in KEEP:
                r[b], r[t] = KEEP[r[b]], KEEP[r[b]] if r[t] == r[b] else r[t]
                out.writerow(r)
    store = str(tmp / "q.db")
    quiho("import", "quiho-popper", str(sub), "--store", store)
    cold = json.loads(quiho("publish", str(tmp / "site"), "--store", store, "--json").stdout)
    text = quiho("publish", str(tmp / "text-site"), "--store", store).stderr
    warm = json.loads(quiho("publish", str(tmp / "site"), "--store", store, "--json").stdout)
    targets = [t["target"] for t in json.loads(quiho("targets", "--store", store, "--json").stdout)]
    return {"root": tmp / "site", "store": store, "cold": cold, "warm": warm, "targets": targets, "text": text}


def test_every_imported_target_and_host_is_published(walk):
    cold, root = walk["cold"], walk["root"]
    assert sorted(walk["targets"]) == sorted(["comd", "hpccg", HOSTILE])
    assert cold["hosts"] == 51 and cold["targets"] == 3 and cold["irups_computed"] == 3
    index = (root / "targets" / "index.html").read_text()
    front = (root / "index.html").read_text()
    for t in walk["targets"]:
        assert (root / target_file(t)).is_file()
        assert html.escape(t, quote=True) in index and html.escape(t, quote=True) in front
    assert HOSTILE not in index and "<img" not in front
    # the empty 'fleet' source says why, the import is its own section
    fleet = (root / "fleet" / "index.html").read_text()
    assert "fleet: 0 hosts" in fleet and "quiho-popper: 51 hosts" in fleet and "id='note-0'" in fleet
    # the command says it too: counts (IRUPs read from the cache by then), and why a source is empty
    assert "published 0 series, 51 hosts, 3 targets (0 IRUPs computed, 3 cached)" in walk["text"]
    assert "note: fingerprint source fleet: no host fingerprinted" in walk["text"]


def test_the_site_shows_the_irup_quiho_irup_prints(walk):
    root, store = walk["root"], walk["store"]
    for t in walk["targets"]:
        cli = json.loads(quiho("irup", t, "--store", store, "--json").stdout)
        site = json.loads((root / target_file(t, "json")).read_text())
        assert site == cli, t
        # the page's table: the stressors in the command's order, with its rounded numbers
        page = (root / target_file(t)).read_text()
        body = page[page.index("<table id='irup'>"):]
        body = body[:body.index("</table>")]
        cells = [[html.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)]
                 for r in re.findall(r"<tr>(.*?)</tr>", body)][1:]  # [0]: the header
        want = [[f["stressor"] + (" (noisy)" if f["noisy"] else ""), f"{f['importance']:.1f}", f"{f['std']:.1f}",
                 f"{f['top3_frequency']:.0%}"] for f in cli["features"][:15]]
        assert [[c[1], c[2], c[3], c[6]] for c in cells] == want
        assert f"<span class='badge {cli['validity']['verdict']}'>" in page


def test_a_republish_computes_nothing_and_a_changed_input_only_its_target(walk, tmp_path):
    warm, root, store = walk["warm"], walk["root"], walk["store"]
    assert warm["irups_computed"] == 0 and warm["written"] == [] and warm["unchanged"] == warm["pages"]
    copy = tmp_path / "q.db"
    copy.write_bytes(Path(store).read_bytes())
    with open_store(copy, create=False) as st, st.transaction() as c:
        c.execute("UPDATE app_runs SET value = value * 3 WHERE application = 'comd' AND repetition = 1")
    site = tmp_path / "site"
    import shutil

    shutil.copytree(root, site)
    again = json.loads(quiho("publish", str(site), "--store", str(copy), "--json").stdout)
    assert again["irups_computed"] == 1
    assert target_file("comd", "json") in again["written"] and target_file("hpccg") not in again["written"]
    before = hashlib.sha256((root / target_file("comd", "json")).read_bytes()).hexdigest()
    assert hashlib.sha256((site / target_file("comd", "json")).read_bytes()).hexdigest() != before


def test_the_advisor_answer_quiho_advise_stored_is_published_until_the_inputs_change(walk, tmp_path):
    """``quiho advise`` keeps its answer; a publish shows it on the target's page, and not once the runs change."""
    copy = tmp_path / "q.db"
    copy.write_bytes(Path(walk["store"]).read_bytes())
    adv = json.loads(quiho("advise", HOSTILE, "--draws", "2", "--store", str(copy), "--json").stdout)
    site = tmp_path / "site"
    quiho("publish", str(site), "--store", str(copy))
    page = (site / target_file(HOSTILE)).read_text()
    advice = page[page.index("id='advice'"):page.index("</table>", page.index("id='advice'"))]
    assert html.escape(adv["reason"], quote=True) in advice and HOSTILE not in advice
    cells = re.findall(r"<td[^>]*>(.*?)</td>", advice)
    assert cells[0::4] == [str(r["n_groups"]) for r in adv["rows"]]
    assert cells[2::4] == [f"{r['top1_agreement']:.0%}" for r in adv["rows"]]
    other = (site / target_file("comd")).read_text()
    assert "id='advice'" in other and "advice-rows" not in other  # no advice stored for it
    # the target's runs change: the stored answer is of other inputs, and the page goes back to the command
    with open_store(copy, create=False) as st, st.transaction() as c:
        n = c.execute("UPDATE app_runs SET value = value * 1.01 WHERE application = ? AND repetition = 1",
                      (HOSTILE,)).rowcount
    assert n > 0
    quiho("publish", str(site), "--store", str(copy))
    page = (site / target_file(HOSTILE)).read_text()
    assert "(not computed at publish" in page and "advice-rows" not in page


def test_advise_of_an_unknown_target_is_one_line(walk):
    r = subprocess.run([sys.executable, "-m", "quiho", "advise", "no-such/target", "--store", walk["store"]],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    from _cdp import Browser

    with Browser(tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


@pytest.mark.chromium
def test_target_pages_render_cleanly(walk, browser):
    from _cdp import Tab

    root = walk["root"]
    tab = Tab(browser, (root / "targets" / "index.html").as_uri())
    assert tab.problems() == []
    assert tab.eval("document.querySelectorAll('#targets tbody tr').length") == 3
    assert tab.eval("document.querySelectorAll('img').length") == 0
    for t in walk["targets"]:
        tab = Tab(browser, (root / target_file(t)).as_uri())
        assert tab.problems() == [], t
        assert tab.eval("document.querySelector('h1').textContent") == t
        assert tab.eval("document.querySelectorAll('#irup tbody tr').length") == 15
        assert tab.eval("document.querySelectorAll('#irup-bars rect.bar-0').length") == 15
        assert tab.eval("document.querySelectorAll('#class-shares tbody tr').length") >= 2
    for rel in ("index.html", "fleet/index.html"):
        tab = Tab(browser, (root / rel).as_uri())
        assert tab.problems() == [], rel
    assert tab.eval("document.querySelectorAll('#hosts-1 tbody tr').length") == 51
    assert tab.eval("document.getElementById('note-0').textContent").startswith("no host fingerprinted")
