"""Perfherder-style windowed tests: Welch t and Mann-Whitney between a back and a fore window."""

from __future__ import annotations

import numpy as np
from scipy import stats

from quiho.history.detectors._base import Detector, register_detector

__all__ = ["TTestDetector", "MannWhitneyDetector", "pick_peaks"]


def pick_peaks(strength: np.ndarray, positions: np.ndarray, keep: np.ndarray, separation: int) -> list[int]:
    """Greedy non-maximum suppression: strongest kept position first, none closer than ``separation``."""
    chosen: list[int] = []
    for j in np.argsort(-strength, kind="stable"):
        if not keep[j]:
            continue
        p = int(positions[j])
        if all(abs(p - c) >= separation for c in chosen):
            chosen.append(p)
    return sorted(chosen)


class _Windowed(Detector):
    def __init__(self, *, back_window: int = 12, fore_window: int = 12, min_size: int = 5,
                 magnitude_floor: float = 0.0, alpha: float = 0.01, random_state: int | None = 0) -> None:
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.back_window = back_window
        self.fore_window = fore_window

    def _windows(self, y: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        return [(i, y[max(0, i - self.back_window):i], y[i:i + self.fore_window])
                for i in range(self.min_size, y.size - self.min_size + 1)]


@register_detector
class TTestDetector(_Windowed):
    """Welch t between the ``back_window`` values before and ``fore_window`` values after each revision.

    A revision is a candidate where ``|t| >= t_threshold`` and it is the
    strongest within ``min(back, fore)`` revisions; the reported p-value is
    the Welch p-value of that window pair (nominal, not adjusted for the scan).

    Parameters
    ----------
    t_threshold : float, default 7.0
        Perfherder's alert threshold.

    References
    ----------
    .. [1] Mozilla Perfherder, "Performance sheriffing: alert generation"
       (back window 12, fore window 12, t threshold 7),
       https://firefox-source-docs.mozilla.org/testing/perfdocs/perfherder.html
    .. [2] B. L. Welch, Biometrika 34, 1947.
    """

    name = "ttest"

    def __init__(self, *, t_threshold: float = 7.0, back_window: int = 12, fore_window: int = 12,
                 min_size: int = 5, magnitude_floor: float = 0.0, alpha: float = 0.01,
                 random_state: int | None = 0) -> None:
        super().__init__(back_window=back_window, fore_window=fore_window, min_size=min_size,
                         magnitude_floor=magnitude_floor, alpha=alpha, random_state=random_state)
        self.t_threshold = t_threshold

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        wins = self._windows(y)
        if not wins:
            return []
        pos = np.array([i for i, _, _ in wins])
        tvals = np.empty(len(wins))
        pvals = np.empty(len(wins))
        scale = max(float(np.max(np.abs(y))), 1.0)
        for j, (_, a, b) in enumerate(wins):
            diff = b.mean() - a.mean()
            se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
            if se <= 1e-12 * scale:
                tvals[j] = np.inf if abs(diff) > 1e-9 * scale else 0.0
                pvals[j] = 0.0 if tvals[j] else 1.0
            else:
                tvals[j] = abs(diff) / se
                nu = se**4 / ((a.var(ddof=1) / a.size) ** 2 / (a.size - 1) + (b.var(ddof=1) / b.size) ** 2
                              / (b.size - 1))
                pvals[j] = 2 * stats.t.sf(tvals[j], nu)
        sep = max(self.min_size, min(self.back_window, self.fore_window))
        peaks = pick_peaks(tvals, pos, tvals >= self.t_threshold, sep)
        lookup = dict(zip(pos.tolist(), pvals.tolist(), strict=True))
        return [(p, lookup[p]) for p in peaks]


@register_detector
class MannWhitneyDetector(_Windowed):
    """Mann-Whitney U between the back and fore windows of each revision (rank-based Perfherder variant).

    A revision is a candidate where the two-sided p-value is at most
    ``window_alpha`` and it is the most significant within ``min(back, fore)``
    revisions. Robust to outliers and heavy tails; needs at least ~5 values per
    window to reach small p-values.

    Parameters
    ----------
    window_alpha : float, default 1e-3
        Per-window significance for a candidate.

    References
    ----------
    .. [1] H. B. Mann, D. R. Whitney, "On a test of whether one of two random
       variables is stochastically larger than the other", Ann. Math. Stat. 18, 1947.
    """

    name = "mannwhitney"

    def __init__(self, *, window_alpha: float = 1e-3, back_window: int = 12, fore_window: int = 12,
                 min_size: int = 5, magnitude_floor: float = 0.0, alpha: float = 0.01,
                 random_state: int | None = 0) -> None:
        super().__init__(back_window=back_window, fore_window=fore_window, min_size=min_size,
                         magnitude_floor=magnitude_floor, alpha=alpha, random_state=random_state)
        self.window_alpha = window_alpha

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        wins = self._windows(y)
        if not wins:
            return []
        pos = np.array([i for i, _, _ in wins])
        pvals = np.ones(len(wins))
        for j, (_, a, b) in enumerate(wins):
            if np.ptp(np.concatenate([a, b])) == 0:
                continue
            pvals[j] = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        # strength: -log p, ties broken by the mean difference so a noise-free step peaks at its edge
        diff = np.array([abs(b.mean() - a.mean()) for _, a, b in wins])
        strength = -np.log(np.maximum(pvals, 1e-300)) + 1e-6 * diff / (diff.max() + 1e-300)
        sep = max(self.min_size, min(self.back_window, self.fore_window))
        peaks = pick_peaks(strength, pos, pvals <= self.window_alpha, sep)
        lookup = dict(zip(pos.tolist(), pvals.tolist(), strict=True))
        return [(p, lookup[p]) for p in peaks]
