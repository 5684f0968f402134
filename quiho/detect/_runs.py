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

__all__ = ["RUN_ALPHA", "TRACER_RATIO", "run_medians", "runs_agree", "beyond_tracer"]

#: one-sided level of the run-level check (:func:`runs_agree`)
RUN_ALPHA = 0.05
#: a function is judged only where its median call is at least this many times the tracer's own time per call
#: in one version (:func:`beyond_tracer`): below, at least half of what is measured is the probes
TRACER_RATIO = 2.0


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


def beyond_tracer(change: Change, baseline: Samples, target: Samples, tracer_a: float | None,
                  tracer_b: float | None, *, ratio: float = TRACER_RATIO) -> Change:
    """``change``, or ``not-meaningful`` when the function's calls are mostly the tracer's own time.

    ``tracer_a`` / ``tracer_b``: the tracer's time per traced call where each side was traced (ns; None when not
    measured, and then ``change`` is returned as is). When the function's median call is under ``ratio`` times
    its side's tracer time in *both* versions, at least half of what its calls measure is the probes, whose cost
    moves with the machine, so a change of the tracer would read as one of the function. A function brief in one
    version only (a search made a hash lookup) is still judged. The numbers go into
    ``support`` (``median_call_ns``, ``tracer_ns_per_call``: the larger side's; the detector's
    ``measured_magnitude``).

    Examples
    --------
    >>> import numpy as np
    >>> from quiho.detect import Samples, State, Change
    >>> a, b = Samples.of(np.arange(3), [4700, 4710, 4690]), Samples.of(np.arange(3), [4200, 4230, 4210])
    >>> c = Change("make_key", "joint", State.OPTIMIZATION, "constant", -0.1, 0.99, "1-p", 0.001)
    >>> beyond_tracer(c, a, b, 4600.0, 4600.0).state.value
    'not-meaningful'
    >>> beyond_tracer(c, a, b, None, None).state.value
    'optimization'
    """
    if tracer_a is None or tracer_b is None or not len(baseline) or not len(target):
        return change
    ma, mb = float(np.median(baseline.y)), float(np.median(target.y))
    if ma >= ratio * tracer_a or mb >= ratio * tracer_b:
        return change
    return dataclasses.replace(change, state=State.NOT_MEANINGFUL, magnitude=float("nan"), support={
        **change.support, "measured_magnitude": change.magnitude, "median_call_ns": max(ma, mb),
        "tracer_ns_per_call": max(tracer_a, tracer_b),
        "why": (f"its calls (median {max(ma, mb) / 1e3:.1f} µs) are under {ratio:g}x the tracer's own time per "
                f"call ({max(tracer_a, tracer_b) / 1e3:.1f} µs) in both versions: a change of the tracer's cost "
                "would read as one of the function")})
