"""Events → calls matching, and the raw-output parsers (property-based and damaged inputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quiho.errors import TraceParseError
from quiho.trace import (
    Events,
    bpftrace_script,
    events_to_calls,
    parse_events,
    parse_stap_record,
    stap_script,
)

NAMES = ("main", "a", "b", "c")


def reference_calls(kind, tid, ts, func):
    """Slow obvious reference: a stack per thread, events in time order."""
    order = sorted(range(len(kind)), key=lambda i: (tid[i], ts[i], i))
    stacks: dict[int, list[list[int]]] = {}
    out = []
    for i in order:
        s = stacks.setdefault(tid[i], [])
        if kind[i] == 0:
            s.append([func[i], ts[i], 0])  # func, start, child time
        elif s:
            f, start, child = s.pop()
            dur = ts[i] - start
            if s:
                s[-1][2] += dur
            out.append((NAMES[f], tid[i], start, dur, dur - child, len(s)))
    return sorted(out)


@st.composite
def call_trees(draw):
    """Well-formed nested calls in 1-3 threads, with strictly increasing per-thread timestamps."""
    kind, tid, ts, func = [], [], [], []
    for t in range(draw(st.integers(1, 3))):
        clock = draw(st.integers(0, 1000))
        depth = 0
        stack = []
        for _ in range(draw(st.integers(0, 30))):
            clock += draw(st.integers(1, 50))
            if depth and draw(st.booleans()):
                kind.append(1)
                func.append(stack.pop())
                depth -= 1
            else:
                f = draw(st.integers(0, 3))
                kind.append(0)
                func.append(f)
                stack.append(f)
                depth += 1
            tid.append(100 + t)
            ts.append(clock)
        while stack:
            clock += draw(st.integers(1, 50))
            kind.append(1)
            func.append(stack.pop())
            tid.append(100 + t)
            ts.append(clock)
    return kind, tid, ts, func


def _events(kind, tid, ts, func, names=NAMES) -> Events:
    n = len(kind)
    return Events(np.array(kind, np.int8), np.array(tid, np.int64), np.array(ts, np.int64),
                  np.array(func, np.int32), np.zeros(n, np.int64), names)


def _table(calls):
    return sorted((str(r.function), r.tid, r.start_ns, r.inclusive_ns, r.exclusive_ns, r.depth)
                  for r in calls.itertuples())


@settings(max_examples=150, deadline=None)
@given(call_trees(), st.randoms())
def test_calls_match_stack_reference_and_ignore_thread_interleaving(tree, rnd):
    kind, tid, ts, func = tree
    calls, stats = events_to_calls(_events(kind, tid, ts, func))
    assert _table(calls) == reference_calls(kind, tid, ts, func)
    assert stats.unmatched_entries == stats.unmatched_exits == stats.mismatched == 0
    # arrival order across threads must not matter (per-CPU buffers interleave them)
    idx = list(range(len(kind)))
    rnd.shuffle(idx)
    calls2, _ = events_to_calls(_events(*([v[i] for i in idx] for v in tree)))
    assert _table(calls2) == _table(calls)


@settings(max_examples=100, deadline=None)
@given(call_trees(), st.integers(0, 200), st.integers(0, 200))
def test_truncated_traces_count_unmatched_and_keep_complete_calls(tree, cut_head, cut_tail):
    kind, tid, ts, func = tree
    n = len(kind)
    lo, hi = min(cut_head, n), max(min(cut_head, n), n - cut_tail)
    part = [v[lo:hi] for v in tree]
    calls, stats = events_to_calls(_events(*part))
    ref = reference_calls(*part)
    # every complete call of the window is found; exits whose entry was cut are counted, never paired wrongly
    assert stats.calls + stats.unmatched_entries + stats.mismatched == sum(k == 0 for k in part[0])
    assert stats.calls + stats.unmatched_exits + stats.mismatched == sum(k == 1 for k in part[0])
    assert stats.mismatched == 0
    if cut_head == 0:
        assert _table(calls) == ref


def test_exclusive_time_of_nested_calls_by_hand():
    # main [0,100] calls a [10,40] (which calls b [20,30]) and a [50,60]
    ev = _events([0, 0, 0, 1, 1, 0, 1, 1], [1] * 8, [0, 10, 20, 30, 40, 50, 60, 100], [0, 1, 2, 2, 1, 1, 1, 0])
    calls, stats = events_to_calls(ev)
    got = {(r.function, r.order): (r.inclusive_ns, r.exclusive_ns, r.depth) for r in calls.itertuples()}
    assert got == {("main", 0): (100, 60, 0), ("a", 0): (30, 20, 1), ("a", 1): (10, 10, 1), ("b", 0): (10, 10, 2)}
    assert stats.calls == 4


def test_recursion_and_lost_exit_are_counted_not_crashing():
    # a recursive pair, then an entry of b whose exit was lost, then main's exit
    ev = _events([0, 0, 0, 1, 1, 0, 1], [1] * 7, [0, 1, 2, 3, 4, 5, 9], [0, 1, 1, 1, 1, 2, 0])
    calls, stats = events_to_calls(ev)
    assert sorted(calls.inclusive_ns.tolist()) == [1, 3]  # the two recursive calls of a
    assert stats.mismatched == 1  # main's exit met b's entry
    assert stats.unmatched_entries == 1  # main never closed


def test_empty_events():
    calls, stats = events_to_calls(_events([], [], [], []))
    assert len(calls) == 0 and stats.calls == 0


def _render(kind, tid, ts, func) -> bytes:
    return "".join(f"{k} {t} {s} {f} {7 if k == 0 else 0}\n" for k, t, s, f in zip(kind, tid, ts, func,
                                                                                       strict=True)).encode()


@settings(max_examples=100, deadline=None)
@given(call_trees(), st.lists(st.binary(max_size=40), max_size=5), st.integers(0, 30))
def test_parser_roundtrip_with_garbage_and_truncation(tree, garbage, cut):
    kind, tid, ts, func = tree
    text = _render(kind, tid, ts, func)
    ev = parse_events(text, NAMES)
    assert ev.kind.tolist() == list(kind) and ev.ts.tolist() == list(ts) and ev.bad_lines == 0
    assert set(ev.arg[ev.kind == 0].tolist()) <= {7}
    # garbage lines and a cut last line are skipped and counted, never raised, if any event survives
    damaged = b"\n".join([*garbage, text[: max(len(text) - cut, 0)]])
    try:
        ev2 = parse_events(damaged, NAMES)
    except TraceParseError:
        assert not any(line.strip() and line.split()[0] in (b"0", b"1") and len(line.split()) == 5
                       for line in damaged.splitlines())
        return
    assert len(ev2) <= len(kind) + len(garbage)
    events_to_calls(ev2)  # never crashes


def test_parser_rejects_input_without_events_and_skips_bad_fields():
    with pytest.raises(TraceParseError, match="no trace events"):
        parse_events(b"hello\nworld\n", NAMES)
    ev = parse_events(b"Attaching 2 probes...\n0 1 10 0 5\n0 1 x 1 0\n2 1 11 0 0\n0 1 12 9 0\n1 1 20 0 0\n", NAMES)
    assert ev.kind.tolist() == [0, 1] and ev.bad_lines == 4  # banner, non-number, kind 2, unknown function 9
    assert len(parse_events(b"", NAMES)) == 0
    # 64-bit timestamps survive (bpftrace %d would have truncated them)
    big = 2**40 + 12345
    ev = parse_events(f"0 1 {big} 0 0\n1 1 {big + 5} 0 0\n".encode(), NAMES)
    assert ev.ts.tolist() == [big, big + 5]


def test_systemtap_sample_record(shared_data):
    ev = parse_stap_record(shared_data("perun/collect_trace/tst_stap_record.txt"))
    calls, stats = events_to_calls(ev)
    counts = calls.groupby("function", observed=True).size().to_dict()
    assert counts == {"main": 1, "_Z12QuickSortBadPii": 6, "_Z12BadPartitionPiii": 99, "_Z4SwapRiS_": 616}
    assert stats.unmatched_entries == stats.unmatched_exits == stats.mismatched == stats.bad_lines == 0
    assert stats.skipped_records == 10  # USDT markers and the begin/end lines
    main = calls[calls.function == "main"].iloc[0]
    assert main.inclusive_ns == 5_965_000  # microseconds in the file → ns
    assert calls.exclusive_ns.sum() == main.inclusive_ns  # exclusive times partition the root call


def test_systemtap_parser_on_garbage():
    with pytest.raises(TraceParseError):
        parse_stap_record(b"not a record\nnor this\n")
    ev = parse_stap_record(b"0 5 x(1):f\n\x00\xff junk\n1 9 x(1): \n")
    assert len(ev) == 2 and ev.bad_lines == 1


def test_generated_scripts():
    b = Path("/bin/true").resolve()
    bt = bpftrace_script(b, ["f", "g"], sample=1)
    assert f"uprobe:{b}:f" in bt and f"uretprobe:{b}:g" in bt
    assert "%d" not in bt and bt.count("%lu") == 10  # 64-bit safe formats only
    sampled = bpftrace_script(b, ["f"], sample=10)
    assert "% 10 == 0" in sampled and "clear(@k)" in sampled
    stp = stap_script(b, ["f", "g"], sample=3)
    assert f'process("{b}").function("f").call' in stp and ".return" in stp and "% 3 == 0" in stp
    from quiho.errors import UsageError

    with pytest.raises(UsageError):
        bpftrace_script(Path("/bin/true"), ["bad name; system"], sample=1)
    with pytest.raises(UsageError):
        bpftrace_script(Path("/bin/true"), ["f"], sample=0)
