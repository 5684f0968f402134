"""Compute an IRUP: seeds in parallel, importances, validity, all typed."""

from __future__ import annotations

import dataclasses
import hashlib
import platform
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from quiho._text import json_number
from quiho._version import __version__
from quiho.errors import NotEnoughData, NotEnoughMachines, UsageError
from quiho.fingerprint.catalog import Catalog, load_catalog
from quiho.irup.batched import fit_batched, predict_batched
from quiho.irup.data import TargetData, load_target
from quiho.irup.groups import HardwareGroups, hardware_groups
from quiho.irup.importance import (
    ENGINES,
    FORMULAS,
    ModelParams,
    fit_seed,
    permutation_blocks,
    permutation_scores,
    seed_weights,
)
from quiho.irup.validity import Validity, logo_fold, logo_predictions, r2_between_groups, verdict
from quiho.store import Store
from quiho.store.irup import insert_irup

__all__ = [
    "FeatureImportance", "DroppedStressor", "SeedImportances", "Irup", "FitPlan", "fit_models", "child_seeds",
    "compute_irup", "training_rows", "clear_caches",
    "irup_for_target", "save_irup", "NOISY_COV", "MIN_ROWS", "MIN_GROUPS",
]

#: Version of the IRUP JSON document (``quiho irup --json``, the ``irups`` table).
IRUP_SCHEMA_VERSION = 1
#: Median per-host coefficient of variation across repetitions above which a stressor is flagged noisy.
NOISY_COV = 0.2
MIN_ROWS = 10
MIN_GROUPS = 3
TOP_K = 3


@dataclass(frozen=True)
class FeatureImportance:
    """Importance of one stressor in an IRUP (top stressor = 100).

    ``std`` is the spread across seeds on the same scale; ``top3_frequency``
    the share of seeds that put it in their top 3; ``median_rank`` its median
    rank over seeds (1 = top).
    """

    stressor: str
    importance: float
    std: float
    classes: tuple[str, ...]
    primary: str
    top3_frequency: float
    median_rank: float
    noisy: bool


@dataclass(frozen=True)
class DroppedStressor:
    """A stressor left out of the model, and why."""

    stressor: str
    reason: str


@dataclass(frozen=True)
class SeedImportances:
    """Importance of every training stressor in every seed, on the IRUP's 0-100 scale.

    ``values[s][j]`` is seed ``s``'s importance of ``columns[j]`` (training column order,
    dropped stressors excluded); the IRUP's ``importance`` of a stressor is the mean over seeds.
    """

    columns: tuple[str, ...] = ()
    values: tuple[tuple[float, ...], ...] = ()

    def __len__(self) -> int:
        return len(self.values)

    def matrix(self) -> np.ndarray:
        """The values as an array of shape (seeds, stressors)."""
        return np.asarray(self.values, dtype=float).reshape(len(self.values), len(self.columns))


@dataclass(frozen=True)
class Irup:
    """An inferred resource utilisation profile with the evidence behind it."""

    target: str
    importance: str
    seeds: int
    random_state: int
    resample: str
    features: tuple[FeatureImportance, ...]
    dropped: tuple[DroppedStressor, ...]
    validity: Validity
    rows: int
    unit: str
    higher_is_better: bool
    groups: dict[int, list[str]]
    params: dict[str, Any]
    versions: dict[str, str]
    notes: tuple[str, ...] = field(default_factory=tuple)
    per_seed: SeedImportances = field(default_factory=SeedImportances, repr=False)

    def top(self, k: int = 5) -> tuple[FeatureImportance, ...]:
        """The ``k`` most important stressors."""
        return self.features[:k]

    def by_stressor(self) -> dict[str, FeatureImportance]:
        """Features keyed by stressor name."""
        return {f.stressor: f for f in self.features}

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``quiho irup --json`` (plus extra evidence keys)."""
        return {
            "schema_version": IRUP_SCHEMA_VERSION,
            "quiho_version": self.versions.get("quiho", __version__),
            "target": self.target,
            "importance": self.importance,
            "seeds": self.seeds,
            "random_state": self.random_state,
            "resample": self.resample,
            "rows": self.rows,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "features": [
                {
                    "stressor": f.stressor, "importance": round(f.importance, 3), "std": round(f.std, 3),
                    "classes": list(f.classes), "primary": f.primary, "top3_frequency": round(f.top3_frequency, 3),
                    "median_rank": f.median_rank, "noisy": f.noisy,
                }
                for f in self.features
            ],
            "dropped": [{"stressor": d.stressor, "reason": d.reason} for d in self.dropped],
            "validity": self.validity.to_dict(),
            "groups": {str(k): v for k, v in self.groups.items()},
            "params": self.params,
            "versions": self.versions,
            "notes": list(self.notes),
        }


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    import joblib
    import scipy

    return {
        "quiho": __version__, "scikit-learn": version("scikit-learn"), "numpy": np.__version__,
        "pandas": pd.__version__, "scipy": scipy.__version__, "joblib": joblib.__version__,
        "python": platform.python_version(),
    }


def _units(data: TargetData) -> np.ndarray:
    return (data.meta["batch"].astype(str) + "|" + data.meta["host"].astype(str)).to_numpy()


def _prepare(data: TargetData) -> tuple[pd.DataFrame, list[DroppedStressor], set[str]]:
    X = data.X
    dropped = [DroppedStressor(c, "zero variance across this target's rows") for c in X.columns if X[c].std() == 0]
    X = X.drop(columns=[d.stressor for d in dropped])
    units = _units(data)
    g = X.groupby(units)
    mean = g.mean()
    # Per-unit coefficient of variation; NaN for a unit of one row or a zero mean.
    cov = (g.std(ddof=0) / mean.where(mean != 0)).where(g.size() > 1, axis=0)
    med_cov = cov.median()
    noisy = {str(c) for c in X.columns if np.isfinite(med_cov.get(c, np.nan)) and med_cov[c] > NOISY_COV}
    return X, dropped, noisy


def compute_irup(
    data: TargetData,
    *,
    importance: str = "classic",
    seeds: int = 10,
    random_state: int = 0,
    resample: str = "groups",
    params: ModelParams | None = None,
    n_jobs: int = -1,
    catalog: Catalog | None = None,
) -> Irup:
    """Compute the IRUP of one target.

    (Over 80 lines only through this docstring; the steps are :func:`training_rows`,
    :func:`fit_models` and :func:`_features`.)

    Parameters
    ----------
    data : TargetData
        Rows from :func:`quiho.irup.data.load_target`.
    importance : {"classic", "impurity", "permutation"}, default "classic"
        Importance formula (see :mod:`quiho.irup.importance`).
    seeds : int, default 10
        Number of model fits; per-stressor mean and spread are over these.
    random_state : int, default 0
        Master seed; child seeds are drawn up front, so results do not depend on ``n_jobs``.
    resample : {"groups", "none"}, default "groups"
        ``groups``: each seed fits a bootstrap sample of hardware groups (the
        spread then reflects which machines the fleet happens to have).
        ``none``: the paper's way, every seed fits all rows. ``permutation`` needs ``groups``.
    params : ModelParams, optional
        Gradient-boosting parameters; default the paper's.
    n_jobs : int, default -1
        Parallel workers for the fits (joblib).
    catalog : Catalog, optional
        Stressor catalog; default ``stressors/catalog.yaml``.

    Returns
    -------
    Irup

    Raises
    ------
    UsageError
        Unknown formula or resample mode.
    NotEnoughData, NotEnoughMachines
        Fewer than 10 rows, fewer than 3 hardware groups, or a constant metric.

    Examples
    --------
    >>> from quiho.datasets import planted_bottleneck
    >>> data = planted_bottleneck(n_groups=6, reps=2, bottleneck="stream", random_state=0)
    >>> irup = compute_irup(data, seeds=2, n_jobs=1, params=ModelParams(n_estimators=100))
    >>> irup.features[0].stressor
    'stream'
    """
    if importance not in FORMULAS:
        raise UsageError(f"unknown importance formula {importance!r}; choose one of {', '.join(FORMULAS)}")
    if resample not in ("groups", "none"):
        raise UsageError(f"unknown resample mode {resample!r}; choose 'groups' or 'none'")
    if importance == "permutation" and resample != "groups":
        raise UsageError("permutation importance is measured on held-out hardware groups: use resample='groups'")
    if seeds < 1:
        raise UsageError("seeds must be at least 1")
    if params is not None and params.engine not in ENGINES:
        raise UsageError(f"unknown model engine {params.engine!r}; choose one of {', '.join(ENGINES)}")
    params = params or ModelParams()
    catalog = catalog or load_catalog()
    X, dropped, noisy, hw = training_rows(data)
    Xa, ya, groups = X.to_numpy(dtype=float), data.y.to_numpy(dtype=float), hw.row_groups
    seed_states = child_seeds(random_state, seeds)
    logo_seed = int(np.random.SeedSequence([random_state, 1]).generate_state(1)[0] % (2**31 - 1))
    # The out-of-group check does not depend on the formula or on the seeds: reuse it
    # within this process (e.g. three formulas, or compare after irup, on one target).
    key = _logo_key(Xa, ya, groups, params, logo_seed)
    plan = FitPlan(importance, params, tuple(seed_states), resample, logo_seed if key not in _LOGO_CACHE else None)
    imp, logo = fit_models(Xa, ya, groups, plan, n_jobs)
    if logo is not None:
        _LOGO_CACHE[key] = r2_between_groups(ya, logo_predictions(logo, groups, len(ya)), groups)
    valid = np.isfinite(imp).all(axis=1)
    if not valid.any():
        raise NotEnoughData(f"target {data.target!r}: no seed had held-out groups for permutation importance")
    cols = [str(c) for c in X.columns]
    feats, per_seed, top1_freq = _features(imp[valid], cols, noisy, catalog)
    validity = verdict(_LOGO_CACHE[key], hw.n_groups, len(set(data.meta["host"])), len(ya), top1_freq,
                       feats[0].top3_frequency, feats[0].stressor)
    notes = list(data.notes)
    notes.extend(metric_stability(data))
    batch_warnings = batch_consistency(data, groups)
    if batch_warnings:
        validity = dataclasses.replace(validity, reason=validity.reason + "; " + "; ".join(batch_warnings))
        notes.extend(batch_warnings)
    if noisy:
        notes.append(f"noisy stressors (median per-host CoV > {NOISY_COV:.0%}): {', '.join(sorted(noisy))}")
    return Irup(
        target=data.target, importance=importance, seeds=seeds, random_state=random_state, resample=resample,
        features=feats, dropped=tuple(dropped), validity=validity, rows=len(ya), unit=data.unit,
        higher_is_better=data.higher_is_better, groups=hw.members(),
        params={
            "model": "GradientBoostingRegressor" if params.engine == "sklearn" else "batched gradient boosting",
            **params.__dict__, "group_threshold": round(hw.threshold, 4),
            "repetition_distance": json_number(hw.repetition_distance, 5), "seed_states": seed_states,
        },
        versions=_versions(), notes=tuple(notes), per_seed=per_seed,
    )


def child_seeds(random_state: int, seeds: int) -> list[int]:
    """The per-seed states drawn up front from ``random_state`` (same for every engine and ``n_jobs``)."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(random_state).spawn(seeds)]


def training_rows(data: TargetData) -> tuple[pd.DataFrame, list[DroppedStressor], set[str], HardwareGroups]:
    """Checked training columns, dropped and noisy stressors, and the hardware groups of ``data``."""
    if len(data.y) < MIN_ROWS:
        raise NotEnoughData(f"target {data.target!r} has {len(data.y)} rows; an IRUP needs at least {MIN_ROWS}")
    y = data.y.to_numpy(dtype=float)
    if not np.isfinite(y).all() or not np.isfinite(data.X.to_numpy(dtype=float)).all():
        raise NotEnoughData(f"target {data.target!r} has non-finite values (NaN or infinite) in its metric or "
                            "fingerprints; remove or re-measure those runs")
    if float(np.std(y)) == 0:
        raise NotEnoughData(f"target {data.target!r} has the same value on every row: nothing to explain")
    X, dropped, noisy = _prepare(data)
    hw: HardwareGroups = hardware_groups(X, _units(data))
    if hw.n_groups < MIN_GROUPS:
        raise NotEnoughMachines(
            f"target {data.target!r} ran on {hw.n_groups} distinct hardware group(s) "
            f"({len(set(data.meta['host']))} hosts); an IRUP needs at least {MIN_GROUPS}"
        )
    return X, dropped, noisy, hw


def _features(
    imp: np.ndarray, cols: list[str], noisy: set[str], catalog: Catalog
) -> tuple[tuple[FeatureImportance, ...], SeedImportances, float]:
    """Scaled features (largest first), the per-seed matrix on the same scale, top-1 frequency."""
    mean = np.clip(imp.mean(axis=0), 0, None)
    if mean.max() <= 0:
        raise NotEnoughData("no stressor has positive importance")
    scale = 100.0 / mean.max()
    std = imp.std(axis=0)
    ranks = (-imp).argsort(axis=1).argsort(axis=1) + 1  # rank of each feature per seed
    top3 = (ranks <= TOP_K).mean(axis=0)
    med_rank = np.median(ranks, axis=0)
    order = sorted(range(len(cols)), key=lambda i: (-mean[i], cols[i]))
    feats = tuple(
        FeatureImportance(
            stressor=cols[i], importance=float(mean[i] * scale), std=float(std[i] * scale),
            classes=catalog.classes(cols[i]), primary=catalog.primary(cols[i]), top3_frequency=float(top3[i]),
            median_rank=float(med_rank[i]), noisy=cols[i] in noisy,
        )
        for i in order
    )
    per_seed = SeedImportances(tuple(cols), tuple(tuple(float(v) * scale for v in row) for row in imp))
    return feats, per_seed, float((ranks[:, order[0]] == 1).mean())


@dataclass(frozen=True)
class FitPlan:
    """What :func:`fit_models` fits.

    Attributes
    ----------
    formula : str
        Importance formula (:data:`FORMULAS`).
    params : ModelParams
        Hyper-parameters and engine.
    seed_states : tuple of int
        One child seed per model seed (:func:`child_seeds`).
    resample : {"none", "groups"}
        Rows each seed fits.
    logo_seed : int, optional
        Seed of the leave-one-group-out fits; None: no out-of-group predictions.
    n_repeats : int, default 5
        Shuffles per stressor of the ``permutation`` formula.
    """

    formula: str
    params: ModelParams
    seed_states: tuple[int, ...]
    resample: str
    logo_seed: int | None = None
    n_repeats: int = 5


def fit_models(
    X: np.ndarray, y: np.ndarray, groups: np.ndarray, plan: FitPlan, n_jobs: int = -1,
) -> tuple[np.ndarray, dict[int, np.ndarray] | None]:
    """Importances of every seed (seeds × stressors) and, with ``plan.logo_seed``, out-of-group predictions.

    The ``batched`` engine fits all seeds and leave-one-group-out folds in one call
    (:func:`quiho.irup.batched.fit_batched`); the ``sklearn`` engine fits one
    ``GradientBoostingRegressor`` per seed and fold in joblib workers. Both draw the same
    bootstrap of hardware groups per seed (:func:`quiho.irup.importance.seed_weights`).
    """
    formula, params, seed_states, resample = plan.formula, plan.params, list(plan.seed_states), plan.resample
    logo_seed, n_repeats = plan.logo_seed, plan.n_repeats
    ug = sorted(set(groups.tolist()))
    if params.engine == "sklearn":
        tasks = [delayed(fit_seed)(X, y, groups, formula=formula, params=params, seed=s, resample=resample)
                 for s in seed_states]
        if logo_seed is not None:
            tasks += [delayed(logo_fold)(X, y, groups, g, params, logo_seed) for g in ug]
        results = Parallel(n_jobs=n_jobs)(tasks)
        imp = np.vstack([f.importances for f in results[:len(seed_states)]])
        logo = dict(zip(ug, results[len(seed_states):], strict=True)) if logo_seed is not None else None
        return imp, logo
    drawn = [seed_weights(groups, s, resample) for s in seed_states]
    W = [w for _, _, w in drawn]
    mseeds = [ms for _, ms, _ in drawn]
    if logo_seed is not None:
        W += [(groups != g).astype(float) for g in ug]
        mseeds += [logo_seed + i for i in range(len(ug))]
    fit = fit_batched(X, y, np.vstack(W), params, np.array(mseeds), n_jobs)
    S = len(seed_states)
    logo = {g: fit.pred[S + i][groups == g] for i, g in enumerate(ug)} if logo_seed is not None else None
    if formula != "permutation":
        return (fit.classic if formula == "classic" else fit.impurity)[:S].copy(), logo
    imp = np.full((S, X.shape[1]), np.nan)
    y_var = float(np.var(y)) or 1.0
    for s, (rng, _, w) in enumerate(drawn):
        oob = np.flatnonzero(w == 0)
        if len(oob) < 2:
            continue  # no held-out group this seed: contributes nothing
        blocks = permutation_blocks(X[oob], rng, n_repeats)
        pred = predict_batched(fit, np.full(len(blocks), s), blocks, n_jobs=n_jobs)
        imp[s] = permutation_scores(pred, fit.pred[s][oob], y[oob], n_repeats, y_var)
    return imp, logo


_LOGO_CACHE: dict[str, float] = {}


def clear_caches() -> None:
    """Forget this process's out-of-group R² (the next IRUP of the same rows refits its validity folds)."""
    _LOGO_CACHE.clear()


def _logo_key(X: np.ndarray, y: np.ndarray, groups: np.ndarray, params: ModelParams, seed: int) -> str:
    h = hashlib.sha256()
    for arr in (X, y, groups):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(repr((params, seed)).encode())
    return h.hexdigest()


#: Same hardware, different batch: a median metric ratio beyond this factor means the batches disagree.
BATCH_RATIO_LIMIT = 1.25


def batch_consistency(data: TargetData, groups: np.ndarray) -> list[str]:
    """Warnings for batches whose metric differs on the *same* hardware groups.

    A change of benchmark, input or unit between batches makes pooled rows
    contradict each other (the paper's STREAM add-N batches differ ~5-10x on
    the same machines); no model can then fit them.
    """
    if data.meta["batch"].nunique() < 2:
        return []
    df = pd.DataFrame({"batch": data.meta["batch"].astype(str), "group": groups, "y": data.y.to_numpy()})
    med = df.groupby(["batch", "group"])["y"].median().unstack("batch")
    batches = list(med.columns)
    out = []
    for i, a in enumerate(batches):
        for b in batches[i + 1:]:
            both = med[[a, b]].dropna()
            both = both[(both > 0).all(axis=1)]
            if len(both) < 2:
                continue
            ratio = float(np.exp(np.median(np.log(both[b] / both[a]))))
            if ratio > BATCH_RATIO_LIMIT or ratio < 1 / BATCH_RATIO_LIMIT:
                out.append(
                    f"batches {a} and {b} disagree: on the {len(both)} hardware groups both ran on, the metric of "
                    f"{b} is {ratio:.2f}x that of {a}; the batches are not comparable (use --batch)"
                )
    return out


def metric_stability(data: TargetData, *, spread: float = 0.10, outlier: float = 0.5) -> list[str]:
    """pyperf-style check of the application metric across repetitions of each host.

    Flags hosts whose repetitions spread (std / mean) by at least ``spread``,
    and repetitions at least ``outlier`` (50 %) away from their host's median.
    """
    df = pd.DataFrame({"unit": _units(data), "y": data.y.to_numpy()})
    noisy, outliers = [], 0
    for unit, sub in df.groupby("unit"):
        if len(sub) < 2 or sub["y"].mean() == 0:
            continue
        if sub["y"].std(ddof=0) / abs(sub["y"].mean()) >= spread:
            noisy.append(str(unit).split("|")[-1])
        med = sub["y"].median()
        if med:
            outliers += int((abs(sub["y"] - med) / abs(med) >= outlier).sum())
    out = []
    if noisy:
        out.append(f"metric unstable on {len(noisy)} host(s) (repetitions spread ≥ {spread:.0%} of the mean): "
                   f"{', '.join(sorted(noisy)[:6])}{' ...' if len(noisy) > 6 else ''}")
    if outliers:
        out.append(f"{outliers} repetition(s) ≥ {outlier:.0%} away from their host's median")
    return out



def irup_for_target(
    store: Store, target: str, *, batch: str | None = None, save: bool = True, **kwargs: Any
) -> Irup:
    """Load ``target`` from the store, compute its IRUP and (by default) record it."""
    data = load_target(store, target, batch=batch)
    irup = compute_irup(data, **kwargs)
    if save:
        save_irup(store, irup)
    return irup


def save_irup(store: Store, irup: Irup) -> int:
    """Record an IRUP in the store; returns its id."""
    return insert_irup(store, irup.target, irup.importance, irup.seeds, irup.random_state, irup.params,
                       irup.to_dict())
