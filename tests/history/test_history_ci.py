"""CI use of histories: detect --all, Markdown output, missing values, and hostile or absurd input."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quiho._markdown import md_escape, md_table
from quiho.cli.main import main
from quiho.errors import HistoryError, ImportDataError
from quiho.history import History, read_history_csv
from quiho.history.gate._ci import check_newest


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def series_csv(path: Path, values, name="v") -> Path:
    return write(path, "revision,value\n" + "".join(f"r{i:03d},{float(v)!r}\n" for i, v in enumerate(values)))


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_table_escapes_names():
    hostile = ["a|b", "*bold* _it_ `code`", "<script>alert(1)</script>", "line\nbreak\x1b[31m", "$x^$ [l](http://x)"]
    text = md_table(["name", "n"], [[h, i] for i, h in enumerate(hostile)], align="lr")
    lines = text.splitlines()
    assert len(lines) == 2 + len(hostile)  # no name broke a line
    assert all(unescaped_pipes(ln) == 3 for ln in lines)  # no name added a cell
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\x1b" not in text and "\\x1b" in text and "\\x0a" in text
    assert md_escape("*bold*") == "\\*bold\\*" and md_escape("[l](u)") == "\\[l\\](u)"
    assert lines[1] == "|:---|---:|"
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        md_table(["a", "b"], [["x"]])


def test_newest_check_verdicts():
    rng = np.random.default_rng(0)
    base = list(10 + rng.normal(0, 0.05, 30))
    slow = History.from_values(base + [13.0], unit="s")
    c = check_newest(slow)
    assert c.verdict == "regression" and c.magnitude == pytest.approx(0.3, abs=0.01) and c.p_value < 1e-6
    assert c.ci[0] < c.magnitude < c.ci[1] and c.n_baseline == 30
    assert check_newest(History.from_values(base + [13.0], unit="ops/s")).verdict == "improvement"
    assert check_newest(History.from_values(base + [10.01], unit="s")).verdict == "no change"
    short = check_newest(History.from_values([1.0, 2.0, 3.0], unit="s"))
    assert short.verdict == "not meaningful" and "not meaningful" in short.reason


@pytest.fixture
def ci_store(tmp_path):
    rng = np.random.default_rng(1)
    db = str(tmp_path / "q.db")
    flat = series_csv(tmp_path / "flat.csv", list(1 + rng.normal(0, 0.01, 40)))
    regress = series_csv(tmp_path / "regress.csv", list(1 + rng.normal(0, 0.01, 39)) + [1.5])
    hostile = series_csv(tmp_path / "h.csv", list(2 + rng.normal(0, 0.01, 40)))
    for f, name in ((flat, "flat"), (regress, "api|latency *p99*"), (hostile, "evil\n\x1b[2Jname")):
        assert main(["history", "import", str(f), "--series", name, "--unit", "s", "--store", db]) == 0
    return db


def test_detect_all_table_and_fail_on_change(ci_store, capsys):
    capsys.readouterr()
    assert main(["history", "detect", "--all", "--store", ci_store]) == 0
    out = capsys.readouterr().out
    assert "regression" in out and "\x1b" not in out and "evil\\x0a\\x1b[2Jname" in out
    verdicts, alerts = out.split("\n\n")
    assert len(verdicts.splitlines()) == 4  # header + 3 series: no name broke a line
    assert len(alerts.splitlines()) == 2 and "#1" in alerts and "new" in alerts  # the regression is alert #1
    assert main(["history", "detect", "--all", "--store", ci_store, "--fail-on-change"]) == 3
    capsys.readouterr()
    assert main(["history", "detect", "--all", "--store", ci_store, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    v = {s["series"]: s["newest"] for s in doc["series"]}
    assert v["api|latency *p99*"]["verdict"] == "regression" and v["flat"]["verdict"] == "no change"
    assert v["api|latency *p99*"]["magnitude"] == pytest.approx(0.5, abs=0.03)


def test_detect_markdown(ci_store, capsys):
    capsys.readouterr()
    assert main(["history", "detect", "--all", "--store", ci_store, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "**1 of 3 series regress at the newest revision**" in md
    verdicts, alerts = md.split("### Open alerts")
    table = [ln for ln in verdicts.splitlines() if ln.startswith("|")]
    assert len(table) == 5 and all(unescaped_pipes(ln) == 7 for ln in table)
    assert "**1 new** of 1 alert" in alerts and sum(ln.startswith("|") for ln in alerts.splitlines()) == 3
    assert "api\\|latency \\*p99\\*" in md and "\x1b" not in md
    row = next(ln for ln in table if "latency" in ln)
    assert "regression" in row and re.search(r"\+4\d\.\d%", row)  # the magnitude
    assert main(["history", "detect", "flat", "--store", ci_store, "--format", "markdown"]) == 0
    assert "No regression at the newest revision (1 series)" in capsys.readouterr().out
    assert main(["history", "detect", "flat", "--store", ci_store, "--format", "html"]) == 2


def test_csv_missing_values_skipped_and_counted(tmp_path, capsys):
    # like TCPD's uk_coal_employ: two holes in a real series
    vals = [str(v) for v in np.linspace(1, 2, 30)]
    vals[9], vals[20] = "", "NaN"
    p = write(tmp_path / "m.csv", "revision,value\n" + "".join(f"r{i},{v}\n" for i, v in enumerate(vals)))
    (h,) = read_history_csv(p)
    assert h.missing == 2 and len(h) == 28 and "r9" not in h.revisions
    assert main(["history", "detect", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == {"missing": 2}
    assert main(["history", "import", str(p), "--store", str(tmp_path / "q.db"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == {"missing": 2}
    few = write(tmp_path / "few.csv", "revision,value\na,1\nb,\nc,null\nd,2\ne,3\n")
    assert main(["history", "detect", str(few), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meaningful"] is False and "not meaningful" in doc["reason"] and doc["skipped"] == {"missing": 2}


@pytest.mark.parametrize("text,args,match", [
    ("revision,value\na,1_000\n", [], r"line 2: value '1_000' in column 'value' is not a number"),
    ("revision,value,value\na,1,2\n", [], r"column 'value' appears twice"),
    ("revision,value,o\na,1,100000000000000000000\n", ["--order-col", "o"], r"line 2: order .* within ±2\*\*53"),
    ("revision,value,o\na,1,1e20\n", ["--order-col", "o"], r"line 2: order '1e20' .* not an integer"),
    ("revision,value\n" + "".join(f"r{i},1e307\n" for i in range(12)), [], r"beyond ±1e\+150; rescale"),
])
def test_absurd_input_refused_in_one_line(tmp_path, capsys, text, args, match):
    p = write(tmp_path / "x.csv", text)
    for cmd in (["detect", str(p)], ["plot", str(p), "-o", str(tmp_path / "x.png")],
                ["import", str(p), "--store", str(tmp_path / "q.db")]):
        assert main(["history", *cmd, *args]) == 1, cmd
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and re.search(match, err), err
    assert not (tmp_path / "x.png").exists()


def test_plot_of_extreme_values_is_one_line(tmp_path, capsys):
    p = series_csv(tmp_path / "e.csv", [1.7e308, -1.7e308] * 6)
    assert main(["history", "plot", str(p), "-o", str(tmp_path / "e.png")]) == 1
    assert "beyond" in capsys.readouterr().err


def test_many_duplicate_headers_refused_fast(tmp_path):
    # a 600 KB header of 200 k duplicate names took > 60 s in pandas' mangling; the header is checked first
    p = write(tmp_path / "d.csv", ",".join(["revision", "value"] + ["x"] * 200_000) + "\n")
    with pytest.raises(ImportDataError, match="column 'x' appears twice"):
        read_history_csv(p)


def test_large_orders_plot_without_allocating_every_order(tmp_path):
    p = write(tmp_path / "o.csv", "revision,value,o\n" + "".join(f"r{i},{1 + (i > 5)},{i * 100_000_000}\n"
                                                                 for i in range(12)))
    assert main(["history", "plot", str(p), "--order-col", "o", "-o", str(tmp_path / "o.png")]) == 0
    assert (tmp_path / "o.png").read_bytes().startswith(b"\x89PNG")


def test_history_values_validated_at_the_boundary():
    with pytest.raises(HistoryError, match="beyond"):
        History.from_values([1.0, 1e200])
    with pytest.raises(HistoryError, match="orders beyond"):
        History("x", ("a",), np.array([2**60]), (np.array([1.0]),))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_unreadable_file_is_one_line(tmp_path):
    p = series_csv(tmp_path / "secret.csv", [1.0] * 12)
    p.chmod(0)
    for args in (["detect", str(p)], ["import", str(p), "--store", str(tmp_path / "q.db")]):
        r = subprocess.run(["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search",
                            sys.executable, "-m", "quiho", "history", *args], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.strip() == f"quiho: error: {p}: permission denied"


def test_list_and_detect_escape_control_characters(tmp_path, capsys):
    db = str(tmp_path / "q.db")
    p = series_csv(tmp_path / "c.csv", [1.0] * 6 + [2.0] * 6)
    assert main(["history", "import", str(p), "--series", "x\nFAKE\x1b[31m", "--store", db]) == 0
    capsys.readouterr()
    assert main(["history", "list", "--store", db]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "\x1b" not in out and "x\\x0aFAKE\\x1b[31m" in out
    assert main(["history", "detect", "x\nFAKE\x1b[31m", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.splitlines()[0].startswith("x\\x0aFAKE")


def test_the_markdown_machine_column_shows_the_kind_not_the_key(tmp_path: Path, popper_csv: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A revision recorded with facts is shown by its hardware type, the name the newest-revision check uses."""
    from quiho.history.normalise import MachineSource, attach_machine, machine_type, stored_host
    from quiho.store import open_store

    db = tmp_path / "q.db"
    assert main(["import", "quiho-popper", str(popper_csv), "--store", str(db)]) == 0
    series_csv(tmp_path / "h.csv", np.linspace(10, 11, 12))
    assert main(["history", "import", str(tmp_path / "h.csv"), "--series", "s", "--store", str(db)]) == 0
    facts = {"cpu_model": "Intel(R) Xeon(R) CPU E5-2630 v3", "vcpus": 32, "memtotal_mb": 131072, "arch": "x86_64"}
    with open_store(db) as st:
        src = stored_host(st, "c220g1.quiho.schedock-PG0.wisc.cloudlab.us")
        attach_machine(st, ["s"], None, MachineSource(src.host, src.fingerprint_run_id, facts))
    capsys.readouterr()
    assert main(["history", "detect", "s", "--normalise", "--format", "markdown", "--store", str(db)]) == 0
    md = capsys.readouterr().out
    kind = machine_type(facts)
    assert kind is not None and f"| {md_escape(kind)} |" in md, md
    assert "fingerprint run" not in md  # the key (host and run) is not what the column names
