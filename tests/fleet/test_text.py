"""The terminal text of ``quiho fleet show``, tested as lines (drift's: tests/schedule/test_drift.py)."""

from __future__ import annotations

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

