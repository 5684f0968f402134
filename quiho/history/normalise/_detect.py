"""Hardware-normalised change detection: remove what the machine explains, detect changes in what it does not.

Each revision of a history may carry the fingerprint of the machine that measured it (rotating CI runners). Per
series, the machine effect is a small gradient-boosting model of the log metric on the log fingerprint or a ridge
regression on the few stressors most correlated with the metric (different benchmarks lean on different resources),
whichever predicts held-out machines better on that series, fit jointly with the change points: fit the effect on
the deviations from the current segment means, normalise, re-segment, until the segmentation stops moving. The
effect is used only where it is validated on the series' own history: leave-one-machine-out, predicting a held-out
machine's deviations must beat predicting none (the raw series) by a margin (MSE ratio ≤ 0.8). Otherwise, with one
machine only, or with a revision whose machine has no fingerprint, the raw series is detected and the result says
why: one global calibration factor failed exactly there (it doubled the error on a fixed host, vuetifyjs/0#749), so
the default is to refuse. A change found where the machine mix changed, within what the machines' unexplained effect
allows and not seen by the machines measured on both sides, is set apart as the machines' (:class:`MachineChange`).

References
----------
Friedman, J. H. (2001). Greedy function approximation: a gradient boosting machine. Annals of Statistics 29, 1189-1232.
Hoerl, A. E., Kennard, R. W. (1970). Ridge regression. Technometrics 12, 55-67.
Bai, J., Perron, P. (2003). Computation and analysis of multiple structural change models (regressors estimated
jointly with the breaks by iteration). J. Applied Econometrics 18, 1-22.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from quiho.errors import UsageError
from quiho.history._model import ChangePoint, Detection, History
from quiho.history.detectors import detect
from quiho.history.gate import NewestCheck, check_newest

__all__ = ["MachineFingerprint", "NormaliseOptions", "MachineEffect", "MachineChange", "NormalisedDetection",
           "NormalisedNewest", "detect_normalised", "check_newest_normalised",
           "EFFECT_MODELS", "RidgeEffect", "GbmEffect"]


@dataclass(frozen=True)
class MachineFingerprint:
    """The machine of one revision: a key (fingerprint run or host), median bogo-ops/s per stressor, and its kind.

    ``kind`` is the hardware type when known: a hosted runner's fresh VM is new by key but of a kind seen before.
    """

    key: str
    values: pd.Series
    failed: tuple[str, ...] = ()
    kind: str | None = None

    @property
    def identity(self) -> str:
        """What the newest-revision check knows the machine by: its kind when known, else its key."""
        return self.kind or self.key


@dataclass(frozen=True)
class NormaliseOptions:
    """Settings of :func:`detect_normalised`.

    Attributes
    ----------
    method, min_size, magnitude_floor, alpha
        Passed to :func:`quiho.history.detect`.
    model : {"auto", "gbm", "ridge"}, default "auto"
        Machine-effect model (:data:`EFFECT_MODELS`); ``auto`` fits both and keeps the one with the lower
        leave-one-machine-out MSE ratio on this series, because trees recognise recurring machines and ridge
        predicts held-out ones where the effect is smooth (docs/hardware-protocol.md, "The machine-effect model").
    stressors : int, default 2
        Stressors in the machine-effect model (the most correlated with the metric, chosen inside each fold).
    ridge : float, default 1.0
        Ridge penalty on standardised features.
    max_iterations : int, default 5
        Rounds of fit effect → re-segment.
    max_cv_ratio : float, default 0.8
        Normalise only when the leave-one-machine-out MSE with the effect is at most this share of the MSE
        without it, because fingerprints that vary by measurement noise alone score 0.95-1.2: a ratio just under
        1 is chance, not a machine effect.
    intercepts : bool, default False
        Also remove each recurring machine's own residual, shrunk by partial pooling (:func:`_intercepts`): what
        the fingerprint model misses on a machine, its other revisions show. Off, because it raised more false
        alarms than it saved misses (docs/hardware-protocol.md, "Machine intercepts").
    """

    method: str = "auto"
    min_size: int = 5
    magnitude_floor: float = 0.0
    alpha: float = 0.01
    model: str = "auto"
    stressors: int = 2
    ridge: float = 1.0
    max_iterations: int = 5
    max_cv_ratio: float = 0.8
    intercepts: bool = False


@dataclass(frozen=True)
class MachineEffect:
    """The fitted machine effect and its validation.

    ``stressors`` are the ridge's columns or the trees' most important ones (``coef`` empty for trees);
    ``effect[i]`` is the log factor removed from revision ``i`` (0 where raw); ``cv_ratio`` the leave-one-machine-
    out mean squared error of the deviations with the effect over without it (< 1: the effect predicts unseen
    machines); ``machine_var`` the variance of a held-out machine's shared error in log (:func:`_cv_ratio`).
    ``columns`` are the model's features and ``model``/``offset`` the fit whose centred prediction ``effect`` is,
    so :meth:`predict` gives a machine the history has not seen the same kind of factor.
    """

    stressors: tuple[str, ...]
    coef: tuple[float, ...]
    effect: np.ndarray
    cv_ratio: float
    machines: int
    iterations: int
    machine_var: float = float("nan")
    columns: tuple[str, ...] = ()
    model: RidgeEffect | GbmEffect | None = field(default=None, repr=False, compare=False)
    offset: float = 0.0

    def predict(self, values: pd.Series) -> float:
        """The log factor of a machine with these median bogo-ops/s on :attr:`columns` (all measured, > 0)."""
        if self.model is None:
            raise ValueError("this effect keeps no fitted model")
        x = np.log(values[list(self.columns)].to_numpy(dtype=float))[None, :]
        return float(self.model.predict(x)[0]) - self.offset


@dataclass(frozen=True)
class MachineChange:
    """A change the detector found where the machines changed too, within what the machine effect can explain.

    ``mix`` is the distance of the two segments' machine mixes (√Σ(share before − share after)², 0 for the same mix,
    √2 for one machine replaced by another); ``machine_se`` the standard error that mix puts on the log change (the
    machine effect's out-of-machine error, or the raw machine spread where the effect is not used); ``t`` the log
    change over its standard error with that term, below ``critical``.
    """

    change: ChangePoint
    mix: float
    machine_se: float
    t: float
    critical: float

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict: the change and why it is not attributed to the code."""
        return {**self.change.to_dict(), "machine_mix": round(self.mix, 4),
                "machine_se": round(self.machine_se, 6), "t": round(self.t, 3), "critical": round(self.critical, 3)}


@dataclass(frozen=True)
class NormalisedDetection:
    """A detection on the normalised series (``normalised``) or on the raw one, with why."""

    detection: Detection
    normalised: bool
    reason: str
    raw: History
    used: History
    effect: MachineEffect | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    machine_changes: tuple[MachineChange, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The JSON document of ``quiho history detect --normalise --json``."""
        d = self.detection.to_dict()
        d["change_points"] = [{**c.to_dict(), "normalised": self.normalised} for c in self.detection.change_points]
        e = self.effect
        return {**d, "normalised": self.normalised, "normalise_reason": self.reason, "notes": list(self.notes),
                "machine_changes": [m.to_dict() for m in self.machine_changes],
                "machine_effect": None if e is None else {
                    "stressors": list(e.stressors), "coef": [round(c, 6) for c in e.coef],
                    "cv_mse_ratio": round(e.cv_ratio, 4) if np.isfinite(e.cv_ratio) else None,
                    "machines": e.machines, "iterations": e.iterations, "used": self.normalised,
                    "factor": [round(float(np.exp(v)), 6) for v in e.effect]}}


def _features(machines: Sequence[MachineFingerprint]) -> tuple[pd.DataFrame, list[str]]:
    """Log fingerprints (revisions × stressors ok on every machine) and notes on stressors left out."""
    common = set.intersection(*(set(m.values.index[np.isfinite(m.values) & (m.values > 0)]) for m in machines))
    every = set().union(*(set(m.values.index) | set(m.failed) for m in machines))
    notes = []
    left = sorted(every - common)
    if left:
        notes.append(f"stressors left out (failed or missing on some machine): {', '.join(left)}")
    cols = sorted(common)
    L = pd.DataFrame([np.log(m.values[cols].to_numpy(dtype=float)) for m in machines], columns=cols)
    return L.loc[:, L.std() > 0], notes


def _segment_means(y: np.ndarray, bounds: list[int]) -> np.ndarray:
    out = np.empty_like(y)
    for a, b in zip([0, *bounds], [*bounds, len(y)], strict=True):
        out[a:b] = y[a:b].mean()
    return out


class RidgeEffect:
    """Ridge of the deviations on the ``k`` standardised columns most correlated with them."""

    def __init__(self, k: int, ridge: float) -> None:
        self.k, self.ridge = k, ridge

    def fit(self, Z: np.ndarray, r: np.ndarray) -> RidgeEffect:
        """Choose the columns and solve the ridge normal equations; returns self."""
        mu, sd = Z.mean(axis=0), Z.std(axis=0)
        self.mu_, self.sd_ = mu, np.where(sd > 0, sd, 1.0)
        S = (Z - mu) / self.sd_
        rc = r - r.mean()
        corr = np.abs(S.T @ rc) / (np.sqrt((S**2).sum(axis=0) * (rc**2).sum()) + 1e-300)
        self.columns_ = np.argsort(-corr, kind="stable")[:self.k]
        A = S[:, self.columns_]
        self.coef_ = np.linalg.solve(A.T @ A + self.ridge * np.eye(len(self.columns_)), A.T @ rc)
        return self

    def predict(self, Z: np.ndarray) -> np.ndarray:
        """The effect (log factor, centred on the training deviations' mean) of each row of ``Z``."""
        return np.asarray(((Z - self.mu_) / self.sd_)[:, self.columns_] @ self.coef_, dtype=float)


class GbmEffect:
    """Small gradient boosting (100 depth-2 trees) on every column: the IRUP's kind of model."""

    def __init__(self, k: int, ridge: float) -> None:
        self.k = k

    def fit(self, Z: np.ndarray, r: np.ndarray) -> GbmEffect:
        """Fit the trees on the centred deviations; the ``k`` most important columns are reported; returns self."""
        from sklearn.ensemble import GradientBoostingRegressor

        self.model_ = GradientBoostingRegressor(n_estimators=100, max_depth=2, learning_rate=0.1, random_state=0)
        self.model_.fit(Z, r - r.mean())
        self.columns_ = np.argsort(-self.model_.feature_importances_, kind="stable")[:self.k]
        self.coef_ = np.zeros(0)
        return self

    def predict(self, Z: np.ndarray) -> np.ndarray:
        """The effect of each row of ``Z``."""
        return np.asarray(self.model_.predict(Z), dtype=float)


#: Machine-effect models by name (``NormaliseOptions.model``); bench/history_normalised.py --model compares them.
EFFECT_MODELS: dict[str, type[RidgeEffect] | type[GbmEffect]] = {"ridge": RidgeEffect, "gbm": GbmEffect}


def _machine_variance(errors: list[np.ndarray]) -> float:
    """Variance of a machine's shared error, from each machine's errors on its revisions (method of moments).

    A machine's mean error is its shared part plus revision noise over its count; the noise part is removed.
    """
    if not errors:
        return float("nan")
    terms = [float(e.mean()) ** 2 - (float(e.var(ddof=1)) / len(e) if len(e) > 1 else 0.0) for e in errors]
    return max(0.0, float(np.mean(terms)))


def _intercepts(e: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each revision's machine intercept: the machine's mean of ``e``, shrunk toward 0 (BLUP of a random effect).

    The shrinkage is τ²/(τ² + s²/n): τ² the between-machine variance (method of moments), s² the variance of ``e``
    within machines, n the machine's revisions; a machine seen once, or no spread beyond noise, gives about 0.
    """
    names, idx, n = np.unique(keys, return_inverse=True, return_counts=True)
    if len(names) < 2 or len(e) - len(names) < 1:
        return np.zeros(len(e))
    m = np.bincount(idx, weights=e) / n
    s2 = float(((e - m[idx]) ** 2).sum()) / (len(e) - len(names))
    tau2 = max(0.0, float(np.var(m, ddof=1)) - s2 * float(np.mean(1 / n)))
    if tau2 <= 0:
        return np.zeros(len(e))
    u = (m - float(np.average(m, weights=n))) * tau2 / (tau2 + s2 / n)
    return np.asarray(u[idx], dtype=float)


def _cv_ratio(Z: np.ndarray, r: np.ndarray, keys: np.ndarray,
              make: Callable[[], RidgeEffect | GbmEffect]) -> tuple[float, float]:
    """Leave-one-machine-out MSE ratio and the variance of a held-out machine's shared error.

    The ratio is the MSE of ``r`` with the fitted effect over the MSE without one (predicting 0); the variance is
    :func:`_machine_variance` of the held-out machines' errors.
    """
    err_fit, err_raw = 0.0, 0.0
    held: list[np.ndarray] = []
    for key in np.unique(keys):
        test = keys == key
        if (~test).sum() < 3 or len(np.unique(keys[~test])) < 2:
            continue
        model = make().fit(Z[~test], r[~test])
        centre = r[~test].mean()
        e = r[test] - centre - model.predict(Z[test])
        held.append(e)
        err_fit += float((e ** 2).sum())
        err_raw += float(((r[test] - centre) ** 2).sum())
    return (err_fit / err_raw if err_raw > 0 else float("nan")), _machine_variance(held)


def _machine_changes(used: History, d: Detection, keys: np.ndarray, machine_var: float,
                     alpha: float) -> tuple[Detection, tuple[MachineChange, ...]]:
    """Set apart the changes that a change of machines explains as well as the code would.

    Between two segments whose machine mixes differ, each machine's unexplained effect (variance ``machine_var``)
    enters the difference of the segment means: its variance is ``machine_var × Σ(share before − share after)²``.
    A change whose t of log means passes without that term and fails with it is confounded with the machines,
    unless the machines measured on both sides show it too (each machine compared with itself, inverse-variance
    weighted: no machine effect enters that comparison).
    """
    cps = sorted(d.change_points, key=lambda c: c.index)
    if not cps or not np.isfinite(machine_var) or machine_var <= 0:
        return d, ()
    y = np.log(used.values)
    edges = [0, *(c.index for c in cps), len(y)]
    kept, apart = [], []
    for i, c in enumerate(cps):
        a, b, e = edges[i], edges[i + 1], edges[i + 2]
        left, right = y[a:b], y[b:e]
        names = np.unique(keys[a:e])
        share = [(np.mean(keys[a:b] == k) - np.mean(keys[b:e] == k)) for k in names]
        mix = float(np.sqrt(np.sum(np.square(share))))
        noise = left.var(ddof=1) / len(left) + right.var(ddof=1) / len(right) if min(len(left), len(right)) > 1 \
            else np.inf
        diff = abs(float(right.mean() - left.mean()))
        crit = float(stats.t.ppf(1 - alpha / 2, max(1, len(left) + len(right) - 2)))
        t0 = diff / np.sqrt(noise) if noise > 0 else np.inf
        t = diff / np.sqrt(noise + machine_var * mix ** 2) if noise + machine_var * mix ** 2 > 0 else np.inf
        if t0 >= crit > t and _within_machines_t(left, right, keys[a:b], keys[b:e]) < crit:
            apart.append(MachineChange(c, mix, float(np.sqrt(machine_var) * mix), float(t), crit))
        else:
            kept.append(c)
    return replace(d, change_points=tuple(kept)), tuple(apart)


def _within_machines_t(left: np.ndarray, right: np.ndarray, kl: np.ndarray, kr: np.ndarray) -> float:
    """|t| of the change measured within the machines seen on both sides (0 when none is, or no variance)."""
    both = sorted(set(kl.tolist()) & set(kr.tolist()))
    cells = [left[kl == k] for k in both] + [right[kr == k] for k in both]
    df = sum(len(c) - 1 for c in cells)
    if not both or df < 1:
        return 0.0
    s2 = sum(float(((c - c.mean()) ** 2).sum()) for c in cells) / df
    if s2 <= 0:
        return 0.0
    w = np.array([1 / (s2 * (1 / np.sum(kl == k) + 1 / np.sum(kr == k))) for k in both])
    d = np.array([right[kr == k].mean() - left[kl == k].mean() for k in both])
    return float(abs(np.sum(w * d)) / np.sqrt(np.sum(w)))  # (Σwd/Σw) / √(1/Σw)


def _machine_notes(found: tuple[MachineChange, ...]) -> tuple[str, ...]:
    return tuple(f"revision {m.change.revision} (index {m.change.index}): {m.change.magnitude:+.1%} not attributed to "
                 f"the code: the machines changed there too (mix distance {m.mix:.2f}; machine uncertainty "
                 f"±{np.expm1(m.machine_se):.1%}, t = {m.t:.2f} < {m.critical:.2f})" for m in found)


def _scaled(h: History, effect: np.ndarray) -> History:
    return History(h.name, h.revisions, h.orders, tuple(s * np.exp(-e) for s, e in zip(h.samples, effect,
                                                                                           strict=True)),
                   h.unit, h.config, h.missing)


def _raw(h: History, opts: NormaliseOptions, reason: str, notes: Sequence[str] = (),
         effect: MachineEffect | None = None, keys: np.ndarray | None = None) -> NormalisedDetection:
    """The raw series detected; with ``keys`` (several machines), changes the machines explain are set apart."""
    d = detect(h, opts.method, min_size=opts.min_size, magnitude_floor=opts.magnitude_floor, alpha=opts.alpha)
    apart: tuple[MachineChange, ...] = ()
    if keys is not None and d.change_points:
        y = np.log(h.values)
        r = y - _segment_means(y, sorted(c.index for c in d.change_points))
        var = _machine_variance([r[keys == k] - r.mean() for k in np.unique(keys)])
        d, apart = _machine_changes(h, d, keys, var, opts.alpha)
    return NormalisedDetection(d, False, reason, h, h, effect, (*notes, *_machine_notes(apart)), apart)


def detect_normalised(h: History, machines: Sequence[MachineFingerprint | None],
                      opts: NormaliseOptions | None = None) -> NormalisedDetection:
    """Detect changes in ``h`` after removing the machine effect its fingerprints explain, where validated.

    Parameters
    ----------
    h : History
        The series (its revisions' samples; positive values).
    machines : sequence of MachineFingerprint or None, shape (n_revisions,)
        The machine of each revision of ``h`` (None: unknown or no fingerprint).
    opts : NormaliseOptions, optional

    Returns
    -------
    NormalisedDetection
        ``normalised`` False (and ``reason`` saying why) when a revision has no fingerprint, there is one machine
        only, no stressor is ok on every machine, the values are not positive, or the leave-one-machine-out check
        does not beat the raw series; the raw series is then detected, nothing dropped.
    """
    opts = opts or NormaliseOptions()
    if len(machines) != len(h):
        raise ValueError(f"{len(machines)} machines for {len(h)} revisions")
    lacking = [rev for rev, m in zip(h.revisions, machines, strict=True) if m is None]
    if lacking:
        return _raw(h, opts, f"raw series used: {len(lacking)} of {len(h)} revisions have no machine fingerprint "
                             f"(e.g. {', '.join(r[:12] for r in lacking[:3])})")
    ms = [m for m in machines if m is not None]
    keys = np.array([m.key for m in ms])
    n_machines = len(set(keys.tolist()))
    if n_machines < 2:
        return _raw(h, opts, "raw series used: every revision was measured on one machine (nothing to normalise)")
    if any(float(s.min()) <= 0 for s in h.samples):
        return _raw(h, opts, "raw series used: values ≤ 0 cannot be normalised by a machine factor")
    Z, notes = _features(ms)
    if Z.shape[1] == 0:
        return _raw(h, opts, "raw series used: no stressor was measured ok on every machine", notes)
    if opts.model != "auto":
        return _joint(h, Z, keys, opts, notes)
    # per series, the model whose leave-one-machine-out ratio is lowest (trees for recurring machines with
    # irregular effects, ridge for a few machines on a smooth power law)
    tried = {m: _joint(h, Z, keys, replace(opts, model=m), notes) for m in EFFECT_MODELS}
    ratio = {m: nd.effect.cv_ratio if nd.effect is not None and np.isfinite(nd.effect.cv_ratio) else np.inf
             for m, nd in tried.items()}
    best = min(tried, key=lambda m: (ratio[m], m))
    said = ", ".join(f"{m} {ratio[m]:.2f}" for m in sorted(tried))
    return replace(tried[best], notes=(*tried[best].notes, f"machine-effect model {best} (leave-one-machine-out "
                                                           f"MSE ratios: {said})"))


def _joint(h: History, Zdf: pd.DataFrame, keys: np.ndarray, opts: NormaliseOptions,
           notes: list[str]) -> NormalisedDetection:
    """Iterate effect fit ↔ segmentation, validate leave-one-machine-out, detect on the normalised series."""
    y = np.log(h.values)
    Z = Zdf.to_numpy(dtype=float)
    k = max(1, min(opts.stressors, Z.shape[1], len(set(keys.tolist())) - 1))
    if opts.model not in EFFECT_MODELS:
        raise UsageError(f"unknown machine-effect model {opts.model!r}; choose one of {', '.join(EFFECT_MODELS)}")
    kind = EFFECT_MODELS[opts.model]
    if opts.max_iterations < 1:
        raise UsageError(f"max_iterations must be >= 1, got {opts.max_iterations}")

    def make() -> RidgeEffect | GbmEffect:
        return kind(k, opts.ridge)

    bounds: list[int] = []
    effect = np.zeros(len(y))
    model, offset, it, d = None, 0.0, 0, None
    for it in range(1, opts.max_iterations + 1):  # noqa: B007 - the count is reported
        r = y - _segment_means(y, bounds)
        model = make().fit(Z, r)
        effect = model.predict(Z)
        offset = float(effect.mean())
        effect -= offset
        if opts.intercepts:
            effect = effect + _intercepts(r - effect, keys)
        d = detect(_scaled(h, effect), opts.method, min_size=opts.min_size, magnitude_floor=opts.magnitude_floor,
                   alpha=opts.alpha)
        new = sorted(cp.index for cp in d.change_points)
        if new == bounds:
            break
        bounds = new
    assert model is not None and d is not None  # checked above: at least one iteration
    r = y - _segment_means(y, bounds)
    ratio, machine_var = _cv_ratio(Z, r, keys, make)
    # the effect reported is the one removed: the last fit's (converged, it was fitted on this very r)
    eff = MachineEffect(tuple(str(Zdf.columns[c]) for c in model.columns_), tuple(float(c) for c in model.coef_),
                        effect, ratio, len(set(keys.tolist())), it, machine_var,
                        tuple(str(c) for c in Zdf.columns), model, offset)
    if not np.isfinite(ratio) or ratio > opts.max_cv_ratio:
        why = ("the values do not vary within their segments: nothing for a machine effect to explain"
               if not np.any(np.abs(r) > 1e-12) else
               "too few machines to hold one out" if not np.isfinite(ratio) else
               f"predicting held-out machines with the fingerprint effect is not better than without it "
               f"(leave-one-machine-out MSE ratio {ratio:.2f} > {opts.max_cv_ratio})")
        return _raw(h, opts, f"raw series used: {why}", notes, eff, keys)
    used = _scaled(h, effect)  # the last iteration's detection ``d`` is of this very series
    d, apart = _machine_changes(used, d, keys, machine_var, opts.alpha)
    reason = (f"normalised by {', '.join(eff.stressors)} over {eff.machines} machines: leave-one-machine-out MSE "
              f"ratio {ratio:.2f} (≤ {opts.max_cv_ratio}: beats the raw series)")
    return NormalisedDetection(d, True, reason, h, used, eff, (*notes, *_machine_notes(apart)), apart)


@dataclass(frozen=True)
class NormalisedNewest:
    """The newest revision against its level with its machine's effect removed, or the raw check and why.

    ``machine`` is the newest revision's machine (:attr:`MachineFingerprint.identity`; None: no fingerprint),
    ``seen`` whether the history before it has that machine, ``factor`` the machine factor divided out of the
    newest revision (1 when raw) and ``history`` the detection of the revisions before it, whose newest segment is
    the baseline; ``alpha`` the check's level (its interval is ``1 - alpha``); ``used`` the series the check read,
    every revision divided by its machine's factor (None unless normalised).
    """

    check: NewestCheck
    normalised: bool
    reason: str
    machine: str | None
    seen: bool
    factor: float
    history: NormalisedDetection
    alpha: float = 0.001
    used: History | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict: the check (as the gate's ``newest``), how the newest revision was normalised and why."""
        return {**self.check.to_dict(), "normalised": self.normalised, "reason": self.reason or self.check.reason,
                "machine": self.machine, "machine_seen": self.seen, "machine_factor": self.factor,
                "alpha": self.alpha}


def _before_newest(h: History) -> History:
    return History(h.name, h.revisions[:-1], h.orders[:-1], h.samples[:-1], h.unit, h.config, h.missing)


def _predicted_factor(eff: MachineEffect, m: MachineFingerprint,
                      past: Sequence[MachineFingerprint]) -> tuple[float | None, str]:
    """The log factor ``eff`` predicts for a machine the history has not seen, or None and why it cannot."""
    ok = m.values[np.isfinite(m.values) & (m.values > 0)].index
    lacking = [c for c in eff.columns if c not in ok]
    if lacking:
        return None, (f"raw check: the newest revision's machine {m.key} has no measurement of "
                      f"{', '.join(lacking[:3])}, which the machine effect uses")
    outside = []
    for s in eff.stressors:
        seen = [float(x.values[s]) for x in past]
        v = float(m.values[s])
        if not min(seen) <= v <= max(seen):
            outside.append(f"{s} {v:.4g} bogo-ops/s against {min(seen):.4g}-{max(seen):.4g}")
    if outside:
        return None, (f"raw check: the newest revision's machine {m.key} is new and outside the history's machines "
                      f"({'; '.join(outside)}): its factor would be extrapolated")
    return eff.predict(m.values), ""


def check_newest_normalised(h: History, machines: Sequence[MachineFingerprint | None],
                            opts: NormaliseOptions | None = None, *, alpha: float = 0.001,
                            test_within: str = "pooled", new_machine: str = "refuse") -> NormalisedNewest:
    """Check the newest revision of ``h`` against its level after removing its machine's effect (a PR on any runner).

    The effect is fitted on the revisions before the newest (:func:`detect_normalised`), so a regression in the
    newest cannot be absorbed as a machine effect. A machine the history has seen (by
    :attr:`MachineFingerprint.identity`: a fresh VM of a kind seen before is seen) gets the factor its revisions
    had. A machine it has not seen is "not meaningful" by default: neither a predicted factor nor the raw check
    compared a new machine with the history reliably (bench/history_newest.py; docs/hardware-protocol.md). The
    comparison is :func:`~quiho.history.check_newest`'s (a random-effects prediction interval at ``alpha``); where
    the history or the newest revision cannot be normalised, the raw check runs and ``reason`` says why.

    Parameters
    ----------
    h : History
        The series, its newest revision last (positive values).
    machines : sequence of MachineFingerprint or None, shape (n_revisions,)
        The machine of each revision of ``h``.
    opts : NormaliseOptions, optional
        The change points' settings and the machine-effect model, as for :func:`detect_normalised`.
    alpha : float, default 0.001
        The newest revision's significance level (the CI gate's ``--newest-alpha``).
    test_within : {"own", "pooled", "larger"}, default "pooled"
        The newest revision's round variance (the gate's default).
    new_machine : {"refuse", "predict"}, default "refuse"
        A machine the history has not seen: "not meaningful", or the model's prediction from its fingerprint with
        the held-out machines' error (``MachineEffect.machine_var``) in the interval, and the raw check when it lies
        outside the history's machines on a stressor of the effect. ``"predict"`` is not the default because its
        false alerts exceeded ``alpha`` on new machines (docs/hardware-protocol.md, "The newest revision on a
        rotating runner").
    """
    opts = opts or NormaliseOptions()
    if new_machine not in ("refuse", "predict"):
        raise UsageError(f"new_machine must be refuse or predict, not {new_machine!r}")
    if len(machines) != len(h):
        raise ValueError(f"{len(machines)} machines for {len(h)} revisions")
    if len(h) < 2:
        raise ValueError("the newest revision needs revisions before it")
    before = _before_newest(h)
    nd = detect_normalised(before, machines[:-1], opts)
    m = machines[-1]
    ids = np.array([x.identity if x is not None else "" for x in machines[:-1]])
    seen = m is not None and m.identity in set(ids.tolist())

    def raw(why: str) -> NormalisedNewest:
        d = detect(before, opts.method, min_size=opts.min_size, magnitude_floor=opts.magnitude_floor,
                   alpha=opts.alpha)
        chk = check_newest(h, alpha=alpha, min_size=opts.min_size, detection=d,
                           magnitude_floor=opts.magnitude_floor, test_within=test_within)
        return NormalisedNewest(chk, False, why, None if m is None else m.identity, seen, 1.0, nd, alpha)

    eff = nd.effect
    if not nd.normalised or eff is None:
        return raw(f"raw check: {nd.reason.removeprefix('raw series used: ')}")
    if m is None:
        return raw("raw check: the newest revision has no machine fingerprint")
    extra: tuple[float, float] | None = None
    # every revision divided by its machine's mean factor: a fit to each fresh VM's own fingerprint would also
    # absorb its run noise, leave the baseline too tight, and read the newest VM's noise as a change
    by_id = {i: float(np.mean(eff.effect[ids == i])) for i in set(ids.tolist())}
    if seen:
        e_new = by_id[m.identity]
    elif new_machine == "refuse":
        why = (f"not meaningful: it ran on {m.identity}, a machine this normalised history has not measured, whose "
               "factor is not known well enough (check it again once a revision of the history has run there)")
        return NormalisedNewest(NewestCheck.not_meaningful(h.revisions[-1], why), False, why, m.identity, False, 1.0,
                                nd, alpha)
    else:
        predicted, why = _predicted_factor(eff, m, [x for x in machines[:-1] if x is not None])
        if predicted is None:
            return raw(why)
        e_new = predicted
    used = History(h.name, h.revisions, h.orders,
                   (*(s * np.exp(-by_id[i]) for s, i in zip(before.samples, ids, strict=True)),
                    h.samples[-1] * np.exp(-e_new)), h.unit, h.config, h.missing)
    if not seen and np.isfinite(eff.machine_var) and eff.machine_var > 0:
        start = max((c.index for c in nd.detection.change_points), default=0)
        level = float(np.mean([s.mean() for s in used.samples[start:-1]])) if start < len(h) - 1 else 0.0
        extra = (level * level * eff.machine_var, float(max(1, eff.machines - 1)))
    chk = check_newest(used, alpha=alpha, min_size=opts.min_size, detection=nd.detection,
                       magnitude_floor=opts.magnitude_floor, test_within=test_within, extra=extra)
    how = (f"its machine {m.identity} was seen in the history (its revisions' factor)" if seen else
           f"its machine {m.identity} is new: factor predicted from its fingerprint, with the held-out machines' error "
           f"(±{np.expm1(np.sqrt(max(eff.machine_var, 0.0))):.1%}) in the interval")
    return NormalisedNewest(chk, True, f"normalised (the effect fitted on the revisions before it): {how}", m.identity,
                            seen, float(np.exp(e_new)), nd, alpha, used)
