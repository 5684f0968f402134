"""Function entry/exit events → a calls table with inclusive and exclusive durations.

Matching rule. Within one thread every entry raises the call depth by one and every exit lowers it, so an
entry that starts at level ``L`` (depth before it) is closed by the next exit that returns to level ``L``.
Grouping the events by (thread, level) therefore makes them strictly alternate entry, exit, entry, exit...
and an entry pairs with the next event of its group if that is an exit:

* a group that starts with an exit: that exit has no entry (the trace started inside the call) →
  ``unmatched_exits``;
* a group that ends with an entry: the call never returned before the trace ended (truncated trace, or the
  program exited inside it) → ``unmatched_entries``;
* a pair whose function ids differ means probes were lost (a lost exit shifts its thread's levels by one);
  such pairs are dropped and counted as ``mismatched``. Exits with function id ``-1`` (formats that do not
  name the returning function, such as SystemTap's ``thread_indent`` output) match any entry.

Exclusive time is the inclusive time minus the inclusive time of the *traced* direct callees (the calls one
level deeper in the same thread whose entry follows the parent's entry most closely). Untraced callees stay in
the parent's exclusive time, as in Perun. All times are nanoseconds.

Implementation: events are grouped by thread (a counting sort for up to 64 threads, else a stable radix sort of
the thread ids; the same order either way), then two compiled
(numba) passes apply the rule with per-level state and write the table function by function. On 10 M events
this takes about a quarter of the CPU time and half the memory of the earlier numpy version (grouping by
sorts, pairing by shifts, parents by binary search); both give identical tables
(``tests/trace/test_events_equivalence.py`` checks them against each other and against a slow reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numba import njit
from numpy.typing import NDArray

__all__ = ["Events", "CallStats", "events_to_calls", "CALL_COLUMNS"]

#: Columns of the calls table, in order. Times are integer nanoseconds.
CALL_COLUMNS = ("function", "tid", "order", "start_ns", "inclusive_ns", "exclusive_ns", "depth", "arg")


@dataclass(frozen=True)
class Events:
    """Raw events in arrival order (parallel arrays) and the function-name table.

    Attributes
    ----------
    kind : ndarray of int8
        0 = entry, 1 = exit.
    tid : ndarray of int64
        Thread id.
    ts : ndarray of int64
        Timestamp in nanoseconds (any common origin).
    func : ndarray of int32
        Index into ``names``; -1 on an exit means "whatever function is open at this level".
    arg : ndarray of int64
        First argument at entry (0 when not captured).
    names : tuple of str
        Function names.
    bad_lines : int
        Lines the parser skipped as malformed.
    skipped_records : int
        Well-formed records that are not function events (USDT markers, process/thread records).
    """

    kind: NDArray[np.int8]
    tid: NDArray[np.int64]
    ts: NDArray[np.int64]
    func: NDArray[np.int32]
    arg: NDArray[np.int64]
    names: tuple[str, ...]
    bad_lines: int = 0
    skipped_records: int = 0

    def __len__(self) -> int:
        return int(self.kind.size)


@dataclass(frozen=True)
class CallStats:
    """What the events → calls conversion kept and what it could not match."""

    events: int
    calls: int
    unmatched_entries: int
    unmatched_exits: int
    mismatched: int
    bad_lines: int
    skipped_records: int

    def to_dict(self) -> dict[str, int]:
        """The counters by name, in field order."""
        return dict(self.__dict__)


def _empty_calls() -> pd.DataFrame:
    df = pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in CALL_COLUMNS})
    df["function"] = pd.Categorical([])
    return df


def _stable_argsort(a: NDArray[np.int64]) -> NDArray[np.intp]:
    """Stable argsort; small non-negative ranges go through uint16 (numpy then uses a radix sort)."""
    if a.size and int(a.min()) >= 0 and int(a.max()) < 1 << 16:
        return np.argsort(a.astype(np.uint16), kind="stable")
    if a.size and int(a.max()) - int(a.min()) < 1 << 16:
        return np.argsort((a - a.min()).astype(np.uint16), kind="stable")
    return np.argsort(a, kind="stable")


def events_to_calls(ev: Events) -> tuple[pd.DataFrame, CallStats]:
    """Pair entries with exits per thread and compute per-call durations.

    Parameters
    ----------
    ev : Events

    Returns
    -------
    calls : pandas.DataFrame
        Columns :data:`CALL_COLUMNS`, one row per completed call, sorted by function (in ``names`` order)
        then ``order``
        (the call's rank by start time among all calls of that function, from 0). ``depth`` is the nesting
        level among traced functions, 0 = the outermost entry seen in that thread (closed or not).
    stats : CallStats

    Examples
    --------
    >>> import numpy as np
    >>> ev = Events(np.array([0, 0, 1, 1], np.int8), np.zeros(4, np.int64), np.array([0, 10, 30, 100]),
    ...             np.array([0, 1, 1, 0], np.int32), np.zeros(4, np.int64), ("main", "f"))
    >>> calls, _ = events_to_calls(ev)
    >>> calls[["function", "inclusive_ns", "exclusive_ns"]].values.tolist()
    [['main', 100, 80], ['f', 20, 20]]
    """
    n = len(ev)
    if n == 0:
        return _empty_calls(), CallStats(0, 0, 0, 0, 0, ev.bad_lines, ev.skipped_records)
    tid, ts, func, arg, k = _in_thread_time_order(ev)
    ent, ext, excl, depth, mismatched = _match(tid, k, func, ts)
    n_ent = int(np.count_nonzero(k == 0))
    del k
    unmatched_entries = n_ent - ent.size - mismatched
    unmatched_exits = (n - n_ent) - ent.size - mismatched
    calls = _calls_frame(ev.names, ent, ext, excl, depth, tid, ts, func, arg)
    stats = CallStats(n, int(ent.size), unmatched_entries, unmatched_exits, mismatched, ev.bad_lines,
                      ev.skipped_records)
    return calls, stats


# The helpers below delete intermediates as soon as they are dead: 10 M events must stay well under 2 GB.
_Ints = NDArray[Any]  # integer arrays of several widths


def _in_thread_time_order(ev: Events) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints]:
    """(tid, ts, func, arg, kind) in time order within each thread; ties keep arrival order.

    Threads are grouped with a stable sort; if every thread is then in time order (the usual case) that is
    all, otherwise events are sorted by time within threads too.
    """
    n = len(ev)
    kind = np.ascontiguousarray(ev.kind, dtype=np.int8)
    cols = (np.ascontiguousarray(ev.tid, dtype=np.int64), np.ascontiguousarray(ev.ts, dtype=np.int64),
            np.ascontiguousarray(ev.func, dtype=np.int32), np.ascontiguousarray(ev.arg, dtype=np.int64), kind)
    tid, ts, func, arg, k, ordered = _by_thread(*cols, _FEW_THREADS)
    if n > 1 and not ordered:
        del tid, ts, func, arg, k
        o = np.lexsort((np.arange(n, dtype=np.int64), ev.ts, ev.tid))
        tid, ts, func, arg, k, _ = _gather(o, *cols)
    return tid, ts, func, arg, k


#: Up to this many distinct threads, events are grouped by a counting sort (one pass to count, one to place)
#: instead of a stable argsort and a gather: the same order, about half the time on 10 M events
_FEW_THREADS = 64


@njit(cache=True, nogil=True)
def _thread_slots(tid: _Ints, limit: int) -> tuple[_Ints, _Ints, int]:
    """Per event, the index of its thread among the distinct ids (first-seen order); the ids; their number.

    Stops early and returns a count above ``limit`` when there are more distinct threads.
    """
    n = tid.size
    slot = np.empty(n, np.uint8)
    ids = np.empty(limit + 1, np.int64)
    m = 0
    cur = -1
    for i in range(n):
        t = tid[i]
        if cur < 0 or ids[cur] != t:
            cur = -1
            for j in range(m):
                if ids[j] == t:
                    cur = j
                    break
            if cur < 0:
                if m == limit:
                    return slot, ids, limit + 1
                ids[m] = t
                cur = m
                m += 1
        slot[i] = cur
    return slot, ids, m


def _by_thread(tid: _Ints, ts: _Ints, func: _Ints, arg: _Ints, kind: _Ints,
               limit: int) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints, bool]:
    """:func:`_gather` of the stable thread order, by a counting sort when there are at most ``limit`` threads."""
    slot, ids, m = _thread_slots(tid, limit)
    if m > limit:
        return _gather(_stable_argsort(tid), tid, ts, func, arg, kind)
    rank = np.empty(m, np.int64)
    rank[np.argsort(ids[:m], kind="stable")] = np.arange(m)  # threads in ascending id order, as the sort gives
    return _place(slot, rank, tid, ts, func, arg, kind)


@njit(cache=True, nogil=True)
def _place(slot: _Ints, rank: _Ints, tid: _Ints, ts: _Ints, func: _Ints, arg: _Ints,
           kind: _Ints) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints, bool]:
    """Counting sort of the events by thread rank (stable), and whether each thread is then in time order."""
    n = tid.size
    m = rank.size
    start = np.zeros(m + 1, np.int64)
    for i in range(n):
        start[rank[slot[i]] + 1] += 1
    for r in range(m):
        start[r + 1] += start[r]
    last = np.empty(m, np.int64)
    seen = np.zeros(m, np.bool_)
    t2 = np.empty(n, np.int64)
    s2 = np.empty(n, np.int64)
    f2 = np.empty(n, np.int32)
    a2 = np.empty(n, np.int64)
    k2 = np.empty(n, np.int8)
    ordered = True
    for i in range(n):
        r = rank[slot[i]]
        d = start[r]
        start[r] = d + 1
        t2[d] = tid[i]
        s2[d] = ts[i]
        f2[d] = func[i]
        a2[d] = arg[i]
        k2[d] = kind[i]
        if seen[r] and ts[i] < last[r]:
            ordered = False
        seen[r] = True
        last[r] = ts[i]
    return t2, s2, f2, a2, k2, ordered


@njit(cache=True, nogil=True)
def _gather(o: _Ints, tid: _Ints, ts: _Ints, func: _Ints, arg: _Ints,
            kind: _Ints) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints, bool]:
    """The five event columns taken in order ``o`` (one pass), and whether each thread is then in time order."""
    n = o.size
    t2 = np.empty(n, np.int64)
    s2 = np.empty(n, np.int64)
    f2 = np.empty(n, np.int32)
    a2 = np.empty(n, np.int64)
    k2 = np.empty(n, np.int8)
    ordered = True
    for i in range(n):
        j = o[i]
        t2[i] = tid[j]
        s2[i] = ts[j]
        f2[i] = func[j]
        a2[i] = arg[j]
        k2[i] = kind[j]
        if i > 0 and t2[i] == t2[i - 1] and s2[i] < s2[i - 1]:
            ordered = False
    return t2, s2, f2, a2, k2, ordered


@njit(cache=True, nogil=True)
def _match_kernel(tid: _Ints, k: _Ints, func: _Ints, ts: _Ints) -> tuple[_Ints, _Ints, _Ints, _Ints, int]:
    """Apply the module docstring's matching rule in one pass over events in thread-time order.

    Long because it is one compiled pass: helpers numba cannot inline would cost a call per event.

    A first, cheap pass finds the range of levels. Per level, the last event and whether it is the current
    thread's: an exit whose level's last event is an entry closes it (kept if the function ids agree or the
    exit's is -1, else counted as mismatched).
    Between a call's entry and the next event at its level depth stays above that level, so the next event
    there is always an exit, no new entry one level up can come between (the parent is still the last entry one
    level up when the call closes) and all the call's traced direct callees close before it: each level keeps
    a running sum of its open entry's kept callees' inclusive time. Kept calls come out in (thread, level,
    entry position) order by a counting sort over each thread's levels (in a group, exits follow entries).
    It is one long function on purpose: numba compiles it into one loop with its state in registers and
    small per-level arrays, where helpers would pass a dozen arrays per event.
    """
    n = tid.size
    lo = 0
    hi = 0
    d = 0
    n_ent = 0
    for i in range(n):
        if i > 0 and tid[i] != tid[i - 1]:
            d = 0
        if k[i] == 0:
            lv = d
            d += 1
            n_ent += 1
        else:
            d -= 1
            lv = d
        lo = min(lo, lv)
        hi = max(hi, lv)
    span = hi - lo + 1
    cap = min(n_ent, n - n_ent)
    c_ent = np.empty(cap, np.int64)  # calls in the order they close
    c_ext = np.empty(cap, np.int64)
    c_excl = np.empty(cap, np.int64)
    c_lev = np.empty(cap, np.int64)
    ent = np.empty(cap, np.int64)  # the same, in (thread, level, entry) order
    ext = np.empty(cap, np.int64)
    excl = np.empty(cap, np.int64)
    depth = np.empty(cap, np.int32)
    last_ev = np.full(span, -1, np.int64)
    ev_thr = np.full(span, -1, np.int64)
    ent_thr = np.full(span, -1, np.int64)
    acc = np.zeros(span, np.int64)  # inclusive ns of the kept direct callees of the level's open entry
    count = np.zeros(span + 1, np.int64)
    kept = 0
    mismatched = 0
    t = -1
    seg = 0
    tmin = span
    for i in range(n + 1):
        if i == n or i == 0 or tid[i] != tid[i - 1]:
            if i > 0:
                _by_level(seg, kept, tmin, c_ent, c_ext, c_excl, c_lev, ent, ext, excl, depth, count)
            if i == n:
                break
            t += 1
            d = 0
            seg = kept
            tmin = span
        if k[i] == 0:
            L = d - lo
            d += 1
            tmin = min(tmin, L)
            ent_thr[L] = t
            acc[L] = 0
        else:
            d -= 1
            L = d - lo
            if ev_thr[L] == t:
                e = last_ev[L]
                if k[e] == 0:
                    if func[i] == -1 or func[i] == func[e]:
                        incl = ts[i] - ts[e]
                        c_ent[kept] = e
                        c_ext[kept] = i
                        c_excl[kept] = incl - acc[L]
                        c_lev[kept] = L
                        kept += 1
                        if L > 0 and ent_thr[L - 1] == t:
                            acc[L - 1] += incl
                    else:
                        mismatched += 1
        last_ev[L] = i
        ev_thr[L] = t
    return ent[:kept], ext[:kept], excl[:kept], depth[:kept], mismatched


@njit(cache=True, nogil=True)
def _by_level(seg: int, end: int, tmin: int, c_ent: _Ints, c_ext: _Ints, c_excl: _Ints, c_lev: _Ints,
              ent: _Ints, ext: _Ints, excl: _Ints, depth: _Ints, count: _Ints) -> None:
    """Stable counting sort of one thread's calls ``[seg, end)`` by level into the output slots ``[seg, end)``.

    Many parameters because a numba kernel takes arrays and scalars, not objects.
    """
    if end == seg:
        return
    lo = count.size
    hi = -1
    for c in range(seg, end):
        L = c_lev[c]
        count[L + 1] += 1
        lo = min(lo, L)
        hi = max(hi, L)
    pos = seg
    for L in range(lo, hi + 1):  # count of level L -> first slot of level L
        m = count[L + 1]
        count[L + 1] = 0
        count[L] = pos
        pos += m
    for c in range(seg, end):
        L = c_lev[c]
        j = count[L]
        count[L] = j + 1
        ent[j] = c_ent[c]
        ext[j] = c_ext[c]
        excl[j] = c_excl[c]
        depth[j] = L - tmin
    for L in range(lo, hi + 1):
        count[L] = 0


def _match(tid: _Ints, k: _Ints, func: _Ints, ts: _Ints) -> tuple[_Ints, _Ints, _Ints, _Ints, int]:
    """Kept calls (entry and exit positions, exclusive ns, depth) and the number of mismatched pairs."""
    ent, ext, excl, depth, mismatched = _match_kernel(
        np.ascontiguousarray(tid, dtype=np.int64), np.ascontiguousarray(k, dtype=np.int8),
        np.ascontiguousarray(func, dtype=np.int32), np.ascontiguousarray(ts, dtype=np.int64))
    return ent, ext, excl, depth, int(mismatched)


def _calls_frame(names: tuple[str, ...], ent: _Ints, ext: _Ints, excl: _Ints, depth: _Ints, tid: _Ints,
                 ts: _Ints, func: _Ints, arg: _Ints) -> pd.DataFrame:
    """The calls table sorted by function (``names`` order, unknown last) then ``order`` = rank by start time.

    Many parameters because it takes the calls' columns as the compiled kernels return them (one array each).

    Ties in start time keep the order the calls come in (thread, level, entry position), as
    ``np.lexsort((start, function))`` would.
    """
    nf = len(names)
    start = ts[ent]
    # calls come as runs sorted by start (one per thread and level), which the stable sort (timsort) merges
    # cheaply; the columns are then written function by function in one pass (a counting sort), sequential
    # writes instead of one random gather per column
    by_start = np.argsort(start, kind="stable")
    del start
    fcode, c_tid, order, c_start, c_incl, c_excl, c_depth, c_arg = _by_function(
        by_start, ent, ext, excl, depth, tid, ts, func, arg, nf)
    # (categories keep every traced name, also those never called; group with observed=True)
    return pd.DataFrame(
        {
            "function": pd.Categorical.from_codes(fcode, categories=[*names, "?"]),
            "tid": c_tid,
            "order": order,
            "start_ns": c_start,
            "inclusive_ns": c_incl,
            "exclusive_ns": c_excl,
            "depth": c_depth,
            "arg": c_arg,
        },
        copy=False,
    )


@njit(cache=True, nogil=True)
def _by_function(by_start: _Ints, ent: _Ints, ext: _Ints, excl: _Ints, depth: _Ints, tid: _Ints, ts: _Ints,
                 func: _Ints, arg: _Ints, nf: int) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints]:
    """Counting sort of the calls by function code (``nf`` = unknown), stable over ``by_start``.

    Many parameters because a numba kernel takes arrays and scalars, not objects.
    """
    m = by_start.size
    code = np.empty(m, np.int64)
    slot = np.zeros(nf + 2, np.int64)
    for c in range(m):
        f = func[ent[c]]
        code[c] = f if f >= 0 else nf
        slot[code[c] + 1] += 1
    for f in range(nf + 1):
        slot[f + 1] += slot[f]
    first = slot[:nf + 1].copy()
    fcode = np.empty(m, np.int64)
    o_tid = np.empty(m, np.int64)
    order = np.empty(m, np.int64)
    o_start = np.empty(m, np.int64)
    o_incl = np.empty(m, np.int64)
    o_excl = np.empty(m, np.int64)
    o_depth = np.empty(m, np.int32)
    o_arg = np.empty(m, np.int64)
    for i in range(m):
        c = by_start[i]
        f = code[c]
        d = slot[f]
        slot[f] = d + 1
        e = ent[c]
        fcode[d] = f
        o_tid[d] = tid[e]
        order[d] = d - first[f]
        o_start[d] = ts[e]
        o_incl[d] = ts[ext[c]] - ts[e]
        o_excl[d] = excl[c]
        o_depth[d] = depth[c]
        o_arg[d] = arg[e]
    return fcode, o_tid, order, o_start, o_incl, o_excl, o_depth, o_arg
