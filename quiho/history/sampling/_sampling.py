"""Choosing which revisions to measure: active (max posterior sigma), random, and GP bisection."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from quiho._stats import pooled_t_p, welch_p
from quiho.errors import BuildFailed, UsageError
from quiho.history.sampling._gp import HistoryGP

__all__ = ["SamplingPlan", "BisectPlan", "SamplingResult", "BisectResult", "sample_revisions", "gp_bisect",
           "plain_bisection_builds", "STRATEGIES"]

#: ``measure(position) -> repetitions``; raises :class:`~quiho.errors.BuildFailed` to skip a revision.
Measure = Callable[[int], np.ndarray]

STRATEGIES = ("active", "random")

#: how a result names a revision: its position (:func:`gp_bisect`) or its name (a git commit)
Rev = TypeVar("Rev")


@dataclass(frozen=True)
class SamplingPlan:
    """How :func:`sample_revisions` chooses what to measure; checked when sampling starts.

    Parameters
    ----------
    budget : int
        Most revisions to try in total, earlier (resumed) ones included; at least 2.
    strategy : {"active", "random"}, default "active"
    kernel : str, default "brownian"
        GP kernel, one of :data:`~quiho.history.KERNELS`.
    stop_sigma : float or None, default None
        Stop once the largest posterior sigma of an unmeasured revision is at most this (metric units).
    random_state : int or None, default 0
    """

    budget: int
    strategy: str = "active"
    kernel: str = "brownian"
    stop_sigma: float | None = None
    random_state: int | None = 0


@dataclass(frozen=True)
class BisectPlan:
    """How :func:`gp_bisect` searches and judges a change.

    Parameters
    ----------
    alpha : float, default 0.01
        Largest p-value of a meaningful change (the t-test of :func:`gp_bisect`'s verdict).
    kernel : str, default "brownian"
    max_builds : int, default 64
        Most new builds; the answer is then a range.
    pool : int or None, default None
        Measured revisions on each side of the change whose means the verdict compares (None: all of them).
    random_state : int or None, default 0
    summary : {"median", "mean"}, default "median"
        What a revision's repetitions stand for, in the bracket's GP and the verdict's test: their median (one
        outlying repetition does not move the revision), or their mean.
    confirm : bool, default False
        When the verdict reads a meaningful change, measure the revisions on both sides of it once more (two more
        builds, beyond ``max_builds``) and test again with those measurements in place of the first; the change
        must hold in both tests (p is the larger): a build measured in a passing machine state is not a change.
        Fewer wrong commits and false alarms under build noise, and fewer right answers too (docs/design.md). A
        revision that cannot be built again leaves the change unconfirmed, as its ``reason`` says.
    """

    alpha: float = 0.01
    kernel: str = "brownian"
    max_builds: int = 64
    pool: int | None = None
    random_state: int | None = 0
    summary: str = "median"
    confirm: bool = False

    def __post_init__(self) -> None:
        if self.summary not in ("mean", "median"):
            raise UsageError(f"unknown revision summary {self.summary!r}: use mean or median")


@dataclass(frozen=True)
class SamplingResult:
    """Outcome of :func:`sample_revisions`.

    ``measured`` maps position -> mean value; ``failed`` position -> reason;
    ``mean``/``sigma`` are the final GP posterior at every position (NaN if
    fewer than two revisions could be measured); ``stop_reason`` is
    ``"stop-sigma"``, ``"budget"`` or ``"exhausted"``; ``new_builds`` counts
    revisions built in this call (failures included); ``loo_mape`` is the
    leave-one-out MAPE (%) of the final GP at the measured revisions
    (:meth:`HistoryGP.loo_mape`).
    """

    n: int
    measured: Mapping[int, float]
    failed: Mapping[int, str]
    mean: np.ndarray
    sigma: np.ndarray
    max_sigma: float
    stop_reason: str
    new_builds: int
    order: tuple[int, ...] = field(default=())
    loo_mape: float = float("nan")


def noise_of_means(samples: Sequence[np.ndarray]) -> np.ndarray | None:
    """Variance of each mean from its repetitions, or None if any revision has a single value.

    Each revision's variance is floored at the median variance of all
    revisions, so three equal repetitions do not claim zero noise.
    """
    if not samples or any(s.size < 2 for s in samples):
        return None
    v = np.array([s.var(ddof=1) / s.size for s in samples])
    return np.maximum(v, float(np.median(v)))


class _Refitter:
    """Fits the GP after each measurement; re-optimises hyperparameters only as the data grow by 50 %.

    Between optimisations the last hyperparameters are reused (one Cholesky
    per step), which keeps active sampling of long histories fast.
    """

    def __init__(self, n: int, kernel: str, random_state: int | None) -> None:
        self.n, self.kernel, self.random_state = n, kernel, random_state
        self.fixed: Any = None
        self.optimised_at = 0
        self.last: HistoryGP | None = None

    def __call__(self, samples: Mapping[int, np.ndarray], at: np.ndarray | None = None, noise_floor: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray]:
        where = np.arange(self.n) if at is None else at
        if len(samples) < 2:
            return np.full(where.size, np.nan), np.full(where.size, np.inf)
        pos = np.array(sorted(samples))
        reopt = self.fixed is None or len(pos) < 8 or len(pos) >= 1.5 * self.optimised_at
        gp = HistoryGP(self.kernel, n_restarts_optimizer=0, random_state=self.random_state,
                       fixed_kernel=None if reopt else self.fixed)
        noise = noise_of_means([samples[p] for p in pos])
        if noise is not None:
            noise = np.maximum(noise, noise_floor)
        gp.fit(pos, [float(samples[p].mean()) for p in pos], noise_var=noise, span=max(self.n - 1, 1), origin=0)
        if reopt and gp.constant_ is None:
            self.fixed, self.optimised_at = gp.gpr_.kernel_, len(pos)
        self.last = gp
        return gp.predict(where)


def _fit_predict(n: int, samples: Mapping[int, np.ndarray], kernel: str, random_state: int | None,
                 at: np.ndarray | None = None, noise_floor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    return _Refitter(n, kernel, random_state)(samples, at, noise_floor)


def between_revision_var(means: np.ndarray) -> float:
    """Variance of one revision's mean as the spread between revisions shows it (0 for fewer than three).

    ``(1.4826 * median |adjacent difference|)**2 / 2``: robust to the few differences that are real changes,
    and it sees what repetitions run back to back cannot (the machine's state changing between builds).
    """
    d = np.abs(np.diff(np.asarray(means, dtype=float)))
    if d.size < 2:
        return 0.0
    return float((1.4826 * np.median(d)) ** 2 / 2)


def sample_revisions(measure: Measure, n: int, plan: SamplingPlan, *,
                     known: Mapping[int, Sequence[float] | np.ndarray] | None = None,
                     failed: Mapping[int, str] | None = None) -> SamplingResult:
    """Measure revisions ``0..n-1`` one at a time until the GP knows the whole history.

    ``active`` measures the first, last and middle revision, then always the
    unmeasured revision with the largest posterior sigma, refitting the GP
    after each; it stops when that sigma is at most ``plan.stop_sigma`` (units of
    the metric) or ``plan.budget`` revisions have been tried. ``random`` measures
    the endpoints and then uniformly random revisions (the baseline).
    ``known``/``failed`` are earlier results (resuming): they count towards
    the budget and are not rebuilt. A :class:`~quiho.errors.BuildFailed` from
    ``measure`` marks the revision failed (never retried) and sampling continues.

    References
    ----------
    .. [1] S. Mühlbauer, S. Apel, N. Siegmund, ASE 2019 (active sampling by maximum posterior variance).
    """
    budget, strategy, stop_sigma = plan.budget, plan.strategy, plan.stop_sigma
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if budget < 2:
        raise UsageError(f"budget must be at least 2 revisions, got {budget}")
    if n < 1:
        raise UsageError("no revisions to sample")
    measured: dict[int, np.ndarray] = {int(k): np.asarray(v, dtype=float).ravel() for k, v in (known or {}).items()}
    bad = dict(failed or {})
    rng = np.random.default_rng(plan.random_state)
    order: list[int] = []
    new = 0
    pending = [p for p in dict.fromkeys((0, n - 1, (n - 1) // 2)) if p not in measured and p not in bad]
    random_order = [int(p) for p in rng.permutation(n)]
    stop_reason = "exhausted"
    refit = _Refitter(n, plan.kernel, plan.random_state)
    mean, sigma = refit(measured)
    while True:
        if len(measured) + len(bad) >= min(budget, n):
            stop_reason = "budget" if len(measured) + len(bad) < n else "exhausted"
            break
        free = [p for p in range(n) if p not in measured and p not in bad]
        if not free:
            break
        if pending:
            nxt = pending.pop(0)
        elif strategy == "random":
            nxt = next(p for p in random_order if p not in measured and p not in bad)
        else:
            s_free = sigma[free]
            if stop_sigma is not None and len(measured) >= 2 and float(np.max(s_free)) <= stop_sigma:
                stop_reason = "stop-sigma"
                break
            nxt = free[int(np.argmax(s_free))]
        new += 1
        order.append(nxt)
        try:
            measured[nxt] = np.asarray(measure(nxt), dtype=float).ravel()
        except BuildFailed as exc:
            bad[nxt] = str(exc)
            continue
        if strategy == "active":  # random needs the posterior only at the end
            mean, sigma = refit(measured)
    if strategy == "random":
        mean, sigma = refit(measured)
    free = [p for p in range(n) if p not in measured and p not in bad]
    max_sigma = float(np.max(sigma[free])) if free and len(measured) >= 2 else 0.0
    means = {p: float(v.mean()) for p, v in sorted(measured.items())}
    loo = refit.last.loo_mape() if refit.last is not None else float("nan")
    return SamplingResult(n, means, bad, mean, sigma, max_sigma, stop_reason, new, tuple(order), loo)


def plain_bisection_builds(n: int) -> int:
    """Builds plain bisection needs over ``n`` revisions: both endpoints plus ``ceil(log2(n - 1))``."""
    return 2 + math.ceil(math.log2(max(n - 1, 1))) if n > 1 else 1


@dataclass(frozen=True)
class BisectResult(Generic[Rev]):
    """Outcome of a GP bisection over ``n_revisions`` revisions.

    :func:`gp_bisect` names revisions by position (``series`` is empty);
    :func:`~quiho.history.sources.bisect_git_history` by commit, over a stored
    series (:meth:`named`). ``first_bad`` is the first revision of the new
    level (at position ``first_bad_index``) and ``last_good`` the last one
    before it (the one before ``first_bad`` unless failed builds in between
    make the answer a range); ``skipped`` are the revisions whose build failed.
    ``magnitude`` is relative, ``p_value`` a t-test of the means of the
    measured revisions on each side (up to ``pool``), Bonferroni-adjusted for
    the search. ``new_builds`` counts every build of this call, the
    ``confirm_builds`` of :attr:`BisectPlan.confirm` among them.
    ``meaningful`` is False when no jump stands out from the noise.
    """

    series: str
    n_revisions: int
    first_bad: Rev | None
    last_good: Rev | None
    first_bad_index: int | None
    before: float
    after: float
    magnitude: float
    p_value: float
    new_builds: int
    reused: int
    plain_bisection_builds: int
    skipped: tuple[Rev, ...]
    meaningful: bool
    reason: str = ""
    confirm_builds: int = 0

    def named(self: BisectResult[int], series: str, revisions: Sequence[str]) -> BisectResult[str]:
        """The same result over ``series``, each position replaced by its name in ``revisions``."""
        def name(p: int | None) -> str | None:
            return revisions[p] if p is not None else None

        return BisectResult(series, self.n_revisions, name(self.first_bad), name(self.last_good), self.first_bad_index,
                            self.before, self.after, self.magnitude, self.p_value, self.new_builds, self.reused,
                            self.plain_bisection_builds, tuple(revisions[p] for p in self.skipped), self.meaningful,
                            self.reason, self.confirm_builds)


class _Builds:
    """The revisions measured so far, and the builds of this bisection (failures recorded and skipped)."""

    def __init__(self, measure: Measure, known: Mapping[int, Sequence[float] | np.ndarray] | None,
                 failed: Mapping[int, str] | None) -> None:
        self.measure = measure
        self.samples: dict[int, np.ndarray] = {int(k): np.asarray(v, dtype=float) for k, v in (known or {}).items()}
        self.bad = dict(failed or {})
        self.reused = len(self.samples)
        self.new = 0
        self.skipped: list[int] = []
        self.again: dict[int, np.ndarray] = {}  # a second measurement of a revision (BisectPlan.confirm)
        self.tried_again: list[int] = []  # the revisions built for it, those that failed among them

    def build(self, p: int) -> bool:
        self.new += 1
        try:
            self.samples[p] = np.asarray(self.measure(p), dtype=float)
            return True
        except BuildFailed as exc:
            self.bad[p] = str(exc)
            self.skipped.append(p)
            return False

    def measure_again(self, p: int) -> None:
        """Measure revision ``p`` once more (a failed rebuild leaves its first measurement alone)."""
        self.new += 1
        self.tried_again.append(p)
        with contextlib.suppress(BuildFailed):
            self.again[p] = np.asarray(self.measure(p), dtype=float)


def gp_bisect(measure: Measure, n: int, plan: BisectPlan = BisectPlan(), *,
              known: Mapping[int, Sequence[float] | np.ndarray] | None = None,
              failed: Mapping[int, str] | None = None) -> BisectResult[int]:
    """Locate the largest level change with as few new builds as possible.

    Starts from every revision already measured (``known``: position ->
    repetitions, e.g. from :func:`sample_revisions`) plus the endpoints. Each
    step fits the GP (Brownian kernel by default, measurement noise from the
    repetitions) to the measured means and brackets the change between the two
    adjacent measured revisions whose posterior means differ most in units of
    their posterior sigma, on the log scale for a positive metric, each
    revision's noise at least the spread between revisions (with single
    values, whose noise is unknown, the largest raw difference); it then
    builds the revision nearest the middle of that bracket. It stops when the
    bracket holds no buildable revision. Reusing earlier measurements is where
    the saving over plain bisection comes from; with nothing known it costs
    the same as bisection. The verdict compares the means of the measured
    revisions on each side of the change (up to ``plan.pool``; see
    :func:`_change_p`): a build's repetitions share its machine state, so they
    are not independent evidence of a change; and the bracket was the largest
    of the m - 1 jumps between m measured revisions, so its p-value is
    multiplied by m - 1 (Bonferroni). With ``plan.confirm``, a change the verdict
    reads as meaningful is tested again with its two revisions measured once
    more in place of their first measurements, and must hold in both tests (an
    intersection-union test): a build measured in another machine state can
    stand alone on its side, where the test takes the other side's spread for
    its own.

    References
    ----------
    .. [1] S. Mühlbauer, S. Apel, N. Siegmund, ASE 2019.
    """
    if n < 2:
        raise UsageError("bisection needs at least two revisions")
    builds = _Builds(measure, known, failed)
    for p in (0, n - 1):
        if p not in builds.samples and p not in builds.bad:
            builds.build(p)
    capped = False
    while True:
        if len(builds.samples) < 2:
            return BisectResult("", n, None, None, None, float("nan"), float("nan"), float("nan"), float("nan"),
                                builds.new, builds.reused, plain_bisection_builds(n), tuple(builds.skipped), False,
                                "not meaningful: fewer than two revisions could be measured")
        lo, hi = _bracket(n, builds.samples, plan.kernel, plan.random_state, plan.summary)
        inside = [p for p in range(lo + 1, hi) if p not in builds.bad]
        if not inside:
            break
        if builds.new >= plan.max_builds:
            capped = True
            break
        mid = (lo + hi) / 2
        builds.build(min(inside, key=lambda p: (abs(p - mid), p)))
    return _bisect_verdict(builds, (lo, hi), n, plan, capped)


def _centred(x: np.ndarray, summary: str) -> np.ndarray:
    """A revision's repetitions moved so that their mean is their ``summary`` (mean: as they are), spread kept."""
    return x - x.mean() + np.median(x) if summary == "median" else x


def _bracket(n: int, samples: Mapping[int, np.ndarray], kernel: str, random_state: int | None,
             summary: str) -> tuple[int, int]:
    """The two adjacent measured revisions between which the GP mean jumps most (in posterior sigmas).

    Positive values are compared on the log scale, where a performance metric's noise is about the same at
    every level. Each revision's noise is at least :func:`between_revision_var`: repetitions run back to back
    share the machine's state, so their spread alone makes a small jump look certain. A revision stands for its
    repetitions' ``summary`` (:func:`_centred`; their spread is the GP's noise).
    """
    pos = sorted(samples)
    if all(np.all(samples[p] > 0) for p in pos):
        samples = {p: np.log(samples[p]) for p in pos}
    samples = {p: _centred(samples[p], summary) for p in pos}
    means = np.array([samples[p].mean() for p in pos])
    if noise_of_means([samples[p] for p in pos]) is None:
        # single values: a GP with a fitted white-noise term smooths the step away and sent the search
        # into empty brackets; compare the measured values themselves
        j = int(np.argmax(np.abs(np.diff(means))))
        return pos[j], pos[j + 1]
    mu, sd = _fit_predict(n, dict(samples), kernel, random_state, at=np.array(pos),
                          noise_floor=between_revision_var(means))
    # floor sigma at a millionth of the level so noise-free data compare jumps by size, not by 0/0
    eps = 1e-6 * max(float(np.max(np.abs(mu))), 1e-300)
    jumps = np.abs(np.diff(mu)) / np.sqrt(sd[:-1] ** 2 + sd[1:] ** 2 + eps**2)
    j = int(np.argmax(jumps))
    return pos[j], pos[j + 1]


def _change_p(a: Sequence[np.ndarray], b: Sequence[np.ndarray], summary: str) -> float:
    """p-value of a level change between revisions ``a`` and ``b`` (their repetitions): a t-test of their centres.

    A revision's centre is the ``summary`` (mean or median) of its (log) repetitions.

    The unit is the revision, because repetitions run back to back share the build's machine state; on the log
    scale for a positive metric (as the bracket). With one revision a side, its repetitions are all there is
    (Welch test).
    """
    if len(a) + len(b) < 3:
        return welch_p(a[0], b[0])
    revs = [*a, *b]
    log = all(np.all(x > 0) for x in revs)
    centres = [float(_centred(np.log(x) if log else x, summary).mean()) for x in revs]
    return pooled_t_p(centres[:len(a)], centres[len(a):])


def _bisect_verdict(builds: _Builds, bracket: tuple[int, int], n: int, plan: BisectPlan, capped: bool
                    ) -> BisectResult[int]:
    """Levels and search-adjusted t-test of the measured revisions (up to ``plan.pool``) on each side of the bracket."""
    samples, (lo, hi), pool, alpha = builds.samples, bracket, plan.pool, plan.alpha
    note_cap = plan.max_builds if capped else None
    pos = sorted(samples)
    left, right = [q for q in pos if q <= lo], [q for q in pos if q >= hi]
    if pool is not None:
        left, right = left[-pool:], right[:pool]

    def test(again: Mapping[int, np.ndarray]) -> float:
        a = [again.get(p, samples[p]) for p in left]
        b = [again.get(p, samples[p]) for p in right]
        p_val = _change_p(a, b, plan.summary)
        return min(1.0, p_val * max(len(pos) - 1, 1)) if np.isfinite(p_val) else p_val

    p_val = test({})
    if plan.confirm and np.isfinite(p_val) and p_val <= alpha:
        for p in (left[-1], right[0]):
            builds.measure_again(p)
        p_val = max(p_val, test(builds.again))  # the change must hold with either measurement of both
    new, reused, skipped, n_again = builds.new, builds.reused, tuple(builds.skipped), len(builds.tried_again)
    a_revs = [samples[p] for p in left] + [builds.again[p] for p in left if p in builds.again]
    b_revs = [samples[p] for p in right] + [builds.again[p] for p in right if p in builds.again]
    before, after = float(np.concatenate(a_revs).mean()), float(np.concatenate(b_revs).mean())
    mag = (after - before) / abs(before) if before != 0 else float("nan")
    if not (np.isfinite(p_val) and p_val <= alpha):
        why = ("not meaningful: one value on each side of the change gives no p-value; use more repetitions"
               if not np.isfinite(p_val) else f"not meaningful: the largest jump has p={p_val:.3g} > alpha={alpha}"
               + (f" with revisions {left[-1]} and {right[0]} measured again" if n_again else ""))
        return BisectResult("", n, hi, lo, hi, before, after, mag, p_val, new, reused, plain_bisection_builds(n),
                            skipped, False, why, n_again)
    note = "" if hi - lo == 1 else (
        f"stopped at max_builds={note_cap}: the change is between {lo} and {hi}" if note_cap is not None
        else f"failed builds between {lo} and {hi}: the change is in that range")
    if lost := [str(p) for p in builds.tried_again if p not in builds.again]:
        which = f"revisions {lost[0]} and {lost[1]}" if len(lost) == 2 else f"revision {lost[0]}"
        note = "; ".join(filter(None, (note, f"not confirmed: {which} could not be built and measured again")))
    return BisectResult("", n, hi, lo, hi, before, after, mag, p_val, new, reused, plain_bisection_builds(n), skipped,
                        True, note, n_again)
