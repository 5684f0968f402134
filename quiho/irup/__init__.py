"""Inferred resource utilisation profiles: engine, validity, comparison, advice."""

from quiho.irup.advise import Advice, AdviceRow, advise_fleet_size
from quiho.irup.compare import (
    Comparison,
    RankStep,
    class_shares,
    compare_irups,
    compare_runs,
    stressor_tolerance,
)
from quiho.irup.data import TargetData, list_targets, load_fingerprints, load_target, parse_target
from quiho.irup.engine import (
    DroppedStressor,
    FeatureImportance,
    Irup,
    SeedImportances,
    compute_irup,
    irup_for_target,
    save_irup,
)
from quiho.irup.groups import HardwareGroups, hardware_groups
from quiho.irup.importance import FORMULAS, ModelParams, classic_importance
from quiho.irup.predict import MachinesToPredict, Prediction, PredictOptions, Predictor, fit_predictor, predict_target
from quiho.irup.shift import ShiftSettings, ShiftTest, shift_test
from quiho.irup.validity import Validity

__all__ = [
    "Advice", "AdviceRow", "advise_fleet_size", "Comparison", "RankStep", "class_shares", "compare_irups",
    "TargetData", "list_targets", "load_fingerprints", "load_target", "parse_target", "DroppedStressor",
    "FeatureImportance", "Irup",
    "compute_irup", "irup_for_target", "save_irup", "HardwareGroups", "hardware_groups", "FORMULAS", "ModelParams",
    "classic_importance", "Validity", "SeedImportances", "ShiftSettings", "ShiftTest", "shift_test",
    "stressor_tolerance",
    "compare_runs", "MachinesToPredict", "Prediction", "PredictOptions", "Predictor", "fit_predictor", "predict_target",
]
