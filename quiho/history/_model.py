"""The history data model: one metric measured at ordered revisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from quiho.errors import HistoryError

__all__ = ["History", "ChangePoint", "Detection", "Summary", "SUMMARY_STATS", "MAX_VALUE"]

#: largest magnitude of a history value: squares and sums of up to 10**9 values stay finite
MAX_VALUE = 1e150

#: the statistics of a revision's rounds a harness reports when it does not save the rounds themselves
SUMMARY_STATS = ("min", "q1", "median", "q3", "max", "mean")


@dataclass(frozen=True)
class Summary:
    """What a harness reported of one revision's rounds without saving them (NaN: not reported).

    pytest-benchmark without ``--benchmark-save-data`` writes min, quartiles, median, max, mean and the number of
    rounds; asv without ``--record-samples`` the median and quartiles. The minimum and low quantiles are what
    survive interference (it only adds time), so they are kept, not folded into one centre.
    """

    min: float = float("nan")
    q1: float = float("nan")
    median: float = float("nan")
    q3: float = float("nan")
    max: float = float("nan")
    mean: float = float("nan")
    rounds: int = 0

    def __post_init__(self) -> None:
        for k in SUMMARY_STATS:
            v = getattr(self, k)
            if not (np.isnan(v) or (np.isfinite(v) and abs(v) <= MAX_VALUE)):
                raise HistoryError(f"summary {k} = {v!r} is not a finite value within ±{MAX_VALUE:.0e}")
        got = [getattr(self, k) for k in SUMMARY_STATS[:5] if not np.isnan(getattr(self, k))]
        if any(b < a for a, b in zip(got, got[1:], strict=False)):
            raise HistoryError(f"summary min <= q1 <= median <= q3 <= max does not hold: {self.to_dict()}")
        if self.rounds < 0:
            raise HistoryError(f"summary rounds = {self.rounds} is negative")

    def get(self, stat: str) -> float:
        """The statistic ``stat`` (one of :data:`SUMMARY_STATS`), NaN when not reported."""
        return float(getattr(self, stat))

    @property
    def centre(self) -> float:
        """The one value a summary-only revision keeps as its repetition: the mean, else the median, else NaN."""
        return self.mean if not np.isnan(self.mean) else self.median

    def to_dict(self) -> dict[str, float | int]:
        """The reported statistics (NaN ones left out) and ``rounds`` (when known)."""
        d: dict[str, float | int] = {k: v for k in SUMMARY_STATS if not np.isnan(v := float(getattr(self, k)))}
        return {**d, "rounds": self.rounds} if self.rounds else d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Summary:
        """The inverse of :meth:`to_dict` (unknown keys are refused)."""
        bad = set(d) - {*SUMMARY_STATS, "rounds"}
        if bad:
            raise HistoryError(f"summary has unknown statistics {sorted(bad)}; known: {', '.join(SUMMARY_STATS)}")
        return cls(**{k: float(v) for k, v in d.items() if k != "rounds"},  # type: ignore[arg-type]
                   rounds=int(d.get("rounds", 0)))  # type: ignore[call-overload]


@dataclass(frozen=True, eq=False)
class History:
    """A performance history: repetitions of one metric at ordered revisions.

    Parameters
    ----------
    name : str
        Series name (``base[key=value,...]`` when built from config columns).
    revisions : tuple of str, shape (n,)
        Revision identifiers, in order.
    orders : ndarray of int, shape (n,)
        Strictly increasing positions of the revisions; gaps mean revisions
        that were not measured (the GP predicts them, detectors ignore them).
    samples : tuple of ndarray
        ``samples[i]`` holds the repetitions measured at ``revisions[i]`` (at least one).
    unit : str
        Unit of the values, e.g. ``"s"``.
    config : mapping
        Configuration columns this series was split by.
    missing : int
        Values the source left empty (empty, NaN, null) that were skipped.
    summaries : tuple of Summary or None, shape (n,) or ()
        What the harness reported of a revision's rounds when it did not save them (its one repetition in
        ``samples`` is then :attr:`Summary.centre`); None for revisions whose rounds are all in ``samples``.
        Empty: none has a summary.

    Raises
    ------
    HistoryError
        Lengths disagree, orders are not strictly increasing or beyond
        ``±2**53``, a revision has no value, or a value is not finite or beyond
        ``±1e150`` (means, variances and the GP square the values: larger ones
        overflow to inf; rescale them, e.g. use another unit).
    """

    name: str
    revisions: tuple[str, ...]
    orders: np.ndarray
    samples: tuple[np.ndarray, ...]
    unit: str = ""
    config: Mapping[str, str] = field(default_factory=dict)
    missing: int = 0
    summaries: tuple[Summary | None, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.revisions)
        if self.summaries and len(self.summaries) != n:
            raise HistoryError(f"series {self.name!r}: {n} revisions but {len(self.summaries)} summaries")
        if len(self.orders) != n or len(self.samples) != n:
            raise HistoryError(f"series {self.name!r}: {n} revisions but {len(self.orders)} orders "
                               f"and {len(self.samples)} sample sets")
        try:
            orders = np.asarray(self.orders, dtype=np.int64)
        except OverflowError:
            raise HistoryError(f"series {self.name!r}: an order does not fit in 64 bits") from None
        if n and int(np.abs(orders).max()) > 2**53:
            raise HistoryError(f"series {self.name!r}: orders beyond ±2**53 are not revision positions")
        if n > 1 and np.any(np.diff(orders) <= 0):
            i = int(np.flatnonzero(np.diff(orders) <= 0)[0])
            raise HistoryError(f"series {self.name!r}: orders must be strictly increasing; "
                               f"revision {self.revisions[i + 1]!r} has order {orders[i + 1]} after {orders[i]}")
        if len(set(self.revisions)) != n:
            raise HistoryError(f"series {self.name!r}: a revision appears at two orders")
        samples = tuple(s if isinstance(s, np.ndarray) and s.dtype == np.float64 and s.ndim == 1
                        else np.asarray(s, dtype=float).ravel() for s in self.samples)
        sizes = np.fromiter((a.size for a in samples), dtype=np.int64, count=n)
        if n and sizes.min() == 0:
            raise HistoryError(f"series {self.name!r}: revision {self.revisions[int(np.argmin(sizes))]!r} has no value")
        flat = np.concatenate(samples) if n else np.zeros(0)
        bad = ~np.isfinite(flat) | (np.abs(np.where(np.isfinite(flat), flat, 0.0)) > MAX_VALUE)
        if bad.any():  # vectorised check (200 k revisions); name the first offending revision
            j = int(np.flatnonzero(bad)[0])
            rev = self.revisions[int(np.searchsorted(np.cumsum(sizes), j, side="right"))]
            if not np.isfinite(flat[j]):
                raise HistoryError(f"series {self.name!r}: revision {rev!r} has a non-finite value")
            raise HistoryError(f"series {self.name!r}: revision {rev!r} has value {abs(flat[j]):.3g} beyond "
                               f"±{MAX_VALUE:.0e}; rescale (another unit) to analyse it")
        means = np.add.reduceat(flat, np.concatenate([[0], np.cumsum(sizes)[:-1]])) / sizes if n else np.zeros(0)
        means.setflags(write=False)
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "samples", samples)
        if all(x is None for x in self.summaries):  # one spelling of "no summaries"
            object.__setattr__(self, "summaries", ())
        object.__setattr__(self, "_means", means)

    @classmethod
    def from_values(cls, values: Sequence[float] | np.ndarray, revisions: Sequence[str] | None = None,
                    name: str = "series", unit: str = "") -> History:
        """One value per revision, orders ``0..n-1``; revisions default to ``"0", "1", ...``."""
        v = np.asarray(values, dtype=float).ravel()
        revs = tuple(revisions) if revisions is not None else tuple(str(i) for i in range(v.size))
        return cls(name, revs, np.arange(v.size), tuple(v[i:i + 1] for i in range(v.size)), unit)

    def __len__(self) -> int:
        return len(self.revisions)

    @property
    def values(self) -> np.ndarray:
        """Mean of the repetitions at each revision, shape (n,) (computed once; read-only)."""
        return self._means  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ChangePoint:
    """A change in level between two segments of a history.

    ``index`` is the position (in the measured revisions) of the first value of
    the new segment; ``revision`` its identifier. ``before``/``after`` are the
    segment means, ``magnitude`` the relative change ``(after - before) / |before|``
    (NaN if ``before`` is 0), ``p_value`` the probability of a change at least
    this strong without one, as computed by the detector (see its docstring).
    ``low``/``high`` (indexes, inclusive; ``low_revision``/``high_revision`` their
    identifiers) bound where the new segment may start: the 95 % location
    interval of :func:`quiho.history.location_interval`, the range to bisect
    (-1 and "" where none was computed).
    """

    index: int
    revision: str
    before: float
    after: float
    magnitude: float
    p_value: float
    low: int = -1
    high: int = -1
    low_revision: str = ""
    high_revision: str = ""

    def location_text(self, chars: int | None = None) -> str:
        """``", starts in A..B (95 %)"`` (revisions cut to ``chars``) if it spans several revisions, else ``""``."""
        if self.low < 0 or self.low == self.high:
            return ""
        return f", starts in {self.low_revision[:chars]}..{self.high_revision[:chars]} (95 %)"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (NaN becomes None; no interval when none was computed)."""
        def f(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        d: dict[str, object] = {"index": self.index, "revision": self.revision, "before": f(self.before),
                                "after": f(self.after), "magnitude": f(self.magnitude), "p_value": f(self.p_value)}
        if self.low >= 0:
            d["location"] = {"low": self.low, "high": self.high, "low_revision": self.low_revision,
                             "high_revision": self.high_revision, "level": 0.95}
        return d


@dataclass(frozen=True)
class Detection:
    """What a detector concluded about one history.

    ``meaningful`` is False when the data cannot support an answer (too few
    revisions for the minimum segment length); ``reason`` then says why and
    ``change_points`` is empty, which is *not* a verdict of "no change".
    """

    series: str
    method: str
    n: int
    change_points: tuple[ChangePoint, ...]
    meaningful: bool = True
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        """The JSON document of ``quiho history detect --json``."""
        return {"series": self.series, "method": self.method, "n": self.n, "meaningful": self.meaningful,
                "reason": self.reason, "change_points": [c.to_dict() for c in self.change_points]}
