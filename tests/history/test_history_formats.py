"""Benchmark result files written by the real tools (tests/history/data/formats/README.md) become histories."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from quiho.errors import ImportDataError, UsageError
from quiho.history import History, load_history
from quiho.history.sources._formats import FORMATS, detect_format, direction_of_unit, import_results, read_results
from quiho.store import open_store

DATA = Path(__file__).parent / "data" / "formats"
ASV = DATA / "asv" / "fixture-vm" / "ea781513-existing-py_tmp_h4venv_bin_python.json"
#: written by hand from criterion's documented on-disk format (data/formats/README.md): no criterion runs here
CRITERION = DATA / "criterion" / "target" / "criterion"
CRITERION_SORT = "criterion/target/criterion/sort/new/sample.json"


def by_name(path, fmt="auto"):
    r = read_results(path, fmt)
    return r, {m.benchmark: m for m in r.measurements}


def test_google_benchmark_repetitions_not_aggregates():
    r, m = by_name(DATA / "gbench.json")
    assert r.format == "google-benchmark" and r.revision is None and r.missing == 0
    assert list(m) == ["BM_Sum/64", "BM_Sum/4096", "BM_StringCopy"]
    raw = [b for b in json.loads((DATA / "gbench.json").read_text())["benchmarks"]
           if b["run_name"] == "BM_Sum/64" and b["run_type"] == "iteration"]
    assert m["BM_Sum/64"].values == tuple(b["real_time"] for b in raw)  # the 3 repetitions, no mean/median rows
    assert m["BM_Sum/64"].values[0] == 217.78415572892857
    assert m["BM_Sum/64"].unit == "ns" and m["BM_Sum/64"].direction == "lower"
    assert m["BM_Sum/64"].config == {"machine": "vm"}


def test_hyperfine_times():
    r, m = by_name(DATA / "hyperfine.json")
    assert r.format == "hyperfine"
    assert m["sleep 0.01"].values == (0.015802421, 0.019962039, 0.011974776000000001, 0.031900432, 0.027996949)
    assert m["sleep 0.01"].unit == "s" and set(m) == {"sleep 0.01", "true"}


def test_go_test_bench_text_every_metric():
    r, m = by_name(DATA / "gotest.txt")
    assert r.format == "go"
    assert m["BenchmarkFib10"].values == (436.4, 4249.0, 447.9) and m["BenchmarkFib10"].unit == "ns/op"
    assert m["BenchmarkAlloc"].values == (0.9315, 1.077, 0.8610)
    assert m["BenchmarkAlloc allocs/op"].values == (0.0, 0.0, 0.0) and m["BenchmarkAlloc B/op"].unit == "B/op"
    assert m["BenchmarkFib10"].config == {"pkg": "example.com/gobench", "cpu": "AMD EPYC"}


def test_pytest_benchmark_rounds_and_commit():
    r, m = by_name(DATA / "pytest_benchmark.json")
    assert r.format == "pytest-benchmark" and r.revision == "4de401503a7b9d8124b970e89a557f0d7c2b0ab7"
    t = m["tests/history/data/formats/src/test_pybench.py::test_sum"]
    assert t.values == (2.2062999960326124e-05, 2.1881999998640822e-05, 2.186199998277516e-05,
                        2.1320999962881615e-05, 2.1572000036940153e-05)
    assert t.unit == "s" and t.config == {"machine": "vm"}


def test_asv_samples_units_from_benchmarks_json():
    r, m = by_name(ASV)
    assert r.format == "asv" and r.revision == "ea781513505dc769efd77e7076eebd772c8d4c3b"
    assert m["bench.time_sum"].values == (3.5686359126993955e-05, 3.557180357149033e-05, 3.510040873010663e-05)
    assert m["bench.time_sum"].unit == "s"
    assert m["bench.track_answer"].values == (42.0,) and m["bench.track_answer"].unit == "widgets"
    assert m["bench.time_sum"].config["machine"] == "fixture-vm"


def test_jmh_raw_data_and_throughput_direction():
    r, m = by_name(DATA / "jmh.json")
    (b,) = m.values()
    assert r.format == "jmh" and b.benchmark == "org.openjdk.jmh.samples.JMHSample_01_HelloWorld.wellHelloThere"
    assert b.values == (3.376842765688582e9, 3.37651988895058e9, 3.375353964729294e9)
    assert b.unit == "ops/s" and b.direction == "higher"


def test_custom_json():
    r, m = by_name(DATA / "custom.json")
    assert r.format == "custom" and list(m) == ["No instrumentation", "Deactivated probe", "No logging",
                                                "Binary file"]
    assert m["No logging"].values == (1847.38,) and m["No logging"].unit == "ns"


def _pyperf_values(doc, i):
    return tuple(v for run in doc["benchmarks"][i]["runs"] for v in run.get("values", ()))


def test_pyperf_values_of_every_run_not_warmups_or_calibration():
    r, m = by_name(DATA / "pyperf_suite.json")
    doc = json.loads((DATA / "pyperf_suite.json").read_text())
    assert r.format == "pyperf" and r.revision is None and r.missing == 0
    assert list(m) == ["sort a sorted list", "join strings"]
    b = m["sort a sorted list"]
    assert b.values == _pyperf_values(doc, 0) and len(b.values) == 6  # 3 processes x 2 values
    assert b.values[0] == 3.1233779296258035e-06  # seconds per loop, as pyperf stores them
    assert b.unit == "s" and b.direction == "lower" and b.config == {"machine": "vm"}
    # pyperf timeit: one benchmark whose name is the file's metadata
    t, mt = by_name(DATA / "pyperf_timeit.json")
    assert list(mt) == ["timeit"] and mt["timeit"].values == _pyperf_values(
        json.loads((DATA / "pyperf_timeit.json").read_text()), 0)


def test_a_gzip_result_file_reads_as_its_content(tmp_path, monkeypatch):
    import gzip

    import quiho.history.sources._formats as formats

    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress((DATA / "pyperf_gz.json.gz").read_bytes()))
    assert read_results(DATA / "pyperf_gz.json.gz").measurements == read_results(plain).measurements
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes((DATA / "pyperf_gz.json.gz").read_bytes()[:200])
    with pytest.raises(ImportDataError, match=r"cut.json.gz: damaged gzip file"):
        read_results(cut)
    monkeypatch.setattr(formats, "MAX_UNZIPPED", 1000)  # a small cap stands in for a decompression bomb
    with pytest.raises(ImportDataError, match=r"decompresses to more than 0 MiB; not a result file"):
        read_results(DATA / "pyperf_gz.json.gz")


def test_history_import_of_a_pyperf_gzip_file(tmp_path, capsys):
    from quiho.cli.main import main

    db = tmp_path / "q.db"
    assert main(["history", "import", str(DATA / "pyperf_gz.json.gz"), "--revision", "r1", "--store", str(db)]) == 0
    assert capsys.readouterr().err == "imported timeit[machine=vm] @ r1: 4 values (s, lower is better)\n"
    with open_store(db) as st:
        h = load_history(st, "timeit[machine=vm]")
    assert h.revisions == ("r1",) and h.unit == "s" and len(h.samples[0]) == 4


def test_a_gzip_csv_is_refused_in_one_line_that_does_not_claim_the_csv_reader_saw_it(tmp_path, capsys):
    import gzip

    from quiho.cli.main import main

    gz = tmp_path / "h.csv.gz"
    gz.write_bytes(gzip.compress(b"revision,value\na,1\nb,2\n"))
    db = tmp_path / "q.db"
    assert main(["history", "import", str(gz), "--store", str(db)]) == 1
    err = capsys.readouterr().err
    assert "gzip-compressed file that is not a result file" in err and "gunzip it first" in err
    assert "csv)" not in err and not db.exists()  # nothing stored


@pytest.mark.parametrize("unit,direction", [("ops/s", "higher"), ("MB/s", "higher"), ("items_per_second", "higher"),
                                            ("ns", "lower"), ("ms/op", "lower"), ("s", "lower"), ("B/op", "lower")])
def test_direction_of_unit(unit, direction):
    assert direction_of_unit(unit) == direction


def test_missing_values_are_skipped_and_counted(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps([{"name": "a", "unit": "s", "value": 1.5}, {"name": "b", "unit": "s", "value": None},
                             {"name": "c", "unit": "s", "value": ""}]))
    r = read_results(p)
    assert r.missing == 2 and [m.values for m in r.measurements] == [(1.5,), (), ()]
    h = tmp_path / "h.json"
    doc = json.loads((DATA / "hyperfine.json").read_text())
    doc["results"][0]["times"][1] = None
    h.write_text(json.dumps(doc))
    r2 = read_results(h)
    assert r2.missing == 1 and len(r2.measurements[0].values) == 4


def test_import_appends_revisions_in_order(tmp_path):
    db = tmp_path / "q.db"
    with open_store(db) as st:
        a = import_results(st, DATA / "gbench.json", revision="r1")
        import_results(st, DATA / "gbench.json", revision="r2")
        import_results(st, DATA / "gbench.json", revision="r1")  # re-run of r1: same place, values replaced
        assert a.series[0] == "BM_Sum/64[machine=vm]" and a.values[0] == 3 and a.to_dict()["skipped"] == {"missing": 0}
        h = load_history(st, "BM_Sum/64[machine=vm]")
        assert h.revisions == ("r1", "r2") and h.unit == "ns"
        assert h.samples[0][0] == 217.78415572892857
        b = import_results(st, DATA / "pytest_benchmark.json")  # the file names its commit
        assert b.revision == "4de401503a7b9d8124b970e89a557f0d7c2b0ab7"


def test_revision_from_git_or_refused(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(DATA / "custom.json", plain / "c.json")
    with open_store(tmp_path / "q.db") as st, pytest.raises(UsageError, match="give --revision"):
        import_results(st, plain / "c.json")


@pytest.mark.parametrize("text,match", [
    ('{"benchmarks": [{"name": "a"', r"line 1: truncated JSON"),
    ('[{"name": "a", "unit": "s", "value": 1},\n {"name": "b", "unit": "s", "value": 2}\n', r"line 3: truncated JSON"),
    ('{"x": 1}', r"not a result file of a known format \(tried: pytest-benchmark, google-benchmark, hyperfine, "
                 r"asv, go, jmh, custom, pyperf, criterion, csv\)"),
    ("hello\nworld\n", r"tried: pytest-benchmark, .*pyperf, criterion, csv"),
    ('[{"name": "a", "unit": "s", "value": "1_000"}]', r"'1_000' is not a number"),
    ('[{"name": "a", "unit": "s", "value": 1e999}]', r"not finite"),
])
def test_bad_files_one_line(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ImportDataError, match=match) as exc:
        read_results(p)
    assert "\n" not in str(exc.value)


def test_every_fixture_is_recognised_by_content():
    files = {"google-benchmark": "gbench.json", "hyperfine": "hyperfine.json", "go": "gotest.txt",
             "pytest-benchmark": "pytest_benchmark.json", "jmh": "jmh.json", "custom": "custom.json",
             "pyperf": "pyperf_suite.json"}
    files["asv"] = str(ASV.relative_to(DATA))
    files["criterion"] = "criterion/target/criterion/sort/new/sample.json"
    assert set(files) == set(FORMATS)
    for fmt, name in files.items():
        assert detect_format((DATA / name).read_text()) == fmt


def _json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))
    return st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                     st.dictionaries(st.sampled_from(
                                                         ["name", "unit", "value", "benchmarks", "context",
                                                          "machine_info", "results", "command", "times", "stats",
                                                          "data", "primaryMetric", "rawData", "result_columns",
                                                          "commit_hash", "version", "run_type", "real_time",
                                                          "runs", "values", "metadata", "iters",
                                                          "sampling_mode", "mean", "median", "point_estimate",
                                                          "median_abs_dev"]),
                                                         c, max_size=5)), max_leaves=20)


def test_garbage_and_near_miss_files_raise_only_import_errors(tmp_path_factory):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=150, deadline=None)
    @given(st.one_of(st.binary(max_size=300), _json_values().map(lambda d: json.dumps(d).encode()),
                     st.sampled_from([(DATA / f).read_bytes() for f in ("gotest.txt", "custom.json", "jmh.json",
                                                                        "hyperfine.json", "pyperf_suite.json",
                                                                        "pyperf_gz.json.gz", CRITERION_SORT)])
                     .flatmap(lambda b: st.integers(0, len(b)).map(lambda k: b[:k]))))
    def check(blob):
        p = tmp_path_factory.mktemp("g") / "r.json"
        p.write_bytes(blob)
        try:
            r = read_results(p)
        except ImportDataError as exc:
            assert "\n" not in str(exc)  # one line; anything but ImportDataError fails the test
        else:
            assert r.measurements and all(all(np.isfinite(v) for v in m.values) for m in r.measurements)

    check()


def _without(path: Path, tmp: Path, edit) -> Path:
    doc = json.loads(path.read_text())
    edit(doc)
    out = tmp / path.name
    out.write_text(json.dumps(doc))
    return out


def _summary_only(tmp: Path) -> Path:
    """The pytest-benchmark fixture as written without ``--benchmark-save-data``: summaries, no rounds."""
    def drop(doc):
        for b in doc["benchmarks"]:
            del b["stats"]["data"]

    return _without(DATA / "pytest_benchmark.json", tmp, drop)


def test_pytest_benchmark_without_saved_data_keeps_its_summary_and_the_store_keeps_it(tmp_path):
    p = _summary_only(tmp_path)
    stats = json.loads((DATA / "pytest_benchmark.json").read_text())["benchmarks"][0]["stats"]
    r, m = by_name(p)
    t = m["tests/history/data/formats/src/test_pybench.py::test_sum"]
    s = t.summary
    assert s is not None and t.values == (stats["mean"],) and r.missing == 0
    assert (s.min, s.q1, s.median, s.q3, s.max, s.mean, s.rounds) == tuple(
        stats[k] for k in ("min", "q1", "median", "q3", "max", "mean", "rounds"))
    assert by_name(DATA / "pytest_benchmark.json")[1][t.benchmark].summary is None  # rounds saved: no summary
    with open_store(tmp_path / "q.db") as st:
        imp = import_results(st, p)
        h = load_history(st, imp.series[0])
    assert h.summaries == (s,) and h.samples[0].tolist() == [stats["mean"]]
    from quiho.history.gate._levels import located

    assert located(h, "min").values.tolist() == [stats["min"]]  # the gate reads the minimum it was given


def test_asv_without_samples_keeps_median_and_quartiles():
    def drop(doc):
        i = doc["result_columns"].index("samples")
        for row in doc["results"].values():
            if len(row) > i:
                row[i] = None

    import tempfile

    p = _without(ASV, Path(tempfile.mkdtemp()), drop)
    _, m = by_name(p)
    s = m["bench.time_sum"].summary
    assert s is not None and (s.q1, s.median, s.q3, s.rounds) == (3.5336e-05, 3.557180357149033e-05, 3.5629e-05, 3)
    assert np.isnan(s.min) and m["bench.time_sum"].values == (3.557180357149033e-05,)
    assert m["bench.track_answer"].summary is None and m["bench.track_answer"].values == (42.0,)  # one value


def test_google_benchmark_aggregates_only_and_hyperfine_without_times(tmp_path):
    def aggregates_only(doc):
        doc["benchmarks"] = [b for b in doc["benchmarks"] if b.get("run_type") == "aggregate"]

    p = _without(DATA / "gbench.json", tmp_path, aggregates_only)
    rows = {b["aggregate_name"]: b["real_time"] for b in json.loads(p.read_text())["benchmarks"]
            if b["run_name"] == "BM_Sum/64"}
    _, m = by_name(p)
    s = m["BM_Sum/64"].summary
    assert s is not None and (s.mean, s.median) == (rows["mean"], rows["median"]) and np.isnan(s.min)
    assert m["BM_Sum/64"].values == (rows["mean"],)

    def no_times(doc):
        for r in doc["results"]:
            del r["times"]

    (tmp_path / "h").mkdir()
    q = _without(DATA / "hyperfine.json", tmp_path / "h", no_times)
    res = json.loads(q.read_text())["results"][0]
    s = by_name(q)[1]["sleep 0.01"].summary
    assert s is not None and (s.min, s.median, s.max, s.mean) == (res["min"], res["median"], res["max"],
                                                                   res["mean"])


def test_a_summary_out_of_order_or_a_stat_that_is_no_number_is_one_line(tmp_path):
    def swap(doc):
        st = doc["benchmarks"][0]["stats"]
        del st["data"]
        st["min"], st["max"] = st["max"], st["min"]

    with pytest.raises(ImportDataError, match=r"benchmarks\[0\]\.stats: summary min <= q1"):
        read_results(_without(DATA / "pytest_benchmark.json", tmp_path, swap))

    def text(doc):
        st = doc["benchmarks"][0]["stats"]
        del st["data"]
        st["median"] = "fast"

    with pytest.raises(ImportDataError, match=r"'fast' is not a number"):
        read_results(_without(DATA / "pytest_benchmark.json", tmp_path, text))


def test_a_harness_file_without_a_distribution_is_one_line_and_stores_nothing(tmp_path, capsys):
    from quiho.cli.main import main

    def bare(doc):  # the second benchmark's stats hold neither rounds nor any centre
        doc["benchmarks"].append(json.loads(json.dumps(doc["benchmarks"][0])))
        doc["benchmarks"][1]["fullname"] += "_2"
        doc["benchmarks"][1]["stats"] = {"stddev": 1e-6, "ops": 4.5e4, "iterations": 1}

    p = _without(DATA / "pytest_benchmark.json", tmp_path, bare)
    db = tmp_path / "q.db"
    good = tmp_path / "good.json"
    shutil.copy(DATA / "pytest_benchmark.json", good)
    assert main(["history", "import", str(good), "--store", str(db)]) == 0
    before = db.read_bytes()
    capsys.readouterr()
    assert main(["history", "import", str(p), "--revision", "r2", "--store", str(db)]) == 1
    got = capsys.readouterr()
    assert got.out == "" and len(got.err.strip().splitlines()) == 1 and "Traceback" not in got.err
    assert "benchmarks[1]" in got.err and "no distribution" in got.err and "--benchmark-save-data" in got.err
    assert db.read_bytes() == before  # the first benchmark was not stored alone
    assert main(["history", "import", str(p), "--revision", "r2", "--store", str(tmp_path / "new.db")]) == 1
    assert not (tmp_path / "new.db").exists()


def test_history_import_reads_a_result_file_once(tmp_path, monkeypatch):
    import quiho.history
    import quiho.history.sources._formats as fm
    from quiho.cli.main import main

    calls = []
    real = fm.read_results

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(fm, "read_results", counting)
    monkeypatch.setattr(quiho.history, "read_results", counting)
    assert main(["history", "import", str(DATA / "gbench.json"), "--revision", "r1",
                 "--store", str(tmp_path / "q.db")]) == 0
    assert len(calls) == 1, calls


def test_a_summary_survives_both_store_backends_and_save_history(store_spec, tmp_path):
    from quiho.history import save_history

    p = _summary_only(tmp_path)
    with open_store(store_spec) as st:
        name = import_results(st, p, revision="r1").series[0]
        import_results(st, DATA / "pytest_benchmark.json", revision="r2")  # rounds saved: no summary
        h = load_history(st, name)
        assert h.summaries[0] is not None and h.summaries[1] is None and h.samples[1].size == 5
        save_history(st, History("copy", h.revisions, h.orders, h.samples, h.unit, summaries=h.summaries), "t")
        c = load_history(st, "copy")
    assert c.summaries == h.summaries and c.samples[0].tolist() == h.samples[0].tolist()


def test_append_adds_a_run_of_rounds_and_refuses_summaries(store_spec, tmp_path):
    from quiho.errors import HistoryError

    summary_only = _summary_only(tmp_path)
    with open_store(store_spec) as st:
        name = import_results(st, DATA / "pytest_benchmark.json", revision="r1").series[0]
        once = load_history(st, name).samples[0].tolist()
        import_results(st, DATA / "pytest_benchmark.json", revision="r1", append=True)  # a second run of r1
        assert load_history(st, name).samples[0].tolist() == once + once
        import_results(st, DATA / "pytest_benchmark.json", revision="r1")  # without --append: replaced
        assert load_history(st, name).samples[0].tolist() == once
        import_results(st, summary_only, revision="r2")
        for path, rev, what in ((summary_only, "r3", "the file"), (DATA / "pytest_benchmark.json", "r2",
                                                                     "the stored revision")):
            with pytest.raises(HistoryError, match=f"revision {rev}: --append adds rounds to rounds, but {what}"):
                import_results(st, path, revision=rev, append=True)
        h = load_history(st, name)
        assert h.revisions == ("r1", "r2") and h.samples[0].tolist() == once  # nothing stored by the refusals


def test_append_on_the_command_line(tmp_path, capsys):
    from quiho.cli.main import main

    db = tmp_path / "q.db"
    hf = ["history", "import", str(DATA / "hyperfine.json"), "--revision", "r1", "--store", str(db)]
    assert main(hf) == 0 and main([*hf, "--append"]) == 0
    from quiho.history.sources._io import _series_name

    with open_store(db) as st:
        for m in read_results(DATA / "hyperfine.json").measurements:
            assert load_history(st, _series_name(m.benchmark, m.config)).samples[0].tolist() == list(m.values) * 2
    capsys.readouterr()
    csv = tmp_path / "h.csv"
    csv.write_text("revision,value\nr1,1.0\n")
    for args in ([str(csv)], ["--from-runs", "app/test"]):
        assert main(["history", "import", *args, "--append", "--store", str(db)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--append adds a benchmark result file's values" in err


# --- Rust criterion (fixtures written by hand from its documented format) -----------------------------------


def _per_iteration(sample: Path) -> tuple[float, ...]:
    doc = json.loads(sample.read_text())
    return tuple(t / n for t, n in zip(doc["times"], doc["iters"], strict=True))


def test_criterion_directory_keeps_every_benchmarks_samples_per_iteration():
    r, m = by_name(CRITERION)
    assert r.format == "criterion" and r.revision is None and r.missing == 0
    assert list(m) == ["parse/small", "sort"]  # benchmark.json's full_id, in path order
    for name in m:
        assert m[name].values == _per_iteration(CRITERION / name / "new" / "sample.json")  # ns per iteration
        assert len(m[name].values) == 10 and m[name].summary is None
        assert (m[name].unit, m[name].direction) == ("ns", "lower")
    assert m["sort"].values != _per_iteration(CRITERION / "sort" / "base" / "sample.json")  # the older run is not read
    # a Linear sample's iteration counts differ: the times are divided, not read as they are
    assert len(set(json.loads((CRITERION / "sort" / "new" / "sample.json").read_text())["iters"])) == 10


def test_criterion_single_files_sample_or_estimates():
    new = CRITERION / "sort" / "new"
    _, from_sample = by_name(new / "sample.json")
    _, from_estimates = by_name(new / "estimates.json")  # the samples beside it are the distribution: read them
    assert from_sample["sort"].values == from_estimates["sort"].values == _per_iteration(new / "sample.json")
    only = DATA / "criterion_estimates" / "fib_20" / "new" / "estimates.json"
    r, m = by_name(only)
    est = json.loads(only.read_text())
    (t,) = m.values()
    assert t.benchmark == "fib_20" and r.format == "criterion"  # no benchmark.json: the directory names it
    assert t.values == (est["mean"]["point_estimate"],) and t.summary.median == est["median"]["point_estimate"]
    assert detect_format(only.read_text()) == "criterion"


def test_criterion_directory_imports_one_series_per_benchmark(tmp_path, capsys):
    from quiho.cli.main import main

    db = tmp_path / "q.db"
    for rev in ("r1", "r2"):
        assert main(["history", "import", str(CRITERION), "--revision", rev, "--store", str(db)]) == 0
    assert "imported sort @ r2: 10 values (ns, lower is better)" in capsys.readouterr().err
    with open_store(db) as st:
        h = load_history(st, "sort")
    assert h.revisions == ("r1", "r2") and h.samples[1] == pytest.approx(_per_iteration(CRITERION / "sort" / "new" /
                                                                                          "sample.json"))


def test_criterion_bad_input_is_one_line(tmp_path, capsys):
    from quiho.cli.main import main

    new = tmp_path / "target" / "criterion" / "b" / "new"
    new.mkdir(parents=True)
    (new / "sample.json").write_text(json.dumps({"sampling_mode": "Linear", "iters": [1.0, 2.0], "times": [5.0]}))
    with pytest.raises(ImportDataError, match="as many 'times' as 'iters'"):
        read_results(tmp_path / "target" / "criterion")
    empty = tmp_path / "empty"
    empty.mkdir()
    db = tmp_path / "q.db"
    assert main(["history", "import", str(empty), "--revision", "r1", "--store", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "is a directory, not a result file" in err and "new/sample.json" in err
