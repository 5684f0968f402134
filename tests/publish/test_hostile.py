"""Hostile names (HTML, ``../``, control characters, 5,000 characters, bytes that are not UTF-8) on a published site.

Properties: every name reaches a page only escaped, the page parses back to the name's visible form, and every
file lands inside the site directory under a hashed name, whatever the name.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quiho._text import printable
from quiho.history import History, save_history
from quiho.publish import PublishOptions, publish, render_site
from quiho.publish._collect import FleetView, HostView, ProfileView, SeriesView, SiteData, TargetView
from quiho.publish._safe import json_script, page_file, text
from quiho.publish._site import write_site
from quiho.store import open_store

FIXED = ["<script>alert(1)</script>", "../../x", "/etc/passwd", "a\x00b\x1b[2J\r\n\u202e", "é" * 5000,
         os.fsdecode(b"caf\xe9-\xff\xfe"), "' \" & <!-- ]]>", "\udcff", ""]
#: Any text, lone surrogates (what undecodable bytes become) included, up to 5,000 characters.
ANY = st.one_of(st.sampled_from(FIXED), st.text(max_size=60), st.text(min_size=4990, max_size=5000,
                                                                       alphabet=st.characters(codec=None)))
#: What SQLite can store: text without lone surrogates.
STORABLE = st.one_of(st.sampled_from([n for n in FIXED if not re.search("[\ud800-\udfff]", n)]),
                     st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80))
SITE_PATH = re.compile(r"(?:[a-z]+/)?[a-z0-9][a-z0-9.-]*")


def visible(name: str) -> str:
    """What a reader should see for ``name``: control characters and lone surrogates as escapes."""
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", printable(name))


@given(ANY)
@settings(max_examples=300, deadline=None)
def test_text_is_inert_and_reads_back(name):
    out = text(name)
    out.encode("utf-8")  # strict: no raw surrogate survives
    assert not set(out) & set("<>\"'") and not re.search("[\x00-\x1f\x7f-\x9f]", out)
    assert html.unescape(out) == visible(name)


@given(ANY)
@settings(max_examples=300, deadline=None)
def test_json_script_cannot_end_its_element(name):
    el = json_script("data", {"name": name, "x": [float("nan"), 1.5]})
    body = el[el.index(">") + 1: el.rindex("</script>")]
    assert "<" not in body and ">" not in body and "&" not in body
    assert json.loads(body) == {"name": name, "x": [None, 1.5]}


@given(ANY, ANY)
@settings(max_examples=300, deadline=None)
def test_file_names_are_hashes(a, b):
    fa, fb = page_file("s", a), page_file("s", b)
    assert re.fullmatch(r"s-[0-9a-f]{20}\.html", fa)
    assert (fa == fb) == (a == b)


def _site(names: list[str]) -> SiteData:
    """A site whose series, hosts, fingerprint sources, targets and profiles all carry ``names`` (no store: surrogates
    allowed)."""
    rng = np.random.default_rng(0)
    series = tuple(SeriesView(n, n, n, 3, 0, 0, (n, "r1", "r2"), tuple(rng.normal(1, 0.1, 2) for _ in range(3)))
                   for n in names)
    hosts = tuple(HostView(n, n, (n,), n, n, n, {n: n}, 0, {n: ((n, n), (1.0, 2.0))}) for n in names)
    profiles = tuple(ProfileView({"batch": n, "application": n, "version_a": n, "version_b": n, "status": n,
                                  "verdict": n, "irup_verdict": n, "created_at": n},
                                 {"metric": {"reason": n, "per_host": [{"host": n}]}, "hints": [{"message": n}],
                                  "partial": [n], "irup": {"comparison": {"reason": n, "walk": [{"why": n}],
                                                                          "class_shares": {"a": {n: 0.5}}}},
                                  "runs": [{"host": n, "version": n, "status": "ok", "value": 1.0}],
                                  "traces": {"functions": [{"function": n, "verdict": n, "kind": n, "ci": [n, n],
                                                            "hosts_flagged": n, "hosts": n}],
                                             "hosts": {n: n}, "detector": n}})
                     for n in names)
    fleets = (FleetView(hosts, 1, {0: tuple(names)}), FleetView(hosts, 1, {0: tuple(names)}, source=names[0]),
              FleetView((), 0, {}, source=names[-1], note=names[-1]))
    targets = tuple(TargetView(n, 3, 3, n, {"features": [{"stressor": n, "importance": 100.0, "std": 1.0, "primary": n,
                                                          "classes": [n], "top3_frequency": 1.0, "median_rank": 1.0}],
                                            "validity": {"verdict": n, "reason": n}, "notes": [n],
                                            "dropped": [{"stressor": n, "reason": n}], "params": {"model": n}},
                               {n: 1.0}) for n in names)
    no_irup = TargetView(names[0] + "!", 1, 1, "", None, {}, names[0])
    return SiteData(series, fleets, profiles, targets=(*targets, no_irup))


@given(st.lists(ANY, min_size=1, max_size=4, unique=True))
# data_too_large: several 5,000-character names overrun hypothesis's entropy buffer by design (they are the point)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_rendered_site_stays_inside_its_directory(names):
    files = render_site(_site(names), PublishOptions(title=names[0]))
    assert all(SITE_PATH.fullmatch(rel) for rel in files)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "site"
        write_site(root, files)
        real = os.path.realpath(root)
        written = [os.path.realpath(os.path.join(p, f)) for p, _, fs in os.walk(Path(d), followlinks=True)
                   for f in fs]
        assert all(w.startswith(real + os.sep) for w in written)
        assert len(written) == len(files) + 1  # + manifest.json
    pages = b"".join(files.values()).decode("utf-8")
    assert "<script>alert" not in pages and "<!--" not in pages
    neutral = _neutral_pages()
    for n in names:  # a name with markup or a control character never appears raw, in any file
        if re.search("[<>&\x00-\x1f]", n) and n not in neutral:  # ("&" or "<" alone are in any page's own code)
            assert n not in pages


@functools.cache
def _neutral_pages() -> str:
    """Every page of a site whose names are plain: the text the site's own markup and scripts hold."""
    return b"".join(render_site(_site(["plain"]), PublishOptions(title="plain")).values()).decode("utf-8")


@given(st.lists(STORABLE, min_size=1, max_size=3, unique=True))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_stored_hostile_series_publish_escaped(names):
    with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "q.db") as store:
        for n in names:
            save_history(store, History.from_values([1.0, 1.1, 1.0, 1.2], name=n, unit=n), "test")
        res = publish(store, Path(d) / "site")
        assert res.series == len(names)
        from quiho.publish._series import series_file

        for n in names:
            page = (Path(d) / "site" / series_file(n)).read_text(encoding="utf-8")
            h1 = re.search(r"<h1>(.*?)</h1>", page, flags=re.S)
            assert h1 is not None and html.unescape(h1.group(1)) == visible(n)


def test_a_symlinked_subdirectory_cannot_lead_outside(tmp_path):
    """A site whose ``series/`` was replaced by a link elsewhere is refused: nothing is written through it."""
    import shutil

    import pytest

    from quiho.errors import UsageError

    with open_store(tmp_path / "q.db") as store:
        save_history(store, History.from_values([1.0, 2.0, 3.0], name="a"), "test")
        publish(store, tmp_path / "site")
        outside = tmp_path / "outside"
        outside.mkdir()
        shutil.rmtree(tmp_path / "site" / "series")
        (tmp_path / "site" / "series").symlink_to(outside, target_is_directory=True)
        (tmp_path / "site" / "index.html").write_text("stale")  # would be rewritten by a publish that went ahead
        with pytest.raises(UsageError, match="outside"):
            publish(store, tmp_path / "site")
    assert list(outside.iterdir()) == []
    assert (tmp_path / "site" / "index.html").read_text() == "stale"  # refused before anything was written
