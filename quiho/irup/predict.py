"""Predict an application's metric on a machine from that machine's fingerprint, with a prediction interval.

The model is the IRUP's: gradient boosting with the paper's hyper-parameters (batched engine), fit on every row of
the target. A prediction is only given when the IRUP of the same rows is not ``not-meaningful``
(:mod:`quiho.irup.validity`): if fingerprints do not predict the metric on unseen hardware better than its mean, a
number would be noise dressed up.

The interval is split-conformal on leave-one-hardware-group-out residuals: each hardware group's level (median
metric) is predicted by a model that never saw the group; the residuals ``log(level) - log(prediction)`` are
exchangeable across groups, so the ``ceil((G+1)·level)``-th smallest absolute deviation from their median bounds a
new machine's residual with probability ≥ ``level`` (CV+ style). With too few groups for the level the interval is
unbounded, and said so. Log space because the metrics (runtimes, rates) are positive and machines differ by
factors.

References
----------
Vovk, V., Gammerman, A., Shafer, G. (2005). Algorithmic Learning in a Random World. Springer.
Lei, J. et al. (2018). Distribution-free predictive inference for regression. JASA 113, 1094-1111.
Barber, R. F. et al. (2021). Predictive inference with the jackknife+. Annals of Statistics 49, 486-507.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from quiho._text import json_number
from quiho._version import __version__
from quiho.errors import FingerprintParseError, NotEnoughData, PredictionRefused, UsageError
from quiho.irup.data import TargetData
from quiho.irup.importance import ModelParams
from quiho.irup.validity import Validity
from quiho.store import Store

__all__ = ["PredictOptions", "GroupResidual", "Predictor", "HostPrediction", "Prediction", "fit_predictor",
           "conformal_interval", "predict_fingerprints", "read_fingerprint_file", "EXTRAPOLATION_MARGIN",
           "MachinesToPredict", "predict_target"]

#: Version of the ``quiho predict --json`` document.
PREDICTION_SCHEMA_VERSION = 1
#: A stressor value beyond the training range by more than this factor marks the prediction as an extrapolation
#: (trees predict the edge value there).
EXTRAPOLATION_MARGIN = 1.1


@dataclass(frozen=True)
class PredictOptions:
    """Settings of a prediction.

    Attributes
    ----------
    level : float, default 0.8
        Coverage of the prediction interval (0.8: with the 7-14 hardware groups of typical fleets, 0.9 needs at
        least 9 groups before the conformal bound is finite).
    seeds : int, default 5
        Seeds of the IRUP whose validity verdict gates the prediction.
    random_state : int, default 0
        Master seed (model fits and the validity IRUP).
    batch : str, optional
        Train on this batch's rows only.
    n_jobs : int, default 1
        Parallel workers of the fits.
    params : ModelParams
        Gradient-boosting hyper-parameters (the paper's); the batched engine always fits.
    """

    level: float = 0.8
    seeds: int = 5
    random_state: int = 0
    batch: str | None = None
    n_jobs: int = 1
    params: ModelParams = field(default_factory=ModelParams)


@dataclass(frozen=True)
class GroupResidual:
    """One hardware group predicted by a model that never saw it."""

    group: int
    units: tuple[str, ...]
    level: float
    predicted: float

    @property
    def log_error(self) -> float:
        """``log(level) - log(predicted)`` (NaN when the prediction is not positive)."""
        return math.log(self.level / self.predicted) if self.predicted > 0 and self.level > 0 else float("nan")


@dataclass(frozen=True)
class Predictor:
    """A fitted predictor of one target, with its out-of-group evidence.

    ``centre`` and ``half_width`` are the conformal interval in log space (``half_width`` is inf when there are
    too few groups for ``level``); ``noise`` is the median within-group standard deviation of the log metric
    (run-to-run noise on one machine) and ``spread`` the standard deviation of the groups' log levels (the error of
    predicting every machine by the fleet's mean).
    """

    target: str
    unit: str
    higher_is_better: bool
    columns: tuple[str, ...]
    validity: Validity
    level: float
    centre: float
    half_width: float
    residuals: tuple[GroupResidual, ...]
    noise: float
    spread: float
    train_min: tuple[float, ...]
    train_max: tuple[float, ...]
    fit: Any = field(repr=False, compare=False, default=None)

    @property
    def logo_error(self) -> float:
        """Median absolute log error of the held-out groups (0.1 ≈ 10 %)."""
        errs = np.array([r.log_error for r in self.residuals])
        return float(np.nanmedian(np.abs(errs))) if np.isfinite(errs).any() else float("nan")

    def interval(self, predicted: float) -> tuple[float, float]:
        """The prediction interval around a predicted value (0 and inf when unbounded)."""
        if not math.isfinite(self.half_width) or predicted <= 0:
            return 0.0, math.inf
        return predicted * math.exp(self.centre - self.half_width), predicted * math.exp(self.centre + self.half_width)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted metric of each row of ``X`` (shape (n, len(columns)), bogo-ops/s in ``columns`` order)."""
        from quiho.irup.batched import predict_batched

        Xq = np.asarray(X, dtype=float)[None, :, :]
        return np.asarray(predict_batched(self.fit, np.zeros(1, dtype=np.int64), Xq, n_jobs=1)[0], dtype=float)


@dataclass(frozen=True)
class HostPrediction:
    """The metric predicted for one machine."""

    host: str
    source: str
    predicted: float
    low: float
    high: float
    outside: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (an unbounded side is null)."""
        return {"host": self.host, "source": self.source, "predicted": json_number(self.predicted, 6),
                "low": json_number(self.low, 6) if self.low > 0 else None,
                "high": json_number(self.high, 6) if math.isfinite(self.high) else None,
                "extrapolated": list(self.outside)}


@dataclass(frozen=True)
class Prediction:
    """Predictions for one or more machines, best first, with the evidence of the predictor."""

    predictor: Predictor
    hosts: tuple[HostPrediction, ...]
    skipped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``quiho predict --json``."""
        p = self.predictor
        return {
            "schema_version": PREDICTION_SCHEMA_VERSION, "quiho_version": __version__, "target": p.target,
            "unit": p.unit, "higher_is_better": p.higher_is_better, "level": p.level,
            "validity": p.validity.to_dict(), "logo_median_abs_log_error": json_number(p.logo_error, 4),
            "within_machine_noise": json_number(p.noise, 4), "between_machine_spread": json_number(p.spread, 4),
            "interval_method": "split-conformal on leave-one-hardware-group-out log residuals (median-centred)",
            "hardware_groups": len(p.residuals), "predictions": [h.to_dict() for h in self.hosts],
            "skipped": list(self.skipped),
        }


def conformal_interval(log_errors: np.ndarray, level: float) -> tuple[float, float]:
    """``(centre, half_width)`` of the split-conformal interval of held-out log residuals.

    Centre: their median; half width: the ``ceil((n+1)·level)``-th smallest ``|r - centre|`` (inf when that rank
    exceeds ``n``: too few groups for ``level``). Exchangeable residuals give coverage ≥ ``level``.

    Examples
    --------
    >>> conformal_interval(np.array([-0.1, 0.0, 0.1, 0.2]), 0.5)
    (0.05, 0.15000000000000002)
    """
    r = np.asarray(log_errors, dtype=float)
    r = r[np.isfinite(r)]
    if not 0 < level < 1:
        raise UsageError(f"prediction level {level} is not in (0, 1)")
    if r.size == 0:
        return 0.0, math.inf
    centre = float(np.median(r))
    k = math.ceil((r.size + 1) * level)
    if k > r.size:
        return centre, math.inf
    return centre, float(np.sort(np.abs(r - centre))[k - 1])


def fit_predictor(data: TargetData, opts: PredictOptions | None = None) -> Predictor:
    """Fit the predictor of ``data``: validity verdict, leave-one-group-out residuals, and the full model.

    Parameters
    ----------
    data : TargetData
        Training rows (:func:`quiho.irup.load_target`).
    opts : PredictOptions, optional

    Returns
    -------
    Predictor
        Also for a not-meaningful target (the bench reports them); :func:`predict_fingerprints` refuses those.

    Raises
    ------
    NotEnoughData, NotEnoughMachines
        As :func:`quiho.irup.compute_irup`; also a metric that is not positive everywhere.
    """
    from quiho.irup.batched import fit_batched
    from quiho.irup.engine import child_seeds, compute_irup, training_rows

    opts = opts or PredictOptions()
    params = ModelParams(**{**opts.params.__dict__, "engine": "batched"})
    X, _dropped, _noisy, hw = training_rows(data)
    y = data.y.to_numpy(dtype=float)
    if (y <= 0).any():
        raise NotEnoughData(f"target {data.target!r} has values ≤ 0: a prediction interval needs a positive metric")
    irup = compute_irup(data, seeds=opts.seeds, random_state=opts.random_state, params=params, n_jobs=opts.n_jobs)
    groups = hw.row_groups
    ug = sorted(set(groups.tolist()))
    W = np.vstack([np.ones(len(y))] + [(groups != g).astype(float) for g in ug])
    seeds = np.array(child_seeds(opts.random_state, len(W)), dtype=np.int64) % (2**31 - 1)
    Xa = X.to_numpy(dtype=float)
    fit = fit_batched(Xa, y, W, params, seeds, opts.n_jobs)
    members = hw.members()
    residuals = tuple(
        GroupResidual(g, tuple(members.get(g, [])), float(np.median(y[groups == g])),
                      float(np.mean(fit.pred[1 + i][groups == g])))
        for i, g in enumerate(ug))
    centre, half = conformal_interval(np.array([r.log_error for r in residuals]), opts.level)
    ly = np.log(y)
    within = [float(np.std(ly[groups == g], ddof=1)) for g in ug if (groups == g).sum() > 1]
    levels = np.log([r.level for r in residuals])
    return Predictor(
        target=data.target, unit=data.unit, higher_is_better=data.higher_is_better,
        columns=tuple(str(c) for c in X.columns), validity=irup.validity, level=opts.level, centre=centre,
        half_width=half, residuals=residuals, noise=float(np.median(within)) if within else float("nan"),
        spread=float(np.std(levels, ddof=1)) if len(levels) > 1 else float("nan"),
        train_min=tuple(float(v) for v in Xa.min(axis=0)), train_max=tuple(float(v) for v in Xa.max(axis=0)),
        fit=fit,
    )


def _refuse_unless_meaningful(p: Predictor) -> None:
    if p.validity.verdict == "not-meaningful":
        raise PredictionRefused(
            f"no prediction for {p.target}: its IRUP is not meaningful (leave-one-group-out R² = "
            f"{p.validity.r2_group_cv:.2f} over {p.validity.hardware_groups} hardware groups: fingerprints do not "
            "predict this metric on unseen hardware better than its mean)")


def predict_fingerprints(p: Predictor, fingerprints: Mapping[str, tuple[str, pd.Series]]) -> Prediction:
    """Predict the metric of every machine in ``fingerprints`` (name → (source, median bogo-ops/s per stressor)).

    A machine lacking a stressor of the model is skipped with the reason; values beyond the training range (by
    :data:`EXTRAPOLATION_MARGIN`) are named on its prediction. Results are ranked best first.

    Raises
    ------
    PredictionRefused
        The IRUP is not meaningful, or no machine has every stressor the model needs.
    """
    _refuse_unless_meaningful(p)
    rows, names, skipped = [], [], []
    for name, (source, fp) in fingerprints.items():
        missing = [c for c in p.columns if c not in fp.index or not np.isfinite(fp.get(c, np.nan))]
        if missing:
            skipped.append(f"{name}: no value for {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} "
                           f"(the model uses {len(p.columns)} stressors)")
            continue
        rows.append([float(fp[c]) for c in p.columns])
        names.append((name, source))
    if not rows:
        raise PredictionRefused(f"no prediction for {p.target}: " + "; ".join(skipped[:3]))
    X = np.array(rows)
    pred = p.predict(X)
    lo_edge, hi_edge = np.array(p.train_min) / EXTRAPOLATION_MARGIN, np.array(p.train_max) * EXTRAPOLATION_MARGIN
    out = []
    for (name, source), x, v in zip(names, X, pred, strict=True):
        low, high = p.interval(float(v))
        outside = tuple(c for c, xv, a, b in zip(p.columns, x, lo_edge, hi_edge, strict=True) if not a <= xv <= b)
        out.append(HostPrediction(name, source, float(v), low, high, outside))
    out.sort(key=lambda h: (-h.predicted if p.higher_is_better else h.predicted, h.host))
    return Prediction(p, tuple(out), tuple(skipped))


def read_fingerprint_file(path: Path) -> pd.Series:
    """Median bogo-ops/s per stressor from a fingerprint file.

    JSON: ``{"stressor": value, ...}`` (or ``{"values": {...}}``, as ``quiho fingerprint --quick-local --json``
    writes). Otherwise a stress-ng ``--yaml`` result: the real-time rate of every stressor that ran ok.

    Raises
    ------
    FingerprintParseError
        Unreadable, empty, or no usable value.
    """
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise FingerprintParseError(f"cannot read fingerprint file {path}: {exc}") from exc
    if Path(path).suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FingerprintParseError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
        vals = doc.get("values", doc) if isinstance(doc, dict) else None
        if not isinstance(vals, dict):
            raise FingerprintParseError(f"{path}: expected a JSON object of stressor → bogo-ops/s")
        s = pd.Series({str(k): v for k, v in vals.items() if isinstance(v, int | float) and not isinstance(v, bool)},
                      dtype=float)
    else:
        s = _yaml_rates(text, path)
    s = s[np.isfinite(s) & (s > 0)]
    if s.empty:
        raise FingerprintParseError(f"{path}: no stressor with a positive bogo-ops/s value")
    return s


def _yaml_rates(text: str, path: Path) -> pd.Series:
    import yaml

    from quiho.fingerprint.parse import parse_stressng_yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FingerprintParseError(f"{path}: not JSON or stress-ng YAML ({str(exc).splitlines()[0]})") from exc
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(metrics, list):
        raise FingerprintParseError(f"{path}: not a stress-ng --yaml result (no 'metrics' list)")
    names = ["null" if isinstance(m, dict) and m.get("stressor", "") is None else str(m.get("stressor"))
             for m in metrics if isinstance(m, dict)]
    walls = [m.get("wall-clock-time") for m in metrics if isinstance(m, dict)]
    seconds = max([float(w) for w in walls if isinstance(w, int | float)] or [1.0])
    results, _ = parse_stressng_yaml(text, names, seconds, host="file", path=str(path))
    return pd.Series({r.stressor: r.value for r in results if r.value is not None}, dtype=float)


@dataclass(frozen=True)
class MachinesToPredict:
    """Which machines a prediction is for: named stored hosts, a fingerprint file, or every fingerprinted host."""

    hosts: tuple[str, ...] = ()
    fingerprint_file: Path | None = None
    all_hosts: bool = False

    def check(self) -> None:
        """Exactly one way of naming machines.

        Raises
        ------
        UsageError
            None or several given.
        """
        given = sum((bool(self.hosts), self.fingerprint_file is not None, self.all_hosts))
        if given != 1:
            raise UsageError("name the machine(s) with exactly one of --host, --fingerprint or --all-hosts")


def predict_target(store: Store, target: str, machines: MachinesToPredict,
                   opts: PredictOptions | None = None) -> Prediction:
    """``quiho predict``: fit the predictor of ``target`` on the store's rows, predict the named machines.

    Raises
    ------
    UsageError
        Machines named in none or several ways.
    UnknownTargetError, NotEnoughData
        As :func:`quiho.irup.load_target` / :func:`fit_predictor`.
    PredictionRefused
        The IRUP is not meaningful, or no named machine has the stressors the model uses.
    """
    from quiho.irup.data import load_target
    from quiho.store.fingerprints import fingerprinted_hosts, host_fingerprint
    from quiho.store.hosts import host_names_like

    machines.check()
    opts = opts or PredictOptions()
    fps: dict[str, tuple[str, pd.Series]] = {}
    if machines.fingerprint_file is not None:
        fps[str(machines.fingerprint_file)] = ("file", read_fingerprint_file(machines.fingerprint_file))
    names = list(machines.hosts) or (fingerprinted_hosts(store, opts.batch) if machines.all_hosts else [])
    for h in names:
        fp = host_fingerprint(store, h, opts.batch)
        if fp is None:
            close = host_names_like(store, h.split(".")[0])
            hint = f"; hosts with a similar name: {', '.join(close)}" if close else ""
            raise UsageError(f"host {h!r} has no stored fingerprint{' in batch ' + opts.batch if opts.batch else ''}"
                             f"{hint}")
        fps[h] = (f"fingerprint run {fp.run_id} ({fp.batch})", fp.medians())
    predictor = fit_predictor(load_target(store, target, batch=opts.batch), opts)
    return predict_fingerprints(predictor, fps)
