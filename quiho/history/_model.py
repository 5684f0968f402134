"""The history data model: one metric measured at ordered revisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from quiho.errors import HistoryError

__all__ = ["History", "ChangePoint", "Detection", "MAX_VALUE"]

#: largest magnitude of a history value: squares and sums of up to 10**9 values stay finite
MAX_VALUE = 1e150


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

    def __post_init__(self) -> None:
        n = len(self.revisions)
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
