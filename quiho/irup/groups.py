"""Hardware groups found from the fingerprints themselves.

Host names in a fleet are labels, not hardware: the paper's CloudLab hosts
were named after the *requested* type, and several names got the same
machine. Repetitions and look-alike hosts leak across shuffled CV folds and
inflate R², so validation leaves out whole hardware groups.

Method: per (batch, host) unit, the median log fingerprint over its
repetitions; distance between two units = 10 %-trimmed mean of
|Δ log(bogo-ops/s)| over the *stable* stressors (those whose within-unit
repetition spread is small against the spread between units); average-linkage
clustering cut at ``max(min_threshold, 3 × median repetition distance)``, i.e.
units closer than three times the measurement noise are the same hardware.

This is quiho's one notion of "same hardware" (names and requested types are labels); the facts' hardware type
(:func:`quiho.history.normalise.machine_type`) only names a hosted runner's VM kind for ``history --normalise``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

__all__ = ["HardwareGroups", "hardware_groups"]


@dataclass(frozen=True)
class HardwareGroups:
    """Group label per row, and how the grouping was made.

    Attributes
    ----------
    row_groups : ndarray of int, shape (n_rows,)
        Group of every training row (0 = largest group).
    unit_groups : dict
        ``"batch|host"`` → group.
    threshold : float
        Linkage cut, in mean |Δ log| units (0.05 ≈ 5 % apart).
    repetition_distance : float
        Median distance between repetitions of one unit (the noise floor); NaN if no unit repeats.
    stressors_used : tuple of str
        Stable stressors the distance was computed on.
    """

    row_groups: np.ndarray
    unit_groups: dict[str, int]
    threshold: float
    repetition_distance: float
    stressors_used: tuple[str, ...]

    @property
    def n_groups(self) -> int:
        """Number of distinct hardware groups."""
        return len(set(self.unit_groups.values()))

    @property
    def n_units(self) -> int:
        """Number of (batch, host) units."""
        return len(self.unit_groups)

    def members(self) -> dict[int, list[str]]:
        """Units of each group."""
        out: dict[int, list[str]] = {}
        for unit, g in sorted(self.unit_groups.items()):
            out.setdefault(g, []).append(unit)
        return out


def _pair_dists(A: np.ndarray) -> np.ndarray:
    """10 %-trimmed mean |Δ| of every pair of rows of ``A``, in ``combinations`` order (one vectorised call)."""
    i, j = np.triu_indices(len(A), 1)
    if len(i) == 0:
        return np.zeros(0)
    D = np.abs(A[i] - A[j])
    lo = int(0.1 * D.shape[1])  # scipy.stats.trim_mean's cut, its partition (same values, same order)
    hi = D.shape[1] - lo
    return np.asarray(np.mean(np.partition(D, (lo, hi - 1), axis=1)[:, lo:hi], axis=1), dtype=float)


def hardware_groups(
    X: pd.DataFrame,
    units: pd.Series | np.ndarray,
    *,
    min_threshold: float = 0.05,
    noise_multiple: float = 3.0,
    stable_ratio: float = 0.25,
) -> HardwareGroups:
    """Group the rows of ``X`` by the hardware they ran on.

    Parameters
    ----------
    X : DataFrame, shape (n_rows, n_stressors)
        Fingerprints (bogo-ops/s, positive).
    units : array-like of str, shape (n_rows,)
        The (batch, host) unit of each row; rows of one unit are repetitions.
    min_threshold : float, default 0.05
        Smallest cut: units less than ~5 % apart on average are never split.
    noise_multiple : float, default 3.0
        Cut at this multiple of the median repetition distance when larger.
    stable_ratio : float, default 0.25
        A stressor is used when its median within-unit std (log) is below this
        fraction of the std of unit medians.

    Returns
    -------
    HardwareGroups

    References
    ----------
    The paper (Jimenez et al., ICPE'18) counts host names; differently named hosts of one hardware kind are
    not independent samples, so that overstates the fleet.
    """
    units = pd.Series(np.asarray(units), name="unit")
    L = np.log(X.clip(lower=1e-12).to_numpy(dtype=float))
    L = pd.DataFrame(L, columns=X.columns)
    L = L.loc[:, L.std() > 0]
    g = L.groupby(units.to_numpy())
    med = g.median()
    if len(med) == 1:
        only = str(med.index[0])
        return HardwareGroups(np.zeros(len(X), dtype=int), {only: 0}, min_threshold, float("nan"), tuple(L.columns))
    within = g.std().median()
    between = med.std()
    ratio = (within / between.replace(0, np.nan)).fillna(np.inf)
    if ratio.isna().all() or not np.isfinite(within).any():
        stable = list(L.columns)  # no repetitions: every varying stressor counts
    else:
        stable = [c for c in L.columns if ratio[c] < stable_ratio] or list(L.columns)
    rep_d: list[float] = []
    for _, sub in L[stable].groupby(units.to_numpy()):
        rep_d.extend(_pair_dists(sub.to_numpy()).tolist())
    rep_distance = float(np.median(rep_d)) if rep_d else float("nan")
    threshold = max(min_threshold, noise_multiple * rep_distance) if rep_d else min_threshold
    M = med[stable].to_numpy()
    n = len(M)
    D = np.zeros((n, n))
    iu, ju = np.triu_indices(n, 1)
    D[iu, ju] = D[ju, iu] = _pair_dists(M)
    labels = fcluster(linkage(squareform(D, checks=False), "average"), threshold, "distance")
    # Renumber: largest group first, ties by first unit name, so labels are deterministic.
    lab = pd.Series(labels, index=med.index.astype(str))
    order = sorted(lab.unique(), key=lambda k: (-int((lab == k).sum()), min(lab.index[lab == k])))
    remap = {old: new for new, old in enumerate(order)}
    unit_groups = {u: remap[k] for u, k in lab.items()}
    row_groups = np.array([unit_groups[str(u)] for u in units], dtype=int)
    return HardwareGroups(row_groups, unit_groups, float(threshold), rep_distance, tuple(stable))
