"""The fast paths of the per-function pipeline give what the obvious implementations give (issue 16's speed work).

``profile_from_calls`` splits a calls table by its categorical codes instead of ``DataFrame.groupby``; here it is
compared with a groupby reference on sorted, shuffled, string-named (with missing names) and unused-category
tables, for every x mode and amount. ``events_to_calls`` groups events of at most 64 threads by a counting sort;
here it is compared with the stable argsort it replaces, below and above that limit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quiho.trace import X_MODES, Events, events_to_calls, profile_from_calls, sliding_window_clusters


def _reference(calls: pd.DataFrame, x: str, amount: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    out = {}
    for name, g in calls.groupby("function", observed=True, sort=True):
        y = g[amount].to_numpy(dtype=float)
        if x in ("order", "arg"):
            xv = g[x].to_numpy(dtype=float)
        elif x == "sort-order":
            xv = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(float)
        else:
            xv = sliding_window_clusters(y).astype(float)
        out[str(name)] = (xv, y, g["exclusive_ns"].to_numpy(dtype=float))
    return out


def _calls() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 3000  # nested calls: f0..f3 at the top, one child f4..f5 each, two threads
    outer = rng.integers(0, 4, n)
    child = rng.integers(4, 6, n)
    tid = np.where(np.arange(n) % 3 == 0, 7, 8)
    start = np.cumsum(rng.integers(100, 500, n)) * 10
    dur = rng.integers(20, 90, (n, 3))
    ts = np.stack([start, start + dur[:, 0], start + dur[:, 0] + dur[:, 1], start + dur.sum(axis=1)], axis=1)
    ev = Events(np.tile(np.array([0, 0, 1, 1], np.int8), n), np.repeat(tid, 4).astype(np.int64), ts.ravel(),
                np.stack([outer, child, child, outer], axis=1).ravel().astype(np.int32),
                rng.integers(0, 1000, 4 * n).astype(np.int64), tuple(f"f{i}" for i in range(7)))
    calls, _ = events_to_calls(ev)
    return calls


def _tables() -> dict[str, pd.DataFrame]:
    calls = _calls()
    rng = np.random.default_rng(5)
    names = calls["function"].astype(str).where(rng.random(len(calls)) > 0.02, None)
    cats = calls["function"].cat
    return {
        "sorted": calls,
        "shuffled": calls.sample(frac=1, random_state=1),
        "strings, missing names, shuffled": calls.assign(function=names).sample(frac=1, random_state=2),
        "unused category first": calls.assign(function=cats.add_categories(["a_unused"]).cat.reorder_categories(
            ["a_unused", *cats.categories])),
        "empty": calls.iloc[:0],
    }


@pytest.mark.parametrize("table", sorted(_tables()))
def test_profile_from_calls_equals_groupby(table):  # noqa: ANN001
    calls = _tables()[table]
    for x in X_MODES:
        for amount in ("inclusive_ns", "exclusive_ns"):
            want = _reference(calls, x, amount)
            got = profile_from_calls(calls, x=x, amount=amount).functions
            assert list(got) == list(want)
            for f, (xv, y, ex) in want.items():
                s = got[f]
                assert np.array_equal(s.x, xv) and np.array_equal(s.y, y) and np.array_equal(s.exclusive, ex)
    if table != "empty":
        assert len(profile_from_calls(calls).functions) == 6  # f6 is traced but never called


@pytest.mark.parametrize("threads", [1, 3, 64, 65, 300])
def test_thread_grouping_equals_the_stable_sort(threads):  # noqa: ANN001
    """Few threads are grouped by a counting sort; it must give the stable argsort's order and time check."""
    from quiho.trace import _events

    rng = np.random.default_rng(threads)
    n = 20_000
    tid = (rng.integers(0, threads, n) * 7919 - 5000).astype(np.int64)  # negative and sparse ids too
    ts = np.cumsum(rng.integers(0, 5, n)).astype(np.int64)
    cols = (tid, ts, rng.integers(-1, 9, n).astype(np.int32), rng.integers(0, 99, n).astype(np.int64),
            rng.integers(0, 2, n).astype(np.int8))
    for shuffle in (False, True):  # in time order per thread, and not
        c = tuple(a[rng.permutation(n)] for a in cols) if shuffle else cols
        want = _events._gather(np.argsort(c[0], kind="stable"), *c)
        got = _events._by_thread(*c, _events._FEW_THREADS)
        assert got[5] == want[5] == (not shuffle)
        for a, b in zip(got[:5], want[:5], strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
