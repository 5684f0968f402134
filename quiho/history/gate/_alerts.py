"""Alerts: a regression of a stored series stays an alert, with a state, until the data or a person closes it.

:func:`run_gate` is ``quiho history detect --all``: per series it finds change points and checks the newest
revision, raises an alert for a regression (the newest revision against its segment, or a last change point
that went the bad way), compares the revisions after an open alert's first bad revision with the *last good
level* before it (never with a segment that already holds the regression), and closes the alert as ``fixed``
when the newest revision is back (not worse than the good level and better than the regressed one).
``new`` alerts fail the gate; ``acknowledged`` ones are still followed but no longer fail it; ``invalid`` ones
were judged wrong by a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from quiho.errors import UnknownTargetError, UsageError
from quiho.history._model import ChangePoint, Detection, History
from quiho.history.detectors import detect
from quiho.history.gate._ci import NewestCheck, SeriesVerdict, check_newest, level_verdict
from quiho.history.gate._confirm import Confirmation, change_text, latest_confirmations
from quiho.history.gate._levels import (
    DEFAULT_LOCATION,
    LOCATIONS,
    WITHIN_RULES,
    LevelComparison,
    VarianceComponents,
    compare_levels,
    located,
    variance_components,
)
from quiho.history.sources import direction_of_unit, list_series, load_history
from quiho.store import Store
from quiho.store import alerts as sa
from quiho.store.alerts import ALERT_STATES, AlertRow

__all__ = ["ALERT_STATES", "OPEN_STATES", "SPIKE_FILTERS", "STACK_RULES", "STACK_VARIANCES", "GateOptions",
           "GateResult", "SeriesView", "run_gate", "list_alerts", "set_alert_state", "alert_to_dict", "alert_lines",
           "alert_markdown"]

OPEN_STATES = ("new", "acknowledged")
#: values of :attr:`GateOptions.stack_on_new`
STACK_RULES = ("no", "newest", "confirmed")
#: values of :attr:`GateOptions.spike_filter`
SPIKE_FILTERS = ("drop", "recurring")
#: values of :attr:`GateOptions.stack_variance`
STACK_VARIANCES = ("good", "regressed")
#: change points this close (in revisions) to a fixed alert's first bad or fix revision are that alert's own
_NEAR = 2


@dataclass(frozen=True)
class GateOptions:
    """Settings of :func:`run_gate`: the detector and its limits, and the PR base revision.

    How each default was chosen, by a protocol fixed before its results (rounds 1-7), is told in
    docs/statistics.md, "History change points".

    Parameters
    ----------
    method, alpha, min_size, magnitude_floor
        The change-point detector and its limits; ``alpha`` is also the level of a change point's confirmation and
        of a fix's evidence.
    base : str or None, default None
        With a base revision the newest revision of every series is compared with the level at ``base`` (the
        segment that holds it, up to it) and no alert is raised, followed or closed: a PR's check never writes
        main's alerts.
    newest_alpha : float, default 0.001
        The level of every check of the newest revision against a baseline (its segment, an alert's good level,
        the PR base, the regressed level of an alert it would stack on). Stricter than ``alpha`` because it is
        tested at every build (at 0.01 the gate raised more false alerts than the check it replaced), while a
        change point needs 0.01 to be placed in a short history at all.
    stack_on_new : {"confirmed", "no", "newest"}, default "confirmed"
        How a further regression on top of a ``new`` alert is raised: when the next revision confirms it
        (:func:`_stack`), so a second step is named by its own alert; ``"no"``: never (it caught fewer regressions
        than the check it replaced); ``"newest"``: on the newest revision alone (one slow build on an open alert
        then alerts falsely). On an acknowledged alert the newest revision alone always stacks, because the gate is
        green there and waiting would let a slower build pass.
    test_within : {"pooled", "own", "larger"}, default "pooled"
        The round variance of the tested revisions in every comparison of the gate
        (:func:`~quiho.history.gate._levels.compare_levels`); one rule for all, because a tested revision's few
        rounds estimate its variance as poorly whichever question is asked. ``"pooled"`` (the model's common
        round variance), because 3 rounds estimate a revision's own with 2 degrees of freedom (by chance near 0, or
        a t quantile near 10 at 99 %); its cost: a change
        that only makes a benchmark noisier no longer widens the interval by itself (``"own"``, ``"larger"`` do).
    spike_filter : {"drop", "recurring"}, default "drop"
        How odd builds leave a baseline the newest revision is checked against (:func:`_without_spikes`):
        ``"drop"``: they go; ``"recurring"``: they stay when the newest revision is odd on their side by the same
        rule (a bimodal benchmark's rare band recurs), which caught fewer regressions where builds spike.
    stack_variance : {"good", "regressed"}, default "good"
        The level and variance a further regression on an open alert is tested against (:func:`_stack`): the
        regressed level with the good level's variance components; ``"regressed"``: the regressed level without
        odd builds and with its own components, so the tests that raise and close a stacked alert agree, which
        caught fewer further steps.
    location : {"rounds", "min", "q25", "median", "mean"}, default :data:`~quiho.history.gate._levels.DEFAULT_LOCATION`
        Each revision's value in the change points and every comparison (:func:`~quiho.history.gate._levels.located`):
        a low order statistic of its rounds survives the interference of a busy shared runner, which only adds
        time; ``"rounds"`` keeps every round under the random-effects model. Chosen by the protocol in
        docs/history-gate.md.
    """

    method: str = "auto"
    alpha: float = 0.01
    min_size: int = 5
    magnitude_floor: float = 0.0
    base: str | None = None
    newest_alpha: float = 0.001
    stack_on_new: str = "confirmed"
    test_within: str = "pooled"
    spike_filter: str = "drop"
    stack_variance: str = "good"
    location: str = DEFAULT_LOCATION

    def __post_init__(self) -> None:
        for name, allowed in (("spike_filter", SPIKE_FILTERS), ("test_within", WITHIN_RULES),
                              ("location", tuple(LOCATIONS)),
                              ("stack_on_new", STACK_RULES), ("stack_variance", STACK_VARIANCES)):
            if (value := getattr(self, name)) not in allowed:
                raise UsageError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


@dataclass(frozen=True)
class GateResult:
    """Verdicts of every series, the open alerts among them after the check, and each one's newest confirmation.

    ``confirmations`` maps an open alert's id to its newest stored rerun (``quiho history confirm``); they are
    shown, and decide the gate only through :func:`~quiho.history.gate.confirm_gate` (``detect --all --rerun``).
    """

    verdicts: tuple[SeriesVerdict, ...]
    open_alerts: tuple[AlertRow, ...]
    base: str | None = None
    confirmations: Mapping[int, Confirmation] = field(default_factory=dict)

    @property
    def failing(self) -> bool:
        """Any ``new`` alert of the checked series; with ``base``, any regression of the newest revision."""
        if self.base is not None:
            return any(v.newest.verdict == "regression" for v in self.verdicts)
        return any(a.state == "new" for a in self.open_alerts)

    def to_dict(self, now: datetime | None = None) -> dict[str, object]:
        """The JSON document of ``quiho history detect --all --json``."""
        return {"base": self.base, "failing": self.failing, "series": [v.to_dict() for v in self.verdicts],
                "alerts": [alert_to_dict(a, now, self.confirmations.get(a.id)) for a in self.open_alerts]}


@dataclass(frozen=True)
class SeriesView:
    """What the gate reads of one series instead of its stored values (``run_gate(..., view=...)``).

    ``history`` is reviewed as stored values are: change points, the newest revision, alerts raised, followed,
    closed. ``note`` says what was read (e.g. why the raw series was used), and ``tag`` is appended to the
    ``found_by`` of an alert raised on it, so the alert says which values its evidence is in. With ``unjudged``
    (a "not meaningful" check of the newest revision) no alert is raised, followed or closed: the newest revision
    cannot be read on the view's scale, and an alert decided on another scale would mix the two.
    """

    history: History
    note: str = ""
    tag: str = ""
    unjudged: NewestCheck | None = None


def run_gate(store: Store, options: GateOptions = GateOptions(), *,
             view: Callable[[Store, History], SeriesView] | None = None) -> GateResult:
    """Check every stored series and keep its alerts (see the module docstring).

    ``view`` maps each stored series (read by ``options.location``) to what the gate reviews instead, e.g. its
    values with the machines' effect removed (:func:`quiho.history.normalise.normalised_view`).

    Raises
    ------
    UsageError
        ``options.base`` is no revision (or unique prefix) of any stored series; nothing is written.
    """
    hs = [located(load_history(store, str(r["name"])), options.location) for r in list_series(store)]
    base = _resolve_base(hs, options.base) if options.base is not None else None
    opts = replace(options, base=base)
    verdicts = tuple(_review_view(store, view(store, h) if view is not None else SeriesView(h), opts) for h in hs)
    names = {h.name for h in hs}
    open_ = tuple(a for a in sa.alerts_of(store, states=OPEN_STATES) if a.series in names)
    return GateResult(verdicts, open_, base, latest_confirmations(store, [a.id for a in open_]))


def _review_view(store: Store, v: SeriesView, opts: GateOptions) -> SeriesVerdict:
    """:func:`_review` of ``v.history``, its note kept and a raised alert tagged; an unjudged view changes nothing."""
    h = v.history
    if v.unjudged is not None:
        d = detect(h, opts.method, min_size=opts.min_size, alpha=opts.alpha, magnitude_floor=opts.magnitude_floor)
        open_ = [a for a in sa.alerts_of(store, h.name) if a.state in OPEN_STATES]
        return replace(_verdict(h, d, v.unjudged, open_[-1] if open_ else None), note=v.note)
    out = replace(_review(store, h, opts), note=v.note)
    if out.event == "raised" and out.alert is not None and v.tag:
        sa.update_alert(store, out.alert.id, found_by=f"{out.alert.found_by} ({v.tag})")
        out = replace(out, alert=sa.get_alert(store, out.alert.id))
    return out


def _resolve_base(hs: Sequence[History], base: str) -> str:
    """The full revision ``base`` names (itself or a unique prefix of at least 4 characters) in some series."""
    revs = {r for h in hs for r in h.revisions}
    if base in revs:
        return base
    hits = sorted(r for r in revs if len(base) >= 4 and r.startswith(base))
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise UsageError(f"--base {base!r} names {len(hits)} revisions ({', '.join(h[:12] for h in hits[:3])}...)"
                         "; give more characters")
    raise UsageError(f"--base {base!r} is not a revision of any stored series (import main's results for it first, "
                     "or give the merge base: git merge-base origin/main HEAD)")


def _review(store: Store, h: History, opts: GateOptions) -> SeriesVerdict:
    """One series: its verdict, and its alerts raised, followed or closed."""
    d = detect(h, opts.method, min_size=opts.min_size, alpha=opts.alpha, magnitude_floor=opts.magnitude_floor)
    alerts = sa.alerts_of(store, h.name)
    idx = {r: i for i, r in enumerate(h.revisions)}
    spans = _confirmed_spans(h, alerts, idx, opts.alpha, opts.test_within)
    open_ = [a for a in alerts if a.state in OPEN_STATES]
    if opts.base is not None:
        return _verdict(h, d, _base_check(h, d, opts, spans, [idx[a.first_bad] for a in open_ if a.first_bad in idx]),
                        open_[-1] if open_ else None)
    if open_:
        return _follow(store, h, d, open_[-1], spans, opts)
    seg = _segment(d, len(h) - 1, spans)
    chk = check_newest(h, alpha=opts.newest_alpha, min_size=opts.min_size,
                       baseline=_newest_baseline(h, seg, opts), magnitude_floor=opts.magnitude_floor,
                       test_within=opts.test_within)
    quiet = max((idx.get(a.last_revision, -1) for a in alerts), default=-1)
    raised = _raise(store, h, d, chk, seg, spans, quiet, opts)
    if raised is not None:
        return _follow(store, h, d, raised, spans, opts, event="raised")
    return _verdict(h, d, chk, None)


def _verdict(h: History, d: Detection, chk: NewestCheck, alert: AlertRow | None, event: str = "") -> SeriesVerdict:
    return SeriesVerdict(h.name, h.unit, d, chk, h.missing, alert, event)


def _confirmed_spans(h: History, alerts: Sequence[AlertRow], idx: dict[str, int],
                     alpha: float, test_within: str = "own") -> list[tuple[int, int]]:
    """``[first bad, fixed at)`` of every fixed alert whose regression its later revisions confirmed.

    Those revisions were at another level and leave every later baseline. A fixed alert whose revisions after the
    first bad one do not regress against the level before it (a lone odd build, a chance alert) leaves its
    revisions in: they were picked for being extreme, and dropping them would bias the baseline low and narrow
    it, so the next chance value would alert again.
    """
    spans: list[tuple[int, int]] = []
    better = direction_of_unit(h.unit)
    for a in alerts:
        if a.state != "fixed" or a.first_bad not in idx or a.fixed_at not in idx or a.baseline_from not in idx:
            continue
        fb, fx, b0 = idx[a.first_bad], idx[a.fixed_at], idx[a.baseline_from]
        base = [h.samples[i] for i in _outside(range(b0, fb), spans)]
        later = [h.samples[i] for i in range(fb + 1, fx)]
        if len(base) >= 2 and later and level_verdict(
                compare_levels(variance_components(base), base, later, alpha, test_within=test_within), alpha,
                better) == "regression":
            spans.append((fb, fx))
    return spans


def _outside(idx: range, spans: Sequence[tuple[int, int]]) -> list[int]:
    """The indices of ``idx`` in none of the ``[start, end)`` spans."""
    return [i for i in idx if not any(a <= i < b for a, b in spans)]


def _near_fixed(i: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(a - _NEAR <= i <= b + _NEAR for a, b in spans)


def _segment(d: Detection, end: int, spans: Sequence[tuple[int, int]], bounds: Sequence[int] = ()) -> list[int]:
    """Indices of the segment that ends before ``end``: from the last change point (or bound) before ``end``.

    Change points of a fixed alert (its regression and its fix) do not bound segments, and its regressed
    revisions are left out: the level before the regression and after the fix is one level.
    """
    cps = [c.index for c in d.change_points if c.index < end and not _near_fixed(c.index, spans)]
    start = max([*cps, *(b for b in bounds if b < end)], default=0)
    return _outside(range(start, end), spans)


def _newest_baseline(h: History, idx: Sequence[int], opts: GateOptions) -> list[int]:
    """``idx`` without odd builds, as a baseline of the newest revision (``opts.spike_filter``)."""
    return _without_spikes(h, idx, opts.min_size, len(h) - 1 if opts.spike_filter == "recurring" else None)


def _without_spikes(h: History, idx: Sequence[int], keep: int = 5, test: int | None = None) -> list[int]:
    """``idx`` without isolated odd builds: revision means with a modified z-score above 3.5, if they are few.

    ``M_i = 0.6745 (x_i - median) / MAD`` over the revision means (Iglewicz & Hoaglin's outlier rule). One odd
    build in a baseline would widen every interval built on it (its scatter counts as build-to-build variance)
    for as long as it stays in the baseline. At most 10 % of the revisions (at least one) go: more than that is
    a second band of a bimodal benchmark, which belongs to its level. None go when fewer than ``keep`` (the
    gate's ``min_size``) would remain: a baseline a dropped build makes too short to answer would turn a
    meaningful check into "not meaningful", and a kept odd build only widens the interval.

    With ``test`` (the revision the baseline is for): if that revision is odd by the same rule (the same median
    and MAD of ``idx``), the odd builds on its side stay. The rule's premise is that odd builds are isolated; one
    more on the same side shows they recur, a rare band of the benchmark that the baseline must hold, else every
    build in that band alerts.

    References
    ----------
    .. [1] B. Iglewicz, D. C. Hoaglin, "How to Detect and Handle Outliers", ASQC 1993, sec. 3.3 (modified
       z-scores).
    """
    if len(idx) < 5:
        return list(idx)
    m = h.values[list(idx)]
    med = float(np.median(m))
    mad = float(np.median(np.abs(m - med)))
    if mad <= 0:
        return list(idx)
    odd = np.abs(0.6745 * (m - med) / mad) > 3.5
    if not odd.any() or odd.sum() > max(1, len(idx) // 10) or len(idx) - odd.sum() < keep:
        return list(idx)
    if test is not None and abs(0.6745 * (h.values[test] - med) / mad) > 3.5:
        odd &= np.sign(m - med) != np.sign(h.values[test] - med)  # the test's side recurs: those builds stay
    return [i for i, o in zip(idx, odd, strict=True) if not o]


def _base_check(h: History, d: Detection, opts: GateOptions, spans: Sequence[tuple[int, int]],
                bounds: Sequence[int]) -> NewestCheck:
    """The newest revision against the level at ``opts.base`` (its segment up to and with it)."""
    assert opts.base is not None
    n = len(h)
    b = h.revisions.index(opts.base) if opts.base in h.revisions else None
    rev = h.revisions[-1] if n else ""
    if b is None or b == n - 1:
        why = "the base revision is not measured in this series" if b is None else "the newest revision is the base"
        return NewestCheck.not_meaningful(rev, f"not meaningful: {why}")
    return check_newest(h, alpha=opts.newest_alpha, min_size=opts.min_size,
                        baseline=_newest_baseline(h, _segment(d, b + 1, spans, bounds), opts),
                        magnitude_floor=opts.magnitude_floor, test_within=opts.test_within)


def _worse(before: float, after: float, unit: str) -> bool:
    return after > before if direction_of_unit(unit) == "lower" else after < before


def _raise(store: Store, h: History, d: Detection, chk: NewestCheck, seg: Sequence[int],
           spans: Sequence[tuple[int, int]], quiet: int, opts: GateOptions) -> AlertRow | None:
    """A new alert for a regression after ``quiet`` (the last revision a closed alert has seen), or None.

    The newest revision regressing against its segment comes first; else the last change point, if it went the
    bad way and the levels around it differ by the random-effects comparison too (confirmed, not just placed).
    """
    n = len(h)
    if n - 1 > quiet and chk.verdict == "regression":
        row = _row(h, n - 1, h.revisions[seg[0]], "newest revision", chk.baseline, chk.newest,
                   (chk.magnitude, chk.ci, chk.p_value), chk.n_baseline)
        return _insert(store, row)
    cps = [c for c in d.change_points if not _near_fixed(c.index, spans)]
    cp: ChangePoint | None = cps[-1] if cps else None
    if cp is None or cp.index <= quiet or not _worse(cp.before, cp.after, h.unit):
        return None
    before = _without_spikes(h, _segment(d, cp.index, spans), opts.min_size)
    if len(before) < 2:
        return None
    ref = [h.samples[i] for i in before]
    level = list(h.samples[cp.index:])
    cmp = compare_levels(variance_components(ref), ref, level, opts.alpha, test_within=opts.test_within)
    if level_verdict(cmp, opts.alpha, direction_of_unit(h.unit)) != "regression" \
            or abs(cmp.magnitude) < opts.magnitude_floor:
        return None
    row = _row(h, cp.index, h.revisions[before[0]], "change point", cmp.reference, cmp.test,
               (cmp.magnitude, cmp.ci, cmp.p_value), len(before))
    return _insert(store, row)


def _row(h: History, first_bad: int, baseline_from: str, found_by: str, baseline: float, level: float,
         evidence: tuple[float, tuple[float, float], float], n_baseline: int) -> AlertRow:
    """A ``new`` alert row (id and times are assigned by the store). Eight parameters: one per evidence field."""
    nan = float("nan")
    mag, ci, p = evidence
    return AlertRow(0, h.name, h.revisions[first_bad], baseline_from, h.revisions[-1], found_by, baseline, level,
                    mag, ci[0], ci[1], p, n_baseline, "new", None, None, nan, nan, nan, nan, "", "")


def _insert(store: Store, row: AlertRow) -> AlertRow | None:
    """Store ``row``; None if the series already has an alert at that revision (one alert per regression)."""
    if any(a.first_bad == row.first_bad for a in sa.alerts_of(store, row.series)):
        return None
    got = sa.get_alert(store, sa.insert_alert(store, row))
    assert got is not None
    return got


def _follow(store: Store, h: History, d: Detection, a: AlertRow, spans: Sequence[tuple[int, int]],
            opts: GateOptions, event: str = "") -> SeriesVerdict:
    """The newest revision against alert ``a``'s last good level; close it as fixed when the level is back.

    Fixed means the newest revision does not regress against the good level (at ``newest_alpha``), and either it
    is an improvement on the regressed level (the revisions from the first bad one to the one before the newest;
    ``fixed_by`` = "back to the good level", the evidence is that comparison) or the revisions after the first
    bad one, as one level, do not regress against the good level ("not confirmed": a blip, the evidence is that
    level against the good one), both at ``alpha``. The first bad revision stays out of that level: it was picked
    for being extreme. A real regression's later revisions confirm it; a chance alert's do not. A further
    regression on top (:func:`_stack`) gets a new alert whose good level is the open one's regressed level; the
    newest open alert is the one followed.
    """
    idx = {r: i for i, r in enumerate(h.revisions)}
    fb, b0, n = idx.get(a.first_bad), idx.get(a.baseline_from), len(h)
    if fb is None or b0 is None:
        return _verdict(h, d, NewestCheck.not_meaningful(h.revisions[-1] if n else "", f"not meaningful: alert "
                                                         f"#{a.id}'s revisions are no longer stored"), a, event)
    good = _newest_baseline(h, _outside(range(b0, fb), spans), opts)
    chk = check_newest(h, alpha=opts.newest_alpha, min_size=min(opts.min_size, max(len(good), 1)), baseline=good,
                       magnitude_floor=opts.magnitude_floor, test_within=opts.test_within)
    if n - 1 <= fb or event:
        return _verdict(h, d, chk, a, event)
    reg = [h.samples[i] for i in _outside(range(fb, n - 1), spans)]
    base = [h.samples[i] for i in good]
    newest = [h.samples[-1]]
    if len(base) < 2:
        return _verdict(h, d, chk, a, event)
    vc = variance_components(base)
    better = direction_of_unit(h.unit)
    back = compare_levels(vc, reg, newest, opts.alpha, test_within=opts.test_within)
    # not the first bad: chosen as extreme
    since = compare_levels(vc, base, [*reg[1:], *newest], opts.alpha, test_within=opts.test_within)
    fix = None
    if chk.verdict in ("no change", "improvement"):
        if level_verdict(back, opts.alpha, better) == "improvement":
            fix = ("back to the good level", back)
        elif level_verdict(since, opts.alpha, better) != "regression":
            fix = ("not confirmed", since)
    if fix is not None:
        how, ev = fix
        sa.update_alert(store, a.id, state="fixed", fixed_at=h.revisions[-1], last_revision=h.revisions[-1],
                        fixed_by=how, fix_magnitude=ev.magnitude, fix_ci_low=ev.ci[0], fix_ci_high=ev.ci[1],
                        fix_p_value=ev.p_value)
        event = "fixed"
    elif (row := _stack(h, a, fb, vc, spans, opts)) is not None and (stacked := _insert(store, row)) is not None:
        sa.update_alert(store, a.id, last_revision=h.revisions[-1])
        return _follow(store, h, d, stacked, spans, opts, event="raised")
    if fix is None and a.last_revision != h.revisions[-1]:
        sa.update_alert(store, a.id, last_revision=h.revisions[-1])
    return _verdict(h, d, chk, sa.get_alert(store, a.id), event)


def _stack(h: History, a: AlertRow, fb: int, vc: VarianceComponents, spans: Sequence[tuple[int, int]],
           opts: GateOptions) -> AlertRow | None:
    """A further regression on top of open alert ``a`` (first bad revision ``fb``) as a new alert row, or None.

    On an acknowledged alert (any open one with ``stack_on_new="newest"``): the newest revision worse than the
    regressed level (``fb`` to the one before the newest, two revisions or more) at ``newest_alpha``; the gate is
    green, so waiting would let a slower build pass. On a ``new`` alert with ``"confirmed"``: the two newest
    revisions, each of them and the two as one level, worse than the regressed level at ``newest_alpha``, first
    bad = the older of the two; the gate is red already, so waiting one revision lets no build pass, and a lone
    slow build is not confirmed by the next one (each alone must be worse: an intersection-union test, level
    ``newest_alpha`` without a correction; the two as one level is the evidence the alert reports). That regressed
    level leaves out ``fb``, as the fix's "not confirmed" level does: it was picked for being extreme, and keeping
    it would bias the level up (at least one revision remains; ``vc``, the good level's, gives the variances).
    With ``stack_variance="regressed"`` the regressed level loses its odd builds as a baseline does and gives its
    own variance components (two revisions or more): it is the good level the stacked alert will be followed and
    closed against, so a level wider than ``vc`` cannot raise an alert that its own follow closes at once.

    References
    ----------
    .. [1] R. L. Berger, "Multiparameter hypothesis testing and acceptance sampling", Technometrics 24(4), 1982
       (intersection-union tests).
    """
    n, better = len(h), direction_of_unit(h.unit)
    if a.state == "acknowledged" or opts.stack_on_new == "newest":
        ref_idx, test_idx, how = _outside(range(fb, n - 1), spans), [n - 1], "newest revision"
        if len(ref_idx) < 2:
            return None
    elif opts.stack_on_new == "confirmed":
        ref_idx, test_idx, how = _outside(range(fb + 1, n - 2), spans), [n - 2, n - 1], "two newest revisions"
        if not ref_idx:
            return None
    else:
        return None
    kept = ref_idx
    if opts.stack_variance == "regressed":  # the good level the stacked alert will be followed against
        if len(kept := _newest_baseline(h, ref_idx, opts)) < 2:
            return None
        vc = variance_components([h.samples[i] for i in kept])
    ref = [h.samples[i] for i in kept]

    def worse(idx: Sequence[int]) -> LevelComparison | None:
        c = compare_levels(vc, ref, [h.samples[i] for i in idx], opts.newest_alpha,
                           test_within=opts.test_within)
        bad = level_verdict(c, opts.newest_alpha, better) == "regression"
        return c if bad and not abs(c.magnitude) < opts.magnitude_floor else None

    level = worse(test_idx)
    if level is None or (len(test_idx) > 1 and any(worse([i]) is None for i in test_idx)):
        return None
    return _row(h, test_idx[0], h.revisions[ref_idx[0]], f"{how}, on {a.state} #{a.id}", level.reference,
                level.test, (level.magnitude, level.ci, level.p_value), len(kept))


def list_alerts(store: Store, states: Sequence[str] = OPEN_STATES, series: str | None = None) -> list[AlertRow]:
    """Stored alerts in ``states`` (default the open ones), oldest first."""
    bad = [s for s in states if s not in ALERT_STATES]
    if bad:
        raise UsageError(f"unknown alert state {bad[0]!r}; states: {', '.join(ALERT_STATES)}")
    return sa.alerts_of(store, series, states)


#: what a person may do to an alert in each state (``fixed`` is the data's verdict, never set by hand)
_TRANSITIONS = {"acknowledged": ("new", "acknowledged"), "invalid": ("new", "acknowledged", "invalid")}


def set_alert_state(store: Store, alert_id: int, state: str) -> AlertRow:
    """Acknowledge an alert or mark it invalid; the changed alert.

    An ``invalid`` alert's ``last_revision`` becomes its series' newest revision, so the same regression is not
    raised again; a later one is.

    Raises
    ------
    UnknownTargetError
        No alert ``alert_id``.
    UsageError
        ``state`` is not ``acknowledged``/``invalid``, or the alert's state does not allow it (a fixed alert
        stays fixed).
    """
    if state not in _TRANSITIONS:
        raise UsageError(f"an alert can be set to {' or '.join(_TRANSITIONS)}, not {state!r}")
    a = sa.get_alert(store, alert_id) if 0 < alert_id < 2**63 else None  # beyond SQL's integers: none either
    if a is None:
        raise UnknownTargetError(f"no alert #{alert_id} in {store.path}; see 'quiho history alert list --all'")
    if a.state not in _TRANSITIONS[state]:
        raise UsageError(f"alert #{alert_id} is {a.state}; only {' or '.join(_TRANSITIONS[state])} alerts can "
                         f"become {state}")
    changes: dict[str, object] = {"state": state}
    if state == "invalid":
        try:
            changes["last_revision"] = load_history(store, a.series).revisions[-1]
        except (UnknownTargetError, IndexError):
            pass  # the series is gone: nothing left to raise again
    sa.update_alert(store, alert_id, **changes)
    got = sa.get_alert(store, alert_id)
    assert got is not None
    return got


def _age_s(a: AlertRow, now: datetime | None) -> float:
    now = now or datetime.now(UTC)
    try:
        return max((now - datetime.fromisoformat(a.created_at)).total_seconds(), 0.0)
    except ValueError:
        return float("nan")


def _age_text(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "n/a"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def alert_to_dict(a: AlertRow, now: datetime | None = None,
                  confirmation: Confirmation | None = None) -> dict[str, object]:
    """JSON-ready alert (non-finite numbers become None) with its age in seconds and its newest confirmation.

    ``confirmation`` is ``quiho history confirm --json``'s document of the alert's newest rerun (None: never rerun).
    """
    def f(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    fix = None if a.fixed_at is None else {"revision": a.fixed_at, "by": a.fixed_by,
                                           "magnitude": f(a.fix_magnitude), "ci": [f(a.fix_ci_low), f(a.fix_ci_high)],
                                           "p_value": f(a.fix_p_value)}
    return {"id": a.id, "series": a.series, "state": a.state, "first_bad": a.first_bad,
            "baseline_from": a.baseline_from, "last_revision": a.last_revision, "found_by": a.found_by,
            "baseline": f(a.baseline), "level": f(a.level), "magnitude": f(a.magnitude),
            "ci": [f(a.ci_low), f(a.ci_high)], "p_value": f(a.p_value), "n_baseline": a.n_baseline, "fix": fix,
            "created_at": a.created_at, "updated_at": a.updated_at, "age_s": f(_age_s(a, now)),
            "confirmation": None if confirmation is None else confirmation.to_dict()}


def _pct(x: float) -> str:
    return f"{x:+.1%}" if np.isfinite(x) else "n/a"


def _confirmation_cell(c: Confirmation | None) -> str:
    """An alert's newest confirmation in one line, with :func:`change_text`'s numbers (those confirm printed)."""
    if c is None:
        return ""
    n = len(c.pairs)
    return f"#{c.id} {'interrupted, ' * c.interrupted}{change_text(c.change)}, {n} pair{'s' * (n != 1)}"


def _cells(a: AlertRow, now: datetime | None, c: Confirmation | None = None) -> list[str]:
    found = f"{_pct(a.magnitude)} [{_pct(a.ci_low)}, {_pct(a.ci_high)}], p = {a.p_value:.2g}"
    fix = "" if a.fixed_at is None else (f"at {a.fixed_at[:12]} ({a.fixed_by}): {_pct(a.fix_magnitude)} "
                                         f"[{_pct(a.fix_ci_low)}, {_pct(a.fix_ci_high)}], p = {a.fix_p_value:.2g}")
    return [f"#{a.id}", a.state, _age_text(_age_s(a, now)), a.series, a.first_bad[:12], found, fix,
            _confirmation_cell(c)]


_HEADER = ["alert", "state", "age", "series", "first bad", "regression (CI, p)", "fixed (evidence)",
           "rerun (paired CI, p, pairs)"]


def alert_lines(alerts: Sequence[AlertRow], now: datetime | None = None,
                confirmations: Mapping[int, Confirmation] | None = None) -> list[str]:
    """Plain-text alert table (names escaped for a terminal); ``confirmations``: each alert's newest rerun."""
    from quiho._text import printable

    conf = confirmations or {}
    rows = [[printable(c) for c in _cells(a, now, conf.get(a.id))] for a in alerts]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(_HEADER)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*_HEADER).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def alert_markdown(alerts: Sequence[AlertRow], now: datetime | None = None, *, title: str = "Open alerts",
                   confirmations: Mapping[int, Confirmation] | None = None) -> str:
    """A Markdown section listing ``alerts`` (escaped) with each one's newest rerun, for a CI job summary."""
    from quiho._markdown import md_escape, md_table

    if not alerts:
        return f"### {md_escape(title)}\n\nNone.\n"
    new = sum(a.state == "new" for a in alerts)
    head = f"**{new} new** of {len(alerts)} alert{'s' if len(alerts) != 1 else ''}"
    conf = confirmations or {}
    rows = [_cells(a, now, conf.get(a.id)) for a in alerts]
    return f"### {md_escape(title)}\n\n{head}\n\n" + md_table(_HEADER, rows, align="llrlllll")
