"""Did the resource profile shift? A permutation test calibrated on the data's own noise.

Two IRUPs always differ a little: different runs, different noise. How much they may
differ when nothing changed depends on the data (hosts, repetitions, metric noise), not
on how many seeds were averaged. "Same profile" means the two versions respond to the
fleet's hardware alike: version b may be uniformly faster or slower (``log y_b = log y_a + c``
on every host), nothing else. Under it, a version's runs on one host are exchangeable with the
other version's (once ``c`` is removed), and the test builds its null from the runs:

1. **Interaction** (the test's p-value). On each host both versions ran on, ``d_h`` = mean log
   metric of b minus that of a; the statistic is the weighted between-host mean square of ``d_h``
   (:func:`_interaction`): large when the change between the versions depends on the host, which
   is what a changed resource profile does to the runs. Null: version labels permuted within each
   shared host, after removing ``c`` from b's runs with an estimate that leaves the host out
   (:func:`_aligned`). This asks the runs directly, not through the models' importances, whose
   split among collinear stressors (stream and memrate sort the hosts alike) is arbitrary and
   buries a real shift in seed-to-seed churn (docs/design.md, "Profile-shift test").
2. **IRUP distance** (evidence, and the tolerances). Each version's metric is divided by its
   median; the same within-host permutations; both IRUPs recomputed (same formula, seeds and
   resampling as the observed pair, on the batched engine) for each of ``B`` permutations;
   distance = total-variation distance between the stressor importance shares (0 = identical,
   1 = disjoint), with its own p-value ``distance_p``.

p-values are ``(1 + #{null ≥ observed}) / (1 + B)`` (Phipson & Smyth 2010). The same null gives
every tolerance the comparison needs, computed once: per stressor, the ``1 - alpha`` quantile of
the null |Δ importance| (0-100 scale) for the rank walk and the stressor hints; per class, the
``1 - alpha`` quantile of the null |Δ share| for the class hints and for locating a shift.

References
----------
Anderson, M. J., ter Braak, C. J. F. (2003). Permutation tests for multi-factorial analysis of variance.
J. Stat. Comput. Simul. 73(2), 85-113.
Good, P. (2005). Permutation, Parametric and Bootstrap Tests of Hypotheses, 3rd ed. Springer.
Phipson, B., Smyth, G. K. (2010). Permutation p-values should never be zero. Stat. Appl.
Genet. Mol. Biol. 9(1), art. 39.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quiho._text import json_number
from quiho.errors import NoCommonHosts, UsageError
from quiho.fingerprint.catalog import ANALYSIS_CLASSES, Catalog, load_catalog
from quiho.irup.batched import fit_batched, predict_batched
from quiho.irup.data import TargetData
from quiho.irup.engine import child_seeds, training_rows
from quiho.irup.importance import FORMULAS, ModelParams, permutation_blocks, permutation_scores, seed_weights

__all__ = ["ShiftSettings", "ShiftTest", "shift_test", "DEFAULT_PERMUTATIONS", "DEFAULT_NULL_SEEDS", "TEST_PARAMS"]

#: Permutations of the null distribution (p resolution 1/201).
DEFAULT_PERMUTATIONS = 200
#: Seeds per IRUP inside the test (observed and every permutation alike).
DEFAULT_NULL_SEEDS = 3
#: Hyper-parameters of the test's IRUPs: 250 trees at learning rate 0.04 keep the paper's
#: n_estimators × learning_rate with a quarter of the fits' cost.
TEST_PARAMS = ModelParams(n_estimators=250, learning_rate=0.04)
#: Models fitted per batch (bounds memory: trees of every model in a batch are kept).
_CHUNK = 64


@dataclass(frozen=True)
class ShiftTest:
    """Outcome of the permutation test of "same resource profile".

    Attributes
    ----------
    p_value : float
        The interaction test's ``(1 + #null ≥ observed) / (1 + permutations)``: the verdict's p-value.
    interaction_f : float
        Observed interaction F: the between-host mean square of the version change over the pooled
        within-host, within-version variance (a magnitude; the p-value does not use it).
    host_changes : dict
        Per shared host, the change b vs a of the mean log metric as a relative change (0.1 = b 10 % higher).
    distance : float
        Observed total-variation distance between the stressor importance shares (0..1).
    class_distance : float
        Observed total-variation distance between the class shares.
    distance_p : float
        p-value of ``distance`` against its permutation null.
    permutations : int
        Null size ``B``.
    null_quantile : float
        The ``1 - alpha`` quantile of the null IRUP distance.
    null_median : float
        The median null IRUP distance: the distance two versions typically show when nothing changed. An
        ``equivalent`` verdict needs the observed distance at or below it (not merely below the ``1 - alpha``
        quantile: a distance the test cannot reject is not yet shown to be small).
    class_delta : dict
        Per class, the observed share of ``b`` minus that of ``a`` (the test's own IRUPs).
    class_a, class_b : dict
        Per class, the observed shares of ``a`` and ``b`` (the test's own IRUPs): the numbers every class
        statement of a calibrated comparison cites.
    tolerance : dict
        Per stressor, the ``1 - alpha`` quantile of the null |Δ importance| (0-100 scale).
    class_tolerance : dict
        Per class, the ``1 - alpha`` quantile of the null |Δ class share|.
    hosts_shared : int
        Hosts both versions ran on (the permutation strata).
    alpha, seeds, importance, resample :
        Test settings.
    """

    distance: float
    class_distance: float
    p_value: float
    permutations: int
    null_quantile: float
    tolerance: dict[str, float]
    class_tolerance: dict[str, float]
    hosts_shared: int
    alpha: float
    seeds: int
    importance: str
    resample: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    null_median: float = float("nan")
    distance_p: float = float("nan")
    interaction_f: float = float("nan")
    host_changes: dict[str, float] = field(default_factory=dict)
    class_delta: dict[str, float] = field(default_factory=dict)
    class_a: dict[str, float] = field(default_factory=dict)
    class_b: dict[str, float] = field(default_factory=dict)

    def moved_classes(self) -> dict[str, float]:
        """Classes whose observed share moved beyond their null tolerance: ``{class: b - a}``, largest first."""
        moved = {k: d for k, d in self.class_delta.items() if abs(d) > self.class_tolerance.get(k, float("inf"))}
        return dict(sorted(moved.items(), key=lambda kv: -abs(kv[1])))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "method": "within-host permutation of version labels; statistic: host x version interaction",
            "p_value": round(self.p_value, 5), "permutations": self.permutations,
            "interaction_f": json_number(self.interaction_f, 4),
            "host_changes": {k: round(v, 4) for k, v in self.host_changes.items()},
            "distance": round(self.distance, 4), "distance_p": round(self.distance_p, 5),
            "class_distance": round(self.class_distance, 4), "null_quantile": round(self.null_quantile, 4),
            "null_median": round(self.null_median, 4),
            "alpha": self.alpha, "hosts_shared": self.hosts_shared, "seeds": self.seeds,
            "importance": self.importance, "resample": self.resample,
            "tolerance": {k: round(v, 2) for k, v in self.tolerance.items()},
            "class_tolerance": {k: round(v, 4) for k, v in self.class_tolerance.items()},
            "class_delta": {k: round(v, 4) for k, v in self.class_delta.items()},
            "notes": list(self.notes),
        }


def _scaled(y: np.ndarray) -> np.ndarray:
    med = float(np.median(y))
    return y / med if (y > 0).all() and med > 0 else y - float(np.mean(y))


Strata = list[tuple[np.ndarray, np.ndarray]]


def _log_scale(ya: np.ndarray, yb: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Both metrics in logs when all are positive (a change is then a ratio), else as they are."""
    positive = bool((ya > 0).all() and (yb > 0).all())
    return (np.log(ya), np.log(yb), True) if positive else (ya.astype(float), yb.astype(float), False)


def _host_diffs(La: np.ndarray, Lb: np.ndarray, strata: Strata) -> tuple[np.ndarray, np.ndarray]:
    """Per row and shared host, b's mean minus a's (rows × hosts), and the host weights.

    ``La``/``Lb`` are rows × runs; a host's weight is ``1 / (1/n_a + 1/n_b)``.
    """
    D = np.column_stack([Lb[:, ib].mean(axis=1) - La[:, ia].mean(axis=1) for ia, ib in strata])
    W = np.array([1.0 / (1.0 / len(ia) + 1.0 / len(ib)) for ia, ib in strata])
    return D, W


def _aligned(ya: np.ndarray, yb: np.ndarray, strata: Strata) -> tuple[np.ndarray, np.ndarray]:
    """Both versions' metrics with the version effect removed, so that "same profile" makes them exchangeable.

    "Same profile" allows version b to be uniformly slower or faster: ``log y_b = log y_a + c`` on every host.
    On each shared host, ``c`` is estimated from the *other* shared hosts (the weighted mean over them of the
    difference of the two versions' mean log metric, weights ``1 / (1/n_a + 1/n_b)``) and removed from that
    host's runs of b; b's runs on hosts a never ran on get the all-host estimate. Both are then divided by a's
    median. Non-positive metrics: the same on the raw scale.

    Why not simpler: each version's overall median differs by which hosts and runs it includes, and runs
    exchanged between the versions then carry that difference as if it were noise (permutation of residuals
    under the reduced model, Anderson & ter Braak 2003); an estimate that includes the host's own runs is
    correlated with that host's own change, which inflates the test's size (measured sizes: docs/design.md,
    "Profile-shift test"). The observed statistic is computed on the runs as measured (:func:`_interaction` is
    blind to a common ``c``); a host-specific shift applied to the observed runs would change it.
    """
    la, lb, positive = _log_scale(ya, yb)
    D, w = _host_diffs(la[None, :], lb[None, :], strata)
    d = D[0]
    total, wsum = float((w * d).sum()), float(w.sum())
    out_b = lb - total / wsum
    if len(strata) > 1:
        for (_, ib), wh, dh in zip(strata, w, d, strict=True):
            out_b[ib] = lb[ib] - (total - wh * dh) / (wsum - wh)
    centre = float(np.median(la))
    if positive:
        return np.exp(la - centre), np.exp(out_b - centre)
    return la - centre, out_b - centre


def _strata(hosts_a: np.ndarray, hosts_b: np.ndarray) -> Strata:
    shared = sorted(set(hosts_a.tolist()) & set(hosts_b.tolist()))
    return [(np.flatnonzero(hosts_a == h), np.flatnonzero(hosts_b == h)) for h in shared]


def _permuted_targets(
    ya: np.ndarray, yb: np.ndarray, strata: Strata, B: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Row 0: observed; rows 1..B: version labels permuted within each shared host."""
    Ya = np.repeat(ya[None, :], B + 1, axis=0)
    Yb = np.repeat(yb[None, :], B + 1, axis=0)
    for ia, ib in strata:
        pool = np.concatenate([ya[ia], yb[ib]])
        for r in range(1, B + 1):
            perm = pool[rng.permutation(len(pool))]
            Ya[r, ia] = perm[: len(ia)]
            Yb[r, ib] = perm[len(ia):]
    return Ya, Yb


def _interaction(Ya: np.ndarray, Yb: np.ndarray, strata: Strata) -> tuple[np.ndarray, float, np.ndarray, bool]:
    """Host × version interaction: the between-host mean square of the version change, per row of ``Ya``/``Yb``.

    ``d_h`` = mean log metric of version b minus that of version a on host ``h`` (raw metric when not all
    positive); the statistic is ``Σ_h w_h (d_h - d̄)² / (H - 1)`` with ``w_h = 1 / (1/n_a + 1/n_b)`` and ``d̄`` their
    weighted mean: large when the change between the versions depends on the host, which is what a changed
    resource profile does to the runs. Also returns the observed F (that mean square over the pooled within-host,
    within-version variance of row 0), a magnitude; the permutation p-value uses the mean square; and row 0's
    ``d_h`` with whether they are in logs.
    """
    La, Lb, positive = _log_scale(Ya, Yb)
    D, W = _host_diffs(La, Lb, strata)
    dbar = (D * W).sum(axis=1) / W.sum()
    ms = (W * (D - dbar[:, None]) ** 2).sum(axis=1) / max(len(strata) - 1, 1)
    ssw = sum(float(((La[0, ia] - La[0, ia].mean()) ** 2).sum() + ((Lb[0, ib] - Lb[0, ib].mean()) ** 2).sum())
              for ia, ib in strata)
    dfw = sum(len(ia) + len(ib) - 2 for ia, ib in strata)
    f = float(ms[0] / (ssw / dfw)) if dfw and ssw > 0 else float("inf")
    return ms, f, D[0], positive


def _replicate_importances(
    X: np.ndarray, Y: np.ndarray, groups: np.ndarray, *, formula: str, params: ModelParams, seed_states: list[int],
    resample: str, n_jobs: int,
) -> np.ndarray:
    """Mean importance over seeds for every target row of ``Y`` (replicates × stressors)."""
    drawn = [seed_weights(groups, s, resample) for s in seed_states]
    S, R = len(drawn), len(Y)
    jobs = [(r, s) for r in range(R) for s in range(S)]
    imp = np.full((R, S, X.shape[1]), np.nan)
    for c0 in range(0, len(jobs), _CHUNK):
        chunk = jobs[c0:c0 + _CHUNK]
        fit = fit_batched(
            X, np.vstack([Y[r] for r, _ in chunk]), np.vstack([drawn[s][2] for _, s in chunk]),
            params, np.array([drawn[s][1] + r for r, s in chunk]), n_jobs,
        )
        if formula != "permutation":
            for m, (r, s) in enumerate(chunk):
                imp[r, s] = fit.classic[m] if formula == "classic" else fit.impurity[m]
            continue
        # Permutation formula: the shuffled held-out rows of every model of one seed (same held-out
        # groups) are predicted in one call.
        for s in range(S):
            oob = np.flatnonzero(drawn[s][2] == 0)
            members = [(m, r) for m, (r, s_) in enumerate(chunk) if s_ == s]
            if len(oob) < 2 or not members:
                continue
            blocks = [permutation_blocks(X[oob], np.random.default_rng([seed_states[s], r]), 1) for _, r in members]
            models = np.concatenate([np.full(len(b), m) for (m, _), b in zip(members, blocks, strict=True)])
            pred = predict_batched(fit, models, np.concatenate(blocks), n_jobs=n_jobs)
            k = 0
            for (m, r), b in zip(members, blocks, strict=True):
                imp[r, s] = permutation_scores(pred[k:k + len(b)], fit.pred[m][oob], Y[r][oob], 1,
                                               float(np.var(Y[r])) or 1.0)
                k += len(b)
    with np.errstate(invalid="ignore"):
        return np.clip(np.nanmean(imp, axis=1), 0, None)


def _shares(imp: np.ndarray) -> np.ndarray:
    tot = imp.sum(axis=-1, keepdims=True)
    return np.divide(imp, tot, out=np.zeros_like(imp), where=tot > 0)


def _class_matrix(cols: list[str], catalog: Catalog) -> tuple[list[str], np.ndarray]:
    classes = list(ANALYSIS_CLASSES) + ["other"]
    C = np.zeros((len(cols), len(classes)))
    for j, c in enumerate(cols):
        prim = catalog.primary(c)
        C[j, classes.index(prim) if prim in classes else -1] = 1.0
    return classes, C


@dataclass(frozen=True)
class ShiftSettings:
    """How :func:`shift_test` runs: the IRUPs it refits and the permutations it draws.

    Attributes
    ----------
    importance : str, default "classic"
        As :func:`quiho.irup.compute_irup` (``permutation`` uses one shuffle per stressor).
    resample : {"none", "groups"}, optional
        Resampling of the test's IRUPs; default ``none`` (all rows: the least procedure noise, the
        most power) except for ``permutation`` importance, which needs held-out groups.
    seeds : int, default 3
        Seeds per IRUP for the observed pair and every permutation alike.
    permutations : int, default 200
        Null size ``B``.
    alpha : float, default 0.05
        Level of the test and of the tolerances (``1 - alpha`` quantiles of the null).
    params : ModelParams, optional
        Hyper-parameters of the test's fits (always on the batched engine); default
        :data:`TEST_PARAMS`, the paper's shrinkage budget in 250 trees (4x cheaper).
    random_state : int, default 0
        Seed of the permutations and the model seeds.
    n_jobs : int, default -1
        Threads.
    """

    importance: str = "classic"
    resample: str | None = None
    seeds: int = DEFAULT_NULL_SEEDS
    permutations: int = DEFAULT_PERMUTATIONS
    alpha: float = 0.05
    params: ModelParams | None = None
    random_state: int = 0
    n_jobs: int = -1


def shift_test(
    data_a: TargetData,
    data_b: TargetData,
    settings: ShiftSettings = ShiftSettings(),
    catalog: Catalog | None = None,
) -> ShiftTest:
    """Permutation test of "the two versions have the same resource profile".

    (About 70 lines of code; the rest is this docstring.) The IRUP distance's null is exact: observed and
    permuted values are computed the same way. The interaction's is a permutation of the runs with the version
    effect removed (residuals under "same profile"), exact only as that estimate tends to the truth; its
    false-positive rate is measured in ``bench/irup_calibration.py`` (split-half self-pairs of the paper data,
    of local-fleet profiles, and pure-noise pairs).

    Parameters
    ----------
    data_a, data_b : TargetData
        Training rows of the two versions (:func:`quiho.irup.load_target`), on hosts they share.
    settings : ShiftSettings
        Formula, resampling, seeds, permutations, level, model, random state and threads.
    catalog : Catalog, optional
        For the stressor classes.

    Returns
    -------
    ShiftTest

    Raises
    ------
    NoCommonHosts
        The versions share no host: their runs cannot be exchanged, the test does not apply.
    UsageError
        Bad settings.
    NotEnoughData
        Either data set cannot give an IRUP.

    Examples
    --------
    >>> from quiho.datasets import planted_profile
    >>> _, a, b = planted_profile(n_groups=8, reps=3, random_state=0)
    >>> t = shift_test(a, b, ShiftSettings(permutations=19, seeds=2, params=ModelParams(n_estimators=100), n_jobs=1))
    >>> t.p_value <= 0.05
    True
    """
    importance, seeds, permutations, alpha = settings.importance, settings.seeds, settings.permutations, settings.alpha
    random_state, n_jobs = settings.random_state, settings.n_jobs
    if importance not in FORMULAS:
        raise UsageError(f"unknown importance formula {importance!r}; choose one of {', '.join(FORMULAS)}")
    if permutations < 1 or seeds < 1 or not 0 < alpha < 1:
        raise UsageError("the shift test needs permutations ≥ 1, seeds ≥ 1 and 0 < alpha < 1")
    params = settings.params or TEST_PARAMS
    resample = settings.resample or ("groups" if importance == "permutation" else "none")
    catalog = catalog or load_catalog()
    ha, hb = data_a.meta["host"].astype(str).to_numpy(), data_b.meta["host"].astype(str).to_numpy()
    strata = _strata(ha, hb)
    if not strata:
        raise NoCommonHosts(
            f"{data_a.target} and {data_b.target} ran on no common host: the calibrated comparison exchanges runs "
            "of the two versions within each host, so it needs both versions measured on the same hosts"
        )
    Xa_df, _, _, hwa = training_rows(data_a)
    Xb_df, _, _, hwb = training_rows(data_b)
    cols = sorted(set(Xa_df.columns) | set(Xb_df.columns))
    rng = np.random.default_rng([random_state, 7])
    ya_raw, yb_raw = data_a.y.to_numpy(dtype=float), data_b.y.to_numpy(dtype=float)
    Ya, Yb = _permuted_targets(_scaled(ya_raw), _scaled(yb_raw), strata, permutations, rng)
    # the interaction's null: the same kind of permutations of the runs with the version effect removed, the
    # observed row as measured
    Ia, Ib = _permuted_targets(*_aligned(ya_raw, yb_raw, strata), strata, permutations, rng)
    Ia[0], Ib[0] = ya_raw, yb_raw
    ms_int, f_int, d_obs, in_logs = _interaction(Ia, Ib, strata)
    states = child_seeds(random_state, seeds)
    kw = dict(formula=importance, params=params, seed_states=states, resample=resample, n_jobs=n_jobs)
    ia = _replicate_importances(Xa_df.to_numpy(dtype=float), Ya, hwa.row_groups, **kw)  # type: ignore[arg-type]
    ib = _replicate_importances(Xb_df.to_numpy(dtype=float), Yb, hwb.row_groups, **kw)  # type: ignore[arg-type]
    # Align both on the union of stressors (a stressor dropped on one side has importance 0 there).
    A = np.zeros((permutations + 1, len(cols)))
    Bm = np.zeros_like(A)
    A[:, [cols.index(c) for c in Xa_df.columns]] = ia
    Bm[:, [cols.index(c) for c in Xb_df.columns]] = ib
    sa, sb = _shares(A), _shares(Bm)
    dist = 0.5 * np.abs(sa - sb).sum(axis=1)
    classes, C = _class_matrix(cols, catalog)
    ca, cb = sa @ C, sb @ C
    cdist = 0.5 * np.abs(ca - cb).sum(axis=1)

    def scaled(M: np.ndarray) -> np.ndarray:
        top = M.max(axis=1, keepdims=True)
        return np.divide(100.0 * M, top, out=np.zeros_like(M), where=top > 0)

    dimp = np.abs(scaled(A) - scaled(Bm))[1:]
    q = 1 - alpha
    notes = []
    if len(strata) < 3:
        notes.append(f"only {len(strata)} shared host(s): few permutations are distinct, the test has little power")
    hosts = sorted(set(ha.tolist()) & set(hb.tolist()))  # the strata's order
    changes = dict(zip(hosts, (np.expm1(d_obs) if in_logs else d_obs).tolist(), strict=True))
    return ShiftTest(
        distance=float(dist[0]), class_distance=float(cdist[0]),
        p_value=float((1 + np.sum(ms_int[1:] >= ms_int[0] * (1 - 1e-12))) / (1 + permutations)),
        permutations=permutations, null_quantile=float(np.quantile(dist[1:], q)),
        null_median=float(np.median(dist[1:])),
        tolerance={c: float(np.quantile(dimp[:, j], q)) for j, c in enumerate(cols)},
        class_tolerance={k: float(np.quantile(np.abs(ca - cb)[1:, i], q)) for i, k in enumerate(classes)},
        hosts_shared=len(strata), alpha=alpha, seeds=seeds, importance=importance, resample=resample,
        notes=tuple(notes), distance_p=float((1 + np.sum(dist[1:] >= dist[0] - 1e-12)) / (1 + permutations)),
        interaction_f=f_int, host_changes=changes,
        **_observed_classes(classes, ca[0], cb[0]),
    )


def _observed_classes(classes: list[str], ca: np.ndarray, cb: np.ndarray) -> dict[str, dict[str, float]]:
    """The observed class shares of both versions and their difference, as :class:`ShiftTest` fields."""
    return {"class_delta": {k: float(cb[i] - ca[i]) for i, k in enumerate(classes)},
            "class_a": {k: float(ca[i]) for i, k in enumerate(classes)},
            "class_b": {k: float(cb[i]) for i, k in enumerate(classes)}}
