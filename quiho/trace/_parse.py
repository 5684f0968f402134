"""Parsers of raw trace output into :class:`~quiho.trace.Events`.

Two formats:

* **quiho event lines**, written by the generated bpftrace and SystemTap scripts, one event per line::

      KIND TID TIMESTAMP_NS FUNC_ID ARG      (KIND 0 = entry, 1 = exit; all unsigned decimal integers)

  ``FUNC_ID`` indexes the function list the script was generated for. A compiled (numba) single pass over
  the bytes parses them and skips and counts bad lines (about 10x less CPU than pyarrow's CSV reader with a
  line-by-line fallback, which it replaced; same events and counts, ``tests/trace/test_parse_equivalence.py``).
* **SystemTap ``thread_indent`` records** (Perun's 2018-2019 script; sample
  ``tst_stap_record.txt``): ``TYPE MICROSECONDS EXEC(PID):<indent>NAME``, type 0 entry, 1 exit (name empty),
  2/3/4 USDT markers (counted as skipped), plus ``begin``/``end`` lines. Microseconds become nanoseconds.

Partial damage (truncated last line, garbage lines, interleaved tool messages) is counted in ``bad_lines``;
only input with lines but no parseable record at all raises :class:`~quiho.errors.TraceParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numba import njit

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


def _fast(data: bytes, nfunc: int) -> Events:
    """Events of quiho event lines (rules in :func:`_parse_kernel`), function names left empty."""
    buf = np.frombuffer(data, dtype=np.uint8)
    k, tid, ts, fid, arg, n, bad = _parse_kernel(buf, nfunc)
    if n < k.size // 2:  # many bad lines: do not keep the over-allocated buffers alive
        k, tid, ts, fid, arg = (a[:n].copy() for a in (k, tid, ts, fid, arg))
    else:
        k, tid, ts, fid, arg = (a[:n] for a in (k, tid, ts, fid, arg))
    return Events(k, tid, ts, fid, arg, (), int(bad))


@njit(cache=True, nogil=True)
def _parse_kernel(buf: np.ndarray, nfunc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray, int, int]:
    """Parse event lines: LF, CR or CR LF end a line; space, tab, VT and FF separate fields.

    Long because it is one compiled pass over the bytes: helpers numba cannot inline would cost a call per byte.

    A non-blank line is an event if it has exactly five fields of ASCII digits, each < 2^64, kind ≤ 1,
    function id < ``nfunc`` and thread id and timestamp < 2^63 (the argument saturates at 2^63 - 1); every
    other non-blank line counts as bad. (Python's ``bytes.splitlines``, ``bytes.split`` and ``isdigit``
    rules, as the line-by-line parser this replaced applied them.)
    """
    size = buf.size
    lines = 1
    for i in range(size):
        if buf[i] == 10 or buf[i] == 13:
            lines += 1
    k = np.empty(lines, np.int8)
    tid = np.empty(lines, np.int64)
    ts = np.empty(lines, np.int64)
    fid = np.empty(lines, np.int32)
    arg = np.empty(lines, np.int64)
    vals = np.zeros(5, np.uint64)
    ten = np.uint64(10)
    top = np.uint64(0xFFFFFFFFFFFFFFFF)
    int63 = np.uint64(0x7FFFFFFFFFFFFFFF)
    n = 0
    bad = 0
    i = 0
    while i < size:
        j = i
        while j < size and buf[j] != 10 and buf[j] != 13:
            j += 1
        nf = 0
        ok = True
        blank = True
        p = i
        while p < j:
            c = buf[p]
            if c == 32 or c == 9 or c == 11 or c == 12:
                p += 1
                continue
            blank = False
            if nf == 5:
                ok = False
                break
            v = np.uint64(0)
            while p < j:
                c = buf[p]
                if c == 32 or c == 9 or c == 11 or c == 12:
                    break
                if c < 48 or c > 57:
                    ok = False
                    break
                d = np.uint64(c - 48)
                if v > (top - d) // ten:
                    ok = False
                    break
                v = v * ten + d
                p += 1
            if not ok:
                break
            vals[nf] = v
            nf += 1
        if not blank:
            if (ok and nf == 5 and vals[0] <= 1 and vals[3] < np.uint64(nfunc) and vals[1] <= int63
                    and vals[2] <= int63):
                k[n] = np.int8(vals[0])
                tid[n] = np.int64(vals[1])
                ts[n] = np.int64(vals[2])
                fid[n] = np.int32(vals[3])
                arg[n] = np.int64(min(vals[4], int63))
                n += 1
            else:
                bad += 1
        i = j + 1
    return k, tid, ts, fid, arg, n, bad


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
    ev = _fast(data, len(functions))
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
