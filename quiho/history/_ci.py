"""Verdicts for CI: does the newest revision regress, over every stored series at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from quiho.history._base import detect
from quiho.history._formats import direction_of_unit
from quiho.history._model import Detection, History

__all__ = ["NewestCheck", "SeriesVerdict", "check_newest", "verdict_of", "verdict_lines", "verdict_markdown"]


@dataclass(frozen=True)
class NewestCheck:
    """The newest revision against the segment it would continue.

    ``verdict`` is ``"regression"``, ``"improvement"`` (a significant change
    in the bad / good direction of the unit), ``"no change"`` or ``"not
    meaningful"`` (``reason`` says why). ``magnitude`` is ``(newest -
    baseline) / |baseline|`` with its ``1 - alpha`` interval ``ci``.
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


def check_newest(history: History, *, alpha: float = 0.01, min_size: int = 5, direction: str | None = None,
                 detection: Detection | None = None) -> NewestCheck:
    """Test whether the newest revision departs from the revisions since the last change point.

    The baseline is the per-revision means of the newest segment (after the
    last change point of ``detection``, newest revision excluded). The newest
    revision's mean is compared with a prediction interval: ``t = (x - m) /
    (s sqrt(1 + 1/n))`` with ``n - 1`` degrees of freedom, ``m``, ``s`` the
    baseline's mean and standard deviation. This answers the CI question
    (did *this* commit change things?), which a segmentation cannot: it needs
    ``min_size`` revisions after a change before it can place it.

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

    References
    ----------
    .. [1] G. J. Hahn, W. Q. Meeker, "Statistical Intervals", Wiley 1991, ch. 4 (prediction intervals).
    """
    n = len(history)
    rev = history.revisions[-1] if n else ""
    nan = float("nan")
    if n < min_size + 1:
        return NewestCheck("not meaningful", rev, nan, nan, nan, (nan, nan), nan, max(n - 1, 0),
                           f"not meaningful: {n} revisions; the newest needs {min_size} before it to compare with")
    start = max((c.index for c in (detection.change_points if detection else ()) if c.index < n - 1), default=0)
    base = history.values[start:n - 1]
    if base.size < min_size:
        return NewestCheck("not meaningful", rev, nan, nan, nan, (nan, nan), nan, int(base.size),
                           f"not meaningful: only {base.size} revisions since the last change point "
                           f"(min_size={min_size})")
    x = float(history.values[-1])
    m, s = float(base.mean()), float(base.std(ddof=1))
    half = s * np.sqrt(1 + 1 / base.size)
    tq = float(stats.t.ppf(1 - alpha / 2, base.size - 1))
    scale = max(abs(m), abs(x), 1e-300)
    if half <= 1e-12 * scale:
        p = 0.0 if abs(x - m) > 1e-9 * scale else 1.0
    else:
        p = float(2 * stats.t.sf(abs(x - m) / half, base.size - 1))
    mag = (x - m) / abs(m) if m != 0 else nan
    ci = ((x - m - tq * half) / abs(m), (x - m + tq * half) / abs(m)) if m != 0 else (nan, nan)
    better = direction or direction_of_unit(history.unit)
    if p > alpha:
        verdict = "no change"
    else:
        worse = x > m if better == "lower" else x < m
        verdict = "regression" if worse else "improvement"
    return NewestCheck(verdict, rev, m, x, mag, ci, p, int(base.size))


@dataclass(frozen=True)
class SeriesVerdict:
    """One row of ``history detect --all``: the change points of a series and the newest-revision check."""

    series: str
    unit: str
    detection: Detection
    newest: NewestCheck
    missing: int = 0

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (non-finite numbers become None)."""
        def f(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        nw = self.newest
        return {"series": self.series, "unit": self.unit, "detection": self.detection.to_dict(),
                "newest": {"verdict": nw.verdict, "revision": nw.revision, "baseline": f(nw.baseline),
                           "value": f(nw.newest), "magnitude": f(nw.magnitude),
                           "ci": [f(nw.ci[0]), f(nw.ci[1])], "p_value": f(nw.p_value),
                           "n_baseline": nw.n_baseline, "reason": nw.reason},
                "skipped": {"missing": self.missing}}


def verdict_of(history: History, method: str = "auto", *, alpha: float = 0.01, min_size: int = 5,
               magnitude_floor: float = 0.0) -> SeriesVerdict:
    """Change points of ``history`` and the check of its newest revision against the last segment."""
    d = detect(history, method, min_size=min_size, alpha=alpha, magnitude_floor=magnitude_floor)
    return SeriesVerdict(history.name, history.unit, d,
                         check_newest(history, alpha=alpha, min_size=min_size, detection=d), history.missing)


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
        cps = "; ".join(f"{c.revision[:12]} {_pct(c.magnitude)} (p = {_p(c.p_value)})" for c in d.change_points[-3:])
        if len(d.change_points) > 3:
            cps = f"{len(d.change_points) - 3} earlier; " + cps
    return [v.series, str(d.n), nw.verdict, newest, cps]


_HEADER = ["series", "revisions", "newest revision", "newest vs. its segment (CI, p)", "change points (last 3)"]


def verdict_lines(verdicts: Sequence[SeriesVerdict]) -> list[str]:
    """Plain-text verdict table, one line per series (names escaped for a terminal)."""
    from quiho._text import printable

    rows = [[printable(c) for c in _cells(v)] for v in verdicts]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(_HEADER)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*_HEADER).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def verdict_markdown(verdicts: Sequence[SeriesVerdict], *, title: str = "quiho history") -> str:
    """A Markdown job summary / PR comment: a headline and one escaped table row per series."""
    from quiho._markdown import md_escape, md_table

    reg = [v for v in verdicts if v.newest.verdict == "regression"]
    head = (f"**{len(reg)} of {len(verdicts)} series regress at the newest revision**" if reg
            else f"No regression at the newest revision ({len(verdicts)} series)")
    missing = sum(v.missing for v in verdicts)
    note = f"\n\n{missing} missing values were skipped." if missing else ""
    return (f"### {md_escape(title)}\n\n{head}{note}\n\n"
            + md_table(_HEADER, [_cells(v) for v in verdicts], align="lrlll"))
