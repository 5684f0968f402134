"""The terminal text of ``quiho profile``, tested as lines (no stdout capture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quiho.datasets import planted_profile
from quiho.profile import AnalysisOptions, ProfileData, analyse_data
from quiho.profile.text import summary_lines

FORGED = "app\x1b[31m\nverdict: NO-CHANGE"


@pytest.fixture(scope="module")
def no_irup_result():
    runs, _, _ = planted_profile(n_groups=10, change=1.5, application=FORGED, version_a="v1", version_b="v2")
    runs.loc[(runs["host"] == runs["host"].iloc[0]) & (runs["version"] == "v2"), ["status", "value", "reason"]] = (
        "failed", None, "exit code 3: boom\x1b[2J")
    return analyse_data(ProfileData(runs, None, None, application=FORGED, version_a="v1", version_b="v2", unit="s",
                                    higher_is_better=False), AnalysisOptions(seeds=2, advise=False))


def test_summary_states_verdict_size_ci_and_p(no_irup_result) -> None:
    res = no_irup_result
    lines = summary_lines(res, Path("out"))
    m = res.metric
    assert res.verdict == "regression"
    assert lines[1] == (f"verdict: REGRESSION  change {m.change:+.1%} (95% CI {m.ci_low:+.1%} … {m.ci_high:+.1%}, "
                        f"Wilcoxon p = {m.wilcoxon_p:.3g}, floor ±5%)")
    assert m.change > 0.2  # the planted 1.5x level (per-host spread around it)
    assert lines[-1] == "report: out/report.html"
    assert any(line.startswith("IRUP v1: unavailable — ") for line in lines)
    assert any(line.startswith("partial: host ") and "exit code 3: boom" in line for line in lines)


def test_names_from_user_data_cannot_forge_lines_or_escape_codes(no_irup_result) -> None:
    lines = summary_lines(no_irup_result)
    assert all("\n" not in line and "\x1b" not in line for line in lines)
    assert lines[0].startswith("quiho profile app\\x1b[31m\\x0averdict: NO-CHANGE@v1 → @v2")
    assert sum(line.startswith("verdict:") for line in lines) == 1
