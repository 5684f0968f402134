"""Bimodal-aware rolling z-statistic with a Gaussian mixture (K by BIC), after Mozilla Talos."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import stats

from quiho.history.detectors._base import Detector, register_detector
from quiho.history.detectors._window import pick_peaks

__all__ = ["GmmZDetector", "band_noise_variance"]


def band_noise_variance(y: np.ndarray, window: int, max_components: int = 3,
                        random_state: int | None = 0) -> tuple[float, int, bool]:
    """Noise variance of ``y`` that counts interleaved bands as noise and levels as signal.

    A Gaussian mixture with K in ``1..max_components`` chosen by BIC labels
    every value. If the labels alternate about as often as a random
    arrangement would (Wald-Wolfowitz runs: at least half the expected number
    of switches), the components are *bands* of one noisy distribution and the
    noise variance is the mean variance of sliding windows of ``2 * window``
    values. If the labels come in long runs, the components are *levels* in
    time and the noise variance is the weighted within-component variance.

    Returns
    -------
    variance : float
    k : int
        Number of mixture components chosen.
    banded : bool
        True if the components were judged interleaved bands.
    """
    from sklearn.mixture import GaussianMixture

    x = y.reshape(-1, 1)
    w2 = max(2, min(2 * window, y.size))
    rolling = float(sliding_window_view(y, w2).var(axis=1, ddof=1).mean())
    if np.ptp(y) == 0:
        return 0.0, 1, False
    best = None
    for k in range(1, max_components + 1):
        if y.size < 5 * k or np.unique(y).size < k:
            break
        gm = GaussianMixture(k, random_state=random_state, reg_covar=1e-6 * float(y.var()) + 1e-12).fit(x)
        bic = gm.bic(x)
        if best is None or bic < best[0]:
            best = (bic, gm)
    if best is None or best[1].n_components == 1:
        return rolling, 1, False
    gm = best[1]
    labels = gm.predict(x)
    props = np.bincount(labels, minlength=gm.n_components) / y.size
    expected = (y.size - 1) * (1 - float(np.sum(props**2)))
    switches = int(np.sum(labels[1:] != labels[:-1]))
    if switches >= 0.5 * expected:
        return rolling, gm.n_components, True
    within = float(np.sum(gm.weights_ * gm.covariances_.reshape(-1)))
    return within, gm.n_components, False


@register_detector
class GmmZDetector(Detector):
    """Rolling z-statistic between window halves, with a bimodal-aware noise scale.

    At each revision, ``z = (mean(fore) - mean(back)) / sqrt(v * (1/n_b + 1/n_f))``
    where ``v`` is the larger of the pooled variance of the two halves and the
    :func:`band_noise_variance` of the whole series. The floor stops a window
    half that happens to hold only one band of bimodal data from looking like
    a quiet segment. Candidates have ``|z| >= z_threshold`` and are the
    strongest within ``window`` revisions; the reported p-value is the nominal
    two-sided normal tail of z.

    Parameters
    ----------
    window : int, default 12
        Length of each half.
    z_threshold : float, default 5.0
    max_components : int, default 3
        Largest K tried for the mixture.

    References
    ----------
    .. [1] Mozilla Talos/Perfherder regression detection and the bimodal-test
       discussion (Gaussian mixture, K by BIC; rolling window halves),
       https://wiki.mozilla.org/Performance_sheriffing
    .. [2] G. Schwarz, "Estimating the dimension of a model", Ann. Stat. 6, 1978 (BIC).
    .. [3] A. Wald, J. Wolfowitz, "On a test whether two samples are from the
       same population", Ann. Math. Stat. 11, 1940 (runs).
    """

    name = "gmm"

    def __init__(self, *, window: int = 12, z_threshold: float = 5.0, max_components: int = 3,
                 min_size: int = 5, magnitude_floor: float = 0.0, alpha: float = 0.01,
                 random_state: int | None = 0) -> None:
        super().__init__(min_size=min_size, magnitude_floor=magnitude_floor, alpha=alpha,
                         random_state=random_state)
        self.window = window
        self.z_threshold = z_threshold
        self.max_components = max_components

    def _locate(self, y: np.ndarray) -> list[tuple[int, float]]:
        v_noise, self.k_, self.banded_ = band_noise_variance(y, self.window, self.max_components,
                                                             self.random_state)
        scale = max(float(np.max(np.abs(y))), 1.0)
        pos, zs = [], []
        for i in range(self.min_size, y.size - self.min_size + 1):
            a, b = y[max(0, i - self.window):i], y[i:i + self.window]
            pooled = ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / max(a.size + b.size - 2, 1)
            v = max(pooled, v_noise)
            diff = float(b.mean() - a.mean())
            se = np.sqrt(v * (1 / a.size + 1 / b.size))
            if se <= 1e-12 * scale:
                z = np.inf if abs(diff) > 1e-9 * scale else 0.0
            else:
                z = abs(diff) / se
            pos.append(i)
            zs.append(z)
        if not pos:
            return []
        z_arr = np.array(zs)
        peaks = pick_peaks(z_arr, np.array(pos), z_arr >= self.z_threshold, max(self.min_size, self.window))
        lookup = dict(zip(pos, zs, strict=True))
        return [(p, float(2 * stats.norm.sf(lookup[p]))) for p in peaks]
