"""Compare two IRUPs: the paper's rank walk, with a tolerance calibrated on the data's noise.

The paper walks two profiles from rank 1 down and stops at the first rank
whose importance is "not the same", without saying what "the same" means.
quiho makes it a test: at rank *r* the stressors of the two profiles are the
same if they are one stressor whose importances differ by less than the
tolerance, or two stressors whose importances are each within tolerance of
their counterpart in the other profile (a swap inside the noise).

The walk's tolerance for a stressor is ``z × sqrt(se_A² + se_B²)`` of the seed means (floor
``min_tol``): it locates *which rank* moved beyond the seeds' noise. That tolerance shrinks with
the number of seeds and knows nothing about run-to-run noise, so on its own it cannot say that
the profile changed. With a :class:`quiho.irup.shift.ShiftTest` (the permutation test of "same
profile", :func:`quiho.irup.shift.shift_test`) the verdict needs the test: ``different`` =
p < alpha *and* the IRUPs locating the shift (a divergence in the top ranks, or a class share moved
beyond its null quantile); ``equivalent`` = p ≥ alpha, the top ranks agree *and* the IRUP distance is
at or below the median of the test's null (what exchanging the runs typically gives; a distance the
test merely cannot reject is not shown to be small); otherwise ``inconclusive`` (:func:`_decide`).
Without one (IRUPs of different fleets, or no runs at hand) the verdict is the walk's and says it is uncalibrated.

An IRUP that is not meaningful (leave-one-group-out R² ≤ 0) cannot make the verdict
``equivalent`` (a test that does not reject proves nothing without a model that predicts) nor an
uncalibrated ``different``; a calibrated ``different`` stands, marked *tentative*: the test's
size holds whatever the models' fit (``bench/irup_calibration.py``: self-pairs and planted
nulls), but its ranks do not say which resource moved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from quiho._text import json_number
from quiho.errors import NotEnoughData
from quiho.fingerprint.catalog import ANALYSIS_CLASSES
from quiho.irup.data import TargetData
from quiho.irup.engine import Irup
from quiho.irup.shift import ShiftSettings, ShiftTest, shift_test

COMPARISON_SCHEMA_VERSION = 2

__all__ = ["RankStep", "Comparison", "compare_irups", "compare_runs", "class_shares", "stressor_tolerance"]


@dataclass(frozen=True)
class RankStep:
    """One rank of the walk."""

    rank: int
    stressor_a: str
    importance_a: float
    stressor_b: str
    importance_b: float
    same: bool
    why: str


@dataclass(frozen=True)
class Comparison:
    """The verdict of comparing IRUP ``a`` with IRUP ``b`` and its evidence.

    ``shares_a`` / ``shares_b``: share of the total importance per class of ``a`` and ``b`` (of the permutation
    test's own IRUPs when calibrated, so the table, the reason and the hints cite one estimate);
    ``tolerance``: the tolerance used for each stressor (0-100 scale), also used by the hints;
    ``shift``: the permutation test, None when uncalibrated.
    """

    target_a: str
    target_b: str
    verdict: str
    first_divergent_rank: int | None
    reason: str
    steps: tuple[RankStep, ...]
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float
    shares_a: dict[str, float]
    shares_b: dict[str, float]
    class_shift: dict[str, float]
    tolerance: dict[str, float]
    tolerance_z: float
    validity_a: str
    validity_b: str
    shift: ShiftTest | None = None

    @property
    def class_shares(self) -> dict[str, dict[str, float]]:
        """``{"a": shares_a, "b": shares_b}``."""
        return {"a": self.shares_a, "b": self.shares_b}

    @property
    def calibrated(self) -> bool:
        """True when the verdict rests on the permutation test."""
        return self.shift is not None

    @property
    def p_value(self) -> float | None:
        """The permutation test's p-value (None when uncalibrated)."""
        return self.shift.p_value if self.shift else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``quiho compare --json``."""
        return {
            "schema_version": COMPARISON_SCHEMA_VERSION,
            "target_a": self.target_a, "target_b": self.target_b, "verdict": self.verdict,
            "first_divergent_rank": self.first_divergent_rank, "reason": self.reason,
            "calibrated": self.calibrated,
            "p_value": None if self.shift is None else round(self.shift.p_value, 5),
            "permutations": None if self.shift is None else self.shift.permutations,
            "shift_test": None if self.shift is None else self.shift.to_dict(),
            "spearman": json_number(self.spearman, 4), "spearman_p": json_number(self.spearman_p, 4),
            "kendall": json_number(self.kendall, 4), "kendall_p": json_number(self.kendall_p, 4),
            "class_shares": self.class_shares, "class_shift": self.class_shift,
            "validity": {"a": self.validity_a, "b": self.validity_b}, "tolerance_z": self.tolerance_z,
            "tolerance": {k: round(v, 2) for k, v in self.tolerance.items()},
            "walk": [s.__dict__ for s in self.steps],
        }



def class_shares(irup: Irup) -> dict[str, float]:
    """Share of total importance per primary class (cpu, cpu-cache, memory, vm, os)."""
    total = sum(f.importance for f in irup.features) or 1.0
    out = {c: 0.0 for c in ANALYSIS_CLASSES}
    for f in irup.features:
        key = f.primary if f.primary in out else "other"
        out[key] = out.get(key, 0.0) + f.importance / total
    return {k: round(v, 4) for k, v in out.items()}


def stressor_tolerance(a: Irup, b: Irup, *, z: float = 3.0, min_tol: float = 5.0) -> dict[str, float]:
    """Walk tolerance of every stressor of ``a`` or ``b``: ``z`` seed standard errors, floor ``min_tol``.

    On the 0-100 scale. This says whether two importances differ beyond the *seeds'* noise (which rank moved); whether
    the profiles differ beyond the *runs'* noise is the permutation test's job. The test's own
    per-stressor null quantiles are not used here: they are computed on pooled runs, which under a
    real shift mix both profiles and can be inflated by the very shift under test.
    """
    fa, fb = a.by_stressor(), b.by_stressor()

    def se(irup: Irup, f: dict, s: str) -> float:
        return (f[s].std / np.sqrt(max(len(irup.per_seed), 1))) if s in f else 0.0

    return {s: max(min_tol, z * float(np.hypot(se(a, fa, s), se(b, fb, s)))) for s in sorted(set(fa) | set(fb))}


def _walk(a: Irup, b: Irup, tol: dict[str, float], min_importance: float) -> tuple[list[RankStep], int | None]:
    fa, fb = a.by_stressor(), b.by_stressor()

    def imp(f: dict, s: str) -> float:
        return f[s].importance if s in f else 0.0

    def within(s: str) -> bool:
        return abs(imp(fa, s) - imp(fb, s)) <= tol[s]

    n_walk = max(1, min(10, max(
        sum(1 for f in a.features if f.importance >= min_importance),
        sum(1 for f in b.features if f.importance >= min_importance),
    )))
    steps: list[RankStep] = []
    first: int | None = None
    for r in range(min(n_walk, len(a.features), len(b.features))):
        sa, sb = a.features[r].stressor, b.features[r].stressor
        ia, ib = a.features[r].importance, b.features[r].importance
        if sa == sb:
            same = within(sa)
            why = f"'{sa}' {ia:.0f} vs {ib:.0f} (tolerance ±{tol[sa]:.0f})"
        else:
            same = within(sa) and within(sb)
            why = (
                f"'{sa}' {imp(fa, sa):.0f} vs {imp(fb, sa):.0f} (±{tol[sa]:.0f}); "
                f"'{sb}' {imp(fa, sb):.0f} vs {imp(fb, sb):.0f} (±{tol[sb]:.0f})"
            )
            why = ("swap within noise: " if same else "different stressors: ") + why
        steps.append(RankStep(r + 1, sa, round(ia, 2), sb, round(ib, 2), bool(same), why))
        if not same and first is None:
            first = r + 1
    return steps, first


def _decide(first: int | None, steps: list[RankStep], top_k: int, shift: ShiftTest | None) -> tuple[str, str]:
    """Verdict and reason from the walk and (when calibrated) the permutation test.

    Calibrated ``different`` needs the test to reject "same profile" (the change depends on the host beyond the
    runs' noise) *and* a place where the IRUPs part: the walk diverging in the top ``top_k`` ranks, or a resource
    class whose share moved beyond its null tolerance (:meth:`ShiftTest.moved_classes`). The second matters on
    fleets where one axis moves every stressor (a CPU quota): both IRUPs are then flat and no rank can diverge,
    while the class shares do move. Either condition only removes rejections of the
    test, so the false-positive rate stays at or below the test's level. ``equivalent`` needs the test not to
    reject, the top ranks to agree and the IRUP distance at or below its null median.
    """
    diverges = first is not None and first <= top_k
    walk = (f"the profiles diverge at rank {first}: {steps[first - 1].why}" if diverges and first else
            f"the top {top_k} ranks agree within tolerance" + (
                f"; first divergence at rank {first}: {steps[first - 1].why}" if first else ""))
    if shift is None:
        return ("different" if diverges else "equivalent"), walk + " (uncalibrated: seed-spread tolerance)"
    changes = list(shift.host_changes.values())
    spread = (f", the change ranges {min(changes):+.1%} … {max(changes):+.1%} over hosts" if len(changes) > 1
              else "")
    test = (f"permutation test p = {shift.p_value:.3g} (host × version interaction, B = {shift.permutations} "
            f"within-host permutations over {shift.hosts_shared} shared hosts{spread}; IRUP distance "
            f"{shift.distance:.3f}, p = {shift.distance_p:.3g}, null {1 - shift.alpha:.0%} quantile "
            f"{shift.null_quantile:.3f})")
    significant = shift.p_value < shift.alpha
    moved = shift.moved_classes()
    classes = ", ".join(f"{k} {100 * d:+.0f} pts (null ±{100 * shift.class_tolerance[k]:.0f})"
                        for k, d in moved.items())
    if significant and diverges:
        return "different", f"{walk}; {test}" + (f"; class shares moved: {classes}" if moved else "")
    if significant and moved:
        return "different", f"class shares moved beyond the noise: {classes}; {walk}; {test}"
    if not significant and not diverges:
        if shift.distance <= shift.null_median:
            return "equivalent", (f"{walk}; {test}; the IRUP distance is at or below the null median "
                                  f"{shift.null_median:.3f}")
        # Not rejecting "same profile" is not showing it: a distance above the null's median is larger than what
        # most exchanges of the runs produce.
        return "inconclusive", (f"the top ranks agree and the change does not depend on the host beyond the "
                                f"noise, but the IRUP distance is not small against it either (above the null "
                                f"median {shift.null_median:.3f}): {walk}; {test}")
    why = ("the change depends on the host beyond the noise, but neither the top ranks nor any class share moved "
           "beyond theirs: the IRUPs do not say which resource" if significant else
           "the top ranks differ but the change does not depend on the host beyond the runs' noise")
    return "inconclusive", f"{why}: {walk}; {test}"


def compare_irups(
    a: Irup, b: Irup, *, shift: ShiftTest | None = None, z: float = 3.0, min_tol: float = 5.0, top_k: int = 3,
    min_importance: float = 10.0,
) -> Comparison:
    """Compare two IRUPs.

    Parameters
    ----------
    a, b : Irup
        Profiles to compare (any formulas, but compare like with like).
    shift : ShiftTest, optional
        The permutation test of the two versions' runs (:func:`quiho.irup.shift.shift_test`): calibrates
        the tolerances and the verdict. Without it the verdict is uncalibrated (seed-spread tolerance).
    z : float, default 3.0
        Walk tolerance: multiple of the standard error of the difference of the seed means.
    min_tol : float, default 5.0
        Smallest tolerance, in points of the 0-100 scale.
    top_k : int, default 3
        A divergence at rank ≤ ``top_k`` is a shift of the top ranks.
    min_importance : float, default 10.0
        The walk covers the ranks where either profile still has a stressor at
        or above this importance (at least 1, at most 10 ranks).

    Returns
    -------
    Comparison
        ``verdict`` is ``equivalent``, ``different`` or ``inconclusive`` (the walk and the permutation
        test disagree, or an IRUP is not meaningful and the verdict would be ``equivalent`` or
        uncalibrated; a calibrated ``different`` with a not-meaningful IRUP is kept and its reason
        says *tentative*).
    """
    tol = stressor_tolerance(a, b, z=z, min_tol=min_tol)
    steps, first = _walk(a, b, tol, min_importance)
    fa, fb = a.by_stressor(), b.by_stressor()
    names = sorted(set(fa) | set(fb))
    va = np.array([fa[s].importance if s in fa else 0.0 for s in names])
    vb = np.array([fb[s].importance if s in fb else 0.0 for s in names])
    from scipy.stats import kendalltau, spearmanr

    rho, rho_p = spearmanr(va, vb)
    tau, tau_p = kendalltau(va, vb)
    ca, cb = class_shares(a), class_shares(b)
    if shift is not None and shift.class_a:
        # one estimate per claim: a calibrated comparison's table, reason and hints all cite the test's shares
        ca = {k: round(v, 4) for k, v in shift.class_a.items()}
        cb = {k: round(v, 4) for k, v in shift.class_b.items()}
    shift_ = {k: round(cb.get(k, 0.0) - ca.get(k, 0.0), 4) for k in sorted(set(ca) | set(cb))}
    raw, reason = _decide(first, steps, top_k, shift)
    bad = [f"{x.target} is {x.validity.verdict}" for x in (a, b) if x.validity.verdict == "not-meaningful"]
    if bad and raw == "different" and shift is not None:
        # The permutation test's size does not depend on how well an IRUP predicts (under "same
        # profile" the runs are exchangeable within hosts), so its rejection stands; a profile that
        # does not predict unseen hardware cannot say *which* resource moved, nor prove equivalence.
        verdict_ = raw
        reason += (f" (tentative: {'; '.join(bad)}: the dependence of the metric on the hardware changed beyond "
                   "run-to-run noise, but these ranks do not establish which resource)")
    elif bad:
        verdict_, reason = "inconclusive", f"{'; '.join(bad)}: it cannot prove a difference or an equivalence " \
                                           f"(the walk alone would say {raw}: {reason})"
    else:
        verdict_ = raw
        weak = [x.target for x in (a, b) if x.validity.verdict == "weak"]
        if weak:
            reason += f" (caution: {', '.join(weak)} only weakly valid)"
    return Comparison(
        target_a=a.target, target_b=b.target, verdict=verdict_, first_divergent_rank=first, reason=reason,
        steps=tuple(steps), spearman=float(rho), spearman_p=float(rho_p), kendall=float(tau), kendall_p=float(tau_p),
        shares_a=ca, shares_b=cb, class_shift=shift_, tolerance=tol, tolerance_z=z, validity_a=a.validity.verdict,
        validity_b=b.validity.verdict, shift=shift,
    )


def compare_runs(
    a: Irup, b: Irup, data_a: TargetData, data_b: TargetData, settings: ShiftSettings = ShiftSettings(),
    top_k: int = 3,
) -> tuple[Comparison, str | None]:
    """:func:`compare_irups` calibrated by :func:`quiho.irup.shift_test` on the rows behind ``a`` and ``b``.

    Needs only stored runs (``data_a``/``data_b`` are the IRUPs' training rows), so a profile can be
    re-judged later. The test uses ``a``'s importance formula, whatever ``settings`` say. Returns the comparison
    and, when the test could not run (no shared host, too few rows), a note saying why (the comparison is then
    the uncalibrated walk); ``settings.permutations == 0`` skips it.
    """
    shift, note = None, None
    if settings.permutations > 0:
        try:
            shift = shift_test(data_a, data_b, replace(settings, importance=a.importance))
        except NotEnoughData as exc:
            note = f"profile-shift test not run ({exc}); the IRUP verdict is the uncalibrated walk"
    return compare_irups(a, b, shift=shift, top_k=top_k), note
