"""Root-cause hints: where an analyst should look first, with the evidence.

From two IRUPs of the same application (baseline ``a``, candidate ``b``) and the
stressor catalog: which analysis classes (cpu, cpu-cache, memory, vm, os) gained or
lost share of the total importance, which stressors moved beyond their seed noise
(rank, importance ± spread, what the stressor stresses and the catalog's hint), and,
when a profile is not meaningful, that no resource claim can be made and what fleet
would be needed. Per-function trace verdicts (``quiho.detect.Change``), when given,
are joined in as the most direct evidence of *where in the code*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quiho.fingerprint.catalog import Catalog, load_catalog
from quiho.irup.advise import Advice
from quiho.irup.compare import Comparison
from quiho.irup.engine import Irup

__all__ = ["Hint", "root_cause_hints", "trace_hints", "seed_class_shares", "CLASS_SHIFT_MIN", "TOP_STRESSORS"]

#: A class whose share of the total importance moves by at least this much is reported.
CLASS_SHIFT_MIN = 0.10
#: Stressors considered for stressor-level hints: in the top N of either profile.
TOP_STRESSORS = 5

_CLASS_WORDS = {
    "cpu": "computation (cpu)",
    "cpu-cache": "CPU caches (cpu-cache)",
    "memory": "memory bandwidth and latency (memory)",
    "vm": "virtual memory and page faults (vm)",
    "os": "system calls and the kernel (os)",
    "other": "uncatalogued stressors",
}


@dataclass(frozen=True)
class Hint:
    """One sentence for an analyst and the numbers behind it.

    ``kind`` is ``validity``, ``class``, ``stressor``, ``profile`` or ``trace``;
    ``direction`` is ``gained``, ``lost`` or ``""``.
    """

    kind: str
    message: str
    direction: str = ""
    subject: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"kind": self.kind, "subject": self.subject, "direction": self.direction, "message": self.message,
                "evidence": self.evidence}


def seed_class_shares(irup: Irup, columns: Sequence[str]) -> dict[str, tuple[float, float]] | None:
    """Per class: mean and standard deviation over seeds of its share of the total importance.

    ``columns`` is the column order of ``irup.per_seed`` (the training columns minus the dropped
    stressors). Returns None when the order does not reproduce the IRUP's means (then no noise
    estimate is available).
    """
    cols = [c for c in columns if c not in {d.stressor for d in irup.dropped}]
    P = np.clip(np.asarray(irup.per_seed, dtype=float), 0, None)
    if P.ndim != 2 or P.shape[1] != len(cols) or P.shape[0] == 0:
        return None
    feats = irup.by_stressor()
    means = np.clip(np.asarray(irup.per_seed, dtype=float).mean(axis=0), 0, None)
    if not np.allclose([feats[c].importance for c in cols if c in feats], means[[i for i, c in enumerate(cols)
                                                                               if c in feats]], atol=1e-6):
        return None
    prim = np.array([feats[c].primary if c in feats else "other" for c in cols])
    tot = P.sum(axis=1, keepdims=True)
    tot[tot == 0] = 1.0
    S = P / tot
    out = {}
    for cls in sorted(set(prim.tolist())):
        sh = S[:, prim == cls].sum(axis=1)
        out[str(cls)] = (float(sh.mean()), float(sh.std()))
    return out


def _rank(irup: Irup, name: str) -> int | None:
    for i, f in enumerate(irup.features, 1):
        if f.stressor == name:
            return i
    return None


def _tol(a: Irup, b: Irup, name: str, z: float, min_tol: float) -> float:
    def se(irup: Irup) -> float:
        f = irup.by_stressor().get(name)
        return f.std / np.sqrt(max(len(irup.per_seed), 1)) if f else 0.0

    return max(min_tol, z * float(np.hypot(se(a), se(b))))


def root_cause_hints(
    a: Irup | None,
    b: Irup | None,
    comparison: Comparison | None,
    *,
    catalog: Catalog | None = None,
    advice: dict[str, Advice] | None = None,
    metric_verdict: str = "",
    z: float = 3.0,
    min_tol: float = 5.0,
    class_shift_min: float = CLASS_SHIFT_MIN,
    columns: dict[str, Sequence[str]] | None = None,
) -> tuple[Hint, ...]:
    """Hints from two IRUPs and their comparison.

    Parameters
    ----------
    a, b : Irup or None
        Baseline and candidate profiles (None when it could not be computed).
    comparison : Comparison or None
        :func:`quiho.irup.compare_irups` of ``a`` and ``b``.
    catalog : Catalog, optional
        Stressor catalog (default ``stressors/catalog.yaml``).
    advice : dict, optional
        Fleet-size advice per target, shown when a profile is not meaningful.
    metric_verdict : str
        The metric verdict; when the metric changed but the profile did not, the hint says so.
    z, min_tol : float
        Stressor-level tolerance, as in :func:`quiho.irup.compare_irups`.
    class_shift_min : float, default 0.10
        Smallest class-share shift reported.
    columns : dict, optional
        Training column order per target (``"a"``/``"b"`` keys): enables the seed-noise test of class
        shifts (a shift must also exceed ``z`` standard errors of the per-seed class shares).

    Returns
    -------
    tuple of Hint
        Validity hints first, then class shifts (largest first), then stressors.
    """
    catalog = catalog or load_catalog()
    hints: list[Hint] = []
    advice = advice or {}
    for irup in (a, b):
        if irup is None:
            continue
        v = irup.validity
        if v.verdict != "meaningful":
            adv = advice.get(irup.target)
            need = ""
            if adv is not None and adv.recommended_groups is None and v.verdict == "not-meaningful":
                need = (f" Fleet-size advice: no subset of these {adv.full_groups} hardware groups does better; add "
                        f"hosts that differ in the resources the application might use.")
            elif adv is not None:
                need = f" Fleet-size advice: {adv.reason}."
            elif v.verdict == "not-meaningful":
                need = " Add hosts that differ in the resources the application might use."
            strength = "is NOT meaningful" if v.verdict == "not-meaningful" else "is only weakly valid"
            hints.append(Hint(
                "validity",
                f"The IRUP of {irup.target} {strength}: {v.reason}. Treat resource claims about it as "
                f"{'unsupported' if v.verdict == 'not-meaningful' else 'tentative'}.{need}",
                subject=irup.target,
                evidence={"validity": v.to_dict(), "advice": adv.to_dict() if adv else None},
            ))
    if a is None or b is None or comparison is None:
        return tuple(hints)
    shares = list(comparison.class_shares.values())
    sa, sb = shares[0], shares[-1]
    shifts = sorted(comparison.class_shift.items(), key=lambda kv: -abs(kv[1]))
    if comparison.verdict == "inconclusive":
        qualifier = "(profiles not meaningful, read as a guess) "
    elif "weak" in (a.validity.verdict, b.validity.verdict):
        # seen on the local fleet: two weak IRUPs of the SAME version compared as "different"
        qualifier = "(profiles only weakly valid: tentative) "
    else:
        qualifier = ""
    noise_a = seed_class_shares(a, columns["a"]) if columns and "a" in columns else None
    noise_b = seed_class_shares(b, columns["b"]) if columns and "b" in columns else None
    for cls, d in shifts:
        if abs(d) < class_shift_min:
            continue
        sd_txt = ""
        noise: dict[str, float] = {}
        if noise_a is not None and noise_b is not None:
            ma, sda = noise_a.get(cls, (0.0, 0.0))
            mb, sdb = noise_b.get(cls, (0.0, 0.0))
            se = float(np.hypot(sda / np.sqrt(max(len(a.per_seed), 1)), sdb / np.sqrt(max(len(b.per_seed), 1))))
            noise = {"seed_sd_a": round(sda, 4), "seed_sd_b": round(sdb, 4), "tolerance": round(z * se, 4)}
            if abs(d) <= z * se:
                continue  # within the seed noise of the class shares
            sd_txt = f" (seed spread ±{sda:.0%} / ±{sdb:.0%})"
        direction = "gained" if d > 0 else "lost"
        members = [f for f in (b if d > 0 else a).features if f.primary == cls][:3]
        ev_members = []
        parts = []
        for f in members:
            ra, rb = _rank(a, f.stressor), _rank(b, f.stressor)
            fa, fb = a.by_stressor().get(f.stressor), b.by_stressor().get(f.stressor)
            ia = fa.importance if fa else 0.0
            ib = fb.importance if fb else 0.0
            sda = fa.std if fa else 0.0
            sdb = fb.std if fb else 0.0
            parts.append(f"{f.stressor} rank {ra or '-'}→{rb or '-'}, {ia:.0f}±{sda:.0f}→{ib:.0f}±{sdb:.0f}")
            ev_members.append({"stressor": f.stressor, "rank_a": ra, "rank_b": rb, "importance_a": round(ia, 2),
                               "importance_b": round(ib, 2), "std_a": round(sda, 2), "std_b": round(sdb, 2)})
        verb = "rose" if d > 0 else "fell"
        look = ""
        if d > 0 and members:
            entry = catalog.get(members[0].stressor)
            look = f" Where to look: {entry.hint}." if entry else ""
        elif d < 0:
            look = " The candidate depends less on this resource than the baseline did."
        hints.append(Hint(
            "class",
            f"{qualifier}{_CLASS_WORDS.get(cls, cls)} {verb} from {sa.get(cls, 0.0):.0%} to {sb.get(cls, 0.0):.0%} "
            f"of the total importance{sd_txt} "
            f"({'; '.join(parts) or 'no stressor of this class in the profile'}).{look}",
            direction=direction, subject=cls,
            evidence={"share_a": sa.get(cls, 0.0), "share_b": sb.get(cls, 0.0), "shift": d, "stressors": ev_members,
                      **noise},
        ))
    names = {f.stressor for f in a.features[:TOP_STRESSORS]} | {f.stressor for f in b.features[:TOP_STRESSORS]}
    moved = []
    for name in names:
        fa, fb = a.by_stressor().get(name), b.by_stressor().get(name)
        ia = fa.importance if fa else 0.0
        ib = fb.importance if fb else 0.0
        tol = _tol(a, b, name, z, min_tol)
        if abs(ib - ia) > tol:
            moved.append((ib - ia, name, ia, ib, tol, fa, fb))
    for d, name, ia, ib, tol, fa, fb in sorted(moved, key=lambda t: -abs(t[0])):
        entry = catalog.get(name)
        what = entry.subsystem if entry else "not in the stressor catalog"
        cls = entry.primary if entry else "unknown"
        ra, rb = _rank(a, name), _rank(b, name)
        direction = "gained" if d > 0 else "lost"
        hint_txt = f" {entry.hint}." if (entry and d > 0) else ""
        hints.append(Hint(
            "stressor",
            f"{qualifier}{name} ({cls}: {what}) {direction} importance: rank {ra or '-'}→{rb or '-'}, "
            f"{ia:.0f}±{fa.std if fa else 0:.0f} → {ib:.0f}±{fb.std if fb else 0:.0f} "
            f"(tolerance ±{tol:.0f}).{hint_txt}",
            direction=direction, subject=name,
            evidence={"rank_a": ra, "rank_b": rb, "importance_a": round(ia, 2), "importance_b": round(ib, 2),
                      "std_a": round(fa.std, 2) if fa else None, "std_b": round(fb.std, 2) if fb else None,
                      "tolerance": round(tol, 2), "class": cls},
        ))
    if comparison.verdict == "equivalent":
        top = ", ".join(f.stressor for f in b.top(3))
        changed = metric_verdict in ("regression", "improvement")
        msg = (f"The resource profile did not shift ({comparison.reason}). "
               + (f"The metric changed while the application leans on the same resources ({top}): look for more "
                  f"(or less) of the same work rather than a new bottleneck." if changed else
                  f"Both versions lean on the same resources ({top})."))
        hints.append(Hint("profile", msg, subject="profile", evidence={"walk_verdict": comparison.verdict}))
    return tuple(hints)


def trace_hints(changes: Sequence[Any], *, limit: int = 5) -> tuple[Hint, ...]:
    """Join per-function trace verdicts (``quiho.detect.Change``) into hints, largest flagged change first."""
    flagged = [c for c in changes if getattr(c, "flagged", False)]
    flagged.sort(key=lambda c: -abs(float(c.magnitude)) if np.isfinite(c.magnitude) else 0.0)
    out = []
    for c in flagged[:limit]:
        p = f", p = {c.p_value:.3g}" if c.p_value is not None else ""
        out.append(Hint(
            "trace",
            f"function {c.function}: {c.state} of {c.magnitude:+.1%} ({c.kind}; {c.method}{p}).",
            direction="gained" if str(c.state) == "degradation" else "lost", subject=c.function,
            evidence={"method": c.method, "state": str(c.state), "kind": c.kind, "magnitude": c.magnitude,
                      "p_value": c.p_value, "confidence": c.confidence},
        ))
    return tuple(out)
