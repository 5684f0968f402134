"""Parsers of raw trace output into :class:`~quiho.trace.Events`.

Two formats:

* **quiho event lines**, written by the generated bpftrace and SystemTap scripts, one event per line::

      KIND TID TIMESTAMP_NS FUNC_ID ARG      (KIND 0 = entry, 1 = exit; all unsigned decimal integers)

  ``FUNC_ID`` indexes the function list the script was generated for. Fast path: pyarrow's multithreaded CSV
  reader; on any malformed value it falls back to a line-by-line parser that skips and counts bad lines.
* **SystemTap ``thread_indent`` records** (Perun's 2018-2019 script; sample
  ``tst_stap_record.txt``): ``TYPE MICROSECONDS EXEC(PID):<indent>NAME``, type 0 entry, 1 exit (name empty),
  2/3/4 USDT markers (counted as skipped), plus ``begin``/``end`` lines. Microseconds become nanoseconds.

Partial damage (truncated last line, garbage lines, interleaved tool messages) is counted in ``bad_lines``;
only input with lines but no parseable record at all raises :class:`~quiho.errors.TraceParseError`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from quiho.errors import TraceParseError
from quiho.trace._events import Events

__all__ = ["parse_events", "parse_stap_record"]

_INT63 = (1 << 63) - 1


def _read(source: str | bytes | Path) -> bytes:
    if isinstance(source, Path):
        try:
            return source.read_bytes()
        except OSError as exc:
            raise TraceParseError(f"cannot read trace {source}: {exc.strerror}") from exc
    return source.encode() if isinstance(source, str) else source


def _fast(data: bytes, nfunc: int) -> Events | None:
    if not data.isascii():  # Arrow would hand the bad-row handler undecodable text (an unraisable error)
        return None
    bad = 0

    def skip(_row: object) -> str:
        nonlocal bad
        bad += 1
        return "skip"

    names = ["k", "tid", "ts", "fid", "arg"]
    try:
        tbl = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(delimiter=" ", invalid_row_handler=skip),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.uint64() for c in names}),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if tbl.num_rows == 0:
        return _build([np.zeros(0, np.uint64)] * 5, nfunc=nfunc, bad=bad)
    if any(tbl.column(c).null_count for c in names):
        return None
    cols = []
    for c in names:  # column by column, dropping the Arrow copy as we go (peak memory on 10 M lines)
        cols.append(tbl.column(c).to_numpy(zero_copy_only=False))
        tbl = tbl.drop_columns([c])
    del tbl
    pa.default_memory_pool().release_unused()  # give the reader's buffers back before the calls are built
    return _build(cols, nfunc=nfunc, bad=bad)


def _build(cols: Sequence[np.ndarray], nfunc: int, bad: int) -> Events:
    k, tid, ts, fid, arg = cols
    good = (k <= 1) & (fid < nfunc) & (ts <= _INT63) & (tid <= _INT63)
    nbad = int((~good).sum())
    if nbad:
        k, tid, ts, fid, arg = k[good], tid[good], ts[good], fid[good], arg[good]
    if arg.size and int(arg.max()) > _INT63:
        arg = np.minimum(arg, _INT63)
    # uint64 values ≤ 2^63 - 1 reinterpret as int64 without a copy
    return Events(
        k.astype(np.int8), tid.view(np.int64), ts.view(np.int64), fid.astype(np.int32),
        arg.astype(np.uint64, copy=False).view(np.int64), (), bad + nbad,
    )


def _slow(data: bytes, nfunc: int) -> Events:
    rows: list[list[int]] = []
    bad = 0
    for raw in data.splitlines():
        parts = raw.split()
        if len(parts) != 5 or not all(p.isdigit() for p in parts):
            bad += 1 if raw.strip() else 0
            continue
        vals = [int(p) for p in parts]
        if max(vals) >= 1 << 64:
            bad += 1
            continue
        rows.append(vals)
    a = np.array(rows, dtype=np.uint64).reshape(-1, 5)
    return _build([a[:, j] for j in range(5)], nfunc=nfunc, bad=bad)


def parse_events(source: str | bytes | Path, functions: Sequence[str]) -> Events:
    """Parse quiho event lines (see module docstring).

    Parameters
    ----------
    source : str, bytes or Path
        The raw text, or a path to it.
    functions : sequence of str
        The function names, indexed by ``FUNC_ID``.

    Returns
    -------
    Events
        Bad lines (wrong field count, non-numbers, kind not 0/1, unknown function id, values ≥ 2^63) are
        skipped and counted in ``bad_lines``.

    Raises
    ------
    TraceParseError
        The input cannot be read, or it has non-blank lines and none of them is an event.
    """
    data = _read(source)
    # event lines are ASCII; pyarrow cannot hand a non-UTF-8 bad row to its row handler (the handler's
    # exception is printed and the read fails), so such input goes to the line parser directly
    ev = _fast(data, len(functions)) if data.isascii() else None
    if ev is None:
        ev = _slow(data, len(functions))
    ev = Events(ev.kind, ev.tid, ev.ts, ev.func, ev.arg, tuple(functions), ev.bad_lines)
    if len(ev) == 0 and ev.bad_lines > 0:
        first = next((ln for ln in data.decode(errors="replace").splitlines() if ln.strip()), "")
        raise TraceParseError(
            f"no trace events found in {ev.bad_lines} line(s); expected 'KIND TID TS_NS FUNC_ID ARG', "
            f"first line was: {first[:80]!r}"
        )
    return ev


_STAP = re.compile(r"^\s*(\d+)\s+(\d+)\s+(.*?)\((\d+)\):(\s*)(\S*)\s*$")


def parse_stap_record(source: str | bytes | Path) -> Events:
    """Parse SystemTap ``thread_indent`` output as written by Perun's 2018-2019 script.

    Entries name the function; exits carry only the indentation, so they match whatever entry is open at
    their level (function id -1). Timestamps are microseconds in the file and nanoseconds in the result.
    The thread id is the pid shown in ``EXEC(PID)``.

    Raises
    ------
    TraceParseError
        The input cannot be read, or it has non-blank lines and none of them is a record.
    """
    data = _read(source).decode(errors="replace")
    kinds: list[int] = []
    tids: list[int] = []
    tss: list[int] = []
    funcs: list[int] = []
    names: dict[str, int] = {}
    bad = skipped = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        m = _STAP.match(line)
        if m is None:
            if line.split()[0] in ("begin", "end"):
                skipped += 1
            else:
                bad += 1
            continue
        typ, us, _exe, pid, _indent, name = m.groups()
        t = int(typ)
        if t in (2, 3, 4):
            skipped += 1
            continue
        if t not in (0, 1) or (t == 0 and not name):
            bad += 1
            continue
        kinds.append(t)
        tids.append(int(pid))
        tss.append(int(us) * 1000)
        funcs.append(names.setdefault(name, len(names)) if t == 0 else -1)
    if not kinds and bad:
        raise TraceParseError(f"no SystemTap records found ({bad} unparseable line(s))")
    return Events(
        np.array(kinds, np.int8), np.array(tids, np.int64), np.array(tss, np.int64), np.array(funcs, np.int32),
        np.zeros(len(kinds), np.int64), tuple(names), bad, skipped,
    )
