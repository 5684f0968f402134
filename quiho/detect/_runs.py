"""The run-level check of a flagged change: the run, not the call, is the unit of replication.

Calls of one traced run share that run's moment of the machine (frequency, a neighbour's load, where the kernel
put the pages): a whole run can be 10-60 % slower than the next one of the same binary, and pooled calls then
read that shift as a highly significant change of every function. So a change flagged from the calls must also
hold across the runs' medians.

References
----------
Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random variables is stochastically larger
than the other. *Annals of Mathematical Statistics* 18(1), 50-60.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from quiho.detect._base import Change, Samples, State

__all__ = ["RUN_ALPHA", "run_medians", "runs_agree"]

#: one-sided level of the run-level check (:func:`runs_agree`)
RUN_ALPHA = 0.05


def run_medians(s: Samples) -> NDArray[np.float64]:
    """Median of ``y`` per run, in run-label order (empty without run labels)."""
    if s.run is None or not s.run.size:
        return np.empty(0)
    labels, inv = np.unique(s.run, return_inverse=True)
    return np.array([float(np.median(s.y[inv == k])) for k in range(labels.size)])


def runs_agree(change: Change, baseline: Samples, target: Samples, *, alpha: float = RUN_ALPHA) -> Change:
    """``change`` if the runs themselves show it, else the same change as ``maybe``.

    The rule: the runs' medians of the function's amount, one-sided exact Mann-Whitney test in the flagged
    direction, ``p <= max(alpha, 1 / C(na + nb, na))`` (the smallest p the design allows: with 2-3 runs per
    version, every run of one version beyond every run of the other); a whole run can be 10-60 % slower than
    the next, so the run, not the call, is the unit of replication. With fewer than two runs on either side
    nothing can be checked and ``change`` is returned as is. The test's result goes into ``support["runs"]``.

    Parameters
    ----------
    change : Change
        A detector's verdict on this function.
    baseline, target : Samples
        The function's samples, with ``run`` labels.
    alpha : float, default 0.05

    Returns
    -------
    Change

    Examples
    --------
    >>> import numpy as np
    >>> from quiho.detect import Samples, State, Change
    >>> a = Samples.of(np.arange(6), [10, 10, 11, 11, 10, 10], run=[1, 1, 2, 2, 3, 3])
    >>> b = Samples.of(np.arange(6), [10, 10, 10, 10, 14, 14], run=[4, 4, 5, 5, 6, 6])
    >>> c = Change("f", "joint", State.DEGRADATION, "constant", 0.13, 0.99, "1-p", 0.01)
    >>> runs_agree(c, a, b).state.value
    'maybe'
    """
    from scipy import stats

    if change.state not in (State.DEGRADATION, State.OPTIMIZATION):
        return change
    ma, mb = run_medians(baseline), run_medians(target)
    if ma.size < 2 or mb.size < 2:
        return change
    side = "greater" if change.state is State.DEGRADATION else "less"
    p = float(stats.mannwhitneyu(mb, ma, alternative=side, method="exact").pvalue)
    level = max(alpha, 1.0 / math.comb(ma.size + mb.size, ma.size))
    runs = {"baseline_medians_ns": [float(v) for v in ma], "target_medians_ns": [float(v) for v in mb],
            "p": p, "level": level}
    support = {**change.support, "runs": runs}
    if p <= level * (1 + 1e-9):
        return dataclasses.replace(change, support=support)
    return dataclasses.replace(change, state=State.MAYBE, support={
        **support, "why": f"the calls say {change.state.value}, the runs do not (one-sided Mann-Whitney over "
        f"{ma.size} + {mb.size} run medians: p = {p:.3g} > {level:.3g})"})
