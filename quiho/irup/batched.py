"""Batched gradient boosting: many small squared-error ensembles on the same rows, fitted together.

An IRUP fits tens of models (seeds, leave-one-group-out folds, and for the calibrated
comparison hundreds of label permutations) on the *same* rows: only the row weights
differ (a bootstrap of hardware groups is a weight per row; a held-out group is weight
0). This module fits all of them in one compiled loop (numba), parallel over models:

- one presort per stressor, shared by every model and tree;
- each depth level of a tree keeps every open node's in-bag rows as one contiguous segment
  per stressor, in that stressor's sorted order (a stable partition of the parent's segment),
  so a split search is a sequential scan with its running sums in registers
  (``O(stressors × rows)`` per level, no sorting after the presort);
- the split rule is scikit-learn's ``DecisionTreeRegressor(criterion="friedman_mse")``
  as used by ``GradientBoostingRegressor``: Friedman's improvement proxy, thresholds at the
  midpoint of adjacent distinct values (float32 inputs, as scikit-learn converts them),
  ``min_samples_split`` on unweighted in-bag rows, a node with impurity ≤ machine epsilon
  is a leaf, ties between stressors broken by a random stressor order per node;
- leaves hold the weighted mean residual (squared error needs no line search), the
  ensemble starts at the weighted mean of the target.

Rows with weight 0 take no part in the fit but are routed through every tree, so
out-of-bag and held-out predictions come for free.

Importances are accumulated while growing: per tree the weighted impurity decrease per
stressor (as ``Tree.compute_feature_importances(normalize=False)``), summed both
*normalised per tree* (the paper's scikit-learn 0.19 formula, ``classic``) and raw
(today's ``feature_importances_``, ``impurity``).

References
----------
Friedman, J. H. (2001). Greedy function approximation: a gradient boosting machine.
Annals of Statistics 29(5), 1189-1232.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads, set_parallel_chunksize

from quiho.irup.importance import ModelParams

__all__ = ["BatchedFit", "compiled_signatures", "fit_batched", "predict_batched", "warm"]

#: scikit-learn's FEATURE_THRESHOLD: values closer than this are one value.
_FEATURE_THRESHOLD = 1e-7
_EPSILON = float(np.finfo(np.float64).eps)
#: Relative tolerance under which two split improvements count as a tie (float summation order).
_TIE = 0.0


@njit(cache=True, inline="always")
def _uniform(state: np.ndarray, m: int) -> float:  # pragma: no cover - compiled
    # splitmix64 on a per-model state: deterministic, independent of threads.
    z = state[m] + np.uint64(0x9E3779B97F4A7C15)
    state[m] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _fit_one(  # noqa: PLR0912, PLR0915 - one compiled loop nest; splitting it costs speed
    X, order, y, w, m, n_estimators, max_depth, lr, min_split, state,
    feat, thr, val, classic, raw, pred, init_out,
):  # pragma: no cover - compiled
    """Grow model ``m``'s ensemble in place (trees, importances, predictions).

    Long because it is the compiled inner loop nest (trees → levels → nodes → stressors → presorted rows);
    splitting it into calls numba cannot inline costs speed. Many parameters because a numba kernel takes
    arrays and scalars, not objects.

    Each level keeps, per stressor, the in-bag rows of every open node as one contiguous
    segment in that stressor's sorted order (a stable partition of the parent's segment, as
    scikit-learn's presorted splitter did), so a node's split search is a sequential scan whose
    running sums live in registers. The candidates are visited in the same order as a scan over
    the whole presorted column, so the chosen splits are the same bit for bit.
    """
    n, p = X.shape
    n_nodes = 2 ** (max_depth + 1) - 1
    sw = 0.0
    swy = 0.0
    for i in range(n):
        if w[m, i] > 0:
            sw += w[m, i]
            swy += w[m, i] * y[m, i]
    init = swy / sw
    init_out[m] = init
    for i in range(n):
        pred[m, i] = init
    node = np.zeros(n, np.int64)
    r = np.empty(n)
    # This model's in-bag rows in each stressor's sorted order, values alongside (sequential reads).
    wm = w[m].copy()
    nin = 0
    for i in range(n):
        if wm[i] > 0:
            nin += 1
    ordm = np.empty((p, nin), np.uint32)
    xsm = np.empty((p, nin))
    for j in range(p):
        c = 0
        for q in range(n):
            i = order[j, q]
            if wm[i] > 0:
                ordm[j, c] = i
                xsm[j, c] = X[i, j]
                c += 1
    # Two buffers for the per-level partitions (level 0 reads ordm/xsm directly).
    ia = np.empty((p, nin), np.uint32)
    xa = np.empty((p, nin))
    ib = np.empty((p, nin), np.uint32)
    xb = np.empty((p, nin))
    seg = np.zeros(n_nodes, np.int64)
    goleft = np.zeros(n, np.int64)
    nW = np.zeros(n_nodes)
    nS = np.zeros(n_nodes)
    nQ = np.zeros(n_nodes)
    nN = np.zeros(n_nodes, np.int64)
    bW = np.zeros(n_nodes)
    bS = np.zeros(n_nodes)
    bQ = np.zeros(n_nodes)
    bN = np.zeros(n_nodes, np.int64)
    best = np.zeros(n_nodes)
    bpri = np.zeros(n_nodes)
    bfeat = np.zeros(n_nodes, np.int64)
    bthr = np.zeros(n_nodes)
    is_open = np.zeros(n_nodes, np.bool_)
    pri = np.zeros((n_nodes, p))
    timp = np.zeros(p)
    for t in range(n_estimators):
        for k in range(n_nodes):
            nW[k] = 0.0
            nS[k] = 0.0
            nQ[k] = 0.0
            nN[k] = 0
            feat[m, t, k] = -1
        for i in range(n):
            r[i] = y[m, i] - pred[m, i]
            node[i] = 0
            wi = w[m, i]
            if wi > 0:
                nW[0] += wi
                nS[0] += wi * r[i]
                nQ[0] += wi * r[i] * r[i]
                nN[0] += 1
        for j in range(p):
            timp[j] = 0.0
        seg[0] = 0
        ci = ordm
        cx = xsm
        for d in range(max_depth):
            first = 2 ** d - 1
            any_open = False
            for k in range(first, 2 * first + 1):
                is_open[k] = False
                if nN[k] >= min_split and nN[k] >= 2 and nW[k] > 0:
                    mean = nS[k] / nW[k]
                    if nQ[k] / nW[k] - mean * mean > _EPSILON:
                        is_open[k] = True
                        any_open = True
                        best[k] = -np.inf
                        bfeat[k] = -1
                        for j in range(p):
                            pri[k, j] = _uniform(state, m)
            if not any_open:
                break
            for k in range(first, 2 * first + 1):
                if not is_open[k]:
                    continue
                s0 = seg[k]
                s1 = s0 + nN[k]
                tW = nW[k]
                tS = nS[k]
                kbest = best[k]
                kpri = bpri[k]
                kf = bfeat[k]
                kthr = bthr[k]
                kW = bW[k]
                kS = bS[k]
                kN = bN[k]
                for j in range(p):
                    pj = pri[k, j]
                    lW = 0.0
                    lS = 0.0
                    lN = 0
                    last = 0.0
                    for q in range(s0, s1):
                        i = ci[j, q]
                        v = cx[j, q]
                        if lN > 0 and v > last + _FEATURE_THRESHOLD:
                            rW = tW - lW
                            diff = rW * lS - lW * (tS - lS)
                            prox = diff * diff / (lW * rW)
                            if kf < 0 or prox > kbest or (prox >= kbest and pj < kpri and kf != j):
                                kbest = prox
                                kpri = pj
                                kf = j
                                th = last / 2.0 + v / 2.0
                                if th == v or not np.isfinite(th):
                                    th = last
                                kthr = th
                                kW = lW
                                kS = lS
                                kN = lN
                        wi = wm[i]
                        lW += wi
                        lS += wi * r[i]
                        lN += 1
                        last = v
                best[k] = kbest
                bpri[k] = kpri
                bfeat[k] = kf
                bthr[k] = kthr
                bW[k] = kW
                bS[k] = kS
                bN[k] = kN
            # Sum of squares of each chosen left child (kept out of the scan: one pass here is cheaper).
            for k in range(first, 2 * first + 1):
                bQ[k] = 0.0
            for i in range(n):
                k = node[i]
                if wm[i] > 0 and k >= first and is_open[k] and bfeat[k] >= 0 and X[i, bfeat[k]] <= bthr[k]:
                    bQ[k] += wm[i] * r[i] * r[i]
            for k in range(first, 2 * first + 1):
                if not is_open[k] or bfeat[k] < 0:
                    continue
                f = bfeat[k]
                feat[m, t, k] = f
                thr[m, t, k] = bthr[k]
                a, b = 2 * k + 1, 2 * k + 2
                nW[a], nS[a], nQ[a], nN[a] = bW[k], bS[k], bQ[k], bN[k]
                nW[b], nS[b], nQ[b], nN[b] = nW[k] - bW[k], nS[k] - bS[k], nQ[k] - bQ[k], nN[k] - bN[k]
                imp_k = nQ[k] / nW[k] - (nS[k] / nW[k]) ** 2
                imp_a = nQ[a] / nW[a] - (nS[a] / nW[a]) ** 2
                imp_b = nQ[b] / nW[b] - (nS[b] / nW[b]) ** 2
                timp[f] += nW[k] * imp_k - nW[a] * imp_a - nW[b] * imp_b
            for i in range(n):
                k = node[i]
                if k >= first and feat[m, t, k] >= 0:
                    gl = X[i, feat[m, t, k]] <= thr[m, t, k]
                    goleft[i] = gl
                    node[i] = 2 * k + 1 if gl else 2 * k + 2
            if d + 1 == max_depth:
                break
            # Stable partition of every split node's segment into its children's, per stressor.
            ni = ia if d % 2 == 0 else ib  # level 0 reads ordm; then ia and ib alternate
            nx = xa if d % 2 == 0 else xb
            pos = 0
            for k in range(first, 2 * first + 1):
                if feat[m, t, k] >= 0:
                    seg[2 * k + 1] = pos
                    seg[2 * k + 2] = pos + nN[2 * k + 1]
                    pos += nN[k]
            for k in range(first, 2 * first + 1):
                if feat[m, t, k] < 0:
                    continue
                s0 = seg[k]
                s1 = s0 + nN[k]
                la = seg[2 * k + 1]
                ra = seg[2 * k + 2]
                for j in range(p):
                    lp = la
                    rp = ra
                    for q in range(s0, s1):
                        i = ci[j, q]
                        gl = goleft[i]  # branch-free: the side is data, a jump would be mispredicted
                        dst = lp if gl else rp
                        ni[j, dst] = i
                        nx[j, dst] = cx[j, q]
                        lp += gl
                        rp += 1 - gl
            ci = ni
            cx = nx
        for k in range(n_nodes):
            val[m, t, k] = nS[k] / nW[k] if nW[k] > 0 else 0.0
        for i in range(n):
            pred[m, i] += lr * val[m, t, node[i]]
        tot = 0.0
        for j in range(p):
            tot += timp[j]
        for j in range(p):
            raw[m, j] += timp[j] / nW[0]
            if tot > 0:
                classic[m, j] += timp[j] / tot
    for j in range(p):
        classic[m, j] /= n_estimators


@njit(cache=True, parallel=True)
def _fit_all(X, order, y, w, n_estimators, max_depth, lr, min_split, state,
             feat, thr, val, classic, raw, pred, init):  # pragma: no cover - compiled
    """Grow every model's ensemble, one model per thread (many parameters because it is a numba kernel)."""
    for m in prange(w.shape[0]):
        _fit_one(X, order, y, w, m, n_estimators, max_depth, lr, min_split, state,
                 feat, thr, val, classic, raw, pred, init)


@njit(cache=True, parallel=True)
def _predict(Xq, feat, thr, val, init, lr, models, out):  # pragma: no cover - compiled
    # out[b, i]: prediction of model models[b] for row i of Xq[b]
    T = feat.shape[1]
    for b in prange(models.shape[0]):
        m = models[b]
        for i in range(Xq.shape[1]):
            s = 0.0
            for t in range(T):
                k = 0
                while feat[m, t, k] >= 0:
                    k = 2 * k + 1 if Xq[b, i, feat[m, t, k]] <= thr[m, t, k] else 2 * k + 2
                s += val[m, t, k]
            out[b, i] = init[m] + lr * s


@dataclass(frozen=True)
class BatchedFit:
    """``M`` fitted ensembles on the same rows.

    Attributes
    ----------
    classic : ndarray, shape (M, p)
        Mean over trees of each tree's normalised impurity importance (scikit-learn 0.19).
    impurity : ndarray, shape (M, p)
        Impurity importance summed over trees and normalised once (scikit-learn ≥ 0.20).
    pred : ndarray, shape (M, n)
        Predictions of every model for every training row (rows of weight 0 included).
    """

    classic: np.ndarray
    impurity: np.ndarray
    pred: np.ndarray
    feat: np.ndarray
    thr: np.ndarray
    val: np.ndarray
    init: np.ndarray
    learning_rate: float

    def predict(self, model: int, X: np.ndarray) -> np.ndarray:
        """Predictions of one model for rows ``X`` (n, p)."""
        return predict_batched(self, np.array([model]), X[None, :, :])[0]


def as_float32_values(X: np.ndarray) -> np.ndarray:
    """``X`` rounded to float32 (scikit-learn's tree input type), held as float64."""
    return np.ascontiguousarray(np.asarray(X, dtype=np.float32), dtype=np.float64)


def fit_batched(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    params: ModelParams,
    seeds: np.ndarray,
    n_jobs: int = -1,
) -> BatchedFit:
    """Fit ``M = len(weights)`` gradient-boosting ensembles (squared error) on the rows of ``X``.

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Features (rounded to float32 internally, as scikit-learn does).
    y : ndarray, shape (n,) or (M, n)
        Target, shared by all models or one per model.
    weights : ndarray, shape (M, n)
        Non-negative row weights per model; a row of weight 0 is not used by that model.
    params : ModelParams
        ``n_estimators``, ``max_depth``, ``learning_rate``, ``min_samples_split`` as ``GradientBoostingRegressor``
        (its ``engine`` is not read: this is the batched engine).
    seeds : ndarray of int, shape (M,)
        Per-model seed of the tie-breaking stressor order.
    n_jobs : int, default -1
        Threads (-1 = all cores).

    Returns
    -------
    BatchedFit
    """
    n_estimators, max_depth = params.n_estimators, params.max_depth
    learning_rate, min_samples_split = params.learning_rate, params.min_samples_split
    Xs = as_float32_values(X)
    n, p = Xs.shape
    W = np.ascontiguousarray(weights, dtype=np.float64)
    M = W.shape[0]
    if (W > 0).sum(axis=1).min(initial=1) < 1:
        raise ValueError("every model needs at least one row of positive weight")
    order = np.ascontiguousarray(np.argsort(Xs, axis=0, kind="stable").T)
    n_nodes = 2 ** (max_depth + 1) - 1
    feat = np.full((M, n_estimators, n_nodes), -1, dtype=np.int32)
    thr = np.zeros((M, n_estimators, n_nodes))
    val = np.zeros((M, n_estimators, n_nodes))
    classic = np.zeros((M, p))
    raw = np.zeros((M, p))
    pred = np.zeros((M, n))
    init = np.zeros(M)
    state = np.asarray(seeds, dtype=np.uint64).copy()
    # always a writeable copy: a one-model broadcast is already contiguous, and its read-only view would be a
    # kernel signature of its own, compiled again
    Y = np.array(np.broadcast_to(np.asarray(y, dtype=np.float64), (M, n)), order="C")
    with _threads(n_jobs):
        _fit_all(Xs, order, Y, W, n_estimators, max_depth, float(learning_rate),
                 int(min_samples_split), state, feat, thr, val, classic, raw, pred, init)
    tot = raw.sum(axis=1, keepdims=True)
    impurity = np.divide(raw, tot, out=np.zeros_like(raw), where=tot > 0)
    return BatchedFit(classic, impurity, pred, feat, thr, val, init, float(learning_rate))


def predict_batched(fit: BatchedFit, models: np.ndarray, Xq: np.ndarray, n_jobs: int = -1) -> np.ndarray:
    """Predictions ``out[b, i]`` of model ``models[b]`` for row ``i`` of ``Xq[b]`` (shape (B, n, p))."""
    Xq = as_float32_values(Xq)
    out = np.zeros(Xq.shape[:2])
    with _threads(n_jobs):
        _predict(Xq, fit.feat, fit.thr, fit.val, fit.init, fit.learning_rate, np.asarray(models, dtype=np.int64),
                 out)
    return out


def compiled_signatures() -> int:
    """How many kernel signatures this process compiled (cache misses): 0 when all came from numba's disk cache."""
    return sum(sum(f.stats.cache_misses.values()) for f in (_fit_all, _predict))


def warm() -> None:
    """Compile every kernel signature the IRUP paths call, or load it from numba's on-disk cache.

    ``scripts/setup.sh`` runs it, so the first ``quiho irup`` after an install loads machine code instead of
    compiling it; :func:`fit_batched` and :func:`predict_batched` fix every argument's dtype and layout, so
    these tiny fits compile the same signatures as real ones.
    """
    rng = np.random.default_rng(0)
    X, y = rng.random((8, 3)), rng.random(8)
    fit = fit_batched(X, y, np.ones((2, 8)), ModelParams(n_estimators=2, max_depth=2, learning_rate=0.1),
                      seeds=np.arange(2), n_jobs=1)
    predict_batched(fit, np.zeros(1, dtype=np.int64), X[None], n_jobs=1)


class _threads:
    """Use ``n_jobs`` numba threads inside the block (-1 = all), handing out one model at a time.

    Models differ in cost (a held-out fold keeps most rows, a bootstrap of groups fewer), so
    the default static split of the model range between threads leaves one idle at the end;
    chunks of one iteration are taken dynamically instead.
    """

    def __init__(self, n_jobs: int) -> None:
        from numba import config

        most = int(getattr(config, "NUMBA_NUM_THREADS", 1))
        self.n = most if n_jobs is None or n_jobs < 1 else max(1, min(n_jobs, most))
        self.old = 0
        self.old_chunk = 0

    def __enter__(self) -> None:
        self.old = get_num_threads()
        set_num_threads(self.n)
        self.old_chunk = set_parallel_chunksize(1)

    def __exit__(self, *exc: object) -> None:
        set_parallel_chunksize(self.old_chunk)
        set_num_threads(self.old)
