"""Binary segmentation and bottom-up segmentation with ``ruptures`` (L2 cost)."""

from __future__ import annotations

import numpy as np

from quiho.history._base import Detector, register_detector

__all__ = ["BinsegDetector", "BottomUpDetector", "diff_sigma"]


def diff_sigma(y: np.ndarray) -> float:
    """Noise scale from first differences: ``1.4826 * MAD(diff(y)) / sqrt(2)`` (robust to steps)."""
    d = np.diff(y)
    if d.size == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


class _Ruptures(Detector):
    _algo = ""

    def __init__(self, *, penalty: float | None = None, penalty_factor: float = 2.0, min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.penalty = penalty
        self.penalty_factor = penalty_factor

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        import ruptures as rpt

        n = y.size
        if self.penalty is not None:
            pen = float(self.penalty)
        else:
            sigma = diff_sigma(y)
            pen = self.penalty_factor * sigma**2 * np.log(n)
        pen = max(pen, 1e-10 * max(1.0, float(np.mean(y**2))) * n)
        algo = getattr(rpt, self._algo)(model="l2", min_size=self.min_size, jump=1).fit(y)
        bkps = algo.predict(pen=pen)
        return [(int(b), float("nan")) for b in bkps[:-1]]


@register_detector
class BinsegDetector(_Ruptures):
    """Binary segmentation, L2 cost, BIC-like penalty ``penalty_factor * sigma^2 * log(n)``.

    sigma is :func:`diff_sigma`. p-values are post-hoc Welch tests between
    adjacent segments.

    References
    ----------
    .. [1] C. Truong, L. Oudre, N. Vayatis, "Selective review of offline change
       point detection methods", Signal Processing 167, 2020 (ruptures).
    .. [2] A. J. Scott, M. Knott, "A cluster analysis method for grouping means
       in the analysis of variance", Biometrics 30, 1974.
    """

    name = "binseg"
    _algo = "Binseg"


@register_detector
class BottomUpDetector(_Ruptures):
    """Bottom-up segmentation (merge adjacent segments), L2 cost, same penalty as :class:`BinsegDetector`.

    References
    ----------
    .. [1] C. Truong, L. Oudre, N. Vayatis, "Selective review of offline change
       point detection methods", Signal Processing 167, 2020 (ruptures).
    .. [2] E. Keogh, S. Chu, D. Hart, M. Pazzani, "An online algorithm for
       segmenting time series", ICDM 2001.
    """

    name = "bottomup"
    _algo = "BottomUp"
