"""``summary_markdown``: the profile verdict as a CI job summary / PR comment, names escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quiho.datasets import planted_profile
from quiho.profile import AnalysisOptions, ProfileData, analyse_data
from quiho.profile.text import summary_markdown

NAME = "app|x *bold* <img src=x>\n\x1b[31m"


@pytest.fixture(scope="module")
def result():
    runs, _, _ = planted_profile(n_groups=10, change=1.5, application=NAME, version_a="v1", version_b="v2|b")
    return analyse_data(ProfileData(runs, None, None, application=NAME, version_a="v1", version_b="v2|b", unit="s",
                                    higher_is_better=False), AnalysisOptions(seeds=2, advise=False))


def test_markdown_has_verdict_magnitude_ci_p_and_link(result):
    md = summary_markdown(result, Path("out dir"))
    m = result.metric
    assert result.verdict == "regression"
    assert "**REGRESSION**" in md
    assert f"| change | {m.change:+.1%} |" in md
    assert f"| 95% CI | {m.ci_low:+.1%} … {m.ci_high:+.1%} |" in md and f"| Wilcoxon p | {m.wilcoxon_p:.3g} |" in md
    assert md.rstrip().endswith("[Full report](out%20dir/report.html)")


def test_markdown_escapes_names(result):
    md = summary_markdown(result)
    assert "<img" not in md and "&lt;img" in md and "\x1b" not in md and "\\x1b" in md
    table = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert table and all(len(re.findall(r"(?<!\\)\|", ln)) == 3 for ln in table)
    assert md.splitlines()[0].startswith("### quiho profile app\\|x \\*bold\\*")


def test_profile_format_option_is_checked_first(tmp_path, capsys):
    from quiho.cli.main import main

    assert main(["profile", "a@1", "a@2", "--format", "html", "--store", str(tmp_path / "q.db")]) == 2
    assert "--format must be text or markdown" in capsys.readouterr().err
    assert not (tmp_path / "q.db").exists()  # nothing was opened, let alone run
