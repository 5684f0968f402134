"""Fleet verdict per function: the per-host verdicts of one detector combined by a vote across hosts.

Every host compares the two versions on its own (normally with the ``joint`` detector, on that host's traced
runs), so load, CPU model and cache sizes of one machine never mix with another's. Across hosts:

* **Vote.** Each host that traced the function with a meaningful result votes *degradation*,
  *optimization* or *unchanged* (``no-change`` and ``maybe`` both count as unchanged: ``maybe`` is a change
  too small or too uncertain to name). The verdict is the option that a strict majority (> half) of those
  hosts chose. No strict majority (e.g. 4 degradations and 4 optimizations, or 4 degradations and 4
  unchanged of 8) means the hosts disagree: ``not-meaningful``. So does a function traced by fewer than
  ``min_hosts`` hosts (default 3: with two hosts a bootstrap over hosts has four possible samples), and a
  majority for a change whose bootstrap CI over hosts (below) includes no change: the fleet cannot tell that
  change from the hosts' spread (a load shift on two of three hosts flags every function there, both ways).
* **Magnitude** = the median of the per-host relative magnitudes over every voting host (flagged or not),
  with a percentile **bootstrap CI over hosts** (hosts resampled with replacement; seeded, hosts taken in
  name order so the result does not depend on the order they were given in).
* **Share of the metric change** = Σ_h exclusive_h · magnitude_h / Σ_h Δmetric_h over the voting hosts that
  have both numbers: the function's own (exclusive) time per run, scaled by its relative change, as a
  fraction of the change of the metric per run (both in the same unit, e.g. ns per run). It ranks functions
  by how much of the application's change they can explain; NaN when the metric did not change or the
  numbers are missing.

References
----------
B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall, 1993, ch. 13 (percentile
intervals).
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiho.detect._base import Change, State
from quiho.errors import UsageError

__all__ = ["FleetFunctionVerdict", "fleet_function_verdicts"]

#: kinds in the order a tie between them is broken (simplest shape first)
_KIND_ORDER = ("constant", "logarithmic", "sqrt", "linear", "quadratic", "cubic", "exponential", "localized",
               "other")


@dataclass(frozen=True)
class FleetFunctionVerdict:
    """The fleet's verdict on one function.

    Attributes
    ----------
    function : str
    verdict : State
        ``degradation`` / ``optimization`` (a strict majority of the voting hosts flagged it in that
        direction), ``no-change`` (a strict majority did not flag it) or ``not-meaningful`` (no strict
        majority, fewer than ``min_hosts`` hosts, or a majority for a change whose CI over hosts includes 0).
    kind : str
        The most frequent change kind among the hosts flagged in the verdict's direction; ``""`` otherwise.
    magnitude : float
        Median relative change over the voting hosts (0.2 = 20 % slower); NaN without voting hosts.
    ci : tuple of float
        Percentile bootstrap interval of that median over hosts (NaN, NaN with fewer than 2 hosts).
    hosts_flagged : int
        Hosts flagged in the verdict's direction; for ``no-change``/``not-meaningful``, hosts flagged in
        either direction.
    hosts : int
        Voting hosts: those that traced the function and got a meaningful per-host result.
    share : float
        Fraction of the metric change the function explains (see the module docstring); NaN if unknown.
    degradations, optimizations : int
        Hosts flagged in each direction.
    not_meaningful_hosts : tuple of str
        Hosts that traced the function but whose own verdict was ``not-meaningful`` (too few calls ...).
    reason : str
        Why the verdict is what it is, in words.
    """

    function: str
    verdict: State
    kind: str
    magnitude: float
    ci: tuple[float, float]
    hosts_flagged: int
    hosts: int
    share: float
    degradations: int
    optimizations: int
    not_meaningful_hosts: tuple[str, ...]
    reason: str

    @property
    def flagged(self) -> bool:
        """True for a fleet degradation or optimization."""
        return self.verdict in (State.DEGRADATION, State.OPTIMIZATION)

    def to_dict(self) -> dict[str, Any]:
        """The ``report.json`` entry: ``{function, verdict, kind, magnitude, ci, hosts_flagged, hosts, share, reason}``.

        Non-finite numbers become ``null``.
        """

        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        return {
            "function": self.function, "verdict": self.verdict.value, "kind": self.kind,
            "magnitude": num(self.magnitude), "ci": [num(self.ci[0]), num(self.ci[1])],
            "hosts_flagged": self.hosts_flagged, "hosts": self.hosts, "share": num(self.share), "reason": self.reason,
        }


def _per_host(changes_by_host: Mapping[str, Sequence[Change]]) -> dict[str, dict[str, Change]]:
    """``{function: {host: change}}``, checking one method and one verdict per (host, function)."""
    out: dict[str, dict[str, Change]] = {}
    methods = {c.method for cs in changes_by_host.values() for c in cs}
    if len(methods) > 1:
        raise UsageError(f"fleet verdicts combine one detector at a time, got {', '.join(sorted(methods))}")
    for host, changes in changes_by_host.items():
        for c in changes:
            slot = out.setdefault(c.function, {})
            if host in slot:
                raise UsageError(f"host {host!r} has two verdicts for function {c.function!r}")
            slot[host] = c
    return out


def _vote(votes: list[State], min_hosts: int) -> tuple[State, str]:
    n = len(votes)
    if n < min_hosts:
        return State.NOT_MEANINGFUL, f"{n} host(s) with a meaningful result; a fleet verdict needs {min_hosts}"
    tally = Counter(State.NO_CHANGE if v not in (State.DEGRADATION, State.OPTIMIZATION) else v for v in votes)
    option, count = max(tally.items(), key=lambda kv: kv[1])
    if 2 * count <= n:
        parts = ", ".join(f"{tally[s]} {s.value}" for s in (State.DEGRADATION, State.OPTIMIZATION, State.NO_CHANGE))
        return State.NOT_MEANINGFUL, f"hosts disagree, no majority of {n}: {parts}"
    return option, f"{count} of {n} hosts: {option.value}"


def _kind(flagged: list[Change]) -> str:
    counts = Counter(c.kind for c in flagged)
    rank = {k: i for i, k in enumerate(_KIND_ORDER)}
    return min(counts, key=lambda k: (-counts[k], rank.get(k, len(rank)), k)) if counts else ""


def _bootstrap_median(m: np.ndarray, n_boot: int, confidence: float, rng: np.random.Generator) -> tuple[float, float]:
    if m.size < 2:
        return float("nan"), float("nan")
    idx = rng.integers(0, m.size, size=(n_boot, m.size))
    meds = np.median(m[idx], axis=1)
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(meds, [a, 1.0 - a])
    return float(lo), float(hi)


def _rng(random_state: int | None, function: str) -> np.random.Generator:
    """The function's own bootstrap generator: its interval does not depend on which other functions exist."""
    if random_state is None:
        return np.random.default_rng()
    return np.random.default_rng([int(random_state), zlib.crc32(function.encode("utf-8", "surrogatepass"))])


def _share(hosts: list[str], mags: dict[str, float], function: str,
           exclusive_ns: Mapping[str, Mapping[str, float]] | None,
           metric_change: Mapping[str, float] | None) -> float:
    if exclusive_ns is None or metric_change is None:
        return float("nan")
    num = den = 0.0
    used = 0
    for h in hosts:
        ex, dm = exclusive_ns.get(h, {}).get(function), metric_change.get(h)
        if ex is None or dm is None or not (math.isfinite(ex) and math.isfinite(dm)):
            continue
        num += ex * mags[h]
        den += dm
        used += 1
    return num / den if used and den != 0.0 else float("nan")


def fleet_function_verdicts(
    changes_by_host: Mapping[str, Sequence[Change]],
    exclusive_ns: Mapping[str, Mapping[str, float]] | None = None,
    metric_change: Mapping[str, float] | None = None,
    *,
    min_hosts: int = 3,
    confidence: float = 0.95,
    n_boot: int = 2000,
    random_state: int | None = 0,
    min_effect: float = 0.05,
) -> list[FleetFunctionVerdict]:
    """Combine per-host verdicts of one detector into one verdict per function (see the module docstring).

    Parameters
    ----------
    changes_by_host : mapping of str to sequence of Change
        Per host, the detector's verdicts (``quiho.detect.detect(baseline, target, ["joint"])`` on that
        host's traces). A function absent from a host's list was not traced there.
    exclusive_ns : mapping of str to mapping of str to float, optional
        Per host, per function: the function's exclusive time per baseline run, in the unit of
        ``metric_change`` (normally ns).
    metric_change : mapping of str to float, optional
        Per host: target minus baseline of the application metric per run (same unit), from untraced runs.
    min_hosts : int, default 3
        Fewest voting hosts for a verdict other than ``not-meaningful``.
    confidence : float, default 0.95
        Level of the bootstrap interval.
    n_boot : int, default 2000
        Bootstrap resamples.
    random_state : int or None, default 0
        Seed of the bootstrap.

    Returns
    -------
    list of FleetFunctionVerdict
        Sorted by function name.

    Raises
    ------
    UsageError
        Verdicts of several methods mixed, a host with two verdicts for one function, or bad parameters.

    Examples
    --------
    >>> from quiho.detect import Change, State
    >>> def host(state, mag):
    ...     return [Change("f", "joint", state, "constant", mag, 0.99, "1-p", 0.01)]
    >>> by_host = {f"h{i}": host(State.DEGRADATION, 0.2 + 0.01 * i) for i in range(4)}
    >>> by_host["h4"] = host(State.NO_CHANGE, 0.01)
    >>> (v,) = fleet_function_verdicts(by_host)
    >>> v.verdict.value, v.hosts_flagged, v.hosts, round(v.magnitude, 2)
    ('degradation', 4, 5, 0.21)
    """
    if isinstance(min_hosts, bool) or not isinstance(min_hosts, int) or min_hosts < 1:
        raise UsageError(f"min_hosts must be a positive integer, got {min_hosts!r}")
    if not (0.0 < confidence < 1.0):
        raise UsageError(f"confidence must be in (0, 1), got {confidence!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise UsageError(f"n_boot must be a positive integer, got {n_boot!r}")
    if random_state is not None and (isinstance(random_state, bool) or not isinstance(random_state, int)
                                     or random_state < 0):
        raise UsageError(f"random_state must be a non-negative integer or None, got {random_state!r}")
    out = []
    for function, by_host in sorted(_per_host(changes_by_host).items()):
        hosts = sorted(h for h, c in by_host.items()
                       if c.state is not State.NOT_MEANINGFUL and math.isfinite(c.magnitude))
        skipped = tuple(sorted(set(by_host) - set(hosts)))
        mags = {h: float(by_host[h].magnitude) for h in hosts}
        m = np.array([mags[h] for h in hosts], dtype=float)
        verdict, reason = _vote([by_host[h].state for h in hosts], min_hosts)
        deg = sum(by_host[h].state is State.DEGRADATION for h in hosts)
        opt = sum(by_host[h].state is State.OPTIMIZATION for h in hosts)
        ci = _bootstrap_median(m, n_boot, confidence, _rng(random_state, function))
        if verdict in (State.DEGRADATION, State.OPTIMIZATION) and not (ci[0] > 0 or ci[1] < 0):
            verdict, reason = State.NOT_MEANINGFUL, (
                f"{reason}, but the {confidence:.0%} CI over hosts ({ci[0]:+.1%} … {ci[1]:+.1%}) includes no change")
        if verdict in (State.DEGRADATION, State.OPTIMIZATION) and abs(float(np.median(m))) < min_effect:
            verdict, reason = State.NO_CHANGE, (
                f"{reason}, but the median change {float(np.median(m)):+.1%} is below the {min_effect:.0%} floor")
        if verdict in (State.DEGRADATION, State.OPTIMIZATION):
            same = [by_host[h] for h in hosts if by_host[h].state is verdict]
            kind, n_flagged = _kind(same), len(same)
        else:
            kind, n_flagged = "", deg + opt
        out.append(FleetFunctionVerdict(
            function, verdict, kind, float(np.median(m)) if m.size else float("nan"), ci, n_flagged, len(hosts),
            _share(hosts, mags, function, exclusive_ns, metric_change), deg, opt, skipped, reason,
        ))
    return out
