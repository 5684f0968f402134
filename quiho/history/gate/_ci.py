"""Verdicts for CI: does the newest revision regress, over every stored series at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from quiho.history._model import Detection, History
from quiho.history.detectors import detect
from quiho.history.gate._levels import DEFAULT_LOCATION, LevelComparison, compare_levels, located, variance_components
from quiho.history.sources import direction_of_unit
from quiho.store.alerts import AlertRow

__all__ = ["NewestCheck", "SeriesVerdict", "check_newest", "verdict_of", "verdict_lines", "verdict_markdown"]


@dataclass(frozen=True)
class NewestCheck:
    """The newest revision against the segment it would continue.

    ``verdict`` is ``"regression"``, ``"improvement"`` (a significant change
    in the bad / good direction of the unit), ``"no change"`` or ``"not
    meaningful"`` (``reason`` says why). ``magnitude`` is ``(newest -
    baseline) / |baseline|`` with its ``1 - alpha`` interval ``ci``, a t interval with ``df`` degrees of
    freedom (Satterthwaite's; NaN when not meaningful).
    """

    verdict: str
    revision: str
    baseline: float
    newest: float
    magnitude: float
    ci: tuple[float, float]
    p_value: float
    n_baseline: int
    reason: str = ""
    df: float = float("nan")

    @classmethod
    def not_meaningful(cls, revision: str, reason: str, n_baseline: int = 0) -> NewestCheck:
        """A check the data cannot answer: no magnitude, interval or p; ``reason`` (the whole line) says why."""
        nan = float("nan")
        return cls("not meaningful", revision, nan, nan, nan, (nan, nan), nan, n_baseline, reason)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (non-finite numbers become None)."""
        def f(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {"verdict": self.verdict, "revision": self.revision, "baseline": f(self.baseline),
                "value": f(self.newest), "magnitude": f(self.magnitude), "ci": [f(self.ci[0]), f(self.ci[1])],
                "p_value": f(self.p_value), "n_baseline": self.n_baseline, "reason": self.reason}


def check_newest(history: History, *, alpha: float = 0.01, min_size: int = 5, direction: str | None = None,
                 detection: Detection | None = None, baseline: Sequence[int] | None = None,
                 magnitude_floor: float = 0.0, test_within: str = "own",
                 extra: tuple[float, float] | None = None, location: str = "rounds") -> NewestCheck:
    """Test whether the newest revision departs from the revisions since the last change point.

    The baseline is the revisions of the newest segment (after the last change point of ``detection``, newest
    revision excluded), or the revision indices ``baseline`` when given (the last good level of an open alert,
    the level at a PR's base). The newest revision's mean is compared with the baseline's mean of revision
    means under a one-way random-effects model (:func:`~quiho.history.gate._levels.compare_levels`): the variance of
    a revision mean is the between-revision variance plus the within-revision (round) variance over the
    revision's rounds, both estimated from the baseline (the newest revision's rounds give its own
    within variance). With one value per revision this is the prediction interval ``t = (x - m) / (s sqrt(1 + 1/n))``
    with ``n - 1`` degrees of freedom. This answers the CI question (did *this* commit change things?), which a
    segmentation cannot: it needs ``min_size`` revisions after a change before it can place it.
    Many parameters because the gate and the normalised check (:mod:`quiho.history.normalise`) pass their
    settings through this one comparison.

    Parameters
    ----------
    history : History
    alpha : float, default 0.01
        Significance level; the interval is ``1 - alpha``.
    min_size : int, default 5
        Fewest baseline revisions for a meaningful answer.
    direction : {"lower", "higher"}, optional
        Which way is better; default from the unit (:func:`direction_of_unit`).
    detection : Detection, optional
        Change points of ``history`` without its newest revision is best; by
        default the given detection's last change point bounds the baseline.
    baseline : sequence of int, optional
        Indices of the baseline revisions (overrides ``detection``).
    magnitude_floor : float, default 0
        A significant change with ``|magnitude|`` below this is ``no change`` (as the detectors ignore it).
    test_within : {"own", "pooled", "larger"}, default "own"
        The newest revision's round variance (:func:`~quiho.history.gate._levels.compare_levels`).
    extra : (variance, degrees of freedom), optional
        One more variance term of the difference (:func:`~quiho.history.gate._levels.compare_levels`).
    location : str, default "rounds"
        Each revision's value (:func:`~quiho.history.gate._levels.located`): ``"rounds"`` keeps every round, as
        above; ``"min"``, ``"q25"``, ``"median"``, ``"mean"`` reduce a revision to one value first (the gate's
        default is :data:`~quiho.history.gate._levels.DEFAULT_LOCATION`; this function keeps the rounds for the
        normalised check, whose machine factors are fitted on them).

    References
    ----------
    .. [1] G. J. Hahn, W. Q. Meeker, "Statistical Intervals", Wiley 1991, ch. 4 (prediction intervals).
    .. [2] S. R. Searle, G. Casella, C. E. McCulloch, "Variance Components", Wiley 1992, ch. 3.
    """
    history = located(history, location)
    n = len(history)
    rev = history.revisions[-1] if n else ""
    if n < min_size + 1:
        return NewestCheck.not_meaningful(rev, f"not meaningful: {n} revisions; the newest needs {min_size} before "
                                               "it to compare with", max(n - 1, 0))
    if baseline is None:
        start = max((c.index for c in (detection.change_points if detection else ()) if c.index < n - 1), default=0)
        baseline = range(start, n - 1)
    base = [history.samples[i] for i in baseline if i < n - 1]
    if len(base) < min_size:
        return NewestCheck.not_meaningful(rev, f"not meaningful: only {len(base)} baseline revisions "
                                               f"(min_size={min_size})", len(base))
    newest = history.samples[-1]
    cmp = compare_levels(variance_components(base), base, [newest], alpha, test_within=test_within, extra=extra)
    better = direction or direction_of_unit(history.unit)
    verdict = level_verdict(cmp, alpha, better) if not abs(cmp.magnitude) < magnitude_floor else "no change"
    return NewestCheck(verdict, rev, cmp.reference, cmp.test, cmp.magnitude, cmp.ci,
                       cmp.p_value, len(base), df=cmp.df)


def level_verdict(cmp: LevelComparison, alpha: float, better: str) -> str:
    """``regression``/``improvement`` when ``p <= alpha`` (by the direction that is ``better``), else ``no change``."""
    if not cmp.p_value <= alpha:
        return "no change"
    worse = cmp.test > cmp.reference if better == "lower" else cmp.test < cmp.reference
    return "regression" if worse else "improvement"


@dataclass(frozen=True)
class SeriesVerdict:
    """One row of ``history detect --all``: the change points of a series and the newest-revision check.

    ``alert`` is the series' open alert (or the one this check raised or closed), ``event`` what this check did
    to it: ``raised``, ``fixed`` or ``""``; ``note`` what the gate read when not the stored values as they are
    (:class:`~quiho.history.gate.SeriesView`).
    """

    series: str
    unit: str
    detection: Detection
    newest: NewestCheck
    missing: int = 0
    alert: AlertRow | None = None
    event: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (non-finite numbers become None)."""
        return {"series": self.series, "unit": self.unit, "detection": self.detection.to_dict(),
                "newest": self.newest.to_dict(),
                "alert": None if self.alert is None else {"id": self.alert.id, "state": self.alert.state,
                                                          "first_bad": self.alert.first_bad, "event": self.event},
                "skipped": {"missing": self.missing}, **({"note": self.note} if self.note else {})}


def verdict_of(history: History, method: str = "auto", *, alpha: float = 0.01, min_size: int = 5,
               magnitude_floor: float = 0.0, location: str = DEFAULT_LOCATION) -> SeriesVerdict:
    """Change points of ``history`` and the check of its newest revision against the last segment.

    Both read each revision by ``location`` (:func:`~quiho.history.gate._levels.located`), the gate's default.
    """
    h = located(history, location)
    d = detect(h, method, min_size=min_size, alpha=alpha, magnitude_floor=magnitude_floor)
    return SeriesVerdict(h.name, h.unit, d,
                         check_newest(h, alpha=alpha, min_size=min_size, detection=d,
                                      magnitude_floor=magnitude_floor), h.missing)


def _pct(x: float) -> str:
    return f"{x:+.1%}" if np.isfinite(x) else "n/a"


def _p(x: float) -> str:
    return f"{x:.2g}" if np.isfinite(x) else "n/a"


def _cells(v: SeriesVerdict) -> list[str]:
    nw, d = v.newest, v.detection
    newest = nw.reason or f"{_pct(nw.magnitude)} [{_pct(nw.ci[0])}, {_pct(nw.ci[1])}], p = {_p(nw.p_value)}"
    if not d.meaningful:
        cps = d.reason
    elif not d.change_points:
        cps = "none"
    else:
        cps = "; ".join(f"{c.revision[:12]} {_pct(c.magnitude)} (p = {_p(c.p_value)}{c.location_text(12)})"
                        for c in d.change_points[-3:])
        if len(d.change_points) > 3:
            cps = f"{len(d.change_points) - 3} earlier; " + cps
    a = v.alert
    alert = "" if a is None else f"#{a.id} {v.event or a.state} (since {a.first_bad[:12]})"
    return [v.series, str(d.n), nw.verdict, newest, alert, cps]


_HEADER = ["series", "revisions", "newest revision", "newest vs. baseline (CI, p)", "alert",
           "change points (last 3)"]


def verdict_lines(verdicts: Sequence[SeriesVerdict]) -> list[str]:
    """Plain-text verdict table, one line per series (names escaped for a terminal)."""
    from quiho._text import printable

    rows = [[printable(c) for c in _cells(v)] for v in verdicts]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(_HEADER)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    notes = [printable(f"{v.series}: {v.note}") for v in verdicts if v.note]
    return [fmt.format(*_HEADER).rstrip()] + [fmt.format(*r).rstrip() for r in rows] + ([""] + notes if notes else [])


def verdict_markdown(verdicts: Sequence[SeriesVerdict], *, title: str = "quiho history") -> str:
    """A Markdown job summary / PR comment: a headline and one escaped table row per series."""
    from quiho._markdown import md_escape, md_table

    reg = [v for v in verdicts if v.newest.verdict == "regression"]
    head = (f"**{len(reg)} of {len(verdicts)} series regress at the newest revision**" if reg
            else f"No regression at the newest revision ({len(verdicts)} series)")
    missing = sum(v.missing for v in verdicts)
    note = f"\n\n{missing} missing values were skipped." if missing else ""
    notes = "".join(f"- {md_escape(v.series)}: {md_escape(v.note)}\n" for v in verdicts if v.note)
    return (f"### {md_escape(title)}\n\n{head}{note}\n\n"
            + md_table(_HEADER, [_cells(v) for v in verdicts], align="lrllll") + (f"\n{notes}" if notes else ""))
