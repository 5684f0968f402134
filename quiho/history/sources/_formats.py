"""Result files of common benchmark harnesses, read into histories.

Each reader turns one result file (one run of one revision) into
:class:`Measurement` s: benchmark name, machine/configuration, repetitions,
unit and direction. Formats are recognised by content
(:func:`detect_format`), never by file name:

================  ==========================================================
pytest-benchmark  ``pytest --benchmark-json=FILE``
google-benchmark  ``BENCH --benchmark_format=json`` (or ``--benchmark_out``)
hyperfine         ``hyperfine --export-json FILE ...``
asv               a result file under ``.asv/results/MACHINE/``
go                the text of ``go test -bench ...``
jmh               ``java -jar benchmarks.jar -rf json``
pyperf            ``python -m pyperf timeit -o FILE``, a ``pyperf.Runner``
                  script's ``-o FILE``, ``pyperformance run -o FILE``
custom            github-action-benchmark / Bencher "custom" JSON:
                  ``[{"name", "unit", "value", "range"?, "extra"?}]``
criterion         Rust criterion's ``target/criterion/<id>/new/sample.json``
                  (or its ``estimates.json``), or the ``target/criterion``
                  directory: every benchmark under it
================  ==========================================================

Empty, null and NaN values are skipped and counted (``missing``), never an error. A gzip-compressed file
(pyperf's ``-o FILE.json.gz``) is read as its content.

Each revision keeps the distribution the file carries: the rounds (pytest-benchmark's ``stats.data`` with
``--benchmark-save-data``, asv's samples, Google Benchmark's repetitions, hyperfine's runs, JMH's and pyperf's
values, criterion's samples), else the summary the harness wrote (:class:`~quiho.history.Summary`: pytest-benchmark's
min, quartiles, median, max, mean and rounds; asv's median and quartiles; Google Benchmark's mean and median
aggregates; hyperfine's min, median, max, mean; criterion's mean and median estimates), whose centre is then the one
repetition. A benchmark whose entry holds
neither is refused: there is nothing to compare.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quiho.errors import HistoryError, ImportDataError
from quiho.history._model import SUMMARY_STATS, Summary

__all__ = ["FORMATS", "Measurement", "ResultFile", "ResultImport", "detect_format", "read_results",
           "import_results", "direction_of_unit", "git_revision"]


@dataclass(frozen=True)
class Measurement:
    """The repetitions of one benchmark (in one configuration) in one result file.

    ``direction`` is ``"lower"`` (times: smaller is better) or ``"higher"``
    (throughputs); ``values`` holds the finite repetitions, in file order. ``summary`` is what the harness
    reported of rounds it did not save (``values`` is then its centre alone), None when the rounds are here.
    """

    benchmark: str
    values: tuple[float, ...]
    unit: str
    direction: str
    config: Mapping[str, str] = field(default_factory=dict)
    summary: Summary | None = None


@dataclass(frozen=True)
class ResultFile:
    """What one result file holds: its format, revision (if the file names one) and measurements."""

    path: str
    format: str
    revision: str | None
    measurements: tuple[Measurement, ...]
    missing: int = 0


# a rate: "<something>/<time>" (ops/s, MB/s, items/ms) or "..._per_second"; "ms/op" is a time
_HIGHER = re.compile(r"/\s*(s|sec|second|ms|us|µs|ns|min)$|per[_ ]second$|^(ops|hz|khz|mhz|ghz)$", re.IGNORECASE)


def direction_of_unit(unit: str) -> str:
    """``"higher"`` for rates (``ops/s``, ``MB/s``, ``items_per_second``), else ``"lower"``.

    Examples
    --------
    >>> direction_of_unit("ops/s"), direction_of_unit("ns"), direction_of_unit("ms/op")
    ('higher', 'lower', 'lower')
    """
    u = unit.strip()
    if u.lower().endswith("/op"):
        return "lower"
    return "higher" if _HIGHER.search(u) else "lower"


class _Values:
    """Collects finite values and counts the missing ones (None, '', NaN) of one file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.missing = 0

    def take(self, raw: Any, where: str) -> list[float]:
        items = raw if isinstance(raw, list) else [raw]
        out = []
        for v in items:
            if v is None or (isinstance(v, str) and not v.strip()):
                self.missing += 1
                continue
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise ImportDataError(f"{self.path}: {where}: value {v!r} is not a number")
            try:
                if isinstance(v, str) and "_" in v:  # float() reads '1_000' as 1000: refuse, do not guess
                    raise ValueError(v)
                x = float(v)
            except (ValueError, OverflowError):
                raise ImportDataError(f"{self.path}: {where}: value {v!r} is not a number") from None
            if math.isnan(x):
                self.missing += 1
                continue
            if not math.isfinite(x):
                raise ImportDataError(f"{self.path}: {where}: value {v!r} is not finite")
            out.append(x)
        return out


def _need(doc: Any, key: str, kind: type, path: str, where: str) -> Any:
    v = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(v, kind):
        raise ImportDataError(f"{path}: {where}: {key!r} is missing or not a {kind.__name__}")
    return v


def _summary(doc: Mapping[str, Any], keys: Mapping[str, str], rounds: Any, path: str, where: str) -> Summary | None:
    """The :class:`Summary` of the statistics ``keys`` (ours -> the file's) that ``doc`` reports, None if none.

    A null or NaN statistic is not reported; one that is not a number is an error, as for any value.
    """
    scratch = _Values(path)  # a statistic left null is not a skipped repetition: not counted as missing
    got = {k: v[0] for k, f in keys.items() if f in doc and (v := scratch.take(doc[f], f"{where}.{f}"))}
    if not got:
        return None
    n = rounds if isinstance(rounds, int) and not isinstance(rounds, bool) and rounds > 0 else 0
    try:
        return Summary(**got, rounds=n)
    except HistoryError as exc:
        raise ImportDataError(f"{path}: {where}: {exc}") from None


def _summarised(name: str, summ: Summary | None, unit: str, direction: str, config: Mapping[str, str],
                vals: _Values) -> Measurement:
    """A measurement known by its summary: its centre is the one value (none, counted missing, without one)."""
    centre = summ.centre if summ is not None else math.nan
    if math.isnan(centre):
        vals.missing += 1
        return Measurement(name, (), unit, direction, config)
    return Measurement(name, (centre,), unit, direction, config, summ)


def _pytest_benchmark(doc: Any, path: str, vals: _Values) -> ResultFile:
    machine = str((doc.get("machine_info") or {}).get("node", ""))
    commit = doc.get("commit_info") or {}
    out = []
    for i, b in enumerate(_need(doc, "benchmarks", list, path, "top level")):
        where = f"benchmarks[{i}]"
        name = str(_need(b, "fullname", str, path, where) if "fullname" in b else _need(b, "name", str, path, where))
        st = _need(b, "stats", dict, path, where)
        cfg = {"machine": machine} if machine else {}
        if isinstance(st.get("data"), list):  # --benchmark-save-data: one time per round (seconds per iteration)
            out.append(Measurement(name, tuple(vals.take(st["data"], where)), "s", "lower", cfg))
            continue
        if not any(k in st for k in ("min", "median", "mean")):
            raise ImportDataError(f"{path}: {where} ({name}): stats hold no distribution: neither 'data' "
                                  "(--benchmark-save-data) nor min/median/mean")
        summ = _summary(st, {k: k for k in SUMMARY_STATS}, st.get("rounds"), path, f"{where}.stats")
        out.append(_summarised(name, summ, "s", "lower", cfg, vals))
    rev = commit.get("id") if isinstance(commit, dict) else None
    return ResultFile(path, "pytest-benchmark", str(rev) if rev else None, tuple(out))


def _google_benchmark(doc: Any, path: str, vals: _Values) -> ResultFile:
    host = str((doc.get("context") or {}).get("host_name", ""))
    groups: dict[str, tuple[list[float], str]] = {}
    aggregates: dict[str, tuple[dict[str, Any], str, str]] = {}
    for i, b in enumerate(_need(doc, "benchmarks", list, path, "top level")):
        where = f"benchmarks[{i}]"
        name = str(b.get("run_name") or _need(b, "name", str, path, where))
        unit = str(b.get("time_unit", "ns"))
        if b.get("run_type", "iteration") != "iteration":  # mean/median/stddev rows summarise the repetitions
            if b.get("aggregate_name") in ("mean", "median"):
                aggregates.setdefault(name, ({}, unit, where))[0][str(b["aggregate_name"])] = b.get("real_time")
            continue
        got, u = groups.setdefault(name, ([], unit))
        if u != unit:
            raise ImportDataError(f"{path}: {where}: time_unit {unit!r} differs from {u!r} of earlier {name!r}")
        got.extend(vals.take(b.get("real_time"), where))
    cfg = {"machine": host} if host else {}
    out = [Measurement(n, tuple(v), u, "lower", cfg) for n, (v, u) in groups.items()]
    # --benchmark_report_aggregates_only: the repetitions are gone, their mean and median remain
    out += [_summarised(n, _summary(a, {"mean": "mean", "median": "median"}, None, path, where), u, "lower", cfg,
                        vals) for n, (a, u, where) in aggregates.items() if n not in groups]
    return ResultFile(path, "google-benchmark", None, tuple(out))


def _hyperfine(doc: Any, path: str, vals: _Values) -> ResultFile:
    out = []
    for i, r in enumerate(_need(doc, "results", list, path, "top level")):
        where = f"results[{i}]"
        name = str(_need(r, "command", str, path, where))
        params = r.get("parameters") or {}
        cfg = {str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {}
        if isinstance(r.get("times"), list):
            out.append(Measurement(name, tuple(vals.take(r["times"], where)), "s", "lower", cfg))
        else:  # an export without its runs: the summary it has
            keys = {"min": "min", "median": "median", "max": "max", "mean": "mean"}
            out.append(_summarised(name, _summary(r, keys, None, path, where), "s", "lower", cfg, vals))
    return ResultFile(path, "hyperfine", None, tuple(out))


_ASV_UNITS = {"time_": "seconds", "timeraw_": "seconds", "mem_": "bytes", "peakmem_": "bytes", "track_": ""}


def _asv_units(path: Path) -> dict[str, str]:
    bench = path.parent.parent / "benchmarks.json"  # results/MACHINE/FILE.json next to results/benchmarks.json
    try:
        doc = json.loads(bench.read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(v.get("unit", "")) for k, v in doc.items() if isinstance(v, dict)}


def _asv(doc: Any, path: str, vals: _Values) -> ResultFile:
    if doc.get("version") != 2:
        raise ImportDataError(f"{path}: asv result file version {doc.get('version')!r}; this reader knows "
                              "version 2 (asv >= 0.5): run 'asv update' on the results")
    cols = _need(doc, "result_columns", list, path, "top level")
    units = _asv_units(Path(path))
    params = doc.get("params") or {}
    config = {"machine": str(params.get("machine", "")), "env": str(doc.get("env_name", ""))}
    out = []
    for name, row in _need(doc, "results", dict, path, "top level").items():
        rec = dict(zip(cols, row, strict=False))
        result = rec.get("result")
        combos = [", ".join(map(str, c)) for c in itertools.product(*(rec.get("params") or []))] or [""]
        result = result if isinstance(result, list) else [result] * len(combos)
        samples = rec.get("samples")
        stats = {k: rec.get(f"stats_{k}") for k in ("q_25", "q_75", "repeat")}
        unit = units.get(name) or next((u for p, u in _ASV_UNITS.items()
                                        if name.rsplit(".", 1)[-1].startswith(p)), "")
        unit = "s" if unit == "seconds" else unit
        for j, combo in enumerate(combos):
            where = f"results[{name!r}][{j}]"
            label = f"{name}({combo})" if combo else name
            if isinstance(samples, list) and j < len(samples) and samples[j]:
                out.append(Measurement(label, tuple(vals.take(samples[j], where)), unit, direction_of_unit(unit),
                                       config))
                continue
            # without --record-samples: the result is the samples' median, with their quartiles beside it
            row = {"median": result[j] if j < len(result) else None,
                   **{k: v[j] for k, v in stats.items() if isinstance(v, list) and j < len(v)}}
            summ = _summary(row, {"median": "median", "q1": "q_25", "q3": "q_75"}, row.get("repeat"), path, where)
            if summ is not None and (np.isnan(summ.q1) and np.isnan(summ.q3)):
                summ = None  # a bare result (a track_ or mem_ value) is one value, not a summary
            m = _summarised(label, summ, unit, direction_of_unit(unit), config, vals) if summ is not None else \
                Measurement(label, tuple(vals.take(row["median"], where)), unit, direction_of_unit(unit), config)
            out.append(m)
    rev = doc.get("commit_hash")
    return ResultFile(path, "asv", str(rev) if rev else None, tuple(out))


def _jmh(doc: Any, path: str, vals: _Values) -> ResultFile:
    out = []
    for i, b in enumerate(doc):
        where = f"[{i}]"
        name = str(_need(b, "benchmark", str, path, where))
        if b.get("params"):
            name += "(" + ", ".join(f"{k}={v}" for k, v in sorted(b["params"].items())) + ")"
        pm = _need(b, "primaryMetric", dict, path, where)
        unit = str(pm.get("scoreUnit", ""))
        raw = pm.get("rawData")
        flat = [x for fork in raw for x in fork] if isinstance(raw, list) and all(isinstance(f, list) for f in raw) \
            else pm.get("score")
        direction = "higher" if b.get("mode") == "thrpt" else "lower"
        out.append(Measurement(name, tuple(vals.take(flat, where)), unit, direction,
                               {"mode": str(b.get("mode", ""))}))
    return ResultFile(path, "jmh", None, tuple(out))


def _custom(doc: Any, path: str, vals: _Values) -> ResultFile:
    out = []
    for i, b in enumerate(doc):
        where = f"[{i}]"
        name = str(_need(b, "name", str, path, where))
        unit = str(b.get("unit", ""))
        out.append(Measurement(name, tuple(vals.take(b.get("value"), where)), unit, direction_of_unit(unit)))
    return ResultFile(path, "custom", None, tuple(out))


#: pyperf's units (``metadata.unit``) in this reader's spelling; pyperf ranks every unit smaller-is-better
_PYPERF_UNITS = {"second": "s", "byte": "B", "integer": ""}


def _pyperf(doc: Any, path: str, vals: _Values) -> ResultFile:
    common = doc.get("metadata") or {}
    out = []
    for i, b in enumerate(_need(doc, "benchmarks", list, path, "top level")):
        where = f"benchmarks[{i}]"
        meta = {**common, **(b.get("metadata") or {})}  # a benchmark's metadata overrides the file's
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ImportDataError(f"{path}: {where}: metadata 'name' is missing or not a str")
        unit = str(meta.get("unit", "second"))
        values: list[float] = []
        for j, run in enumerate(_need(b, "runs", list, path, where)):
            if "values" in run:  # a calibration run has warm-ups only
                values.extend(vals.take(run["values"], f"{where}.runs[{j}]"))
        host = str(meta.get("hostname", ""))
        out.append(Measurement(name, tuple(values), _PYPERF_UNITS.get(unit, unit), "lower",
                               {"machine": host} if host else {}))
    rev = common.get("commit_id")
    return ResultFile(path, "pyperf", str(rev) if rev else None, tuple(out))


def _criterion_name(new: Path) -> str:
    """A criterion benchmark's id: ``full_id`` of ``new/benchmark.json``, else its directory under ``criterion/``."""
    try:
        meta = json.loads((new / "benchmark.json").read_text())
        if isinstance(meta, dict) and isinstance(meta.get("full_id"), str) and meta["full_id"]:
            return str(meta["full_id"])
    except (OSError, ValueError):
        pass
    parts = new.resolve().parts[:-1]  # without "new" (or a baseline's name)
    at = max((i for i, x in enumerate(parts) if x == "criterion"), default=len(parts) - 2)
    return "/".join(parts[at + 1:]) or new.resolve().parent.name


def _criterion_sample(doc: Any, path: str, vals: _Values, where: str) -> list[float]:
    """Nanoseconds per iteration of each sample: ``times[i] / iters[i]`` (a sample's time is for all its iterations)."""
    iters = vals.take(_need(doc, "iters", list, path, where), f"{where}.iters")
    times = vals.take(_need(doc, "times", list, path, where), f"{where}.times")
    if len(iters) != len(times) or any(n <= 0 for n in iters):
        raise ImportDataError(f"{path}: {where}: criterion sample needs as many 'times' as 'iters' "
                              f"({len(times)} and {len(iters)}) and positive iteration counts")
    out = [t / n for t, n in zip(times, iters, strict=True)]
    if not all(math.isfinite(x) for x in out):
        raise ImportDataError(f"{path}: {where}: a criterion sample's time per iteration is not finite")
    return out


def _criterion(doc: Any, path: str, vals: _Values) -> ResultFile:
    """One criterion benchmark: its samples (``sample.json``), else its mean and median (``estimates.json``).

    Given ``estimates.json``, the ``sample.json`` beside it is read when it is there: the samples are the
    distribution, the estimates only a summary of it. Criterion's default measurement is wall time in ns.
    """
    new = Path(path).parent
    name = _criterion_name(new)
    if "iters" in doc:
        return ResultFile(path, "criterion", None, (Measurement(name, tuple(_criterion_sample(doc, path, vals,
                                                                                              "top level")),
                                                                "ns", "lower"),))
    sample = new / "sample.json"
    if sample.is_file():
        other = _load_json(sample.read_text(), str(sample))
        if _json_kind(other) == "criterion" and "iters" in other:
            return _criterion(other, str(sample), vals)
    stats = {k: (_need(doc, k, dict, path, "top level").get("point_estimate")) for k in ("mean", "median")}
    summ = _summary(stats, {"mean": "mean", "median": "median"}, None, path, "estimates")
    return ResultFile(path, "criterion", None, (_summarised(name, summ, "ns", "lower", {}, vals),))


def _criterion_dir(p: Path) -> ResultFile:
    """Every benchmark of a criterion output directory (``<id>/new/sample.json`` beneath it), by id."""
    files = sorted(f for f in p.rglob("new/sample.json") if "report" not in f.parts)
    if not files:
        raise ImportDataError(f"{p} is a directory, not a result file (a criterion directory holds "
                              "<benchmark>/new/sample.json)")
    vals = _Values(str(p))
    out: list[Measurement] = []
    for f in files:
        doc = _load_json(f.read_text(encoding="utf-8-sig"), str(f))
        if _json_kind(doc) != "criterion":
            raise ImportDataError(f"{f}: not a criterion sample file")
        out += _criterion(doc, str(f), vals).measurements
    return ResultFile(str(p), "criterion", None, tuple(out), vals.missing)


_GO_LINE = re.compile(r"^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)\s+(.*)$")


def _go(text: str, path: str, vals: _Values) -> ResultFile:
    meta: dict[str, str] = {}
    groups: dict[tuple[str, str], list[float]] = {}
    for ln in text.splitlines():
        m = re.match(r"^(goos|goarch|pkg|cpu):\s*(.*)$", ln)
        if m:
            meta[m.group(1)] = m.group(2).strip()
            continue
        m = _GO_LINE.match(ln.strip())
        if not m:
            continue
        fields = m.group(4).split()
        for k in range(0, len(fields) - 1, 2):
            key = (m.group(1), fields[k + 1])
            groups.setdefault(key, []).extend(vals.take(fields[k], f"{m.group(1)} {fields[k + 1]}"))
    config: dict[str, str] = {k: meta[k] for k in ("pkg", "cpu") if k in meta}
    out = [Measurement(name if unit == "ns/op" else f"{name} {unit}", tuple(v), unit, direction_of_unit(unit), config)
           for (name, unit), v in groups.items()]
    return ResultFile(path, "go", None, tuple(out))


def _is_go(text: str) -> bool:
    return any(_GO_LINE.match(ln.strip()) for ln in text.splitlines()[:5000])


def _json_kind(doc: Any) -> str | None:
    if isinstance(doc, dict):
        if isinstance(doc.get("benchmarks"), list) and "machine_info" in doc:
            return "pytest-benchmark"
        if isinstance(doc.get("benchmarks"), list) and "context" in doc:
            return "google-benchmark"
        if isinstance(doc.get("results"), list) and all(isinstance(r, dict) and "command" in r
                                                        for r in doc["results"]):
            return "hyperfine"
        if "result_columns" in doc or ("commit_hash" in doc and isinstance(doc.get("results"), dict)):
            return "asv"
        if isinstance(doc.get("benchmarks"), list) and "version" in doc and all(
                isinstance(b, dict) and isinstance(b.get("runs"), list) for b in doc["benchmarks"]):
            return "pyperf"
        if ("sampling_mode" in doc and isinstance(doc.get("iters"), list)) or (
                isinstance(doc.get("mean"), dict) and "point_estimate" in doc["mean"] and "median_abs_dev" in doc):
            return "criterion"
        return None
    if isinstance(doc, list) and doc and all(isinstance(b, dict) for b in doc):
        if all("primaryMetric" in b for b in doc):
            return "jmh"
        if all({"name", "value"} <= set(b) for b in doc):
            return "custom"
    return None


#: format name -> reader of a parsed JSON document (``go`` reads text)
FORMATS: dict[str, Callable[[Any, str, _Values], ResultFile]] = {
    "pytest-benchmark": _pytest_benchmark,
    "google-benchmark": _google_benchmark,
    "hyperfine": _hyperfine,
    "asv": _asv,
    "go": _go,
    "jmh": _jmh,
    "custom": _custom,
    "pyperf": _pyperf,
    "criterion": _criterion,
}


def _load_json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        what = "truncated" if exc.pos >= len(text.rstrip()) else "invalid"
        raise ImportDataError(f"{path} line {exc.lineno}: {what} JSON: {exc.msg}") from None
    except RecursionError:
        raise ImportDataError(f"{path}: JSON nested too deeply") from None


def detect_format(text: str, path: str = "<input>") -> str:
    """Name of the format of a result file's ``text``, by content.

    Raises
    ------
    ImportDataError
        JSON that does not parse (the line is named), or a file in none of the
        formats (the formats tried are named).
    """
    if text.lstrip().startswith(("{", "[")):
        kind = _json_kind(_load_json(text, path))
        if kind:
            return kind
    elif _is_go(text):
        return "go"
    raise ImportDataError(f"{path}: not a result file of a known format (tried: {', '.join(FORMATS)}, csv)")


#: Largest decompressed size of a gzip result file (a result file is kilobytes to megabytes).
MAX_UNZIPPED = 256 * 2 ** 20
#: The first bytes of a gzip stream: such a result file is read as its content.
GZIP_MAGIC = b"\x1f\x8b"


def _unzipped(data: bytes, p: Path) -> bytes:
    """``data``, decompressed if it is gzip; a bomb or a damaged stream is one line."""
    if not data.startswith(GZIP_MAGIC):
        return data
    import gzip
    import io
    import zlib

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_UNZIPPED + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ImportDataError(f"{p}: damaged gzip file ({exc})") from None
    if len(out) > MAX_UNZIPPED:
        raise ImportDataError(f"{p}: decompresses to more than {MAX_UNZIPPED // 2 ** 20} MiB; not a result file")
    return out


def read_results(path: str | Path, fmt: str = "auto") -> ResultFile:
    """Read one benchmark result file.

    Parameters
    ----------
    path : path-like
    fmt : str, default "auto"
        One of :data:`FORMATS`, or ``"auto"`` to recognise it by content.

    Returns
    -------
    ResultFile
        Measurements in file order; ``missing`` counts the skipped empty/null/NaN values.

    Raises
    ------
    ImportDataError
        Unreadable file, unknown format, invalid JSON (with the line), a field
        of the wrong type, or a non-finite value.

    Examples
    --------
    >>> import json, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "r.json")
    >>> _ = open(f, "w").write(json.dumps([{"name": "a", "unit": "ns", "value": 5}, {"name": "b", "value": None}]))
    >>> r = read_results(f)
    >>> r.format, r.measurements[0].values, r.missing
    ('custom', (5.0,), 1)
    """
    p = Path(path)
    if p.is_dir() and fmt in ("auto", "criterion"):
        return _criterion_dir(p)
    try:
        data = p.read_bytes()
        text = _unzipped(data, p).decode("utf-8-sig")
    except FileNotFoundError:
        raise ImportDataError(f"no such file: {p}") from None
    except IsADirectoryError:
        raise ImportDataError(f"{p} is a directory, not a result file") from None
    except PermissionError:
        raise ImportDataError(f"{p}: permission denied") from None
    except OSError as exc:
        raise ImportDataError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ImportDataError(f"{p}: not a text file (not UTF-8); formats: {', '.join(FORMATS)}") from None
    try:
        kind = detect_format(text, str(p)) if fmt == "auto" else fmt
    except ImportDataError:
        if data.startswith(GZIP_MAGIC):  # the CSV reader never saw it: say what a compressed file can be
            raise ImportDataError(f"{p}: a gzip-compressed file that is not a result file of a known format "
                                  f"({', '.join(FORMATS)}); a CSV is read uncompressed (gunzip it first)") from None
        raise
    if kind not in FORMATS:
        raise ImportDataError(f"unknown format {fmt!r}; choose auto, csv or one of {', '.join(FORMATS)}")
    vals = _Values(str(p))
    if kind == "go":
        res = _go(text, str(p), vals)
    else:
        doc = _load_json(text, str(p))
        if _json_kind(doc) != kind:
            raise ImportDataError(f"{p}: not a {kind} result file (it looks like {_json_kind(doc) or 'none of them'})")
        try:
            res = FORMATS[kind](doc, str(p), vals)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise ImportDataError(f"{p}: malformed {kind} file ({type(exc).__name__}: {exc})") from None
    if not res.measurements:
        raise ImportDataError(f"{p}: a {kind} file without any benchmark result")
    return ResultFile(res.path, res.format, res.revision, res.measurements, vals.missing)


def git_revision(where: str | Path) -> str | None:
    """``git rev-parse HEAD`` in ``where`` (a directory or a file's directory), or None outside a repository."""
    d = Path(where)
    d = d if d.is_dir() else d.parent
    try:
        r = subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30,
                           check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


@dataclass(frozen=True)
class ResultImport:
    """What :func:`import_results` stored: one revision of every series in a result file."""

    path: str
    format: str
    revision: str
    series: tuple[str, ...]
    units: tuple[str, ...]
    values: tuple[int, ...]
    missing: int

    def to_dict(self) -> dict[str, object]:
        """The JSON document of ``quiho history import FILE --json``."""
        return {"path": self.path, "format": self.format, "revision": self.revision,
                "series": [{"name": n, "unit": u, "direction": direction_of_unit(u), "values": v}
                           for n, u, v in zip(self.series, self.units, self.values, strict=True)],
                "skipped": {"missing": self.missing}}


def import_results(store: Any, path: str | Path, fmt: str = "auto", revision: str | None = None,
                   result: ResultFile | None = None, append: bool = False) -> ResultImport:
    """Read a result file and add its revision to one stored series per benchmark and configuration.

    A series is named ``benchmark[key=value,...]`` by the file's machine and
    configuration. The revision is ``revision`` if given, else the one the
    file names (pytest-benchmark, asv), else ``git rev-parse HEAD`` where the
    file lies; it is appended after the series' last revision (a revision
    already stored keeps its place and gets the new values; with ``append`` the
    values are added to its stored ones, as another run of it). Everything is
    validated before the store is written. ``result``, if given, is what
    :func:`read_results` already returned for ``path`` (the file is not read twice).

    Raises
    ------
    ImportDataError
        See :func:`read_results`.
    UsageError
        No revision can be found.
    HistoryError
        A stored series of the same name has another unit; with ``append``, the
        file or the stored revision has only a summary.
    """
    from quiho.errors import HistoryError, UsageError
    from quiho.history.sources._io import _series_name, local_facts_dict
    from quiho.store import history as sq

    rf = result if result is not None else read_results(path, fmt)
    rev = revision or rf.revision or git_revision(path)
    if not rev:
        raise UsageError(f"{path}: the {rf.format} file names no revision and does not lie in a git checkout; "
                         "give --revision")
    kept = [(_series_name(m.benchmark, m.config), m) for m in rf.measurements if m.values]
    for name, m in kept:
        sid = sq.series_id(store, name)
        if sid is not None and (unit := sq.series_meta(store, sid)[0]) != m.unit:
            raise HistoryError(f"series {name!r} is stored in {unit!r}, the file gives {m.unit!r}")
        if append and (m.summary is not None or (sid is not None and sq.summary_only(store, sid, rev))):
            raise HistoryError(f"series {name!r}, revision {rev}: --append adds rounds to rounds, but "
                               f"{'the file' if m.summary is not None else 'the stored revision'} has only the "
                               "harness's summary (save the rounds, e.g. pytest-benchmark --benchmark-save-data)")
    facts = local_facts_dict()
    for name, m in kept:
        sid = sq.ensure_series(store, name, f"{rf.format}:{Path(path).name}", m.unit, m.config)
        sq.append_revision(store, sid, rev)
        sq.record_measurement(store, sid, rev, m.values, facts, None if m.summary is None else m.summary.to_dict(),
                              append)
    return ResultImport(str(path), rf.format, rev, tuple(n for n, _ in kept), tuple(m.unit for _, m in kept),
                        tuple(len(m.values) for _, m in kept), rf.missing)
