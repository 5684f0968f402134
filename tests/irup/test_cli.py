"""The CLI contract of import / irup / compare / advise, and bad input."""

import hashlib
import json

import pytest

from quiho.cli.main import main


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.fixture(scope="module")
def store_file(tmp_path_factory, popper_csv):
    path = tmp_path_factory.mktemp("cli") / "q.db"
    assert main(["import", "quiho-popper", str(popper_csv), "--store", str(path)]) == 0
    return path


def test_irup_json_contract(store_file, capsys, tmp_path):
    png = tmp_path / "irup.png"
    rc = main(["irup", "hpccg", "--store", str(store_file), "--seeds", "2", "--json", "--plot", str(png)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"target", "importance", "seeds", "features", "dropped", "validity", "versions"} <= set(doc)
    assert {"stressor", "importance", "std", "classes"} <= set(doc["features"][0])
    assert doc["features"][0]["importance"] == 100.0
    assert {"verdict", "r2_group_cv", "hardware_groups", "hosts", "reason"} <= set(doc["validity"])
    assert doc["validity"]["hosts"] == 20 and doc["validity"]["hardware_groups"] < 20
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    n = _count_irups(store_file)
    assert n >= 1


def _count_irups(path):
    from quiho.store import open_store

    with open_store(path) as st:
        return st.conn.execute("SELECT COUNT(*) FROM irups").fetchone()[0]


def test_compare_json_contract(store_file, capsys):
    rc = main(["compare", "hpccg", "hpccg", "--random-state-b", "7", "--seeds", "3", "--permutations", "19",
               "--store", str(store_file), "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"verdict", "first_divergent_rank", "spearman", "class_shares", "p_value", "permutations"} <= set(doc)
    # The same runs on both sides: the test's observed distance is 0, nothing is below it, p = 1.
    assert doc["calibrated"] and doc["permutations"] == 19 and doc["p_value"] == 1.0
    assert doc["verdict"] != "different"
    assert set(doc["class_shares"]) == {"a", "b"}


def test_compare_text_cites_the_test(store_file, capsys):
    rc = main(["compare", "hpccg", "hpccg", "--seeds", "2", "--permutations", "9", "--store", str(store_file)])
    out = capsys.readouterr().out
    assert rc == 0 and ("profile-shift test: p = 1 (host × version interaction, B = 9 within-host permutations, "
                        "20 shared hosts)") in out


def test_compare_without_common_hosts_is_one_line_error(tmp_path, capsys):
    csv = tmp_path / "apart.csv"
    lines = ["giturl,commit,user,timestamp,benchmark,machine,repetition,test,result"]
    for i, host in enumerate("abcdefgh"):
        for rep in (1, 2):
            for s, v in (("cpu", 100 + 37 * i), ("stream", 200 + 11 * i * i)):
                lines.append(f"g,c,u,1,stressng,{host},{rep},{s},{v + rep}")
            app = "one" if i < 4 else "two"
            lines.append(f"g,c,u,1,{app},{host},{rep},{app},{3 + i + rep / 10}")
    csv.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.db"
    assert main(["import", "quiho-popper", str(csv), "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["compare", "one", "two", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert "no common host" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("args", [
    ["irup", "hpccg", "--jobs", "0"], ["irup", "hpccg", "--jobs", "-2"], ["irup", "hpccg", "--random-state", "-1"],
    ["compare", "hpccg", "hpccg", "--random-state-b", "-1"], ["compare", "hpccg", "hpccg", "--alpha", "1"],
    ["compare", "hpccg", "hpccg", "--permutations", "-5"],
])
def test_bad_numbers_are_usage_errors(store_file, capsys, args):
    assert main([*args, "--store", str(store_file)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_human_output(store_file, capsys):
    assert main(["irup", "hpccg", "--store", str(store_file), "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "validity:" in out and "where to look first" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["irup", "no-such-app"], "no data for target"),
        (["irup", "stream/add-30", "--batch", "1499724178000"], "no data for target"),
        (["irup", "hpccg", "--importance", "gain"], "unknown importance"),
    ],
)
def test_bad_requests_fail_cleanly_and_leave_store_untouched(store_file, capsys, args, message):
    before = _digest(store_file)
    rc = main([*args, "--store", str(store_file)])
    err = capsys.readouterr().err
    assert rc in (1, 2)
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _digest(store_file) == before


def test_too_few_groups(tmp_path, capsys):
    csv = tmp_path / "small.csv"
    lines = ["giturl,commit,user,timestamp,benchmark,machine,repetition,test,result"]
    for host in ("a", "b"):
        for rep in (1, 2, 3, 4, 5, 6):
            for s, v in (("cpu", 100), ("stream", 200)):
                lines.append(f"g,c,u,1,stressng,{host},{rep},{s},{v * (2 if host == 'b' else 1) + rep}")
            lines.append(f"g,c,u,1,app,{host},{rep},app,{3 + rep}")
    csv.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.db"
    assert main(["import", "quiho-popper", str(csv), "--store", str(store)]) == 0
    before = _digest(store)
    assert main(["irup", "app", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert "hardware group" in err and "at least 3" in err
    assert _digest(store) == before


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("a,b,c\n1,2,3\n", "lacks column"),
        ("giturl,commit,user,timestamp,benchmark,machine,repetition,test,result\ng,c,u,1,stressng,h,1,cpu,abc\n",
         "not a number"),
        ("", "not a readable CSV"),
    ],
)
def test_bad_import_files(tmp_path, capsys, content, message):
    src = tmp_path / "in.csv"
    if content is not None:
        src.write_text(content)
    store = tmp_path / "s.db"
    rc = main(["import", "quiho-popper", str(src), "--store", str(store)])
    err = capsys.readouterr().err
    assert rc == 1 and message in err and len(err.strip().splitlines()) == 1
    assert not store.exists()  # validated before the store is created


def test_a_directory_is_named_as_one(tmp_path, capsys):
    store = tmp_path / "s.db"
    assert main(["import", "quiho-popper", str(tmp_path), "--store", str(store)]) == 1
    assert main(["history", "import", str(tmp_path), "--store", str(store)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"quiho: error: {tmp_path} is a directory: name a file"
    # history import also reads criterion's directories, so its line says which directory it wanted
    assert err[1] == (f"quiho: error: {tmp_path} is a directory, not a result file "
                      "(a criterion directory holds <benchmark>/new/sample.json)")
    assert len(err) == 2 and not store.exists()


def test_an_unknown_target_in_an_empty_store_says_the_store_is_empty(tmp_path, capsys):
    store, csv = tmp_path / "s.db", tmp_path / "h.csv"
    csv.write_text("revision,value\na,1\nb,2\n")  # a store with a history and no application runs
    assert main(["history", "import", str(csv), "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["irup", "app", "--store", str(store)]) == 1
    assert capsys.readouterr().err.strip() == ("quiho: error: no data for target 'app'; the store has no application "
                                               "runs yet")


def test_bad_import_leaves_existing_store_untouched(store_file, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("giturl,commit,user,timestamp,benchmark,machine,repetition,test,result\n"
                   "g,c,u,1,app,h,1,app,1.0\n")  # no stress-ng rows
    before = _digest(store_file)
    assert main(["import", "quiho-popper", str(bad), "--store", str(store_file)]) == 1
    assert "no 'stressng' rows" in capsys.readouterr().err
    assert _digest(store_file) == before


def test_reimport_is_idempotent(store_file, popper_csv):
    from quiho.store import open_store

    def counts():
        with open_store(store_file) as st:
            return [st.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                    for t in ("hosts", "fingerprint_runs", "measurements", "app_runs")]

    before = counts()
    assert main(["import", "quiho-popper", str(popper_csv), "--store", str(store_file)]) == 0
    assert counts() == before
    assert before[1] == 6 and before[2] == 16897


def test_advise(store_file, capsys):
    rc = main(["advise", "mysqlslap-mariadb-10.3.2/memory_load", "--draws", "2", "--store", str(store_file),
               "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["full_groups"] == 7
    assert [r["n_groups"] for r in doc["rows"]] == [3, 4, 5, 6, 7]
    assert all(0 <= r["top1_agreement"] <= 1 for r in doc["rows"])
    assert doc["reason"]


def test_every_help_page_renders(capsys):
    from quiho.cli.main import app

    assert main(["--help"]) == 0
    names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    for name in names:
        assert main([name, "--help"]) == 0, name
    out = capsys.readouterr().out
    assert "irup" in out and "Traceback" not in out


def test_benchmark_name_with_a_slash_is_found(tmp_path, capsys):
    csv = tmp_path / "slash.csv"
    lines = ["giturl,commit,user,timestamp,benchmark,machine,repetition,test,result"]
    for i, host in enumerate("abcdefgh"):
        for rep in (1, 2):
            for s, v in (("cpu", 100 + 37 * i), ("stream", 200 + 11 * i * i), ("zero", 50 + 3 * (i % 3))):
                lines.append(f"g,c,u,1,stressng,{host},{rep},{s},{v + rep}")
            lines.append(f"g,c,u,1,db/bench,{host},{rep},load,{1000 / (200 + 11 * i * i) + rep / 100}")
    csv.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.db"
    assert main(["import", "quiho-popper", str(csv), "--store", str(store)]) == 0
    assert main(["targets", "--store", str(store)]) == 0
    assert "db/bench/load\t16 runs" in capsys.readouterr().out
    assert main(["irup", "db/bench/load", "--seeds", "2", "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == "db/bench/load"


def test_non_finite_stored_value_is_one_line(tmp_path, capsys):
    from quiho.store import open_store

    csv = tmp_path / "inf.csv"
    lines = ["giturl,commit,user,timestamp,benchmark,machine,repetition,test,result"]
    for i, host in enumerate("abcdefgh"):
        for rep in (1, 2):
            for s, v in (("cpu", 100 + 37 * i), ("stream", 200 + 11 * i * i)):
                lines.append(f"g,c,u,1,stressng,{host},{rep},{s},{v + rep}")
            lines.append(f"g,c,u,1,app,{host},{rep},app,{3 + i + rep / 10}")
    csv.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.db"
    assert main(["import", "quiho-popper", str(csv), "--store", str(store)]) == 0
    with open_store(store) as st, st.transaction() as c:
        c.execute("UPDATE app_runs SET value = 9e999 WHERE id = (SELECT MIN(id) FROM app_runs)")
    capsys.readouterr()
    assert main(["irup", "app", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert "non-finite" in err and len(err.strip().splitlines()) == 1
