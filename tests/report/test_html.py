"""The profile report (HTML, JSON, images) of a planted version pair: files, escaping, versions."""

from __future__ import annotations

import base64
import html
import json
import re

import pytest

from quiho.report.html import render_html, write_report

from ..conftest import HTML_NAME  # noqa: TID252


def test_report_files_json_and_escaping(planted_result, tmp_path):
    files = write_report(planted_result, tmp_path)
    assert set(files.images) == {"irups", "metric", "fingerprints"}
    for p in files.images.values():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(files.json.read_text())
    assert doc["schema"] == "quiho.profile" and doc["schema_version"] == 1
    assert doc["application"] == HTML_NAME
    assert doc["metric"]["per_host"] and doc["irup"]["a"]["features"][0]["stressor"] == "stream"
    page = files.html.read_text()
    assert HTML_NAME not in page and html.escape(HTML_NAME) in page
    assert "<script" not in page.lower()  # the version name carried one: escaped
    assert "&lt;b&gt;boom&lt;/b&gt;" in page  # a failed run's reason, escaped
    assert re.search(r"""(src|href)=['"](?!data:)""", page) is None  # nothing external
    imgs = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(imgs) == 3 and all(base64.b64decode(x)[:4] == b"\x89PNG" for x in imgs)
    assert "Partial result" in page  # the failed run marks the profile partial
    assert planted_result.status == "partial"


def test_render_without_irups_or_images(planted_result):
    import dataclasses

    r = dataclasses.replace(planted_result, irup_a=None, irup_b=None, comparison=None,
                            irup_errors={"a": "target ran on 2 hardware groups", "b": "x"})
    page = render_html(r, {})
    assert "no IRUP" in page and "target ran on 2 hardware groups" in page


def test_report_json_v1_sample_loads_and_unknown_versions_are_refused(tmp_path):
    from pathlib import Path

    from quiho.errors import ImportDataError
    from quiho.report.html import load_report_json

    sample = Path(__file__).resolve().parents[1] / "data" / "profile-report-v1.json"
    doc = load_report_json(sample)  # a real local-fleet profile, stream@nadds1 vs @nadds30
    assert doc["verdict"] == "regression" and doc["metric"]["hosts_used"] == 6
    newer = tmp_path / "r.json"
    newer.write_text(json.dumps({**doc, "schema_version": 99}))
    with pytest.raises(ImportDataError, match="schema v99.*upgrade quiho"):
        load_report_json(newer)
    newer.write_text("{}")
    with pytest.raises(ImportDataError, match="not a quiho profile report"):
        load_report_json(newer)
