"""Performance histories: change points, bimodal-aware alerts, GP revision sampling.

Detectors are chosen by name from :data:`DETECTORS` (``auto``, ``cusum``,
``binseg``, ``bottomup``, ``gmm``, ``ttest``, ``mannwhitney``); each returns a
:class:`Detection` of typed :class:`ChangePoint` s.
"""

from quiho.history._base import DETECTORS, Detector, as_history, detect, make_detector, register_detector
from quiho.history._model import ChangePoint, Detection, History

__all__ = [
    "History",
    "ChangePoint",
    "Detection",
    "Detector",
    "DETECTORS",
    "register_detector",
    "make_detector",
    "detect",
    "as_history",
]
