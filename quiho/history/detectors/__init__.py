"""Change-point detectors: one method per file, chosen by name from :data:`DETECTORS`.

``_base`` holds the contract (:class:`Detector`: ``fit(history)``, ``predict()`` -> :class:`~quiho.history.Detection`),
the registry and :func:`detect`; each other module registers one family: ``_auto`` (``auto``, the default: rank-based
binary segmentation that tells steps from drift; ``auto-ar1``, the same with an AR(1) correction for wandering
noise), ``_pelt``, ``_cusum``, ``_segment`` (ruptures' binary and bottom-up segmentation), ``_window`` (windowed t
and Mann-Whitney tests), ``_talos`` (a bimodal-aware z-statistic) and ``_combo`` (the rank detector's changes that
PELT confirms). :mod:`~quiho.history.detectors.metrics` scores
detections against annotated truth (TCPDBench's F1 and covering).
"""

# each detector module registers itself on import; this order is the order of DETECTORS
from quiho.history.detectors import _auto, _combo, _cusum, _pelt, _segment, _talos, _window  # noqa: F401
from quiho.history.detectors._auto import AutoAR1Detector, AutoDetector
from quiho.history.detectors._base import (
    DETECTORS,
    Detector,
    as_history,
    detect,
    location_interval,
    make_detector,
    register_detector,
)
from quiho.history.detectors._combo import ComboDetector
from quiho.history.detectors._cusum import CusumDetector
from quiho.history.detectors._pelt import PeltDetector
from quiho.history.detectors._segment import BinsegDetector, BottomUpDetector
from quiho.history.detectors._talos import GmmZDetector
from quiho.history.detectors._window import MannWhitneyDetector, TTestDetector

__all__ = [
    "DETECTORS",
    "Detector",
    "register_detector",
    "make_detector",
    "detect",
    "as_history",
    "location_interval",
    "AutoDetector",
    "AutoAR1Detector",
    "PeltDetector",
    "ComboDetector",
    "CusumDetector",
    "BinsegDetector",
    "BottomUpDetector",
    "TTestDetector",
    "MannWhitneyDetector",
    "GmmZDetector",
]
