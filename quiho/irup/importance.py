"""Feature-importance formulas and one model fit per seed.

``classic``
    The paper's formula (scikit-learn 0.19): the mean over trees of each
    tree's *normalised* impurity importance, every tree weighted equally
    (a tree without a split contributes zeros).
``impurity``
    Current scikit-learn ``feature_importances_``: impurity decreases summed
    over the whole ensemble, normalised once.
``permutation``
    Increase of the squared error on *held-out hardware groups* when one
    stressor's column is shuffled (Breiman 2001; scikit-learn's permutation
    importance), divided by the variance of the target. Unbiased towards
    high-cardinality features, unlike both impurity formulas.

References
----------
Breiman, L. (2001). Random forests. Machine Learning 45, 5-32.
Strobl, C. et al. (2007). Bias in random forest variable importance measures. BMC Bioinformatics 8:25.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from sklearn.ensemble import GradientBoostingRegressor

__all__ = [
    "Formula", "FORMULAS", "ENGINES", "ModelParams", "SeedFit", "fit_seed", "seed_weights", "classic_importance",
    "permutation_blocks", "permutation_scores",
]

Formula = Literal["classic", "impurity", "permutation"]
FORMULAS: tuple[str, ...] = ("classic", "impurity", "permutation")


#: Model engines: ``batched`` fits every seed and fold of an IRUP together (:mod:`quiho.irup.batched`,
#: the default); ``sklearn`` is scikit-learn's ``GradientBoostingRegressor``, the reference.
ENGINES: tuple[str, ...] = ("batched", "sklearn")


@dataclass(frozen=True)
class ModelParams:
    """Gradient-boosting hyper-parameters (defaults are the paper's) and the engine that fits them."""

    n_estimators: int = 1000
    max_depth: int = 4
    min_samples_split: int = 2
    learning_rate: float = 0.01
    loss: str = "squared_error"
    engine: str = "batched"

    @classmethod
    def preset(cls, name: str) -> ModelParams:
        """``quiho`` (the default), ``paper`` or ``fast``.

        ``quiho`` is the paper's hyper-parameters on the batched engine; ``paper`` the same
        hyper-parameters on scikit-learn's ``GradientBoostingRegressor`` (the reference the
        batched engine is tested against); ``fast`` 250 scikit-learn trees at 4x the learning
        rate. ``bench/irup_speed.py`` reports time and agreement of each.
        """
        presets = {"quiho": cls(), "paper": cls(engine="sklearn"),
                   "fast": cls(n_estimators=250, learning_rate=0.04, engine="sklearn")}
        if name not in presets:
            from quiho.errors import UsageError

            raise UsageError(f"unknown model preset {name!r}; choose {', '.join(presets)}")
        return presets[name]

    def make(self, random_state: int) -> GradientBoostingRegressor:
        """A fresh scikit-learn regressor with these hyper-parameters."""
        from sklearn.ensemble import GradientBoostingRegressor

        return GradientBoostingRegressor(
            n_estimators=self.n_estimators, max_depth=self.max_depth, min_samples_split=self.min_samples_split,
            learning_rate=self.learning_rate, loss=self.loss, random_state=random_state,
        )


@dataclass(frozen=True)
class SeedFit:
    """What one seed contributes: raw importances and its out-of-bag predictions."""

    importances: np.ndarray
    oob_rows: np.ndarray
    oob_pred: np.ndarray


def classic_importance(model: GradientBoostingRegressor) -> np.ndarray:
    """Mean over trees of each tree's normalised impurity importance (scikit-learn 0.19)."""
    n = model.n_features_in_
    total = np.zeros(n)
    for stage in model.estimators_:
        for tree in stage:
            imp = tree.tree_.compute_feature_importances(normalize=False)
            s = imp.sum()
            if s > 0:
                total += imp / s
    return total / model.estimators_.size


def _permutation(
    model: GradientBoostingRegressor, X: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_repeats: int,
    y_var: float,
) -> np.ndarray:
    # All shuffled copies are predicted in one call: much cheaper than one call per column.
    blocks = permutation_blocks(X, rng, n_repeats)
    pred = model.predict(blocks.reshape(-1, X.shape[1])).reshape(len(blocks), len(y))
    return permutation_scores(pred, model.predict(X), y, n_repeats, y_var)


def seed_weights(groups: np.ndarray, seed: int, resample: str) -> tuple[np.random.Generator, int, np.ndarray]:
    """The generator, model seed and row weights of one seed (shared by both engines).

    With ``resample="groups"`` the weights are the multiplicities of a bootstrap sample of
    whole hardware groups (at least two distinct groups drawn); with ``"none"`` all ones.
    """
    rng = np.random.default_rng(seed)
    model_seed = int(rng.integers(2**31 - 1))
    if resample != "groups":
        return rng, model_seed, np.ones(len(groups))
    ug = np.unique(groups)
    for _ in range(100):
        drawn = rng.choice(ug, size=len(ug), replace=True)
        if len(np.unique(drawn)) >= 2:
            break
    counts = {g: int((drawn == g).sum()) for g in ug}
    return rng, model_seed, np.array([counts[g] for g in groups], dtype=float)


def permutation_blocks(X: np.ndarray, rng: np.random.Generator, n_repeats: int) -> np.ndarray:
    """``n_repeats × p`` copies of ``X`` (n, p), copy ``(r, j)`` with column ``j`` shuffled; shape (r·p, n, p)."""
    n, p = X.shape
    blocks = np.repeat(X[None, :, :], n_repeats * p, axis=0)
    for r in range(n_repeats):
        for j in range(p):
            blocks[r * p + j, :, j] = X[rng.permutation(n), j]
    return blocks


def permutation_scores(pred: np.ndarray, base_pred: np.ndarray, y: np.ndarray, n_repeats: int,
                       y_var: float) -> np.ndarray:
    """Mean squared-error increase per column over repeats, divided by ``y_var``.

    ``pred`` has shape (n_repeats·p, n) in :func:`permutation_blocks` order.
    """
    base = np.mean((base_pred - y) ** 2)
    mse = np.mean((pred.reshape(n_repeats, -1, len(y)) - y[None, None, :]) ** 2, axis=2)
    return (mse.mean(axis=0) - base) / y_var


def fit_seed(
    X: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    *,
    formula: str,
    params: ModelParams,
    seed: int,
    resample: str,
    n_repeats: int = 5,
) -> SeedFit:
    """Fit one model and return its importances.

    With ``resample="groups"`` the rows are a bootstrap sample of whole
    hardware groups (drawn multiplicities become sample weights); the groups
    not drawn are this seed's out-of-bag rows, where ``permutation``
    importance is measured. With ``resample="none"`` every row is used and
    only the model's own ``random_state`` differs between seeds.
    """
    rng, model_seed, w = seed_weights(groups, seed, resample)
    in_bag = w > 0
    model = params.make(model_seed).fit(X[in_bag], y[in_bag], sample_weight=w[in_bag])
    oob = np.flatnonzero(~in_bag)
    oob_pred = model.predict(X[oob]) if len(oob) else np.empty(0)
    if formula == "classic":
        imp = classic_importance(model)
    elif formula == "impurity":
        imp = np.asarray(model.feature_importances_, dtype=float)
    elif formula == "permutation":
        if len(oob) < 2:
            imp = np.full(X.shape[1], np.nan)  # no held-out group this seed: contributes nothing
        else:
            y_var = float(np.var(y)) or 1.0
            imp = _permutation(model, X[oob], y[oob], rng, n_repeats, y_var)
    else:  # pragma: no cover - validated by the caller
        raise ValueError(formula)
    return SeedFit(imp, oob, oob_pred)
