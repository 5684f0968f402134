import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quiho.cli.main import main
from quiho.errors import HistoryError, ImportDataError, QuihoError, UnknownTargetError
from quiho.history import (
    History,
    import_history_csv,
    import_history_from_runs,
    list_series,
    load_history,
    read_history_csv,
)
from quiho.store import open_store


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def step_csv(path: Path, n=40, step=20, reps=2, config=False) -> Path:
    lines = ["commit,time_s,host,n"]
    rng = np.random.default_rng(0)
    for host in (["a", "b"] if config else ["a"]):
        for i in range(n):
            for _ in range(reps):
                v = (1.0 if i < step else 1.5) * (1.2 if host == "b" else 1.0) + rng.normal(0, 0.005)
                lines.append(f"c{i:03d},{v:.5f},{host},{i}")
    return write(path, "\n".join(lines) + "\n")


def test_csv_repetitions_and_config_columns(tmp_path):
    hs = read_history_csv(step_csv(tmp_path / "h.csv", config=True), revision_col="commit", value_col="time_s",
                          config_cols=["host"], unit="s")
    assert [h.name for h in hs] == ["h[host=a]", "h[host=b]"]
    assert len(hs[0]) == 40 and all(s.size == 2 for s in hs[0].samples)
    assert hs[1].config == {"host": "b"} and hs[1].unit == "s"


def test_order_column_allows_gaps(tmp_path):
    p = write(tmp_path / "g.csv", "revision,value,pos\nx,1,0\ny,2,5\nz,3,9\n")
    (h,) = read_history_csv(p, order_col="pos")
    assert h.orders.tolist() == [0, 5, 9]


@pytest.mark.parametrize("text,match", [
    ("revision,value\na,1\nb,fast\n", r"line 3: value 'fast' in column 'value' is not a number"),
    ("revision,value\na,1\n,2\n", r"line 3: missing revision"),
    ("revision,value\na,1\nb,inf\n", r"line 3: .* not finite"),
    ("revision,value,o\na,1,0\nb,2,0\n", r"line 3: duplicate order 0: revisions 'a' and 'b'"),
    ("revision,value,o\na,1,0\na,2,1\n", r"line 3: revision 'a' has order 1 but earlier 0"),
    ("revision,value,o\na,1,first\n", r"line 2: order 'first' .* not an integer"),
])
def test_bad_csv_one_line_errors(tmp_path, text, match):
    p = write(tmp_path / "bad.csv", text)
    with pytest.raises(HistoryError, match=match) as exc:
        read_history_csv(p, order_col="o" if ",o" in text else None)
    assert "\n" not in str(exc.value)


def test_missing_file_and_column(tmp_path):
    with pytest.raises(ImportDataError, match="no such file"):
        read_history_csv(tmp_path / "nope.csv")
    p = write(tmp_path / "c.csv", "rev,val\na,1\n")
    with pytest.raises(ImportDataError, match="no column 'revision'; columns are: rev, val"):
        read_history_csv(p)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3", "r4"]),
                          st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=30))
def test_csv_roundtrip_property(tmp_path_factory, rows):
    p = tmp_path_factory.mktemp("h") / "h.csv"
    p.write_text("revision,value\n" + "".join(f"{r},{v!r}\n" for r, v in rows))
    (h,) = read_history_csv(p)
    order = list(dict.fromkeys(r for r, _ in rows))
    assert list(h.revisions) == order
    for rev, s in zip(h.revisions, h.samples, strict=True):
        assert s.tolist() == [v for r, v in rows if r == rev]


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.binary(max_size=200),
                 st.text(alphabet='revision,value\n\r"0123456789.-eE abc\x00;', max_size=200).map(str.encode)))
def test_garbage_csv_raises_only_quiho_errors(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("g") / "g.csv"
    p.write_bytes(blob)
    try:
        hs = read_history_csv(p)
    except QuihoError as exc:  # anything else (a traceback) fails the test
        assert "\n" not in str(exc) and str(p) in str(exc) or str(exc).startswith("no such file")
    else:  # it parsed: then every series is a valid history whose values came from the file
        assert hs and all(isinstance(h, History) and np.isfinite(h.values).all() for h in hs)
        assert sum(sum(s.size for s in h.samples) + h.missing for h in hs) >= 1


def test_store_roundtrip_and_replace(tmp_path):
    csv = step_csv(tmp_path / "h.csv", config=True)
    with open_store(tmp_path / "q.db") as s:
        imp = import_history_csv(s, csv, revision_col="commit", value_col="time_s", config_cols=["host"])
        assert imp.series == ("h[host=a]", "h[host=b]") and imp.values == (80, 80)
        import_history_csv(s, csv, revision_col="commit", value_col="time_s", config_cols=["host"])
        h = load_history(s, "h[host=b]")
        assert len(h) == 40 and h.config == {"host": "b"}
        assert [r["ok"] for r in list_series(s)] == [40, 40]
        with pytest.raises(UnknownTargetError, match="no history series 'x'"):
            load_history(s, "x")


def test_import_from_runs(tmp_path):
    with open_store(tmp_path / "q.db") as s:
        with s.transaction() as c:
            c.execute("INSERT INTO hosts(name, created_at) VALUES ('h1', 'now')")
            for i, (ver, v) in enumerate([("v1", 1.0), ("v1", 1.1), ("v2", 2.0), ("v3", 2.1)]):
                c.execute("INSERT INTO app_runs(source, batch, host_id, application, version, test, repetition, "
                          "value, unit, status, started_at) VALUES ('t', 'b', 1, 'app', ?, 'lat', ?, ?, 'ms', "
                          "'ok', ?)", (ver, i, v, f"2024-01-0{i + 1}"))
        imp = import_history_from_runs(s, "app", "lat")
        h = load_history(s, "app/lat")
        assert imp.values == (4,) and h.revisions == ("v1", "v2", "v3") and h.unit == "ms"
        assert h.samples[0].tolist() == [1.0, 1.1]
        with pytest.raises(UnknownTargetError):
            import_history_from_runs(s, "app", "nope")


def test_cli_detect_json_contract(tmp_path, capsys):
    csv = step_csv(tmp_path / "h.csv")
    rc = main(["history", "detect", str(csv), "--revision-col", "commit", "--value-col", "time_s", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    doc = json.loads(out)
    (cp,) = doc["change_points"]
    assert set(cp) == {"index", "revision", "before", "after", "magnitude", "p_value", "location"}
    assert cp["index"] == 20 and cp["revision"] == "c020" and cp["magnitude"] == pytest.approx(0.5, rel=0.02)
    # a +50 % step in 0.5 % noise can only start at c020
    assert cp["location"] == {"low": 20, "high": 20, "low_revision": "c020", "high_revision": "c020", "level": 0.95}
    assert cp["p_value"] < 0.01


def test_cli_methods_store_and_fail_on_change(tmp_path, capsys):
    csv = step_csv(tmp_path / "h.csv")
    db = str(tmp_path / "q.db")
    assert main(["history", "import", str(csv), "--revision-col", "commit", "--value-col", "time_s",
                 "--unit", "s", "--store", db]) == 0
    for m in ("cusum", "binseg", "bottomup", "gmm", "ttest", "mannwhitney"):
        assert main(["history", "detect", "h", "--method", m, "--store", db, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["change_points"][0]["index"] == 20
    assert main(["history", "detect", "h", "--store", db, "--fail-on-change"]) == 3
    assert main(["history", "detect", "h", "--store", db, "--magnitude-floor", "0.9", "--fail-on-change"]) == 0


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = write(tmp_path / "bad.csv", "revision,value\na,1\nb,oops\n")
    assert main(["history", "detect", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "quiho: error: " + f"{bad} line 3: value 'oops' in column 'value' is not a number"
    good = write(tmp_path / "good.csv", "revision,value\na,1\nb,2\n")
    assert main(["history", "detect", str(good), "--method", "magic"]) == 2
    assert "unknown detector 'magic'" in capsys.readouterr().err
    assert main(["history", "detect", "no-such-series", "--store", str(tmp_path / "none.db")]) == 1
    assert "not a file" in capsys.readouterr().err
    two = step_csv(tmp_path / "two.csv", config=True)
    assert main(["history", "detect", str(two), "--revision-col", "commit", "--value-col", "time_s",
                 "--config-col", "host"]) == 2
    assert "--series" in capsys.readouterr().err


def test_cli_short_history_says_not_meaningful(tmp_path, capsys):
    p = write(tmp_path / "s.csv", "revision,value\na,1\nb,2\nc,3\n")
    assert main(["history", "detect", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meaningful"] is False and "not meaningful" in doc["reason"] and doc["change_points"] == []


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_cli_plot(tmp_path, suffix):
    csv = step_csv(tmp_path / "h.csv")
    out = tmp_path / f"h{suffix}"
    assert main(["history", "plot", str(csv), "--revision-col", "commit", "--value-col", "time_s", "--unit", "s",
                 "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]
    if suffix == ".svg":
        text = data.decode()
        assert "(s)" in text and "revision (order)" in text


def test_history_v1_store_is_migrated(tmp_path):
    import sqlite3

    path = tmp_path / "q.db"
    open_store(path).close()
    conn = sqlite3.connect(path)  # make it look like a v1 store
    conn.execute("ALTER TABLE history_revisions DROP COLUMN machine_json")
    conn.execute("ALTER TABLE history_revisions DROP COLUMN summary_json")
    conn.execute("UPDATE schema_versions SET version = 1 WHERE component = 'history'")
    conn.commit()
    conn.close()
    with open_store(path) as s:
        assert s.versions()["history"] == 3
        cols = [r[1] for r in s.conn.execute("PRAGMA table_info(history_revisions)")]
        assert "machine_json" in cols and "summary_json" in cols
