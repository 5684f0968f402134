"""Did the resource profile shift? A permutation test calibrated on the data's own noise.

Two IRUPs always differ a little: different runs, different noise. How much they may
differ when nothing changed depends on the data (hosts, repetitions, metric noise), not
on how many seeds were averaged. The test builds that distribution from the runs:

1. Each version's metric is divided by its median (a uniform speed-up or slow-down is
   not a profile shift; importances are invariant to the scale of the metric).
2. Under "same profile", the scaled runs of the two versions on one host are
   exchangeable: permute the version labels of the runs *within each host both
   versions ran on* (fingerprint rows stay where they are; hosts only one version ran
   on keep their runs).
3. Recompute both IRUPs (same formula, seeds and resampling as the observed pair, on
   the batched engine) for each of ``B`` permutations.
4. Distance = total-variation distance between the two importance-share vectors
   (importance / sum of importance; 0 = identical, 1 = disjoint). The p-value is
   ``(1 + #{null ≥ observed}) / (1 + B)`` (Phipson & Smyth 2010).

The same null gives every tolerance the comparison needs, computed once: per stressor,
the ``1 - alpha`` quantile of the null |Δ importance| (0-100 scale) for the rank walk and
the stressor hints; per class, the ``1 - alpha`` quantile of the null |Δ share| for
the class hints.

References
----------
Good, P. (2005). Permutation, Parametric and Bootstrap Tests of Hypotheses, 3rd ed. Springer.
Phipson, B., Smyth, G. K. (2010). Permutation p-values should never be zero. Stat. Appl.
Genet. Mol. Biol. 9(1), art. 39.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quiho.errors import NoCommonHosts, UsageError
from quiho.fingerprint.catalog import ANALYSIS_CLASSES, Catalog, load_catalog
from quiho.irup.batched import fit_batched, predict_batched
from quiho.irup.data import TargetData
from quiho.irup.engine import _training_rows, child_seeds
from quiho.irup.importance import FORMULAS, ModelParams, permutation_blocks, permutation_scores, seed_weights

__all__ = ["ShiftTest", "shift_test", "DEFAULT_PERMUTATIONS", "DEFAULT_NULL_SEEDS", "TEST_PARAMS"]

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
    distance : float
        Observed total-variation distance between the importance shares (0..1).
    class_distance : float
        Observed total-variation distance between the class shares.
    p_value : float
        ``(1 + #null ≥ distance) / (1 + permutations)``.
    permutations : int
        Null size ``B``.
    null_quantile : float
        The ``1 - alpha`` quantile of the null distance.
    null_median : float
        The median null distance: the distance two versions typically show when nothing changed. An
        ``equivalent`` verdict needs the observed distance at or below it (not merely below the ``1 - alpha``
        quantile: a distance the test cannot reject is not yet shown to be small).
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "method": "within-host permutation of version labels", "p_value": round(self.p_value, 5),
            "permutations": self.permutations, "distance": round(self.distance, 4),
            "class_distance": round(self.class_distance, 4), "null_quantile": round(self.null_quantile, 4),
            "null_median": round(self.null_median, 4),
            "alpha": self.alpha, "hosts_shared": self.hosts_shared, "seeds": self.seeds,
            "importance": self.importance, "resample": self.resample,
            "tolerance": {k: round(v, 2) for k, v in self.tolerance.items()},
            "class_tolerance": {k: round(v, 4) for k, v in self.class_tolerance.items()},
            "notes": list(self.notes),
        }


def _scaled(y: np.ndarray) -> np.ndarray:
    med = float(np.median(y))
    return y / med if (y > 0).all() and med > 0 else y - float(np.mean(y))


def _strata(hosts_a: np.ndarray, hosts_b: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    shared = sorted(set(hosts_a.tolist()) & set(hosts_b.tolist()))
    return [(np.flatnonzero(hosts_a == h), np.flatnonzero(hosts_b == h)) for h in shared]


def _permuted_targets(
    ya: np.ndarray, yb: np.ndarray, strata: list[tuple[np.ndarray, np.ndarray]], B: int, rng: np.random.Generator
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
            n_estimators=params.n_estimators, max_depth=params.max_depth, learning_rate=params.learning_rate,
            min_samples_split=params.min_samples_split, seeds=np.array([drawn[s][1] + r for r, s in chunk]),
            n_jobs=n_jobs,
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


def shift_test(
    data_a: TargetData,
    data_b: TargetData,
    *,
    importance: str = "classic",
    resample: str | None = None,
    seeds: int = DEFAULT_NULL_SEEDS,
    permutations: int = DEFAULT_PERMUTATIONS,
    alpha: float = 0.05,
    params: ModelParams | None = None,
    random_state: int = 0,
    n_jobs: int = -1,
    catalog: Catalog | None = None,
) -> ShiftTest:
    """Permutation test of "the two versions have the same resource profile".

    (About 60 lines of code; the rest is this docstring. The statistic and the null are built in
    one place so that the observed value and every permuted value are computed the same way.)

    Parameters
    ----------
    data_a, data_b : TargetData
        Training rows of the two versions (:func:`quiho.irup.load_target`), on hosts they share.
    importance : str
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
        :data:`TEST_PARAMS`, the paper's shrinkage budget in 250 trees (4x cheaper). The test is
        exact for any statistic computed the same way on the observed and permuted data.
    random_state : int, default 0
        Seed of the permutations and the model seeds.
    n_jobs : int, default -1
        Threads.
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
    >>> t = shift_test(a, b, permutations=19, seeds=2, params=ModelParams(n_estimators=100), n_jobs=1)
    >>> t.p_value <= 0.05
    True
    """
    if importance not in FORMULAS:
        raise UsageError(f"unknown importance formula {importance!r}; choose one of {', '.join(FORMULAS)}")
    if permutations < 1 or seeds < 1 or not 0 < alpha < 1:
        raise UsageError("the shift test needs permutations ≥ 1, seeds ≥ 1 and 0 < alpha < 1")
    params = params or TEST_PARAMS
    resample = resample or ("groups" if importance == "permutation" else "none")
    catalog = catalog or load_catalog()
    ha, hb = data_a.meta["host"].astype(str).to_numpy(), data_b.meta["host"].astype(str).to_numpy()
    strata = _strata(ha, hb)
    if not strata:
        raise NoCommonHosts(
            f"{data_a.target} and {data_b.target} ran on no common host: the calibrated comparison exchanges runs "
            "of the two versions within each host, so it needs both versions measured on the same hosts"
        )
    Xa_df, _, _, hwa = _training_rows(data_a)
    Xb_df, _, _, hwb = _training_rows(data_b)
    cols = sorted(set(Xa_df.columns) | set(Xb_df.columns))
    rng = np.random.default_rng([random_state, 7])
    ya = _scaled(data_a.y.to_numpy(dtype=float))
    yb = _scaled(data_b.y.to_numpy(dtype=float))
    Ya, Yb = _permuted_targets(ya, yb, strata, permutations, rng)
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
    return ShiftTest(
        distance=float(dist[0]), class_distance=float(cdist[0]),
        p_value=float((1 + np.sum(dist[1:] >= dist[0] - 1e-12)) / (1 + permutations)), permutations=permutations,
        null_quantile=float(np.quantile(dist[1:], q)), null_median=float(np.median(dist[1:])),
        tolerance={c: float(np.quantile(dimp[:, j], q)) for j, c in enumerate(cols)},
        class_tolerance={k: float(np.quantile(np.abs(ca - cb)[1:, i], q)) for i, k in enumerate(classes)},
        hosts_shared=len(strata), alpha=alpha, seeds=seeds, importance=importance, resample=resample,
        notes=tuple(notes),
    )
