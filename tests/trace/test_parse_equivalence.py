"""The compiled event-line parser gives what the line-by-line parser it replaced gave, on any bytes, and what
pyarrow's CSV reader (the earlier fast path) gave on well-formed traces."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from hypothesis import given, settings
from hypothesis import strategies as st

from quiho.trace import parse_events

NAMES = ("a", "b", "c")
_INT63 = (1 << 63) - 1


def reference_parse(data: bytes, nfunc: int) -> tuple[list[tuple[int, ...]], int]:
    """The earlier ``_slow`` + ``_build``: events as tuples and the number of bad lines."""
    rows, bad = [], 0
    for raw in data.splitlines():
        parts = raw.split()
        if len(parts) != 5 or not all(p.isdigit() for p in parts):
            bad += 1 if raw.strip() else 0
            continue
        v = [int(p) for p in parts]
        if max(v) >= 1 << 64 or v[0] > 1 or v[3] >= nfunc or v[1] > _INT63 or v[2] > _INT63:
            bad += 1
            continue
        rows.append((v[0], v[1], v[2], v[3], min(v[4], _INT63)))
    return rows, bad


def _events(data: bytes) -> tuple[list[tuple[int, ...]], int]:
    ev = parse_events(data, NAMES)
    rows = list(zip(ev.kind.tolist(), ev.tid.tolist(), ev.ts.tolist(), ev.func.tolist(), ev.arg.tolist(),
                    strict=True))
    assert ev.kind.dtype == np.int8 and ev.func.dtype == np.int32 and ev.ts.dtype == ev.arg.dtype == np.int64
    return rows, ev.bad_lines


_field = st.one_of(st.integers(0, 3).map(str), st.integers(0, 2**65).map(str), st.sampled_from(
    ["", "x", "-1", "+2", "1.5", "00", "0" * 30 + "7", "١", str(2**64 - 1), str(2**64), str(2**63), str(2**63 - 1)]))
_line = st.one_of(
    st.lists(_field, min_size=0, max_size=7).flatmap(
        lambda fs: st.lists(st.sampled_from([" ", "  ", "\t", "\x0b", "\x0c"]), min_size=len(fs), max_size=len(fs))
        .map(lambda seps: "".join(s + f for s, f in zip(seps, fs, strict=True)))),
    st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_line, max_size=12), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_any_bytes_parse_as_the_line_parser_did(lines, eol, final_eol):
    data = (eol.join(lines) + (eol if final_eol else "")).encode("utf-8")
    ref, ref_bad = reference_parse(data, len(NAMES))
    if not ref and ref_bad:
        return  # "no events" raises TraceParseError: tests/trace/test_events_parse.py
    assert _events(data) == (ref, ref_bad)


def _pyarrow(data: bytes) -> list[tuple[int, ...]]:
    names = ["k", "tid", "ts", "fid", "arg"]
    tbl = pacsv.read_csv(io.BytesIO(data), read_options=pacsv.ReadOptions(column_names=names),
                         parse_options=pacsv.ParseOptions(delimiter=" "),
                         convert_options=pacsv.ConvertOptions(column_types={c: pa.uint64() for c in names}))
    return list(zip(*(tbl.column(c).to_pylist() for c in names), strict=True))


def test_well_formed_traces_parse_as_pyarrow_read_them():
    rng = np.random.default_rng(0)
    n = 20_000
    cols = [rng.integers(0, 2, n), rng.integers(1, 1 << 22, n), np.cumsum(rng.integers(0, 1 << 40, n)),
            rng.integers(0, 3, n), rng.integers(0, 1 << 62, n)]
    data = "".join(f"{a} {b} {c} {d} {e}\n" for a, b, c, d, e in zip(*cols, strict=True)).encode()
    rows, bad = _events(data)
    assert bad == 0 and rows == _pyarrow(data)
