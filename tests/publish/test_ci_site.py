"""examples/ci publishes the store to a folder a CI can deploy, and republishing updates it in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ci"


def run_steps(work: Path, revision: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STORE": str(work / ".quiho" / "ci.db"), "REVISION": revision, "SITE": str(work / "public"),
           "QUIHO": f"{sys.executable} -m quiho", "PYTHON": sys.executable, "QUIHO_CI_SLOWDOWN": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(["bash", str(EXAMPLE / "ci_steps.sh")], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_ci_steps_publish_a_deployable_site(tmp_path):
    assert run_steps(tmp_path, "c00").returncode == 0
    site = tmp_path / "public"
    first = json.loads((site / "manifest.json").read_text())["files"]
    series = sorted(f for f in first if f.startswith("series/s-"))
    assert len(series) == 2 and "index.html" in first and "assets/site.js" in first
    assert run_steps(tmp_path, "c01").returncode in (0, 3)
    second = json.loads((site / "manifest.json").read_text())["files"]
    assert set(second) == set(first)
    changed = {f for f in first if first[f] != second[f]}
    assert set(series) <= changed and "assets/site.css" not in changed  # each series got a revision
    assert all("c01" in (site / f).read_text() for f in series)
