"""Function entry/exit events → a calls table with inclusive and exclusive durations, vectorised.

Matching rule. Within one thread every entry raises the call depth by one and every exit lowers it, so an
entry that starts at level ``L`` (depth before it) is closed by the next exit that returns to level ``L``.
Grouping the events by (thread, level) therefore makes them strictly alternate entry, exit, entry, exit...
and pairing is a shift by one inside each group, with no Python loop over events:

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
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
    starts, thread_idx, lev = _levels(tid, k)
    m = _pair(thread_idx, lev, k, func)
    incl = ts[m.ext] - ts[m.ent]
    excl = incl - _traced_callee_time(m, lev, incl, n)
    # depth 0 = the outermost entry seen in the thread, even if it never returned; threads are contiguous
    # segments here, so a segmented minimum (reduceat) replaces the slow ufunc.at
    thread_min = np.minimum.reduceat(np.where(k == 0, lev, np.iinfo(np.int64).max), starts)
    depth = (lev[m.ent] - thread_min[thread_idx[m.ent]]).astype(np.int32)
    calls = _calls_frame(ev.names, m.fe, ts[m.ent], tid[m.ent], arg[m.ent], incl, excl, depth)
    stats = CallStats(n, int(m.ent.size), m.unmatched_entries, m.unmatched_exits, m.mismatched, ev.bad_lines,
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
    kind = ev.kind.astype(np.int8)
    o = _stable_argsort(ev.tid)
    tso, tdo = ev.ts[o], ev.tid[o]
    if n > 1 and not bool(np.all((tso[1:] >= tso[:-1]) | (tdo[1:] != tdo[:-1]))):
        o = np.lexsort((np.arange(n, dtype=np.int64), ev.ts, ev.tid))
    del tso, tdo
    return ev.tid[o], ev.ts[o], ev.func[o], ev.arg[o], kind[o]


def _levels(tid: _Ints, k: _Ints) -> tuple[_Ints, _Ints, _Ints]:
    """First event of each thread, each event's thread index, and its level shifted so the smallest is 0.

    The level is the depth before an entry and after an exit.
    """
    n = tid.size
    step = np.where(k == 0, 1, -1).astype(np.int64)
    cs = np.cumsum(step)
    new_thread = np.ones(n, dtype=bool)
    new_thread[1:] = tid[1:] != tid[:-1]
    starts = np.flatnonzero(new_thread)
    base = (cs - step)[starts]
    thread_idx = np.cumsum(new_thread) - 1
    depth_after = cs - base[thread_idx]
    del cs, step
    level = np.where(k == 0, depth_after - 1, depth_after)
    del depth_after
    return starts, thread_idx, level - int(level.min())


@dataclass(frozen=True)
class _Pairs:
    """Matched calls: entry and exit event positions, the entry's function, and what could not be matched.

    ``g`` sorts events by (thread, level, position), ``gkey`` is each event's (thread, level) key and ``kk``
    the kinds in ``g`` order; the parent search reuses them.
    """

    ent: _Ints
    ext: _Ints
    fe: _Ints
    mismatched: int
    unmatched_entries: int
    unmatched_exits: int
    g: _Ints
    gkey: _Ints
    kk: _Ints


def _pair(thread_idx: _Ints, lev: _Ints, k: _Ints,
          func: _Ints) -> _Pairs:
    """Pair entries with exits: inside a (thread, level) group events alternate (see the module docstring)."""
    n = lev.size
    span = int(lev.max()) + 2
    gkey = thread_idx.astype(np.int64) * span + lev
    g = _stable_argsort(gkey)  # = lexsort((pos, gkey)): positions already increase
    gk, kk = gkey[g], k[g]
    same_next = np.zeros(n, dtype=bool)
    same_next[:-1] = gk[1:] == gk[:-1]
    is_pair = (kk == 0) & same_next
    is_pair[:-1] &= kk[1:] == 1
    ent = g[is_pair]
    ext = g[np.flatnonzero(is_pair) + 1]
    del gk, same_next, is_pair
    fe, fx = func[ent], func[ext]
    ok = (fx == -1) | (fe == fx)
    mismatched = int((~ok).sum())
    ent, ext = ent[ok], ext[ok]
    paired = np.zeros(n, dtype=bool)
    paired[ent] = True
    paired[ext] = True
    unmatched_entries = int(((k == 0) & ~paired).sum()) - mismatched
    unmatched_exits = int(((k == 1) & ~paired).sum()) - mismatched
    return _Pairs(ent, ext, fe[ok], mismatched, unmatched_entries, unmatched_exits, g, gkey, kk)


def _traced_callee_time(m: _Pairs, lev: _Ints, incl: _Ints, n: int) -> _Ints:
    """Per call, the inclusive time of its traced direct callees.

    A call's parent is the last entry one level up in the same thread before the call's entry.
    """
    ncall = m.ent.size
    call_of_event = np.full(n, -1, dtype=np.int64)
    call_of_event[m.ent] = np.arange(ncall)
    ent_sorted = m.g[m.kk == 0]  # entries in (thread, level, position) order: g already sorts them so
    sk_sorted = m.gkey[ent_sorted] * (n + 1) + ent_sorted
    q = (m.gkey[m.ent] - 1) * (n + 1) + m.ent
    j = np.searchsorted(sk_sorted, q, side="right") - 1
    valid = (lev[m.ent] > 0) & (j >= 0)
    jj = np.where(valid, j, 0)
    cand = ent_sorted[jj]
    valid &= m.gkey[cand] == m.gkey[m.ent] - 1
    parent_call = np.where(valid, call_of_event[cand], -1)
    del call_of_event, sk_sorted, ent_sorted, q, j, jj, cand, valid
    has_parent = parent_call >= 0
    child_sum = np.bincount(parent_call[has_parent], weights=incl[has_parent].astype(np.float64), minlength=ncall)
    return np.rint(child_sum).astype(np.int64)


def _calls_frame(names: tuple[str, ...], fe: _Ints, start: _Ints, tid: _Ints,
                 arg: _Ints, incl: _Ints, excl: _Ints,
                 depth: _Ints) -> pd.DataFrame:
    """The calls table sorted by function (``names`` order, unknown last) then ``order`` = rank by start time."""
    ncall = fe.size
    cats = np.asarray(names + ("?",), dtype=object)
    fcode = np.where(fe >= 0, fe, len(names))
    oo = np.lexsort((start, fcode))
    fsorted = fcode[oo]
    first = np.ones(ncall, dtype=bool)
    first[1:] = fsorted[1:] != fsorted[:-1]
    grp_start = np.maximum.accumulate(np.where(first, np.arange(ncall), 0))
    order = np.empty(ncall, dtype=np.int64)
    order[oo] = np.arange(ncall) - grp_start
    # (categories keep every traced name, also those never called; group with observed=True)
    return pd.DataFrame(
        {
            "function": pd.Categorical.from_codes(fcode[oo], categories=list(cats)),
            "tid": tid[oo],
            "order": order[oo],
            "start_ns": start[oo],
            "inclusive_ns": incl[oo],
            "exclusive_ns": excl[oo],
            "depth": depth[oo],
            "arg": arg[oo],
        },
        copy=False,
    )
