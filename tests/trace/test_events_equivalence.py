"""events → calls: the numba kernels give exactly what the vectorised numpy version gave, and what a slow
obvious reference of the matching rule gives, on streams with every awkward case."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quiho.detect import detect
from quiho.trace import CALL_COLUMNS, Events, events_to_calls, profile_from_calls

sys.path.insert(0, str(Path(__file__).parent))
from _golden_streams import calls_digest, messy_stream  # noqa: E402

GOLDEN = Path(__file__).parent / "data" / "events_to_calls_golden.json"


def test_same_calls_and_verdicts_as_the_vectorised_version():
    """The golden file was written by the numpy implementation (commit 69b4fee) on the same seeded streams."""
    golden = json.loads(GOLDEN.read_text())
    profiles = {}
    for name, (n, seed, slower) in {"baseline": (40_000, 1, None), "target": (40_000, 2, 3)}.items():
        ev = messy_stream(n, seed, slower)
        calls, stats = events_to_calls(ev)
        assert len(ev) == golden[name]["events"]
        assert stats.to_dict() == golden[name]["stats"]
        assert calls_digest(calls) == golden[name]["calls"]
        profiles[name] = profile_from_calls(calls)
    changes = detect(profiles["baseline"], profiles["target"], ["joint"])
    assert [(c.function, c.state.value, c.kind) for c in changes] == [
        (g["function"], g["state"], g["kind"]) for g in golden["verdicts"]]
    for c, g in zip(changes, golden["verdicts"], strict=True):
        # (a little slack for another BLAS: the calls feeding the fits are compared exactly above)
        assert c.magnitude == pytest.approx(g["magnitude"], rel=1e-7)
        assert c.p_value == pytest.approx(g["p_value"], rel=1e-4, abs=1e-300)


def reference_calls(ev: Events) -> tuple[pd.DataFrame, dict[str, int]]:
    """The module docstring's rule, one event at a time (slow, obvious)."""
    n = len(ev)
    order = sorted(range(n), key=lambda i: (int(ev.tid[i]), int(ev.ts[i]), i))
    tid = [int(ev.tid[i]) for i in order]
    ts = [int(ev.ts[i]) for i in order]
    fn = [int(ev.func[i]) for i in order]
    kind = [int(ev.kind[i]) for i in order]
    arg = [int(ev.arg[i]) for i in order]
    level, depth_now, thread_of, threads = [0] * n, 0, [0] * n, []
    for p in range(n):
        if p == 0 or tid[p] != tid[p - 1]:
            depth_now = 0
            threads.append(tid[p])
        thread_of[p] = len(threads) - 1
        if kind[p] == 0:
            level[p] = depth_now
            depth_now += 1
        else:
            depth_now -= 1
            level[p] = depth_now
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for p in range(n):
        groups[(thread_of[p], level[p])].append(p)
    kept, mismatched, paired = [], 0, set()
    for key in sorted(groups):
        g = groups[key]
        for a, b in zip(g, g[1:], strict=False):
            if kind[a] == 0 and kind[b] == 1:
                if fn[b] == -1 or fn[a] == fn[b]:
                    kept.append((a, b))
                    paired.update((a, b))
                else:
                    mismatched += 1
    call_at = {a: j for j, (a, _) in enumerate(kept)}
    incl = [ts[b] - ts[a] for a, b in kept]
    child = [0] * len(kept)
    for j, (a, _) in enumerate(kept):
        ups = [q for q in range(a) if thread_of[q] == thread_of[a] and kind[q] == 0 and level[q] == level[a] - 1]
        if ups and ups[-1] in call_at:
            child[call_at[ups[-1]]] += incl[j]
    tmin = {}
    for p in range(n):
        if kind[p] == 0:
            tmin[thread_of[p]] = min(tmin.get(thread_of[p], level[p]), level[p])
    nf = len(ev.names)
    rows = []
    for j, (a, _) in enumerate(kept):
        code = fn[a] if fn[a] >= 0 else nf
        rows.append((code, ts[a], thread_of[a], level[a], a, tid[a], incl[j], incl[j] - child[j],
                     level[a] - tmin[thread_of[a]], arg[a]))
    rows.sort(key=lambda r: r[:5])
    rank: dict[int, int] = defaultdict(int)
    out = []
    for r in rows:
        out.append({"function": r[0], "tid": r[5], "order": rank[r[0]], "start_ns": r[1], "inclusive_ns": r[6],
                    "exclusive_ns": r[7], "depth": r[8], "arg": r[9]})
        rank[r[0]] += 1
    n_ent = kind.count(0)
    stats = {"calls": len(kept), "mismatched": mismatched,
             "unmatched_entries": n_ent - len(kept) - mismatched,
             "unmatched_exits": n - n_ent - len(kept) - mismatched}
    return pd.DataFrame(out, columns=list(CALL_COLUMNS)), stats


def _compare(ev: Events) -> None:
    calls, stats = events_to_calls(ev)
    ref, ref_stats = reference_calls(ev)
    assert {k: getattr(stats, k) for k in ref_stats} == ref_stats
    assert list(calls.columns) == list(CALL_COLUMNS)
    assert calls["function"].cat.codes.tolist() == ref["function"].tolist()
    for c in CALL_COLUMNS[1:]:
        assert calls[c].tolist() == ref[c].tolist(), c


@pytest.mark.parametrize("seed", range(4))
def test_messy_streams_match_the_reference(seed):
    _compare(messy_stream(60, seed, slower=1 if seed % 2 else None, n_funcs=3))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 6), st.integers(-1, 2)),
                min_size=1, max_size=40))
def test_random_event_sequences_match_the_reference(events):
    """Any sequence at all: lost and extra exits, -1 exits, equal and decreasing timestamps, 3 threads."""
    kind, tid, ts, func = (np.array(c) for c in zip(*events, strict=True))
    func = np.where(kind == 0, np.maximum(func, 0), func)  # entries always name their function
    ev = Events(kind.astype(np.int8), (tid + 7).astype(np.int64), ts.astype(np.int64), func.astype(np.int32),
                np.arange(kind.size, dtype=np.int64), ("a", "b", "c"))
    _compare(ev)


def test_empty_and_exit_only_streams():
    empty = Events(np.zeros(0, np.int8), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32),
                   np.zeros(0, np.int64), ("f",))
    calls, stats = events_to_calls(empty)
    assert len(calls) == 0 and stats.events == 0
    exits = Events(np.ones(3, np.int8), np.zeros(3, np.int64), np.arange(3), np.zeros(3, np.int32),
                   np.zeros(3, np.int64), ("f",))
    calls, stats = events_to_calls(exits)
    assert len(calls) == 0 and stats.unmatched_exits == 3
    _compare(exits)
