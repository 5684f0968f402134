"""report.html in headless Chromium: it renders, every image decodes, no console errors, names stay text."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from quiho.report.html import write_report

from ..conftest import HTML_NAME  # noqa: TID252

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
# Test-only probe, appended to a copy of the report (the report itself has no script).
PROBE = ("<script>window.addEventListener('load',()=>{const imgs=[...document.images];"
         "const bad=imgs.filter(i=>!(i.complete&&i.naturalWidth>0)).length;"
         "document.body.setAttribute('data-probe',imgs.length+':'+bad);"
         "console.log('QUIHO-PROBE images='+imgs.length+' bad='+bad);});</script>")


def _chromium(tmp: Path, page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium")
    assert exe is not None
    return subprocess.run([exe, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def _console(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Failed to load resource" in ln]


def _probe(tmp: Path, html_path: Path, name: str) -> tuple[str, list[str]]:
    copy = tmp / name
    copy.write_text(html_path.read_text().replace("</body>", PROBE + "</body>"))
    res = _chromium(tmp, copy, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'data-probe="(\d+):(\d+)"', res.stdout)
    assert m, "the load probe did not run: " + res.stdout[:500]
    return f"{m.group(1)}:{m.group(2)}", _console(res.stderr)


@pytest.mark.chromium
def test_report_renders_in_chromium(planted_result, tmp_path):
    files = write_report(planted_result, tmp_path / "report")
    # 1. the page as written: DOM, escaping, no console messages at all
    res = _chromium(tmp_path, files.html, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    assert _console(res.stderr) == [], _console(res.stderr)
    assert len(re.findall(r"<img ", dom)) == 3  # the HTML in the application name did not become an element
    assert "<script" not in dom.lower()
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;app" in dom  # shown as text
    assert 'id="verdict"' in dom and 'id="hints"' in dom and 'id="partial"' in dom
    # 2. every image decodes (probe on a copy); the probe's own log line is the only console output
    status, console = _probe(tmp_path, files.html, "probe.html")
    assert status == "3:0"
    assert len(console) == 1 and "QUIHO-PROBE images=3 bad=0" in console[0], console
    # 3. the probe can fail: a corrupted image is caught
    broken = tmp_path / "broken.html"
    text = files.html.read_text()
    broken.write_text(text.replace("data:image/png;base64,iVBOR", "data:image/png;base64,AAAAiVBOR", 1))
    status, _ = _probe(tmp_path, broken, "broken-probe.html")
    assert status == "3:1"
    # 4. a screenshot is produced and is not blank
    shot = tmp_path / "shot.png"
    res = _chromium(tmp_path, files.html, f"--screenshot={shot}", "--window-size=1200,2400")
    assert res.returncode == 0 and shot.exists() and shot.stat().st_size > 20_000
    assert HTML_NAME  # used above through the escaped form
