"""Page's two-sided CUSUM with a noise scale from sliding-window standard deviations."""

from __future__ import annotations

import numpy as np

from quiho.history.detectors._base import Detector, register_detector
from quiho.history.detectors._segment import refine_break

__all__ = ["CusumDetector"]


def sliding_sigma(y: np.ndarray, window: int) -> float:
    """Median of the standard deviations of all windows of ``window`` values.

    The median ignores the few windows that straddle a step, so the scale is
    the within-segment noise, not the size of the changes.
    """
    w = max(2, min(window, y.size))
    from numpy.lib.stride_tricks import sliding_window_view

    return float(np.median(sliding_window_view(y, w).std(axis=1, ddof=1)))


@register_detector
class CusumDetector(Detector):
    """Two-sided CUSUM (Page) on standardised values, restarted after each alarm.

    The reference level is the mean of the first ``window`` values of the
    current segment; values are standardised by :func:`sliding_sigma`. An
    alarm fires when either cumulative sum exceeds ``threshold`` (in units of
    sigma, with allowance ``drift``); the change is dated at the least-squares
    split of the values from the segment start to ``window`` past the alarm
    (Page's "last time the sum was zero" lags in noise), and monitoring
    restarts there. p-values are search-adjusted
    CUSUM tests of the two adjacent segments
    (:func:`quiho.history.detectors._base.split_p`).

    Parameters
    ----------
    drift : float, default 0.5
        Allowance k in sigma: half the smallest shift worth detecting quickly.
    threshold : float, default 5.0
        Decision interval h in sigma (in-control ARL about 465 for k=0.5, two-sided).
    window : int, default 10
        Length of the sliding windows for the noise scale and of the reference.

    References
    ----------
    .. [1] E. S. Page, "Continuous inspection schemes", Biometrika 41, 1954.
    .. [2] S. Mühlbauer, S. Apel, N. Siegmund, "Accurate modeling of performance
       histories for evolving software systems", ASE 2019 (CUSUM with thresholds
       from sliding-window standard deviations).
    """

    name = "cusum"

    def __init__(self, *, drift: float = 0.5, threshold: float = 5.0, window: int = 10, min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.drift = drift
        self.threshold = threshold
        self.window = window

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        n = y.size
        scale = max(float(np.max(np.abs(y))), 1.0)
        sigma = max(sliding_sigma(y, self.window), 1e-9 * scale)
        out: list[tuple[int, float]] = []
        start = 0
        while start < n - 1:
            ref = float(y[start:start + self.window].mean())
            gp = gn = 0.0
            tp = tn = start
            alarm = -1
            for t in range(start, n):
                z = (y[t] - ref) / sigma
                gp = max(0.0, gp + z - self.drift)
                gn = max(0.0, gn - z - self.drift)
                if gp == 0.0:
                    tp = t + 1
                if gn == 0.0:
                    tn = t + 1
                if gp > self.threshold or gn > self.threshold:
                    alarm = tp if gp > self.threshold else tn
                    # the last-zero date lags when noise kept the sum above 0: take the least-squares
                    # split of the stretch from the segment start to a window past the alarm instead
                    hi = min(n, t + 1 + self.window)
                    if hi - start >= 2:
                        alarm = refine_break(y, start, hi, 1, alarm)
                    break
            if alarm < 0:
                break
            if alarm <= start:  # the reference itself straddles a change: restart just after
                alarm = start + 1
            else:
                out.append((alarm, float("nan")))
            start = alarm
        return out
