"""Binary segmentation and bottom-up segmentation with ``ruptures`` (L2 cost)."""

from __future__ import annotations

import numpy as np

from quiho.history.detectors._base import Detector, register_detector

__all__ = ["BinsegDetector", "BottomUpDetector", "diff_sigma", "refine_break", "optimal_breaks"]


def diff_sigma(y: np.ndarray) -> float:
    """Noise scale from first differences: ``1.4826 * MAD(diff(y)) / sqrt(2)`` (robust to steps)."""
    d = np.diff(y)
    if d.size == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


def optimal_breaks(y: np.ndarray, n_bkps: int, min_size: int) -> list[int]:
    """Least-squares optimal positions of ``n_bkps`` changes (segment neighbourhood dynamic programme).

    O(n_bkps * n^2) time and O(n^2) memory, vectorised.

    References
    ----------
    .. [1] I. E. Auger, C. E. Lawrence, "Algorithms for the optimal identification
       of segment neighborhoods", Bull. Math. Biol. 51, 1989.
    """
    n = y.size
    c1 = np.r_[0.0, np.cumsum(y)]
    c2 = np.r_[0.0, np.cumsum(y * y)]
    i = np.arange(n + 1)[:, None]
    j = np.arange(n + 1)[None, :]
    length = (j - i).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = (c2[None, :] - c2[:, None]) - (c1[None, :] - c1[:, None]) ** 2 / length
    cost[length < min_size] = np.inf  # also excludes i >= j
    best = cost[0].copy()  # best[j]: optimal cost of y[:j] with k changes
    back = []
    for _ in range(n_bkps):
        total = best[:, None] + cost
        arg = np.argmin(total, axis=0)
        best = total[arg, np.arange(n + 1)]
        back.append(arg)
    if not np.isfinite(best[n]):
        return []
    out, end = [], n
    for arg in reversed(back):
        end = int(arg[end])
        out.append(end)
    return sorted(out)


def refine_break(y: np.ndarray, lo: int, hi: int, min_size: int, default: int) -> int:
    """The split of ``y[lo:hi]`` with the smallest total squared error, both parts >= ``min_size`` long."""
    seg = y[lo:hi]
    n = seg.size
    ks = np.arange(min_size, n - min_size + 1)
    if ks.size == 0:
        return default
    c1 = np.cumsum(seg)
    c2 = np.cumsum(seg**2)
    left = c2[ks - 1] - c1[ks - 1] ** 2 / ks
    right = (c2[-1] - c2[ks - 1]) - (c1[-1] - c1[ks - 1]) ** 2 / (n - ks)
    return lo + int(ks[int(np.argmin(left + right))])


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
        bkps = algo.predict(pen=pen)[:-1]
        # ruptures' bottom-up starts from a dyadic grid (and binary segmentation is greedy), so a change can
        # land a few revisions off; keep the number of changes, take the least-squares optimal positions.
        if bkps and n <= 2000:  # O(n^2) memory: 2000 revisions = 32 MB per matrix
            bkps = optimal_breaks(y, len(bkps), self.min_size)
        elif bkps:  # longer: move each break to the best split between its neighbours
            b = [0, *bkps, n]
            for j in range(1, len(b) - 1):
                b[j] = refine_break(y, b[j - 1], b[j + 1], self.min_size, b[j])
            bkps = b[1:-1]
        return [(int(b), float("nan")) for b in bkps]


@register_detector
class BinsegDetector(_Ruptures):
    """Binary segmentation, L2 cost, BIC-like penalty ``penalty_factor * sigma^2 * log(n)``.

    sigma is :func:`diff_sigma`. p-values are search-adjusted CUSUM tests of
    the two adjacent segments (:func:`quiho.history.detectors._base.split_p`).

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
