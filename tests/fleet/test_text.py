"""The terminal text of ``quiho fleet show`` and ``quiho fleet drift``, tested as lines."""

from __future__ import annotations

from quiho.fingerprint.drift import detect_drift, drift_lines
from quiho.fleet.show import FleetHostInfo, show_lines


def test_fleet_show_lines_escape_names_and_say_never() -> None:
    hosts = [FleetHostInfo("h\x1b[2Jx", ("g1", "g2"), "inv.yml", "fp-1", "complete", 7200.0, 12, 1,
                           {"cpu_model": "Xeon\nforged"}),
             FleetHostInfo("new", (), "inv.yml", None, None, None, 0, 0, {})]
    lines = show_lines(hosts)
    assert len(lines) == 2 and all("\n" not in s and "\x1b" not in s for s in lines)
    assert lines[0].startswith("h\\x1b[2Jx") and "groups g1,g2" in lines[0]
    assert "last fingerprint fp-1 (complete, 2.0 h ago, ok 12, failed 1)  Xeon\\x0aforged" in lines[0]
    assert "last fingerprint - (-, never, ok 0, failed 0)  ?" in lines[1]
    assert show_lines([]) == ["no fleet hosts yet: run 'quiho fingerprint'"]


def test_drift_lines_name_host_stressors_size_and_p(tmp_path) -> None:
    from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
    from quiho.store import open_store

    with open_store(tmp_path / "q.db") as st:
        store_fingerprint_history(st, fingerprint_history(drift_host="h3", drift_at=18, drift_factor=0.85,
                                                          random_state=11))
        rep = detect_drift(st)
    lines = drift_lines(rep)
    assert lines[0].startswith("30 fingerprint runs, 6 hosts, ")
    assert "h3: 4 stressor(s) changed" in lines
    changed = [s for s in lines if s.startswith("  ")]
    assert len(changed) == 4 and all("at run synthetic-0018" in s and "(Bonferroni)" in s for s in changed)
    assert all("-1" in s.split(")")[1].split("%")[0] for s in changed)  # about -15 %
    assert "no drift" not in lines
