"""The CI gate on generated performance histories: today's newest-vs-segment check vs stored alerts.

Run: ``python bench/history_alerts.py [--quick] [--seed N]``. Prints one table; asserts nothing.

Each history has ``N_REV`` revisions built one after another, each measured with ``rounds`` timed rounds:
``value = level * (1 + build offset) * (1 + round noise)``, the build offset ``N(0, sd_build)`` per revision
(builds and runs differ), the round noise ``N(0, sd_round)``, and with probability ``p_spike`` a revision is a
spike (its build offset +15 %: one odd build, not a regression). True regressions are steps of +5 % to +20 % at
random revisions (at least 10 after the start or the previous fix), fixed (back to the old level) after 3 to 15
revisions or never. After every revision the gate runs on the history so far, alpha 0.01 (after: ``--alpha-after``;
its newest-revision checks at quiho's ``newest_alpha``, or one after-row per ``--newest-alpha``), min_size 5,
method auto, magnitude floor 0, and no person acknowledges anything:

- **before**: today's ``detect --all`` (the code before issue 31): the newest revision's mean against the means
  of its segment (since the last change point), a prediction interval on revision means; the gate is red when
  that says regression, and an "alert" is each red run (red after green);
- **after**: :func:`quiho.history.run_gate` on a SQLite store: alerts are stored, compared with the last good
  level, closed as fixed by the data; the gate is red while an alert is ``new``.

Columns: ``caught`` = true regressions with an alert raised within 3 revisions of the first bad one; ``alerts/regr``
= alerts raised whose first bad revision lies in a regressed span, per true regression (1 is ideal: more means the
same regression alerted again); ``alerts/alerted`` = those alerts per true regression with at least one of them
(above 1: one regression alerted again after the gate went green, which is not more useful); ``red while regr`` =
share of regressed revisions at which the gate is red; ``false alerts`` = alerts raised at revisions that are
neither regressed nor spikes, per 100 checked revisions (noise taken for a regression); ``spikes alerted`` = share
of spike revisions (a real +15 % measured at one build, which a gate cannot tell from a regression until the next
build) with an alert raised there; ``false red`` = share of calm revisions (neither regressed nor spikes) at which
the gate is red; ``fixed`` = fixed regressions whose alert closed as fixed within 3 revisions of the fix (after
only); ``CI width`` = median width (percentage points) of the newest-vs-baseline interval at unregressed revisions
as the gate reports it (1 - its newest-revision alpha), and ``at 99 %`` the same t interval at today's level
(quantile t(0.995, df) for t(1 - alpha/2, df)), so the two gates' widths compare like with like.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats

from quiho.history import GateOptions, History, check_newest, detect, run_gate, save_history
from quiho.history.gate import SPIKE_FILTERS, STACK_RULES, STACK_VARIANCES, WITHIN_RULES, NewestCheck
from quiho.store import open_store

N_REV = 60
ALPHA, MIN_SIZE = 0.01, 5


@dataclass(frozen=True)
class Scenario:
    name: str
    rounds: int
    sd_round: float
    sd_build: float
    p_spike: float


SCENARIOS = (
    Scenario("quiet, 30 rounds", 30, 0.03, 0.002, 0.0),
    Scenario("builds scatter, 30 rounds", 30, 0.03, 0.015, 0.0),
    Scenario("spikes, 30 rounds", 30, 0.03, 0.004, 0.05),
    Scenario("hyperfine-like, 10 rounds", 10, 0.05, 0.01, 0.02),
    Scenario("one value per build", 1, 0.02, 0.0, 0.02),
)


@dataclass(frozen=True)
class Case:
    history: History
    regressed: np.ndarray  # bool per revision: a regression is in effect
    spike: np.ndarray  # bool per revision: one odd build (+15 %)
    starts: tuple[int, ...]  # first bad revision of each true regression
    fixes: tuple[int, ...]  # fix revision of each fixed regression (-1: never fixed)


def generate(sc: Scenario, rng: np.random.Generator) -> Case:
    """One seeded history: regressions as steps with later fixes, build offsets, round noise, spikes."""
    level = np.ones(N_REV)
    regressed = np.zeros(N_REV, dtype=bool)
    starts, fixes = [], []
    i = int(rng.integers(10, 20))
    while i < N_REV - 2:
        size = float(rng.uniform(0.05, 0.20))
        length = int(rng.integers(3, 16)) if rng.random() < 0.7 else N_REV
        end = min(i + length, N_REV)
        level[i:end] *= 1 + size
        regressed[i:end] = True
        starts.append(i)
        fixes.append(end if end < N_REV else -1)
        i = end + int(rng.integers(10, 20))
    build = rng.normal(0, sc.sd_build, N_REV) if sc.sd_build > 0 else np.zeros(N_REV)
    spike = (rng.random(N_REV) < sc.p_spike) & ~regressed
    build += np.where(spike, 0.15, 0.0)
    samples = tuple(100 * level[r] * (1 + build[r]) * (1 + rng.normal(0, sc.sd_round, sc.rounds))
                    for r in range(N_REV))
    h = History("bench", tuple(f"r{r:03d}" for r in range(N_REV)), np.arange(N_REV), samples, "s")
    return Case(h, regressed, spike, tuple(starts), tuple(fixes))


def _prefix(h: History, t: int) -> History:
    return History(h.name, h.revisions[:t], h.orders[:t], h.samples[:t], h.unit)


def interval_widths(c: NewestCheck, alpha: float) -> tuple[float, float]:
    """The width of ``c``'s ``1 - alpha`` interval and of the same t interval at 99 % (today's gate's level)."""
    w = c.ci[1] - c.ci[0]
    return w, w if alpha == ALPHA else w * float(stats.t.ppf(1 - ALPHA / 2, c.df) / stats.t.ppf(1 - alpha / 2, c.df))


def walk_before(h: History, calm: np.ndarray) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Today's gate (newest revision against its segment, on revision means) after each revision of ``h``.

    Returns the red flag per revision and the interval widths (as the gate reports them, at 99 %) at revisions
    where ``calm`` is true.
    """
    n = len(h)
    red, ws = np.zeros(n, dtype=bool), []
    for t in range(MIN_SIZE + 1, n + 1):
        p = _prefix(h, t)
        d = detect(p, "auto", min_size=MIN_SIZE, alpha=ALPHA)
        c = check_newest(History.from_values(p.values, p.revisions, unit="s"), alpha=ALPHA, min_size=MIN_SIZE,
                         detection=d)
        red[t - 1] = c.verdict == "regression"
        if calm[t - 1] and np.isfinite(c.ci[0]):
            ws.append(interval_widths(c, ALPHA))
    return red, ws


def walk_after(h: History, calm: np.ndarray, store_path: Path,
               opts: GateOptions = GateOptions(alpha=ALPHA, min_size=MIN_SIZE),
               ) -> tuple[np.ndarray, list[tuple[float, float]], list[tuple[int, int | None]]]:
    """:func:`quiho.history.run_gate` (with ``opts``) after each revision of ``h`` on a fresh store at ``store_path``.

    Returns the red flag per revision, the interval widths (as reported, at 99 %) where ``calm`` is true, and
    (first bad, fixed-at) indexes of every alert raised.
    """
    from quiho.history.gate import ALERT_STATES, list_alerts

    n = len(h)
    red, ws = np.zeros(n, dtype=bool), []
    with open_store(store_path) as st:
        for t in range(MIN_SIZE + 1, n + 1):
            save_history(st, _prefix(h, t), "bench")
            r = run_gate(st, opts)
            red[t - 1] = r.failing
            c = r.verdicts[0].newest
            if calm[t - 1] and np.isfinite(c.ci[0]):
                ws.append(interval_widths(c, opts.newest_alpha))
        idx = {rev: i for i, rev in enumerate(h.revisions)}
        alerts = [(idx[a.first_bad], idx[a.fixed_at] if a.fixed_at else None)
                  for a in list_alerts(st, ALERT_STATES)]
    return red, ws, alerts


def gate_options(alpha: float = ALPHA, newest_alpha: float | None = None, stack_on_new: str | None = None,
                 test_within: str | None = None, spike_filter: str | None = None,
                 stack_variance: str | None = None) -> GateOptions:
    """The alert gate's options at ``alpha`` and ``MIN_SIZE``; None keeps quiho's default of that field."""
    given = {"newest_alpha": newest_alpha, "stack_on_new": stack_on_new, "test_within": test_within,
             "spike_filter": spike_filter, "stack_variance": stack_variance}
    return replace(GateOptions(alpha=alpha, min_size=MIN_SIZE), **{k: v for k, v in given.items() if v is not None})


#: the gate's choice options on the command line, in :func:`gate_options`' order after ``newest_alpha``
_CHOICE_OPTIONS = (
    ("--stack-on-new", STACK_RULES, "how a second alert stacks on a new alert"),
    ("--test-within", WITHIN_RULES, "the tested revisions' round variance"),
    ("--spike-filter", SPIKE_FILTERS, "how odd builds leave the newest revision's baselines"),
    ("--stack-variance", STACK_VARIANCES, "the level and variance a stacked alert is tested against"),
)


def add_gate_arguments(ap: argparse.ArgumentParser, each: str, prefix: str = "") -> None:
    """The alert gate's options on the command line: ``--alpha-after`` and, ``each`` one gate per combination of
    values, ``--newest-alpha``, ``--stack-on-new``, ``--test-within``, ``--spike-filter``, ``--stack-variance``
    (both benches)."""
    ap.add_argument("--alpha-after", type=float, default=ALPHA, help=f"{prefix}the alert gate's alpha (before: 0.01)")
    ap.add_argument("--newest-alpha", type=float, nargs="+", default=[None],
                    help=f"{prefix}the alert gate's alpha for the newest-revision checks, {each} (default: quiho's)")
    for flag, allowed, what in _CHOICE_OPTIONS:
        ap.add_argument(flag, choices=allowed, nargs="+", default=[None],
                        help=f"{prefix}{what}, {each} per the options above (default: quiho's)")


def gates_from_arguments(args: argparse.Namespace) -> list[GateOptions]:
    """One gate per combination of the values given to :func:`add_gate_arguments`' options."""
    values = [args.newest_alpha, *(getattr(args, flag[2:].replace("-", "_")) for flag, _, _ in _CHOICE_OPTIONS)]
    return [gate_options(args.alpha_after, *combo) for combo in itertools.product(*values)]


def label(o: GateOptions) -> str:
    """An alert gate's name in the tables: its newest-revision alpha, how it stacks on a new alert, and the tested
    revisions' round variance when it is not their own (``~pooled``, ``~larger``), the spike filter when it is
    not ``drop`` (``/recurring``), and a stacked alert's variance when it is not the good level's (``^regressed``)."""
    return (f"after {o.newest_alpha:g}{'' if o.stack_on_new == 'no' else ' +' + o.stack_on_new}"
            f"{'' if o.test_within == 'own' else ' ~' + o.test_within}"
            f"{'' if o.spike_filter == 'drop' else ' /' + o.spike_filter}"
            f"{'' if o.stack_variance == 'good' else ' ^' + o.stack_variance}")


def red_runs(red: np.ndarray) -> list[tuple[int, None]]:
    """Today's "alerts": the first revision of each red run."""
    return [(i, None) for i in range(red.size) if red[i] and (i == 0 or not red[i - 1])]


@dataclass
class Tally:
    regressions: int = 0
    fixed_truth: int = 0
    caught: int = 0
    true_alerts: int = 0
    alerted: int = 0
    false_alerts: int = 0
    spike_alerts: int = 0
    spikes: int = 0
    red_regr: int = 0
    n_regr: int = 0
    red_ok: int = 0
    n_ok: int = 0
    fixed_seen: int = 0
    revisions: int = 0

    def add(self, case: Case, red: np.ndarray, alerts: list[tuple[int, int | None]]) -> None:
        checked = np.arange(N_REV) >= MIN_SIZE
        self.revisions += int(checked.sum())
        self.regressions += len(case.starts)
        self.red_regr += int((red & case.regressed & checked).sum())
        self.n_regr += int((case.regressed & checked).sum())
        calm = ~case.regressed & ~case.spike & checked
        self.red_ok += int((red & calm).sum())
        self.n_ok += int(calm.sum())
        self.spikes += int((case.spike & checked).sum())
        for s, f in zip(case.starts, case.fixes, strict=True):
            self.caught += any(s <= a <= s + 3 for a, _ in alerts)
            self.alerted += any(s <= a < (f if f > 0 else N_REV) for a, _ in alerts)
            if f > 0:
                self.fixed_truth += 1
                self.fixed_seen += any(s <= a < f and fx is not None and f <= fx <= f + 3 for a, fx in alerts)
        for a, _ in alerts:
            if case.regressed[a]:
                self.true_alerts += 1
            elif case.spike[a]:
                self.spike_alerts += 1
            else:
                self.false_alerts += 1

    def row(self, ws: list[tuple[float, float]], with_fix: bool) -> list[str]:
        pct = lambda a, b: f"{100 * a / b:.0f} %" if b else "n/a"  # noqa: E731
        med = lambda j: f"{100 * float(np.median([w[j] for w in ws])):.1f}" if ws else "n/a"  # noqa: E731
        return [pct(self.caught, self.regressions), f"{self.true_alerts / max(self.regressions, 1):.2f}",
                f"{self.true_alerts / max(self.alerted, 1):.2f}",
                pct(self.red_regr, self.n_regr), f"{100 * self.false_alerts / max(self.revisions, 1):.2f}",
                pct(self.spike_alerts, self.spikes), pct(self.red_ok, self.n_ok),
                pct(self.fixed_seen, self.fixed_truth) if with_fix else "-", med(0), med(1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 histories per scenario instead of 25")
    ap.add_argument("--seed", type=int, default=31)
    add_gate_arguments(ap, "one after-row each")
    args = ap.parse_args()
    gates = gates_from_arguments(args)
    n_hist = 6 if args.quick else 25
    header = ["scenario", "gate", "caught", "alerts/regr", "alerts/alerted", "red while regr", "false alerts/100 rev",
              "spikes alerted", "false red", "fixed", "CI width (pp)", "at 99 % (pp)"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for si, sc in enumerate(SCENARIOS):
            before, after = Tally(), [Tally() for _ in gates]
            wb: list[tuple[float, float]] = []
            wa: list[list[tuple[float, float]]] = [[] for _ in gates]
            for k in range(n_hist):
                case = generate(sc, np.random.default_rng([args.seed, si, k]))
                red, w = walk_before(case.history, ~case.regressed)
                before.add(case, red, red_runs(red))
                wb += w
                for j, opts in enumerate(gates):
                    red, w, alerts = walk_after(case.history, ~case.regressed, Path(tmp) / f"{si}-{k}-{j}.db", opts)
                    after[j].add(case, red, alerts)
                    wa[j] += w
            rows.append([sc.name, "before", *before.row(wb, False)])
            for opts, t, w in zip(gates, after, wa, strict=True):
                rows.append(["", label(opts), *t.row(w, True)])
    print(f"{n_hist} histories x {N_REV} revisions per scenario, seed {args.seed}, alpha {ALPHA} "
          f"(after: {gates[0].alpha}, the newest revision's alpha and the stacking on a new alert in the gate's "
          f"name), {sum(1 for _ in SCENARIOS)} scenarios")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
