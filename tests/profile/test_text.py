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


def test_hosts_left_unfingerprinted_on_purpose_are_said_with_the_irups_not_as_partial() -> None:
    runs, a, b = planted_profile(n_groups=10, stressors=("cpu", "stream", "zero"))
    hosts = sorted(runs["host"].unique())
    why = "--fingerprint-hosts first-round"
    res = analyse_data(ProfileData(runs, a, b, application="app", version_a="v1", version_b="v2",
                                   fingerprinted_hosts=hosts[:6], skipped_fingerprints=dict.fromkeys(hosts[6:], why)),
                       AnalysisOptions(seeds=2, advise=False))
    lines = summary_lines(res)
    assert [h.fingerprint_skipped for h in res.hosts] == [h not in hosts[:6] for h in hosts]
    irup = [line for line in lines if line.startswith("IRUP v")]
    assert len(irup) == 2 and all(line.endswith(f", 6 of {len(hosts)} hosts fingerprinted]") for line in irup)
    assert not any("fingerprint" in n for n in res.partial)
    assert f"4 of {len(hosts)} hosts not fingerprinted on purpose ({why}): their runs count in the metric test, " \
           "not in the IRUPs" in res.notes


def test_a_different_comparison_on_a_weak_irup_says_its_shares_are_uncertain() -> None:
    import dataclasses

    runs, a, b = planted_profile(n_groups=10, stressors=("cpu", "stream", "zero"))
    res = analyse_data(ProfileData(runs, a, b, application="app", version_a="v1", version_b="v2"),
                       AnalysisOptions(seeds=2, advise=False))
    assert res.comparison is not None

    def line(**kw: str) -> str:
        r = dataclasses.replace(res, comparison=dataclasses.replace(res.comparison, **kw))
        return next(x for x in summary_lines(r) if x.startswith("resource profile:"))

    both = {"validity_a": "meaningful", "validity_b": "meaningful"}
    assert line(verdict="different", **both).endswith("%")
    assert line(verdict="different", **{**both, "validity_a": "weak"}).endswith(
        "  (shares uncertain: v1's IRUP weak)")
    assert line(verdict="inconclusive", **{**both, "validity_b": "not-meaningful"}).endswith("%")
