"""examples/ci end to end: the workflow's steps (ci_steps.sh) run locally over a series of revisions."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ci"


def run_steps(work: Path, revision: str, slowdown: float = 1.0) -> subprocess.CompletedProcess:
    env = {**os.environ, "STORE": str(work / ".quiho" / "ci.db"), "REVISION": revision,
           "QUIHO": f"{sys.executable} -m quiho", "PYTHON": sys.executable, "QUIHO_CI_SLOWDOWN": str(slowdown)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(["bash", str(EXAMPLE / "ci_steps.sh")], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow  # 6 runs of 3 quiho processes each
@pytest.mark.quiet  # times a benchmark
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_ci_example_flags_the_commit_that_regresses(tmp_path):
    first = run_steps(tmp_path, "c00")
    assert first.returncode == 0, first.stderr
    md = (tmp_path / "summary.md").read_text()
    assert "| sum of squares | 1 | not meaningful |" in md  # one revision: nothing to compare with yet
    for i in range(1, 5):  # min_size 5: five revisions before the newest
        assert run_steps(tmp_path, f"c{i:02d}").returncode in (0, 3)
    (tmp_path / "summary.md").unlink()
    # a 10x larger workload planted at the newest revision: the job must fail with exit 3 and say why
    bad = run_steps(tmp_path, "c05", slowdown=10)
    assert bad.returncode == 3, bad.stderr
    assert "Traceback" not in bad.stderr and "imported sum of squares @ c05" in bad.stderr
    md = (tmp_path / "summary.md").read_text()
    assert "**2 of 2 series regress at the newest revision**" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| sum of squares") or ln.startswith("| sort reversed")]
    assert len(rows) == 2 and all("| 6 | regression |" in r for r in rows)
    assert all("p = " in r and "%" in r for r in rows)  # magnitude, interval and p in every verdict
