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

from quiho.design import DesignAnalysis
from quiho.fingerprint.catalog import Catalog, load_catalog
from quiho.fleet.local.knobs import LOOK_AT
from quiho.irup.advise import Advice
from quiho.irup.compare import Comparison
from quiho.irup.engine import Irup

__all__ = ["Hint", "root_cause_hints", "design_hints", "trace_hints", "seed_class_shares", "CLASS_SHIFT_MIN",
           "TOP_STRESSORS"]

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
    "storage": "storage (synchronous writes and fsync)",
    "kernel-entry": "kernel entry (system calls)",
    "network": "the network (round trips and bytes)",
    "memory-capacity": "memory capacity (file data reread through the page cache)",
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


def seed_class_shares(irup: Irup, columns: Sequence[str] | None = None) -> dict[str, tuple[float, float]] | None:
    """Per class: mean and standard deviation over seeds of its share of the total importance.

    The column order travels with ``irup.per_seed``; ``columns`` is accepted for older callers and
    ignored. Returns None when the IRUP has no per-seed values.
    """
    del columns
    P = np.clip(irup.per_seed.matrix(), 0, None)
    if P.shape[0] == 0 or P.shape[1] == 0:
        return None
    feats = irup.by_stressor()
    prim = np.array([feats[c].primary if c in feats else "other" for c in irup.per_seed.columns])
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


def _test_text(c: Comparison) -> tuple[str, dict[str, Any]]:
    """How the comparison was calibrated, as a clause and as evidence."""
    if c.shift is None:
        return "uncalibrated: seed-spread tolerance", {"calibrated": False}
    return (f"profile-shift permutation test p = {c.shift.p_value:.3g}, B = {c.shift.permutations}",
            {"calibrated": True, "p_value": round(c.shift.p_value, 5), "permutations": c.shift.permutations})


def _validity_hints(irups: Sequence[Irup | None], advice: dict[str, Advice]) -> list[Hint]:
    hints = []
    for irup in irups:
        if irup is None or irup.validity.verdict == "meaningful":
            continue
        v = irup.validity
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
    return hints


def _class_noise(a: Irup, b: Irup, c: Comparison, cls: str, z: float) -> tuple[float, dict[str, float], str] | None:
    """Tolerance of a class-share shift.

    Calibrated: when the permutation test rejects "same profile" (the change depends on the host), the class
    share's own null ``1 - alpha`` quantile (the class moved beyond what exchanging the runs moves it; the
    ``class_shift_min`` floor still applies); infinite when it does not. Uncalibrated: ``z`` standard errors of
    the per-seed class shares.
    """
    if c.shift is not None:
        null_q = c.shift.class_tolerance.get(cls, 0.0)
        tol = null_q if c.shift.p_value < c.shift.alpha else float("inf")
        return tol, {"null_quantile": round(null_q, 4)}, ""
    noise_a, noise_b = seed_class_shares(a), seed_class_shares(b)
    if noise_a is None or noise_b is None:
        return None
    _, sda = noise_a.get(cls, (0.0, 0.0))
    _, sdb = noise_b.get(cls, (0.0, 0.0))
    se = float(np.hypot(sda / np.sqrt(max(len(a.per_seed), 1)), sdb / np.sqrt(max(len(b.per_seed), 1))))
    ev = {"seed_sd_a": round(sda, 4), "seed_sd_b": round(sdb, 4), "tolerance": round(z * se, 4)}
    return z * se, ev, f" (seed spread ±{sda:.0%} / ±{sdb:.0%})"


def _class_hints(a: Irup, b: Irup, c: Comparison, catalog: Catalog, qualifier: str, class_shift_min: float,
                 z: float) -> list[Hint]:
    hints = []
    test_txt, test_ev = _test_text(c)
    for cls, d in sorted(c.class_shift.items(), key=lambda kv: -abs(kv[1])):
        if abs(d) < class_shift_min:
            continue
        noise = _class_noise(a, b, c, cls, z)
        if noise is not None and abs(d) <= noise[0]:
            continue  # within the noise of the class shares
        sd_txt, noise_ev = (noise[2], noise[1]) if noise is not None else ("", {})
        members = [f for f in (b if d > 0 else a).features if f.primary == cls][:3]
        ev_members, parts = [], []
        for f in members:
            ra, rb = _rank(a, f.stressor), _rank(b, f.stressor)
            fa, fb = a.by_stressor().get(f.stressor), b.by_stressor().get(f.stressor)
            ia, ib = (fa.importance if fa else 0.0), (fb.importance if fb else 0.0)
            sda, sdb = (fa.std if fa else 0.0), (fb.std if fb else 0.0)
            parts.append(f"{f.stressor} rank {ra or '-'}→{rb or '-'}, {ia:.0f}±{sda:.0f}→{ib:.0f}±{sdb:.0f}")
            ev_members.append({"stressor": f.stressor, "rank_a": ra, "rank_b": rb, "importance_a": round(ia, 2),
                               "importance_b": round(ib, 2), "std_a": round(sda, 2), "std_b": round(sdb, 2)})
        look = ""
        if d > 0 and members:
            entry = catalog.get(members[0].stressor)
            look = f" Where to look: {entry.hint}." if entry else ""
        elif d < 0:
            look = " The candidate depends less on this resource than the baseline did."
        hints.append(Hint(
            "class",
            f"{qualifier}{_CLASS_WORDS.get(cls, cls)} {'rose' if d > 0 else 'fell'} from "
            f"{c.shares_a.get(cls, 0.0):.0%} to {c.shares_b.get(cls, 0.0):.0%} of the total importance{sd_txt} "
            f"({'; '.join(parts) or 'no stressor of this class in the profile'}; {test_txt}).{look}",
            direction="gained" if d > 0 else "lost", subject=cls,
            evidence={"share_a": c.shares_a.get(cls, 0.0), "share_b": c.shares_b.get(cls, 0.0), "shift": d,
                      "stressors": ev_members, **noise_ev, **test_ev},
        ))
    return hints


def _stressor_hints(a: Irup, b: Irup, c: Comparison, catalog: Catalog, qualifier: str) -> list[Hint]:
    test_txt, test_ev = _test_text(c)
    fa_all, fb_all = a.by_stressor(), b.by_stressor()
    names = {f.stressor for f in a.features[:TOP_STRESSORS]} | {f.stressor for f in b.features[:TOP_STRESSORS]}
    moved = []
    for name in names:
        fa, fb = fa_all.get(name), fb_all.get(name)
        ia, ib = (fa.importance if fa else 0.0), (fb.importance if fb else 0.0)
        tol = c.tolerance.get(name, 0.0)  # the comparison's own tolerance: computed once
        if abs(ib - ia) > tol:
            moved.append((ib - ia, name, ia, ib, tol, fa, fb))
    hints = []
    for d, name, ia, ib, tol, fa, fb in sorted(moved, key=lambda t: (-abs(t[0]), t[1])):
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
            f"(tolerance ±{tol:.0f}; {test_txt}).{hint_txt}",
            direction=direction, subject=name,
            evidence={"rank_a": ra, "rank_b": rb, "importance_a": round(ia, 2), "importance_b": round(ib, 2),
                      "std_a": round(fa.std, 2) if fa else None, "std_b": round(fb.std, 2) if fb else None,
                      "tolerance": round(tol, 2), "class": cls, **test_ev},
        ))
    return hints


def root_cause_hints(
    a: Irup | None,
    b: Irup | None,
    comparison: Comparison | None,
    *,
    catalog: Catalog | None = None,
    advice: dict[str, Advice] | None = None,
    metric_verdict: str = "",
    z: float = 3.0,
    class_shift_min: float = CLASS_SHIFT_MIN,
) -> tuple[Hint, ...]:
    """Hints from two IRUPs and their comparison.

    Parameters
    ----------
    a, b : Irup or None
        Baseline and candidate profiles (None when it could not be computed).
    comparison : Comparison or None
        :func:`quiho.irup.compare_irups` of ``a`` and ``b``; its stressor tolerances and, when
        calibrated, its permutation test (p, B, class tolerances) are what the hints use and cite.
    catalog : Catalog, optional
        Stressor catalog (default ``stressors/catalog.yaml``).
    advice : dict, optional
        Fleet-size advice per target, shown when a profile is not meaningful.
    metric_verdict : str
        The metric verdict; when the metric changed but the profile did not, the hint says so.
    z : float, default 3.0
        Uncalibrated comparisons only: a class shift must exceed ``z`` standard errors of the
        per-seed class shares.
    class_shift_min : float, default 0.10
        Smallest class-share shift reported.

    Returns
    -------
    tuple of Hint
        Validity hints first, then class shifts (largest first), then stressors, then the
        profile hint when the comparison says ``equivalent``.
    """
    catalog = catalog or load_catalog()
    hints = _validity_hints((a, b), advice or {})
    if a is None or b is None or comparison is None:
        return tuple(hints)
    if comparison.verdict == "inconclusive":
        qualifier = "(profiles not meaningful or shift not established, read as a guess) "
    elif "not-meaningful" in (a.validity.verdict, b.validity.verdict):
        # a calibrated "different" stands, but a profile that does not predict cannot name the resource
        qualifier = "(profile shift established by the permutation test, but a profile is not meaningful: which " \
                    "resource moved is a guess) "
    elif "weak" in (a.validity.verdict, b.validity.verdict):
        # seen on the local fleet: two weak IRUPs of the SAME version compared as "different"
        qualifier = "(profiles only weakly valid: tentative) "
    else:
        qualifier = ""
    hints += _class_hints(a, b, comparison, catalog, qualifier, class_shift_min, z)
    if "not-meaningful" not in (a.validity.verdict, b.validity.verdict):
        # a profile that does not predict unseen hardware says nothing about single stressors
        hints += _stressor_hints(a, b, comparison, catalog, qualifier)
    if comparison.verdict == "equivalent":
        top = ", ".join(f.stressor for f in b.top(3))
        changed = metric_verdict in ("regression", "improvement")
        msg = (f"The resource profile did not shift ({comparison.reason}). "
               + (f"The metric changed while the application leans on the same resources ({top}): look for more "
                  f"(or less) of the same work rather than a new bottleneck." if changed else
                  f"Both versions lean on the same resources ({top})."))
        hints.append(Hint("profile", msg, subject="profile",
                          evidence={"walk_verdict": comparison.verdict, **_test_text(comparison)[1]}))
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


def design_hints(design: DesignAnalysis, name_a: str, name_b: str, *, metric_verdict: str = "") -> tuple[Hint, ...]:
    """Class-level hints from a designed fleet's factor effects; each cites effects, intervals and p.

    One hint per factor whose effect changed (largest change first), naming the resource class the factor loads;
    a change that moves neither version the way the factor moves its resource (a version faster under a limit)
    names no class and says so. Otherwise one hint saying what the data show (same resources, or why nothing can
    be said).
    """
    words = {ax.factor: _CLASS_WORDS.get(ax.resource, ax.resource) for ax in design.axes}
    resource = design.axis_resource()
    ea, eb = design.a.by_factor(), design.b.by_factor()
    story = f"{name_a}: {design.story_a.text()}; {name_b}: {design.story_b.text()}"
    if design.verdict == "not-meaningful":
        return (Hint("validity", f"The fleet's factors cannot say which resource moved: {design.reason}.",
                     subject="design"),)
    out = []
    for c in sorted(design.moved, key=lambda c: -abs(c.estimate)):
        a, b = ea[c.factor], eb[c.factor]
        lab = design.label(c.factor)
        evidence = {"factor": c.factor, "effect_a": a.to_dict(), "effect_b": b.to_dict(), "change": c.to_dict()}
        word = words.get(c.factor, "an unknown class")
        if not (design.leans(a) or design.leans(b)):  # e.g. one version faster under a limit: no resource named
            out.append(Hint("class", f"The effect of {lab} changed ({c.text()}, permutation p = {c.p_value:.3g}, "
                            f"Holm {c.p_adjusted:.3g}) without moving either version the way it moves what leans "
                            f"on {word}: {name_a} {a.text()}, {name_b} {b.text()}. This change names no resource "
                            "to look at.", "", resource.get(c.factor, "none"), evidence=evidence))
            continue
        gained = design.toward(b) > design.toward(a)
        msg = (f"{name_b} {'leans more' if gained else 'leans less'} on {word}: "
               f"{lab} moves {name_a} {a.text()} and {name_b} {b.text()} (change {c.text()}, permutation "
               f"p = {c.p_value:.3g}, Holm {c.p_adjusted:.3g}). "
               + ("Look at what the new version does more of with that resource" if gained else
                  "Look at what the new version no longer does with that resource (or now does instead)")
               + (f": {LOOK_AT[resource[c.factor]]}." if resource.get(c.factor) in LOOK_AT else "."))
        out.append(Hint("class", msg, "gained" if gained else "lost", resource.get(c.factor, "none"),
                        evidence=evidence))
    if out:
        # when no change names a resource, the first line says so rather than read as a new bottleneck
        none = "; no change names a resource" if all(not h.direction for h in out) else ""
        out.insert(0, Hint("profile", f"The resource profile changed: {design.story_a.label} → "
                           f"{design.story_b.label}{none}. {story}.", subject="design",
                           evidence={"verdict": design.verdict}))
        return tuple(out)
    if design.verdict == "equivalent":
        changed = metric_verdict in ("regression", "improvement")
        msg = (f"Both versions respond to the fleet's factors alike ({story}). "
               + ("The metric changed while the application leans on the same resources: look for more (or less) "
                  "of the same work rather than a new bottleneck." if changed else ""))
        return (Hint("profile", msg.strip(), subject="design", evidence={"verdict": design.verdict}),)
    return (Hint("profile", f"No factor's effect changed beyond the noise, but the intervals are too wide to call "
                 f"the profiles the same ({story}); more rounds would narrow them.", subject="design",
                 evidence={"verdict": design.verdict}),)
