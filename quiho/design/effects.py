"""Axis sensitivities on a designed fleet: what each known factor does to each version and to each stressor.

The unit of replication is a *visit*: one host in one measurement round. A version's log metric is summarised
per visit by its minimum (interference only adds time to a run; a knob slows every run of its visit) and
regressed on the factors with a fixed effect per round (blocking: a slow minute of the machine hits every host of
its round alike and lands in the round effect, not in a factor). A factor's coefficient is its whole effect
between its reference and far level (:mod:`quiho.design.factors`), reported as a relative change of the metric
with a t interval from the residuals between visits.

The change between versions is the regression of the per-visit difference ``d = min log b - min log a`` on the
same design: the level change lands in the intercept, so a factor's coefficient is how much its effect changed.
Its p-value is a permutation test that needs no normality: within each visit the version labels are exchanged
after removing the level change fitted under "no factor effect changed" (the shift test's alignment,
:mod:`quiho.irup.shift`), which keeps every host- and round-level effect intact (Anderson & ter Braak 2003).
Several factors are tested at once, so a change counts only when its Holm-adjusted p is below ``alpha`` and its
size is at least the floor. The factors that move the two versions' runs together (their pooled effect's
interval excludes 0) are tested at a full share of the level, the others together at one share (a weighted Holm):
the pooled runs of a visit are the same under every label exchange, so weights chosen by them leave the
permutation p exact (independent filtering, Bourgon et al. 2010), and a change that reverses between the
versions, which pools to nothing, can still be found.

Every stressor of the visits' fingerprints gets the same regression; the classes of the stressors a factor moves
(beyond the noise, and more than it moves the cpu class) say which resource class the factor loads. That ties the
version effects to resources: a version moved by a memory axis leans on memory.

References
----------
Anderson, M. J., ter Braak, C. J. F. (2003). Permutation tests for multi-factorial analysis of variance.
J. Stat. Comput. Simul. 73(2), 85-113.
Bourgon, R., Gentleman, R., Huber, W. (2010). Independent filtering increases detection power for
high-throughput experiments. PNAS 107(21), 9546-9551.
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Statist. 6(2), 65-70.
Montgomery, D. C. (2017). Design and Analysis of Experiments, 9th ed., ch. 4 (blocking) and 6 (2^k designs). Wiley.
Phipson, B., Smyth, G. K. (2010). Permutation p-values should never be zero. Stat. Appl. Genet. Mol. Biol. 9(1).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from quiho._factors import FACTOR_BY_NAME, FACTORS
from quiho._text import json_number
from quiho.design.factors import FactorTable
from quiho.errors import UsageError

__all__ = ["Effect", "VersionEffects", "AxisClass", "DesignSettings", "version_effects", "effect_changes",
           "stressor_effects", "axis_classes", "visits", "FALLBACK_CLASSES"]

#: What the local fleet's knobs load: the calibration measured it on this machine with a memory and a CPU probe
#: (a quota is kept as a speed axis whose levels slow both probes as they say; page size and co-runner only when
#: they move the memory probe beyond 3 SE and more than the CPU probe).
FALLBACK_CLASSES: dict[str, str] = {f.name: f.resource for f in FACTORS}
#: The calibration probe that showed a class's axis move its resource (the classes beyond CPU).
_PROBE_OF_CLASS: dict[str, str] = {f.resource: f.probe for f in FACTORS if f.resource != "cpu"}


#: How a visit's runs of a version may be summarised (:attr:`DesignSettings.summary`).
SUMMARIES = ("median", "min")
#: Where a screened-out factor's contrast goes (:attr:`DesignSettings.untested`).
UNTESTED = ("residual", "model", "weighted")


@dataclass(frozen=True)
class DesignSettings:
    """Settings of the design analysis: test level, smallest effect that counts, permutations, seed."""

    alpha: float = 0.05
    floor: float = 0.05
    permutations: int = 1999
    random_state: int = 0
    #: Test only the factors that move the versions' pooled runs (False: every factor, the rule before 2026-12).
    screen: bool = True
    #: With ``screen``, where an untested factor's contrast goes: ``"model"`` (its own column, so a change it
    #: carries cannot widen the tested ones' intervals), ``"residual"`` (their noise, a degree of freedom each) or
    #: ``"weighted"`` (its column, and tested too: the screened-out factors share one screened factor's weight in
    #: a weighted Holm, so a change that reverses between the versions, which pools to nothing, can still be found).
    untested: str = "weighted"
    #: A version's runs in one visit are summarised by their ``"min"`` (interference only adds time) or ``"median"``.
    summary: str = "min"
    #: How many looks at the data the level is split over (a profile's second pass over the hosts when the first
    #: is inconclusive): each look tests at ``alpha / looks``, so a false ``different`` stays at most ``alpha``.
    looks: int = 1

    def __post_init__(self) -> None:
        if self.summary not in SUMMARIES:
            raise UsageError(f"unknown visit summary {self.summary!r}: use one of {', '.join(SUMMARIES)}")
        if self.untested not in UNTESTED:
            raise UsageError(f"unknown place for untested factors {self.untested!r}: use one of {', '.join(UNTESTED)}")
        if self.looks < 1:
            raise UsageError(f"looks must be 1 or more, not {self.looks}")

    @property
    def level(self) -> float:
        """The Holm level of one look: ``alpha / looks``."""
        return self.alpha / self.looks


@dataclass(frozen=True)
class Effect:
    """One factor's effect on the log metric (or on its change between versions), with its evidence.

    ``estimate``, ``se``, ``ci_low``/``ci_high``: log scale (95 % t interval, ``df`` degrees of freedom);
    ``p_value``: t-test (version effects) or permutation p (changes); ``p_adjusted``: Holm over the factors.
    """

    factor: str
    estimate: float
    se: float
    df: int
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float | None = None
    #: False for a change left out of the test because the factor moved neither version (no p then).
    tested: bool = True
    #: Its share in the weighted Holm: 1, or less for a factor that moves neither version's pooled runs.
    weight: float = 1.0

    @property
    def pct(self) -> float:
        """The effect as a relative change (0.25 = the metric 25 % higher at the far level)."""
        return math.expm1(self.estimate)

    def excludes_zero(self) -> bool:
        """True when the 95 % interval does not contain 0."""
        return self.ci_low > 0 or self.ci_high < 0

    def beyond(self, floor: float) -> bool:
        """Interval excludes 0 and the estimate is at least ``floor`` (relative) away from no effect."""
        return self.excludes_zero() and abs(self.estimate) >= math.log1p(floor)

    def shown_beyond(self, floor: float) -> bool:
        """The whole interval outside ±``floor``: the effect is shown to be at least that large."""
        step = math.log1p(floor)
        return self.ci_low > step or self.ci_high < -step

    def within(self, floor: float) -> bool:
        """The whole interval inside ±``floor`` (the effect is shown to be small)."""
        return -math.log1p(floor) < self.ci_low and self.ci_high < math.log1p(floor)

    def text(self) -> str:
        """``"+25 % [+16, +35]"``: the relative effect and its 95 % interval, in percent."""
        lo, hi = math.expm1(self.ci_low), math.expm1(self.ci_high)
        return f"{100 * self.pct:+.0f} % [{100 * lo:+.0f}, {100 * hi:+.0f}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (relative effects; log values kept for recomputation)."""
        return {"factor": self.factor, "effect": json_number(self.pct, 4),
                "ci": [json_number(math.expm1(self.ci_low), 4), json_number(math.expm1(self.ci_high), 4)],
                "log_effect": json_number(self.estimate, 6), "log_se": json_number(self.se, 6), "df": self.df,
                "p_value": json_number(self.p_value, 5),
                "p_adjusted": None if self.p_adjusted is None else json_number(self.p_adjusted, 5),
                "tested": self.tested, "weight": json_number(self.weight, 4)}


@dataclass(frozen=True)
class VersionEffects:
    """A version's sensitivity to every factor, from ``visits`` visit means (``runs`` runs)."""

    version: str
    effects: tuple[Effect, ...]
    visits: int
    runs: int
    rounds: int
    residual_sd: float
    df: int
    f_p: float

    def by_factor(self) -> dict[str, Effect]:
        """Effects keyed by factor name."""
        return {e.factor: e for e in self.effects}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"version": self.version, "effects": [e.to_dict() for e in self.effects], "visits": self.visits,
                "runs": self.runs, "rounds": self.rounds, "residual_sd": json_number(self.residual_sd, 4),
                "df": self.df, "factors_p": json_number(self.f_p, 5)}


@dataclass(frozen=True)
class AxisClass:
    """The resource class a factor loads, from its effects on the fingerprint's stressors."""

    factor: str
    resource: str
    class_effects: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    reason: str = ""
    #: whether the factor's on level slows what leans on its resource (None: not known)
    slows: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (class effects as relative changes with their SE on the log scale)."""
        return {"factor": self.factor, "resource": self.resource, "reason": self.reason, "slows": self.slows,
                "class_effects": {c: {"effect": json_number(math.expm1(e), 4), "log_se": json_number(s, 5)}
                                  for c, (e, s) in self.class_effects.items()}}


def visits(runs: pd.DataFrame) -> pd.Series:
    """The visit of each run: ``host`` and, when the runs were measured in rounds, ``round``."""
    rnd = runs["round"].fillna(0).astype(int).astype(str) if "round" in runs else pd.Series("0", index=runs.index)
    return runs["host"].astype(str) + "\x1f" + rnd


def _design(hosts: list[str], rounds: list[str], factors: FactorTable) -> tuple[np.ndarray, list[int]]:
    """Columns: intercept, one dummy per round after the first, the factors; and the factors' column indices."""
    levels = sorted(set(rounds))
    dummies = [[1.0 if r == lev else 0.0 for r in rounds] for lev in levels[1:]]
    F = factors.matrix(hosts)
    Z = np.column_stack([np.ones(len(hosts))] + dummies + [F]) if len(hosts) else np.zeros((0, 1))
    first = 1 + len(levels) - 1
    return Z, list(range(first, first + F.shape[1]))


def _ols(Z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Coefficients, their standard errors, the residual SD and the residual degrees of freedom."""
    n, p = Z.shape
    ZtZ_inv = np.linalg.pinv(Z.T @ Z)
    beta = ZtZ_inv @ Z.T @ y
    df = int(n - np.linalg.matrix_rank(Z))
    resid = y - Z @ beta
    s2 = float(resid @ resid / df) if df > 0 else float("nan")
    return beta, np.sqrt(np.maximum(np.diag(ZtZ_inv) * s2, 0.0)), math.sqrt(s2) if df > 0 else float("nan"), df


def _t_effect(name: str, est: float, se: float, df: int) -> Effect:
    from scipy import stats

    if df <= 0 or not np.isfinite(se) or se == 0:
        return Effect(name, est, float("nan"), df, float("-inf"), float("inf"), float("nan"))
    q = float(stats.t.ppf(0.975, df))
    p = float(2 * stats.t.sf(abs(est / se), df))
    return Effect(name, est, se, df, est - q * se, est + q * se, p)


def pooled_effect(a: Effect, b: Effect) -> Effect:
    """Two versions' effects of one factor as one common effect: the inverse-variance weighted mean, t interval.

    Weighted because a common effect's least-squares estimate weighs each version by its precision: an equal-weight
    mean lets a noisy version's interval swamp a precise one's. An estimate without a finite positive SE gives the
    plain mean (no weight can be read from it).
    """
    if all(math.isfinite(e.se) and e.se > 0 for e in (a, b)):
        wa, wb = a.se ** -2, b.se ** -2
        est, se = (wa * a.estimate + wb * b.estimate) / (wa + wb), (wa + wb) ** -0.5
    else:
        est, se = (a.estimate + b.estimate) / 2, math.hypot(a.se, b.se) / 2
    return _t_effect(a.factor, est, se, min(a.df, b.df))


def _visit_summaries(runs: pd.DataFrame, version: str, summary: str) -> pd.DataFrame:
    ok = runs[(runs["status"] == "ok") & (runs["version"] == version) & (runs["value"] > 0)]
    ok = ok.assign(visit=visits(ok).to_numpy(), log=np.log(ok["value"].astype(float)))
    g = ok.groupby("visit")
    out = pd.DataFrame({"y": g["log"].agg(summary), "n": g["log"].size()})
    out["host"] = [v.split("\x1f")[0] for v in out.index]
    out["round"] = [v.split("\x1f")[1] for v in out.index]
    return out


def version_effects(runs: pd.DataFrame, version: str, factors: FactorTable, summary: str = DesignSettings.summary
                    ) -> VersionEffects:
    """Effects of every factor on ``version``'s log metric (visit summaries, round-blocked OLS, t intervals).

    Parameters
    ----------
    runs : DataFrame
        One row per run: ``host``, ``version``, ``status``, ``value`` and optionally ``round``.
    version : str
        The version label whose runs are used.
    factors : FactorTable
        The coded factors; hosts without a row in it are not used.
    summary : {"median", "min"}
        How a visit's runs of the version are summarised (:attr:`DesignSettings.summary`).
    """
    from scipy import stats

    vm = _visit_summaries(runs, version, summary)
    vm = vm[vm["host"].isin(factors.hosts)]
    Z, cols = _design(list(vm["host"]), list(vm["round"]), factors)
    if len(vm) == 0:
        return VersionEffects(version, (), 0, 0, 0, float("nan"), 0, float("nan"))
    beta, se, sd, df = _ols(Z, vm["y"].to_numpy())
    effects = tuple(_t_effect(f.name, float(beta[c]), float(se[c]), df)
                    for f, c in zip(factors.factors, cols, strict=True))
    f_p = float("nan")
    if df > 0 and cols:
        Z0 = np.delete(Z, cols, axis=1)
        y = vm["y"].to_numpy()
        rss1 = (sd ** 2) * df
        r0 = y - Z0 @ np.linalg.lstsq(Z0, y, rcond=None)[0]
        F = ((float(r0 @ r0) - rss1) / len(cols)) / (sd ** 2) if sd > 0 else float("inf")
        f_p = float(stats.f.sf(F, len(cols), df))
    return VersionEffects(version, effects, len(vm), int(vm["n"].sum()), int(vm["round"].nunique()), sd, df, f_p)


def _holm(p: list[float], weights: list[float] | None = None) -> list[float]:
    """Holm-adjusted p-values; with ``weights``, Holm's weighted procedure (Holm 1979, section 5).

    Hypotheses are taken in order of ``p / w``; the one at step i is rejected at level alpha when
    ``p <= alpha * w / (sum of the weights not yet rejected)``, so its adjusted p is that ratio's running maximum.
    """
    w = np.ones(len(p)) if weights is None else np.asarray(weights, dtype=float)
    pa = np.asarray(p, dtype=float)
    order = np.argsort(pa / w, kind="stable")
    adj = np.empty(len(p))
    left = float(w.sum())
    running = 0.0
    for i in order:
        running = max(running, min(1.0, pa[i] * left / w[i]))
        adj[i] = running
        left -= w[i]
    return adj.tolist()


def effect_changes(runs: pd.DataFrame, version_a: str, version_b: str, factors: FactorTable,
                   settings: DesignSettings = DesignSettings()) -> tuple[tuple[Effect, ...], int, int]:
    """How each factor's effect changed from ``version_a`` to ``version_b``: (changes, visits, permutations).

    The per-visit difference of the versions' summarised log metrics (:attr:`DesignSettings.summary`) regressed on
    the design; p from within-visit label permutations of the runs aligned under "no factor effect changed",
    studentised (|t|), Holm-adjusted over the tested factors.
    With ``settings.screen`` a factor is tested only when it moves both versions' runs pooled; an untested
    factor's change keeps its estimate and interval from the whole design and no p; the tested ones are fitted
    without it (its contrast adds a degree of freedom to their noise) or beside it (``settings.untested``); with
    ``"weighted"`` it is tested too, at a smaller share of the level.
    """
    a, b = _visit_summaries(runs, version_a, settings.summary), _visit_summaries(runs, version_b, settings.summary)
    shared = sorted(set(a.index) & set(b.index))
    shared = [v for v in shared if v.split("\x1f")[0] in factors.hosts]
    if not shared or not factors:
        return (), 0, 0
    hosts, rounds = [v.split("\x1f")[0] for v in shared], [v.split("\x1f")[1] for v in shared]
    Z, cols = _design(hosts, rounds, factors)
    d = b.loc[shared, "y"].to_numpy() - a.loc[shared, "y"].to_numpy()
    beta, se, _sd, df = _ols(Z, d)
    if df <= 0:
        nan = float("nan")
        return tuple(_t_effect(f.name, float(beta[c]), nan, df)
                     for f, c in zip(factors.factors, cols, strict=True)), len(shared), 0
    aligned = _aligned_runs(runs, version_a, version_b, shared, Z, cols, d)
    tested = _screened(aligned, Z, cols, settings.alpha) if settings.screen else list(range(len(cols)))
    weights = None
    if settings.screen and settings.untested == "weighted" and 0 < len(tested) < len(cols):
        out_w = 1.0 / (len(cols) - len(tested))  # the screened-out ones together weigh as one screened factor
        weights = [1.0 if j in tested else out_w for j in range(len(cols))]
        tested = list(range(len(cols)))

    def untested(name: str, c: int) -> Effect:  # its estimate and interval from the whole design, no p
        return dataclasses.replace(_t_effect(name, float(beta[c]), float(se[c]), df), p_value=float("nan"),
                                   tested=False)

    if not tested:
        return tuple(untested(f.name, c) for f, c in zip(factors.factors, cols, strict=True)), len(shared), 0
    if settings.untested in ("model", "weighted"):  # the whole design's fit above
        Zt, ct, beta_t, se_t, df_t = Z, [cols[j] for j in tested], beta, se, df
    else:
        Zt = np.delete(Z, [c for j, c in enumerate(cols) if j not in tested], axis=1)
        ct = [Zt.shape[1] - len(tested) + i for i in range(len(tested))]  # the factors are the design's last columns
        beta_t, se_t, _sd_t, df_t = _ols(Zt, d)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 (an exact fit of no change) reads 0, as the null's
        t_obs = np.nan_to_num(np.abs(beta_t[ct] / se_t[ct]), nan=0.0, posinf=np.inf)
    null_t = _permuted_t(aligned, Zt, ct, settings)
    B = null_t.shape[0]
    p = [(1 + int(np.sum(null_t[:, j] >= t_obs[j] - 1e-12))) / (1 + B) for j in range(len(ct))]
    adj = _holm(p, weights)
    at = {j: i for i, j in enumerate(tested)}  # factor index -> its place among the tested
    out = []
    for j, (f, c) in enumerate(zip(factors.factors, cols, strict=True)):
        if j in at:
            i = at[j]
            e = _t_effect(f.name, float(beta_t[ct[i]]), float(se_t[ct[i]]), df_t)
            out.append(dataclasses.replace(e, p_value=p[i], p_adjusted=adj[i],
                                           weight=1.0 if weights is None else weights[j]))
        else:
            out.append(untested(f.name, c))
    return tuple(out), len(shared), B


def _aligned_runs(runs: pd.DataFrame, version_a: str, version_b: str, shared: list[str], Z: np.ndarray,
                  cols: list[int], d: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per shared visit, ``version_a``'s log runs and ``version_b``'s less the null's fitted level change.

    The null is "no factor effect changed" (a level change and the rounds only): the runs a label exchange may
    reshuffle.

    Many parameters because the caller's design, visits and observed differences are reused, not rebuilt.
    """
    Z0 = np.delete(Z, cols, axis=1)
    fitted0 = Z0 @ np.linalg.lstsq(Z0, d, rcond=None)[0]
    ok = runs[(runs["status"] == "ok") & (runs["value"] > 0)]
    ok = ok.assign(visit=visits(ok).to_numpy(), log=np.log(ok["value"].astype(float)))
    by_visit = dict(tuple(ok.groupby("visit")))  # one pass, not one filter of every run per visit
    out = []
    for i, v in enumerate(shared):
        sub = by_visit[v]
        out.append((sub.loc[sub["version"] == version_a, "log"].to_numpy(),
                    sub.loc[sub["version"] == version_b, "log"].to_numpy() - fitted0[i]))
    return out


def _screened(aligned: list[tuple[np.ndarray, np.ndarray]], Z: np.ndarray, cols: list[int], alpha: float
              ) -> list[int]:
    """Indices (into ``cols``) of the factors whose effect on the visits' pooled aligned runs excludes 0.

    A visit's pooled runs are the same under every label exchange, so choosing the tested factors by them does
    not change the permutation null of the ones chosen; a factor that moves neither version is not tested. A
    visit's summary is the interquartile mean of its pooled runs: where the versions differ, their runs form two
    groups, and a median falls into the gap between them.
    """
    from scipy import stats

    pooled = np.array([stats.trim_mean(np.concatenate([la, lb]), 0.25) for la, lb in aligned])
    beta, se, _sd, df = _ols(Z, pooled)
    if df <= 0:
        return list(range(len(cols)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(beta[cols] / se[cols])
    p = 2 * stats.t.sf(np.nan_to_num(t, nan=0.0, posinf=np.inf), df)
    return [j for j in range(len(cols)) if p[j] < alpha]


def _permuted_t(aligned: list[tuple[np.ndarray, np.ndarray]], Z: np.ndarray, cols: list[int],
                settings: DesignSettings) -> np.ndarray:
    """|t| of every factor's change under ``settings.permutations`` within-visit label exchanges (B × factors)."""
    rng = np.random.default_rng(settings.random_state)
    B = settings.permutations
    stat = np.min if settings.summary == "min" else np.median
    D = np.empty((B, len(aligned)))
    for i, (la, lb) in enumerate(aligned):
        pool = np.tile(np.concatenate([la, lb]), (B, 1))
        pool = rng.permuted(pool, axis=1)
        D[:, i] = stat(pool[:, len(la):], axis=1) - stat(pool[:, :len(la)], axis=1)
    ZtZ_inv = np.linalg.pinv(Z.T @ Z)
    coef = D @ (ZtZ_inv @ Z.T).T
    resid = D - coef @ Z.T
    df = Z.shape[0] - np.linalg.matrix_rank(Z)
    s2 = (resid ** 2).sum(axis=1) / df
    se = np.sqrt(np.outer(s2, np.diag(ZtZ_inv)[cols]))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(coef[:, cols] / se)
    return np.nan_to_num(t, nan=0.0)


def stressor_effects(fingerprints: pd.DataFrame, factors: FactorTable) -> dict[str, tuple[Effect, ...]]:
    """Every stressor's factor effects on its log bogo-ops/s (visit medians, round-blocked OLS)."""
    fp = fingerprints[(fingerprints["value"] > 0) & fingerprints["host"].isin(factors.hosts)]
    if fp.empty:
        return {}
    fp = fp.assign(visit=visits(fp).to_numpy(), log=np.log(fp["value"].astype(float)))
    out: dict[str, tuple[Effect, ...]] = {}
    for stressor, sub in fp.groupby("stressor", sort=True):
        med = sub.groupby("visit")["log"].median()
        hosts = [v.split("\x1f")[0] for v in med.index]
        rounds = [v.split("\x1f")[1] for v in med.index]
        if len(set(hosts)) < len(factors.hosts):
            continue
        Z, cols = _design(hosts, rounds, factors)
        beta, se, _sd, df = _ols(Z, med.to_numpy())
        out[str(stressor)] = tuple(_t_effect(f.name, float(beta[c]), float(se[c]), df)
                                   for f, c in zip(factors.factors, cols, strict=True))
    return out


def axis_classes(effects: Mapping[str, tuple[Effect, ...]], factors: FactorTable, primary: Mapping[str, str],
                 floor: float = 0.05) -> tuple[AxisClass, ...]:
    """The resource class each factor loads, from the stressor effects (``primary``: stressor -> class).

    Computation is the reference: the cpu class's effect is the median over its stressors. A factor loads class
    ``c`` when some stressor of ``c`` moves beyond 3 SE and ``floor`` and at least twice as much as computation
    does (the strongest such stressor stands for the class): a knob that loads one resource leaves computation
    nearly alone, while a speed knob (a CPU quota) slows every time-based stressor alike. A class is as wide as
    the battery's list of it (the quick battery's memory class mixes bandwidth, page-clearing and cache-sized
    stressors), so one stressor that responds is the evidence, not the class median. A factor that moves
    computation but loads no other class is a speed axis (``cpu``). The local fleet's knobs keep what their
    calibration measured (:data:`FALLBACK_CLASSES`): its probes ask exactly this question, while one erratic
    stressor (``vm`` under a CPU quota) can out-move its class.
    """
    out = []
    step = math.log1p(floor)
    for j, f in enumerate(factors.factors):
        if f.name in FALLBACK_CLASSES:
            out.append(_knob_class(f.name, j, effects, primary))
            continue
        by_class: dict[str, list[tuple[str, Effect]]] = {}
        for s, effs in effects.items():
            if j < len(effs) and np.isfinite(effs[j].se):
                by_class.setdefault(primary.get(s, "unknown"), []).append((s, effs[j]))
        if not by_class:
            fb = FALLBACK_CLASSES.get(f.name, "none")
            out.append(AxisClass(f.name, fb, {}, f"no fingerprint effects; {f.label} taken to load {fb} "
                                                 "(what the calibration kept it for)"))
            continue
        cpu_effs = [e for _s, e in by_class.get("cpu", [])]
        cpu = ((float(np.median([e.estimate for e in cpu_effs])),
                float(1.2533 * np.median([e.se for e in cpu_effs]) / math.sqrt(len(cpu_effs))))
               if cpu_effs else None)
        cpu_e = abs(cpu[0]) if cpu else 0.0
        ce: dict[str, tuple[float, float]] = {"cpu": cpu} if cpu else {}
        best: dict[str, tuple[str, Effect]] = {}
        for c, items in by_class.items():
            if c in ("cpu", "unknown"):
                continue
            strong = [(s, e) for s, e in items if abs(e.estimate) > max(3 * e.se, step)
                      and abs(e.estimate) >= 2 * cpu_e]
            if strong:
                best[c] = max(strong, key=lambda se: abs(se[1].estimate))
                ce[c] = (best[c][1].estimate, best[c][1].se)
        if best:
            c = max(best, key=lambda k: abs(best[k][1].estimate))
            s, e = best[c]
            why = f"moves {s} ({c}) {_pct(e.estimate)} vs computation {_pct(cpu[0]) if cpu else 'n/a'}"
            out.append(AxisClass(f.name, c, ce, why, slows=e.estimate < 0))
        elif cpu is not None and abs(cpu[0]) > max(2 * cpu[1], step):
            out.append(AxisClass(f.name, "cpu", ce, f"slows every class alike (cpu stressors {_pct(cpu[0])})",
                                 slows=cpu[0] < 0))
        else:
            out.append(AxisClass(f.name, "none", ce, "moves no stressor beyond the noise"))
    return tuple(out)


def _knob_class(name: str, j: int, effects: Mapping[str, tuple[Effect, ...]],
                primary: Mapping[str, str]) -> AxisClass:
    """A local-fleet knob's class as its calibration kept it.

    Its class effects: computation's median, and for the class it loads the strongest of that class's stressors
    beyond 3 SE (the reference a version's response is placed against; the median when none is).
    """
    resource = FALLBACK_CLASSES[name]
    by_class: dict[str, list[Effect]] = {}
    for s, effs in effects.items():
        if j < len(effs) and np.isfinite(effs[j].se):
            by_class.setdefault(primary.get(s, "unknown"), []).append(effs[j])
    ce = {c: (float(np.median([e.estimate for e in es])), float("nan")) for c, es in by_class.items()}
    strong = [e for e in by_class.get(resource, []) if abs(e.estimate) > 3 * e.se]
    if resource != "cpu" and strong:
        top = max(strong, key=lambda e: abs(e.estimate))
        ce[resource] = (top.estimate, top.se)
    moved = ", ".join(f"{c} {_pct(e)}" for c, (e, _s) in sorted(ce.items()))
    probe = _PROBE_OF_CLASS.get(resource)
    why = ("the calibration kept it as a speed axis" if resource == "cpu" else
           f"the calibration kept it as a {resource} axis (its {probe} probe moved beyond 3 SE, more than its CPU "
           "probe)") + (f"; stressors: {moved}" if moved else "")
    return AxisClass(name, resource, ce, why, slows=FACTOR_BY_NAME[name].slows)


def _pct(log_effect: float) -> str:
    return f"{100 * math.expm1(log_effect):+.0f} %"
