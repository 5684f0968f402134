"""Compare two IRUPs: the paper's rank walk, with a tolerance from the seed spread.

The paper walks two profiles from rank 1 down and stops at the first rank
whose importance is "not the same", without saying what "the same" means.
quiho makes it a test: at rank *r* the stressors of the two profiles are the
same if they are one stressor whose importances differ by less than the
tolerance, or two stressors whose importances are each within tolerance of
their counterpart in the other profile (a swap inside the noise). The
tolerance for a stressor is ``z × sqrt(se_A² + se_B²)`` where ``se`` is the
standard error of its mean importance over seeds, floored at ``min_tol``
points on the 0-100 scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import kendalltau, spearmanr

from quiho.fingerprint.catalog import ANALYSIS_CLASSES
from quiho.irup.engine import Irup

COMPARISON_SCHEMA_VERSION = 1

__all__ = ["RankStep", "Comparison", "compare_irups", "class_shares"]


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
    """The verdict of comparing IRUP ``a`` with IRUP ``b`` and its evidence."""

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
    class_shares: dict[str, dict[str, float]]
    class_shift: dict[str, float]
    tolerance_z: float
    validity_a: str
    validity_b: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``quiho compare --json``."""
        return {
            "schema_version": COMPARISON_SCHEMA_VERSION,
            "target_a": self.target_a, "target_b": self.target_b, "verdict": self.verdict,
            "first_divergent_rank": self.first_divergent_rank, "reason": self.reason,
            "spearman": _r(self.spearman), "spearman_p": _r(self.spearman_p),
            "kendall": _r(self.kendall), "kendall_p": _r(self.kendall_p),
            "class_shares": self.class_shares, "class_shift": self.class_shift,
            "validity": {"a": self.validity_a, "b": self.validity_b}, "tolerance_z": self.tolerance_z,
            "walk": [s.__dict__ for s in self.steps],
        }


def _r(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 4)


def class_shares(irup: Irup) -> dict[str, float]:
    """Share of total importance per primary class (cpu, cpu-cache, memory, vm, os)."""
    total = sum(f.importance for f in irup.features) or 1.0
    out = {c: 0.0 for c in ANALYSIS_CLASSES}
    for f in irup.features:
        key = f.primary if f.primary in out else "other"
        out[key] = out.get(key, 0.0) + f.importance / total
    return {k: round(v, 4) for k, v in out.items()}


def compare_irups(
    a: Irup, b: Irup, *, z: float = 3.0, min_tol: float = 5.0, top_k: int = 3, min_importance: float = 10.0
) -> Comparison:
    """Compare two IRUPs.

    Parameters
    ----------
    a, b : Irup
        Profiles to compare (any formulas, but compare like with like).
    z : float, default 3.0
        Tolerance multiple of the standard error of the difference.
    min_tol : float, default 5.0
        Smallest tolerance, in points of the 0-100 scale.
    top_k : int, default 3
        A divergence at rank ≤ ``top_k`` makes the profiles ``different``.
    min_importance : float, default 10.0
        The walk covers the ranks where either profile still has a stressor at
        or above this importance (at least 1, at most 10 ranks).

    Returns
    -------
    Comparison
        ``verdict`` is ``equivalent``, ``different`` or ``inconclusive`` (when
        either IRUP is not meaningful: noise can prove neither).
    """
    fa, fb = a.by_stressor(), b.by_stressor()
    names = sorted(set(fa) | set(fb))

    def imp(f: dict, s: str) -> float:
        return f[s].importance if s in f else 0.0

    def se(irup: Irup, f: dict, s: str) -> float:
        return (f[s].std / np.sqrt(max(len(irup.per_seed), 1))) if s in f else 0.0

    def tol(s: str) -> float:
        return max(min_tol, z * float(np.hypot(se(a, fa, s), se(b, fb, s))))

    def within(s: str) -> bool:
        return abs(imp(fa, s) - imp(fb, s)) <= tol(s)

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
            why = (f"'{sa}' {ia:.0f} vs {ib:.0f} (tolerance ±{tol(sa):.0f})")
        else:
            same = within(sa) and within(sb)
            why = (
                f"'{sa}' {imp(fa, sa):.0f} vs {imp(fb, sa):.0f} (±{tol(sa):.0f}); "
                f"'{sb}' {imp(fa, sb):.0f} vs {imp(fb, sb):.0f} (±{tol(sb):.0f})"
            )
            why = ("swap within noise: " if same else "different stressors: ") + why
        steps.append(RankStep(r + 1, sa, round(ia, 2), sb, round(ib, 2), bool(same), why))
        if not same and first is None:
            first = r + 1
    va, vb = np.array([imp(fa, s) for s in names]), np.array([imp(fb, s) for s in names])
    rho, rho_p = spearmanr(va, vb)
    tau, tau_p = kendalltau(va, vb)
    ca, cb = class_shares(a), class_shares(b)
    shift = {k: round(cb.get(k, 0.0) - ca.get(k, 0.0), 4) for k in sorted(set(ca) | set(cb))}
    if first is not None and first <= top_k:
        raw, reason = "different", f"the profiles diverge at rank {first}: {steps[first - 1].why}"
    elif first is not None:
        raw = "equivalent"
        reason = f"the top {top_k} ranks agree within tolerance; first divergence at rank {first}: " \
                 f"{steps[first - 1].why}"
    else:
        raw, reason = "equivalent", f"all {len(steps)} walked ranks agree within tolerance"
    bad = [f"{x.target} is {x.validity.verdict}" for x in (a, b) if x.validity.verdict == "not-meaningful"]
    if bad:
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
        class_shares={a.target: ca, b.target: cb} if a.target != b.target else {"a": ca, "b": cb},
        class_shift=shift, tolerance_z=z, validity_a=a.validity.verdict, validity_b=b.validity.verdict,
    )
