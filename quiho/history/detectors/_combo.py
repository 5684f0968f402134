"""A combination: the rank detector's changes that the penalised segmentation also finds."""

from __future__ import annotations

import numpy as np

from quiho.history.detectors._auto import AutoDetector
from quiho.history.detectors._base import Detector, register_detector
from quiho.history.detectors._pelt import PeltDetector

__all__ = ["ComboDetector"]


@register_detector
class ComboDetector(Detector):
    """Changes of ``auto`` (:class:`~quiho.history.detectors.AutoDetector`) that ``pelt`` confirms.

    A change is kept when the rank test (Pettitt with the step-versus-trend check, AR(1)-corrected as
    ``auto-ar1``: the combination as it was measured) finds it and PELT with
    the long-run MBIC penalty places a change within ``min_size`` revisions: two different noise models
    must agree, so an alarm that only one of them raises (a rank excursion, a wandering mean) is dropped.
    Location and p-value are the rank detector's.

    References
    ----------
    .. [1] See :class:`~quiho.history.detectors.AutoDetector` and :class:`~quiho.history.detectors.PeltDetector`.
    """

    name = "combo"

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        m, a, f = self.min_size, self.alpha, self.magnitude_floor
        ranks = AutoDetector(dependence=True, min_size=m, alpha=a, magnitude_floor=f)._locate(y)
        seg = [k for k, _ in PeltDetector(scale="long-run", min_size=m, alpha=a, magnitude_floor=f)._locate(y)]
        return [(k, p) for k, p in ranks if any(abs(k - s) <= self.min_size for s in seg)]
