"""Seeded event streams with every awkward case, shared by the events → calls equality tests.

``messy_stream`` mixes well-nested calls with what real traces contain: several interleaved threads,
recursion, lost exits (a mismatched pair, then shifted levels), exits without entries (the trace started inside
a call), entries without exits (it ended inside one), exits with function id -1 (SystemTap), equal timestamps
(a µs clock) and a thread whose events arrive out of time order.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from quiho.trace import Events


def messy_stream(n_calls: int, seed: int, slower: int | None = None, n_funcs: int = 6) -> Events:
    rng = np.random.default_rng(seed)
    kinds: list[int] = []
    tids: list[int] = []
    tss: list[int] = []
    funcs: list[int] = []
    n_threads = 4
    clock = {t: int(rng.integers(0, 1000)) for t in range(n_threads)}
    coarse = np.arange(n_threads) < 2  # two threads have a 1000 ns clock: equal timestamps

    def emit(t: int, kind: int, f: int, dt: int) -> None:
        clock[t] += dt
        ts = clock[t] - clock[t] % 1000 if coarse[t] else clock[t]
        kinds.append(kind), tids.append(1000 + t), tss.append(ts), funcs.append(f)

    def call(t: int, depth: int) -> None:
        f = int(rng.integers(0, n_funcs))
        emit(t, 0, f, int(rng.integers(1, 50)))
        while depth < 4 and rng.random() < 0.45:
            call(t, depth + 1)
        own = int(rng.lognormal(6, 0.3)) * (2 if f == slower else 1)
        r = rng.random()
        if r < 0.0005:
            return  # lost exit
        emit(t, 1, -1 if r < 0.03 else f, own)

    for t in range(n_threads):
        emit(t, 1, int(rng.integers(0, n_funcs)), 5)  # exit without entry
    made = 0
    while made < n_calls:
        t = int(rng.integers(0, n_threads))
        call(t, 0)
        made += 1
    emit(0, 0, 0, 10)  # entry without exit
    kind = np.array(kinds, np.int8)
    tid = np.array(tids, np.int64)
    ts = np.array(tss, np.int64)
    func = np.array(funcs, np.int32)
    # arrival order: threads interleaved by time; the last thread's (fine-clock) events slightly out of order
    o = np.argsort(ts + np.where(tid == 1000 + n_threads - 1, rng.integers(0, 300, ts.size), 0), kind="stable")
    kind, tid, ts, func = kind[o], tid[o], ts[o], func[o]
    arg = rng.integers(0, 1 << 40, kind.size).astype(np.int64)
    return Events(kind, tid, ts, func, arg, tuple(f"fn{i}" for i in range(n_funcs)))


def calls_digest(calls: pd.DataFrame) -> dict[str, str]:
    """A SHA-256 per column (the function column by its names), so tables compare without storing them."""
    out = {}
    for c in calls.columns:
        v = calls[c]
        data = "\n".join(v.astype(str)).encode() if c == "function" else np.ascontiguousarray(v.to_numpy()).tobytes()
        out[c] = f"{v.dtype}:{hashlib.sha256(data).hexdigest()}"
    return out
