"""A local fleet that calibrates itself to the machine it runs on.

The embedded local fleet (``inventories/local.yml``) emulates hosts with a CPU quota (a speed knob), the
transparent-huge-page policy (a memory-subsystem knob) and optionally a co-runner. How strongly each knob acts
depends on the machine (CPU, hypervisor, CFS period), so before the first local fingerprint on a machine, short
probes measure each axis
(:mod:`quiho.fleet.local.probes`), :func:`choose` turns the recorded responses into axis levels and a CFS period, and
the result is stored with the machine's facts and written as an inventory next to the store. It is reused while
the facts are the same.

Decision rules (all in :func:`choose`, a pure function of the recorded responses)
----------------------------------------------------------------------------------
Every probe time is taken in logs; a cell's centre is the median of its repetitions, its standard error
``1.2533 * sd / sqrt(n)`` with ``sd`` the probe's noise: the median over cells without a co-runner of the
within-cell standard deviation of the log times (or an assumed ``cell_se`` for responses given as medians only).
The page-size and co-runner decisions and the planned levels use the unthrottled cells only (noise included),
so they are the same before and after the quota cells are probed.

- **page size** (THP never vs always, unthrottled) and **co-runner** (a stream stressor on CPU 1): ``E_mem``/``E_cpu``
  = the mean within-round log ratio of the memory and CPU probe between the two conditions (the rounds pair the
  cells, so the drift of a VM's memory speed over seconds cancels; medians for responses recorded as medians).
  Kept if ``|E_mem| > 3 SE`` and ``|E_mem| > log 1.05``, and, where the CPU probe moves the same way (beyond 2 SE
  and 5 %), the memory probe moves measurably more: the paired difference ``E_mem - E_cpu`` beyond 3 SE and 5 %.
  The axis must order memory- and cpu-class stressors differently, not be a second speed knob; a CPU effect within
  its noise, or against the memory effect, is no evidence against it (:func:`_memory_axis`).
- **quota levels**: equal log steps from 100 %; step = max(R / (k - 1), log 1.05, 2 SE of a fleet host's median
  with the probes' per-run noise and the fleet's 5 runs), where R
  is the largest kept memory-axis effect (axes of comparable size) and k the number of levels (4 with one memory
  axis kept, 8 when quota is the only axis, 2 with both, so the fleet stays at 8 hosts); none below
  :data:`MIN_QUOTA`.
- **CFS period**: at every probed period and quota level, the log slowdown of each probe under each THP policy
  against its nominal ``log(100/q)``. A period fails when a level collapses onto the one above (short of nominal by
  a whole step and > 3 SE), costs more than :data:`MAX_GAIN` times its nominal (> 3 SE), or slows a probe less
  than a higher level (> 3 SE), or when the levels' pooled cost (slope of slowdown on nominal) exceeds
  :data:`MAX_GAIN`. Over-proportional throttling within that bound
  is accepted: the levels stay ordered, only further apart. The period with the smallest mean error among those
  passing is kept; none passing drops the quota axis.
- **knobs** (:mod:`quiho.fleet.local.knobs`, screened between the two phases): where one is kept the hosts are a
  two-level screening design (:func:`design_factors`, :mod:`quiho.fleet.local.screening`) with the quota at 100 %
  and one level at least 1.5x slower; otherwise the quota x page size x co-runner grid above.
- **re-probing**: a memory axis (or a knob, :func:`quiho.fleet.local.knobs.screen_knobs`) dropped while its rounds
  cannot rule out a 5 % effect (beyond 5 %, or within 5 % only by less than 2 SE) gets another batch of rounds,
  and is decided on all of them, up to :data:`REPROBE_BATCHES` batches (a busy minute widens the noise; it does
  not remove the effect). The looks before the last need 3 SE, the last :data:`LAST_LOOK_SE` (a group-sequential
  bar, stricter early as O'Brien-Fleming's: the chance of keeping an axis with no effect stays about that of one
  2-SE test, 2.5 %).
- **late look**: a memory axis still dropped after the quota cells gets one more batch of rounds then, another
  minute of the machine (a VM's co-runner reach comes and goes for tens of seconds), and is kept if all its rounds
  or the late ones alone show it at the same bar (two looks at 3 SE: an axis with no effect is kept about as
  rarely as by one); the quota levels stay those its first rounds planned (:func:`_late_look`).
  The first round is preceded by one unmeasured run of each probe.

How these rules were arrived at, and on which machines, is in the docs' design page (local-fleet calibration).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from quiho._factors import FACTOR_BY_NAME
from quiho.errors import InventoryError
from quiho.fleet.local.emulate import local_fleet_lock
from quiho.fleet.local.knobs import (
    KNOB_REPS,
    LAST_LOOK_SE,
    MIN_STEP,
    REPROBE_BATCHES,
    append_rounds,
    batch_note,
    effect_text,
    paired_mean,
    screen_knobs,
    undecided,
)
from quiho.fleet.local.probes import Cell, ProbeRunner, facts_key, machine_facts, require_root
from quiho.fleet.local.screening import MAX_KNOBS, screening_design
from quiho.fleet.session import REMOTE_BASE, measuring
from quiho.store import Store
from quiho.store.calibrations import latest_calibration, save_calibration

__all__ = ["AxisEffect", "Calibration", "Choice", "PERIODS_US", "RESPONSES_SCHEMA", "calibrate", "choose",
           "calibrated_fleet", "inventory_text", "load_responses", "measure_responses", "resolve_inventory",
           "resolve_fleet", "ResolvedFleet", "before_late_look",
           "UNTHROTTLED_REPS", "axes_kept", "design_factors", "DESIGN_MAX_FACTORS"]

#: Version of the recorded-responses JSON (bench/local_fleet_calibration.py --record, tests/data/calibration/).
RESPONSES_SCHEMA = 1
#: Version of a stored calibration result (``fleet_calibrations.schema_version``).
RESULT_SCHEMA = 1
#: Candidate CFS periods (µs), probed in this order.
PERIODS_US = (100000, 20000)
#: Lowest quota level: a host there runs 2.5x slower. The quota steps must clear the fleet's noise (2 SE of a
#: host's median); on a VM whose per-run noise is ~15 % that is ~20 % a step, and at 50 % only three levels fit
#: (6 hosts with page size, where leave-one-group-out needs >= 8). The stressors are time-based, so only the
#: applications' own runs get longer.
MIN_QUOTA = 40
#: Repetitions of each unthrottled cell (paired by round): the page-size effect is decided from them, and with
#: a per-round noise of up to 20 % fewer rounds leave a ~20 % effect within its 3 SE (docs/design.md).
UNTHROTTLED_REPS = 6
PREFAULT_MIB = 512
#: Runs per host and version in a profile (the demo's --repetitions 5): the sample size of a host's median.
FLEET_REPS = 5
_MEDIAN_SE = 1.2533  # sqrt(pi/2): SE of a median relative to that of a mean (normal noise)


@dataclass(frozen=True)
class AxisEffect:
    """One emulation axis as measured: log effects on both probes (± SE), kept or dropped and why."""

    name: str
    kept: bool
    effect_memory: float | None
    se_memory: float | None
    effect_cpu: float | None
    se_cpu: float | None
    levels: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` decided: axes, quota levels, CFS period and the hosts of the generated fleet."""

    axes: tuple[AxisEffect, ...]
    quota_levels: tuple[int, ...]
    period_us: int | None
    step: float
    noise: dict[str, float]
    periods: dict[str, dict[str, Any]]
    hosts: tuple[tuple[str, dict[str, Any]], ...]
    warnings: tuple[str, ...]
    #: The knobs screened (:func:`quiho.fleet.local.knobs.screen_knobs`: KnobEffect dicts) and the ones this
    #: machine cannot set, one line each.
    knobs: tuple[dict[str, Any], ...] = ()
    knob_notes: tuple[str, ...] = ()
    #: The screening design the hosts follow when a knob was kept (:func:`design_factors`): its kind, the factors
    #: it sets and those left out; None: today's quota x page size x co-runner grid.
    design: dict[str, Any] | None = None

    @property
    def kept(self) -> list[str]:
        """Names of the kept axes."""
        return [a.name for a in self.axes if a.kept]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored in ``fleet_calibrations.result_json``)."""
        d = asdict(self)
        d["hosts"] = [{"name": n, "vars": v} for n, v in self.hosts]
        d["kept"] = self.kept
        if not self.knobs and not self.knob_notes:  # not screened: the row reads as before the catalogue
            del d["knobs"], d["knob_notes"]
        if self.design is None:
            del d["design"]
        return d


@dataclass(frozen=True)
class Calibration:
    """A calibration as used: the stored row, the choice, where the inventory is, and whether it was reused."""

    row_id: int
    facts_key: str
    facts: dict[str, Any]
    choice: dict[str, Any]
    inventory: str
    elapsed_s: float
    reused: bool
    probe_runs: int = 0
    created_at: str = ""
    responses: dict[str, Any] = field(default_factory=dict, repr=False)


# --- the choice (pure) ---------------------------------------------------------------------


def axes_kept(choice: dict[str, Any]) -> int:
    """How many independent axes a stored choice's hosts vary (``Choice.to_dict()``): what the profile's guard needs.

    The factors of its screening design where it has one, else the kept axes of the grid.
    """
    design = choice.get("design")
    return len(design["factors"]) if design else len(choice.get("kept") or [])


def _logs(xs: Iterable[float]) -> list[float]:
    return [math.log(x) for x in xs if x and x > 0]


def _noise(cells: list[dict[str, Any]], probe: str) -> float:
    """Median within-cell SD of log times over cells with ≥ 2 repetitions (0 if none)."""
    sds = [statistics.stdev(v) for c in cells if len(v := _logs(c.get(probe) or [])) >= 2]
    return float(statistics.median(sds)) if sds else 0.0


class _Cells:
    """Centre and SE of every recorded cell, looked up by condition."""

    def __init__(self, resp: dict[str, Any], cells: list[dict[str, Any]]) -> None:
        assumed = resp.get("cell_se") or {}
        self.cells = cells
        # noise from cells without a co-runner (it competes with whatever else runs on CPU 1)
        quiet = [c for c in cells if c.get("corunner", "none") == "none"]
        self.sd = {p: _noise(quiet, p) for p in ("memory", "cpu")}
        self.assumed = {p: float(assumed[p]) for p in assumed}

    def find(self, *, quota: int = 100, thp: str = "never", period: int | None = None,
             corunner: str = "none") -> list[dict[str, Any]]:
        return [c for c in self.cells if int(c["quota_pct"]) == quota and c["thp"] == thp
                and c.get("corunner", "none") == corunner and (period is None or int(c["period_us"]) == period)]

    def centre(self, found: list[dict[str, Any]], probe: str) -> tuple[float, float] | None:
        """(median log time, its SE) of ``probe`` pooled over ``found`` cells, or None without data."""
        v = [x for c in found for x in _logs(c.get(probe) or [])]
        if not v:
            return None
        se = self.assumed.get(probe, _MEDIAN_SE * self.sd[probe] / math.sqrt(len(v)))
        return float(statistics.median(v)), se



def _effect(cs: _Cells, a: list[dict[str, Any]], b: list[dict[str, Any]], probe: str) -> tuple[float, float] | None:
    ca, cb = cs.centre(a, probe), cs.centre(b, probe)
    if ca is None or cb is None:
        return None
    return ca[0] - cb[0], math.hypot(ca[1], cb[1])


def _paired_effect(cs: _Cells, a: list[dict[str, Any]], b: list[dict[str, Any]],
                   probe: str) -> tuple[float, float] | None:
    """Effect of condition ``a`` over ``b`` from the repetitions paired by round (mean log ratio, its SE).

    The probes run round-robin, one repetition of every cell per round, so a round's cells ran seconds apart.
    On a VM the speed of memory-bound work drifts over seconds, which an unpaired comparison counts as noise; the
    within-round log ratios cancel it. Falls back to :func:`_effect` (medians) for responses recorded as medians
    only, or when the conditions are pooled over several cells or have fewer than 3 paired rounds.
    """
    if "memory" in cs.assumed or len(a) != 1 or len(b) != 1:
        return _effect(cs, a, b, probe)
    xa, xb = a[0].get(probe) or [], b[0].get(probe) or []
    paired = paired_mean([math.log(u / v) if u and v and u > 0 and v > 0 else None
                           for u, v in zip(xa, xb, strict=False)])
    return paired if paired is not None else _effect(cs, a, b, probe)


def _moves(e: tuple[float, float]) -> bool:
    """The effect is there at all: beyond 2 SE and beyond the 5 % grouping resolution."""
    return abs(e[0]) > 2 * e[1] and abs(e[0]) >= MIN_STEP


def _differential(cs: _Cells, a: list[dict[str, Any]], b: list[dict[str, Any]], em: tuple[float, float],
                  ec: tuple[float, float]) -> tuple[float, float]:
    """How much more condition ``a`` moves the memory probe than the CPU probe (log, its SE), paired by round.

    Per round ``log(a_mem / b_mem) - log(a_cpu / b_cpu)``: both probes of a cell run seconds apart, so what drifts
    with the machine cancels twice. Otherwise (medians only, pooled cells, < 3 rounds) the difference of the two
    effects ``em`` and ``ec`` the caller measured.
    """
    if "memory" not in cs.assumed and len(a) == 1 and len(b) == 1:
        rows = zip(a[0].get("memory") or [], b[0].get("memory") or [], a[0].get("cpu") or [], b[0].get("cpu") or [],
                   strict=False)
        paired = paired_mean([math.log(am / bm) - math.log(ac / bc)
                              if None not in (am, bm, ac, bc) and min(am, bm, ac, bc) > 0 else None
                              for am, bm, ac, bc in rows])
        if paired is not None:
            return paired
    return em[0] - ec[0], math.hypot(em[1], ec[1])


def _memory_axis(cs: _Cells, name: str, a: list[dict[str, Any]], b: list[dict[str, Any]], what: str,
                 levels: tuple[str, str], z: float = 3.0) -> AxisEffect:
    """A memory-subsystem axis (page size, co-runner): condition ``a`` against ``b`` on both probes.

    Kept if it moves the memory probe measurably (> 5 % and > ``z`` SE: 3, or :data:`LAST_LOOK_SE` at the last
    re-probe look) and, where it also moves the CPU probe the same way (> 2 SE and > 5 %), it moves the memory
    probe measurably more (the paired difference > ``z`` SE and > 5 %). What the IRUP needs is that the axis
    orders memory-class and cpu-class stressors differently; a knob that moves both alike is a second speed knob.
    A CPU effect within its noise, or opposite to the memory effect, is no evidence against it.
    """
    em, ec = _paired_effect(cs, a, b, "memory"), _paired_effect(cs, a, b, "cpu")
    if em is None or ec is None:
        return AxisEffect(name, False, None, None, None, None, (), f"{what} not measured")
    diff = _differential(cs, a, b, em, ec)
    text = f"{what}: memory probe {effect_text(em)}, CPU probe {effect_text(ec)}"
    same_way = _moves(ec) and ec[0] * em[0] > 0

    def fails_at(bar: float) -> list[str]:
        fails = [] if abs(em[0]) > bar * em[1] and abs(em[0]) > MIN_STEP else [
            f"no measurable effect on memory (needs > 5 % and > {bar:g} SE)"]
        more = em[0] * diff[0] > 0 and abs(diff[0]) > bar * diff[1] and abs(diff[0]) > MIN_STEP
        if same_way and not more:
            fails.append(f"it moves the CPU probe the same way and not measurably less (memory minus CPU "
                         f"{effect_text(diff)}; needs > 5 % and > {bar:g} SE): a speed knob, not memory")
        return fails

    fails = fails_at(z)
    keep = not fails
    lowered = keep and bool(fails_at(3.0))  # kept only because this was the last look
    why = ": ".join([text + (f" (kept at the last re-probe look's {z:g} SE; 3 SE before it)" if lowered else ""),
                     *fails])
    return AxisEffect(name, keep, em[0], em[1], ec[0], ec[1], levels if keep else (), why)


def _page_axis(cs: _Cells, z: float = 3.0) -> AxisEffect:
    never, always = cs.find(thp="never"), cs.find(thp="always")
    if not never or not always:
        return AxisEffect("page-size", False, None, None, None, None, (), "THP always/never not measured "
                          "(THP not offered by this kernel?)")
    return _memory_axis(cs, "page-size", never, always, "4 KiB vs huge pages", ("never", "always"), z)


def _corunner_axis(cs: _Cells, z: float = 3.0) -> AxisEffect:
    return _memory_axis(cs, "co-runner", cs.find(corunner="stream"), cs.find(), "stream co-runner on CPU 1",
                        ("none", "stream"), z)


def quota_levels(effect: float, n_levels: int, noise_step: float) -> tuple[tuple[int, ...], float]:
    """Quota levels (% of one CPU) from 100 down in equal log steps, and the step.

    Parameters
    ----------
    effect : float
        Log range to span (the largest kept memory-axis effect; 0: only the floors decide).
    n_levels : int
        Number of levels (≥ 2).
    noise_step : float
        Smallest step the fleet's own noise resolves (log; :func:`_first_phase`); the step is at least this and
        at least log 1.05.

    Level i is ``100 exp(-i step)`` rounded to a whole percent, lowered where rounding left less than 5 % to the
    level above; levels below :data:`MIN_QUOTA` are not used (noisy probes can leave fewer than ``n_levels``).

    Examples
    --------
    >>> quota_levels(math.log(1.18), 4, 0.005)[0]
    (100, 95, 90, 85)
    """
    step = max(abs(effect) / max(n_levels - 1, 1), MIN_STEP, noise_step)
    levels = [100]
    for i in range(1, n_levels):
        nxt = min(round(100 * math.exp(-i * step)), math.floor(levels[-1] / math.exp(MIN_STEP) + 1e-9))
        if nxt < MIN_QUOTA:
            break
        levels.append(nxt)
    return tuple(levels), step


@dataclass(frozen=True)
class _FirstPhase:
    base: _Cells
    page: AxisEffect
    co: AxisEffect
    levels: tuple[int, ...]
    step: float
    wanted: int


def _noise_step(base: _Cells) -> float:
    """Two SEs of a fleet host's median (log): the smallest quota step the fleet's measurements resolve.

    Adjacent hosts are told apart by the fleet's own medians (:data:`FLEET_REPS` runs per host), not by the
    calibration's: the per-run noise ``sd`` is the probes' (unpaired: it includes the drift between hosts measured
    minutes apart), the sample size the fleet's. Responses recorded as medians give their assumed SE of a cell
    median, a median of several runs as a host's is.
    """
    if "memory" in base.assumed:
        return 2 * max(base.assumed.values())
    return 2 * _MEDIAN_SE * max(base.sd.values()) / math.sqrt(FLEET_REPS)


def _axes(resp: dict[str, Any]) -> tuple[_Cells, AxisEffect, AxisEffect]:
    """The unthrottled cells and the page-size and co-runner verdicts on their rounds."""
    base = _Cells(resp, [c for c in resp["cells"] if int(c["quota_pct"]) == 100])
    last = set(resp.get("last_look") or ())  # the axes re-probed in the last allowed batch
    page = _page_axis(base, LAST_LOOK_SE if "page-size" in last else 3.0)
    co = _corunner_axis(base, LAST_LOOK_SE if "co-runner" in last else 3.0)
    return base, page, co


def _with_rounds(resp: dict[str, Any], cut: Callable[[list[float | None]], list[float | None]],
                 drop: tuple[str, ...]) -> dict[str, Any]:
    """``resp`` without the keys ``drop``, every unthrottled cell's probe times replaced by ``cut`` of them."""
    cells = [{**c, **{p: cut(list(c.get(p) or [])) for p in ("memory", "cpu")}} if int(c["quota_pct"]) == 100 else c
             for c in resp["cells"]]
    return {k: v for k, v in resp.items() if k not in drop} | {"cells": cells}


def before_late_look(resp: dict[str, Any]) -> dict[str, Any]:
    """``resp`` as it was before :func:`_late_look`: every unthrottled cell cut to the rounds measured before it."""
    late = resp.get("late_look")
    if not late:
        return resp
    n = int(late["rounds_before"])

    def cut(xs: list[float | None]) -> list[float | None]:
        out = xs[:n]
        while out and out[-1] is None:  # the padding the late look added
            out.pop()
        return out

    return _with_rounds(resp, cut, ("late_look",))


def _late_rounds(resp: dict[str, Any]) -> dict[str, Any]:
    """``resp`` with every unthrottled cell cut to the late look's rounds (:func:`_late_look`) alone."""
    n = int(resp["late_look"]["rounds_before"])
    return _with_rounds(resp, lambda xs: xs[n:], ("late_look", "last_look"))


def _said_late(now: AxisEffect, before: AxisEffect, alone: AxisEffect) -> AxisEffect:
    """A late-looked axis: kept on all its rounds (``now``) or on the late rounds ``alone``; says the first rounds'.

    Either look may keep it: a VM's co-runner acts in some minutes and not others, and a mean over an off minute
    and an on one can fall short of both.
    """
    if before.effect_memory is None or before.se_memory is None:
        return now
    first = effect_text((before.effect_memory, before.se_memory))
    out, how = now, "not shown on all its rounds or on the late rounds alone"
    if now.kept:
        how = "kept on all its rounds"
    elif alone.kept:
        out = dataclasses.replace(alone, reason=f"late rounds: {alone.reason}")
        how = "kept: shown by those rounds alone"
    return dataclasses.replace(out, reason=f"{out.reason}; memory probe {first} in the calibration's first rounds, "
                                           f"probed again after the quota cells (another minute): {how}")


def _first_phase(resp: dict[str, Any]) -> _FirstPhase:
    """Page-size and co-runner axes and the planned quota levels, from the unthrottled cells only.

    Only those (noise included): the quota cells are probed at the levels planned here and under the THP
    policies kept here, so these decisions must be the same before and after the quota cells are measured. The
    axes a late look probed (:func:`_late_look`) are kept on all their rounds or on the late ones alone; the
    levels stay those the rounds before it planned, which the quota cells were probed at.
    """
    base, page, co = _axes(resp)
    plan_base, plan_page, plan_co = base, page, co
    if resp.get("late_look"):
        plan_base, plan_page, plan_co = _axes(before_late_look(resp))
        _, late_page, late_co = _axes(_late_rounds(resp))
        late = set(resp["late_look"].get("axes") or ())
        page = _said_late(page, plan_page, late_page) if "page-size" in late else page
        co = _said_late(co, plan_co, late_co) if "co-runner" in late else co
    others = [a for a in (plan_page, plan_co) if a.kept]
    effect = max((abs(a.effect_memory or 0.0) for a in others), default=0.0)
    if any(k["kept"] for k in (resp.get("knobs") or {}).get("knobs") or ()):  # a screening design: two levels
        n, effect = 2, max(effect, DESIGN_QUOTA_STEP)
    else:
        n = {0: 8, 1: 4}.get(len(others), 2)
    levels, step = quota_levels(effect, n, _noise_step(plan_base))
    return _FirstPhase(base, page, co, levels, step, n)


#: Factors a designed local fleet sets: up to 4 are a resolution IV fraction on 8 hosts (2^(4-1), D = ABC) whose
#: main effects are clear of two-factor interactions; 5 to 7 a resolution III fraction on 8 hosts and its fold-over
#: on 8 more, the second round's (each fingerprinted: twice the fingerprint time).
DESIGN_MAX_FACTORS = MAX_KNOBS
#: The designed fleet's low quota level slows CPU-bound work at least this much (log), so a CPU-bound version's
#: quota effect stands out of a fleet host's noise as clearly as the knobs' do.
DESIGN_QUOTA_STEP = math.log(1.5)

#: A quota level may cost at most this many times its nominal slowdown (log), beyond noise: over-proportional
#: throttling keeps the levels ordered (only further apart than planned) and is common on VMs; a step costing ~5x
#: lands a level beyond all the others.
MAX_GAIN = 2.0


def _period_check(cs: _Cells, period: int, thps: tuple[str, ...], step: float) -> dict[str, Any] | None:
    """Whether the quota at CFS ``period`` orders hosts as its levels say (None: no throttled cell measured).

    Per probed level, THP policy and probe, the log slowdown against the unthrottled cell of the same policy. A
    cell fails when its level collapses onto the one above (slowdown short of nominal by a whole step and by
    > 3 SE), when it costs more than :data:`MAX_GAIN` times its nominal (by > 3 SE), or when a lower quota slows the
    probe less than a higher one (by > 3 SE: the axis is not monotone). Only cells of the policies in ``thps``
    (the ones the fleet will use) can fail the period; the others' interaction is reported. The period also fails
    when the levels' pooled cost (least-squares slope of slowdown on nominal) exceeds :data:`MAX_GAIN`.
    """
    rows: list[dict[str, Any]] = []
    for q in sorted({int(c["quota_pct"]) for c in cs.cells if int(c["period_us"]) == period
                     and int(c["quota_pct"]) < 100 and c.get("corunner", "none") == "none"}, reverse=True):
        for thp in ("never", "always"):
            for probe in ("memory", "cpu"):
                e = _effect(cs, cs.find(quota=q, thp=thp, period=period), cs.find(thp=thp), probe)
                if e is None:
                    continue
                nominal = math.log(100 / q)
                why = []
                if nominal - e[0] > 3 * e[1] and nominal - e[0] >= step:
                    why.append("collapses onto the level above")
                if e[0] - MAX_GAIN * nominal > 3 * e[1]:
                    why.append(f"costs more than {MAX_GAIN:g}x its nominal")
                above = [r for r in rows if r["thp"] == thp and r["probe"] == probe]
                if above and above[-1]["slowdown"] - e[0] > 3 * math.hypot(e[1], above[-1]["se"]):
                    why.append(f"slows the probe less than {above[-1]['quota_pct']} %")
                rows.append({"quota_pct": q, "thp": thp, "probe": probe, "slowdown": e[0], "nominal": nominal,
                             "se": e[1], "error": abs(e[0] - nominal), "why": why,
                             "fails": bool(thp in thps and why)})
    if not rows:
        return None
    inter = []
    for q in {r["quota_pct"] for r in rows}:
        for probe in ("memory", "cpu"):
            s = {r["thp"]: r["slowdown"] for r in rows if r["quota_pct"] == q and r["probe"] == probe}
            if len(s) == 2:
                inter.append(abs(s["always"] - s["never"]))
    used = [r for r in rows if r["thp"] in thps] or rows
    # the cost of the levels in all (least squares through the origin of slowdown on nominal): on its own a cell's
    # ratio is noisy at small nominal steps, the pooled one is not; beyond MAX_GAIN the axis bends as a whole
    gain = sum(r["slowdown"] * r["nominal"] for r in used) / sum(r["nominal"] ** 2 for r in used)
    return {"period_us": period, "cells": rows, "mean_error": statistics.fmean(r["error"] for r in used),
            "max_error": max(r["error"] for r in used), "max_interaction": max(inter) if inter else None,
            "gain": gain, "passes": not any(r["fails"] for r in rows) and gain <= MAX_GAIN}


def _host_name(q: int | None, thp: str | None, co: bool, rep: int | None = None) -> str:
    parts = ["local"] + ([f"q{q}"] if q is not None else []) + ([{"never": "4k", "always": "thp"}[thp]] if thp else [])
    return "-".join(parts) + ("-co" if co else "") + (f"-r{rep}" if rep else "")


def choose(responses: dict[str, Any]) -> Choice:
    """Axis levels, CFS period and hosts of the local fleet from recorded probe responses (pure; see module doc).

    Parameters
    ----------
    responses : dict
        ``{"schema_version": 1, "cells": [{"quota_pct", "thp", "period_us", "corunner", "memory": [s, ...],
        "cpu": [s, ...]}, ...], "cell_se": {"memory": se, "cpu": se} (optional)}`` — probe wall times in seconds
        per emulated condition, as :func:`measure_responses` records them. ``cell_se`` replaces the noise
        estimate for responses recorded as one median per cell.

    Returns
    -------
    Choice

    Raises
    ------
    InventoryError
        Unknown schema version or no cells.
    """
    if responses.get("schema_version") != RESPONSES_SCHEMA:
        raise InventoryError(f"calibration responses have schema_version {responses.get('schema_version')!r}, this "
                             f"quiho reads {RESPONSES_SCHEMA}: record them again (bench/local_fleet_calibration.py)")
    cells = list(responses.get("cells") or [])
    if not cells:
        raise InventoryError("calibration responses hold no cells")
    first = _first_phase(responses)
    page, co, levels, step, wanted = first.page, first.co, first.levels, first.step, first.wanted
    cs = _Cells(responses, cells)
    thps = ("never", "always") if page.kept else ("never",)
    periods = {str(p): chk for p in sorted({int(c["period_us"]) for c in cells})
               if (chk := _period_check(cs, p, thps, step)) is not None}
    passing = [v for v in periods.values() if v["passes"]]
    best = min(passing, key=lambda v: v["mean_error"]) if passing else None
    desc = "; ".join(f"{int(v['period_us']) // 1000} ms: mean error {v['mean_error']:.1%}, worst "
                     f"{v['max_error']:.1%}, mean cost {v['gain']:.2f}x nominal"
                     + ("" if v["passes"] else " (fails: " + "; ".join(
                         ([f"costs {v['gain']:.2f}x nominal in all"] if v["gain"] > MAX_GAIN else []) + sorted({
                             f"{r['quota_pct']} % {r['probe']} {w}"
                             for r in v["cells"] if r["fails"] for w in r["why"]})) + ")") for v in periods.values())
    if best is not None:
        quota = AxisEffect("quota", True, None, None, None, None, tuple(str(q) for q in levels),
                           f"orders the hosts as its levels say at {int(best['period_us']) // 1000} ms periods "
                           f"(log slowdown vs nominal: {desc})")
    else:
        quota = AxisEffect("quota", False, None, None, None, None, (),
                           f"not usable at any probed period ({desc or 'no throttled cell measured'}): "
                           "a quota step would not cost what it says")
        levels = ()
    axes = (quota, page, co)
    warnings = []
    if levels and len(levels) < wanted:
        warnings.append(f"the probes' noise forces quota steps of {math.expm1(step):.0%}: only {len(levels)} of "
                        f"{wanted} levels fit above {MIN_QUOTA} % (calibrate again on a quieter machine)")
    load = responses.get("load_before_after") or []
    ncpu = int((responses.get("facts") or {}).get("vcpus") or 0)
    # the load before probing: while probing, the probes themselves keep one CPU busy (load ~1 on an idle box)
    if load and ncpu and load[0][0] > 0.5 * ncpu:
        warnings.append(f"the machine was busy when probed (1-min load average {load[0][0]:.1f} on "
                        f"{ncpu} CPUs): the noise, hence the levels, may reflect that load; rerun 'quiho fleet "
                        "calibrate --force' when it is quiet")
    screened = responses.get("knobs") or {}
    knobs = tuple(screened.get("knobs") or ())
    warnings += _corunner_warnings(co, knobs)
    kept = [a for a in axes if a.kept]
    if len(kept) < 2:
        warnings.append(f"the local fleet has {len(kept)} independent axis(es) on this machine "
                        f"({', '.join(a.name for a in kept) or 'none'}): its IRUPs will be weak (fewer than two)")
    hosts, design = _fleet_hosts(levels, page.kept, co.kept, knobs, warnings)
    return Choice(axes=axes, quota_levels=tuple(levels), period_us=int(best["period_us"]) if best else None,
                  step=step, noise={p: first.base.assumed.get(p, first.base.sd[p]) for p in first.base.sd},
                  periods=periods, hosts=hosts, warnings=tuple(warnings), knobs=knobs,
                  knob_notes=tuple(screened.get("notes") or ()), design=design)


def _corunner_warnings(co: AxisEffect, knobs: tuple[dict[str, Any], ...]) -> list[str]:
    """What the stream co-runner's effect on the CPU probe says about core sharing, kept or dropped."""
    out: list[str] = []
    sharing = next((k for k in knobs if k["name"] == "core-sharing" and k["kept"]), None)
    if sharing is not None and not co.kept and co.effect_cpu is not None and co.effect_cpu > 0:
        out.append(f"the stream co-runner slows the CPU probe {math.expm1(co.effect_cpu):+.0%} because the two "
                   f"CPUs share a core (a compute co-runner: {math.expm1(sharing['effect_probe']):+.0%}): on "
                   "this machine a co-runner measures core sharing, not memory bandwidth")
    if (co.kept and co.effect_cpu is not None and co.se_cpu is not None and co.effect_memory is not None
            and _moves((co.effect_cpu, co.se_cpu)) and co.effect_cpu * co.effect_memory > 0):
        out.append(f"the stream co-runner, kept for memory, also slows the CPU probe "
                   f"{effect_text((co.effect_cpu, co.se_cpu))}: the two CPUs share part of a core, so part of "
                   "what it does to a version is core sharing, not memory bandwidth")
    return out


def _fleet_hosts(levels: tuple[int, ...], page: bool, co: bool, knobs: tuple[dict[str, Any], ...],
                 warnings: list[str]) -> tuple[tuple[tuple[str, dict[str, Any]], ...], dict[str, Any] | None]:
    """The hosts and, where a knob was kept, their screening design; a factor left out is added to ``warnings``."""
    if not any(k["kept"] for k in knobs):
        return _hosts(levels, page, co), None
    factors, left_out = design_factors(levels[-1] if levels else None, page, co, knobs)
    hosts, kind = _design_hosts(factors)
    if left_out:
        warnings.append(f"a screening design takes {DESIGN_MAX_FACTORS} factors: {', '.join(left_out)} kept by its "
                        "probe but left out of the hosts")
    if co and any(k["kept"] and k["name"] == "core-sharing" for k in knobs):
        warnings.append("core-sharing kept by its probe but left out of the hosts: its compute co-runner would take "
                        "the other CPU, where the stream co-runner runs")
    return hosts, {"kind": kind, "factors": [f[0] for f in factors], "left_out": left_out}




def design_factors(quota: int | None, page: bool, co: bool, knobs: Iterable[dict[str, Any]],
                   ) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """The factors of a designed fleet, (name, host variable, on level), and the kept ones left out (pure).

    One factor per resource class first, in the order CPU (the quota), memory (huge pages, else the stream
    co-runner), storage, kernel entry, network, memory capacity; then a second memory axis and core sharing (a
    compute co-runner, only where the stream co-runner is not kept: both take the other CPU). At most
    :data:`DESIGN_MAX_FACTORS`.
    """
    kept = {k["name"]: k["level"] for k in knobs if k["kept"]}
    memory = [n for n, on in (("huge-pages", page), ("co-runner", co)) if on]
    order = ([("cpu-quota", quota)] if quota is not None and quota < 100 else []) + [(n, None) for n in memory[:1]]
    order += [(n, kept[n]) for n in ("storage", "kernel-entry", "network", "memory-capacity") if n in kept]
    order += [(n, None) for n in memory[1:]]
    if "core-sharing" in kept and not co:
        order.append(("core-sharing", None))
    out = [(n, FACTOR_BY_NAME[n].host_var, level if level is not None else FACTOR_BY_NAME[n].on)
           for n, level in order]
    return out[:DESIGN_MAX_FACTORS], [n for n, _v, _l in out[DESIGN_MAX_FACTORS:]]


def _design_hosts(factors: list[tuple[str, str, Any]]) -> tuple[tuple[tuple[str, dict[str, Any]], ...], str]:
    """The hosts of the screening design of ``factors`` (both rounds visit them all) and the design's kind."""
    design = screening_design([n for n, _v, _l in factors])
    out = []
    for host in design.hosts:  # round 1's hosts, then the fold-over's (a split design's round 2 only)
        v: dict[str, Any] = {"quiho_cpu_quota_pct": 100, "quiho_thp": "never", "quiho_corunner": "none"}
        for (fname, var, on), level in zip(factors, host.levels, strict=True):
            v[var] = on if level else FACTOR_BY_NAME[fname].off
        if design.split_rounds:
            v["quiho_design_rounds"] = list(host.rounds)
        rep = host.name.rsplit("-r", 1)[1] if re.search(r"-r\d+$", host.name) else None
        out.append((_design_host_name(v, rep), v))
    return tuple(out), design.kind


def _design_host_name(v: dict[str, Any], rep: str | None) -> str:
    """``local-q67-thp-io-sys``: the quota, the page size, each knob on (``co`` stream, ``sib`` compute co-runner)."""
    parts = ["local", f"q{v['quiho_cpu_quota_pct']}", "thp" if v["quiho_thp"] == "always" else "4k"]
    parts += [{"stream": "co", "cpu": "sib"}[v["quiho_corunner"]]] if v["quiho_corunner"] != "none" else []
    parts += [tag for var, tag in (("quiho_write_iops", "io"), ("quiho_syscall_rules", "sys"), ("quiho_net", "net"),
                                   ("quiho_mem_cache_mib", "mem"))
              if str(v.get(var, "0")) != "0"]
    return "-".join(parts) + (f"-r{rep}" if rep else "")


def _hosts(levels: tuple[int, ...], thp: bool, co: bool) -> tuple[tuple[str, dict[str, Any]], ...]:
    thps: tuple[str, ...] = ("never", "always") if thp else ("never",)
    cos = (False, True) if co else (False,)
    out = []
    if levels:
        for q in levels:
            for t in thps:
                for c in cos:
                    out.append((_host_name(q, t if thp else None, c),
                                _vars(q, t, c)))
        return tuple(out)
    # No quota axis: replicas of each remaining condition keep ≥ 8 hosts (the IRUP still sees only these groups).
    conds = [(t, c) for t in thps for c in cos]
    if len(conds) < 2:
        return ()
    reps = math.ceil(8 / len(conds))
    for t, c in conds:
        for r in range(1, reps + 1):
            out.append((_host_name(None, t if thp else None, c, r),
                        _vars(100, t, c)))
    return tuple(out)


def _vars(q: int, thp: str, co: bool) -> dict[str, Any]:
    return {"quiho_cpu_quota_pct": q, "quiho_thp": thp, "quiho_corunner": "stream" if co else "none"}


def load_responses(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read recorded probe responses (JSON) and check their version."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InventoryError(f"cannot read calibration responses {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != RESPONSES_SCHEMA:
        raise InventoryError(f"{path}: not calibration responses of schema_version {RESPONSES_SCHEMA}")
    facts = data.get("facts")
    if isinstance(facts, dict):  # recorded before the one machine-facts schema (quiho._facts)
        for old, new, scale in (("online_cpus", "vcpus", 1), ("mem_total_kb", "memtotal_mb", 1024)):
            if old in facts and new not in facts:
                facts[new] = int(facts.pop(old) or 0) // scale
    return data


# --- measuring -------------------------------------------------------------------------------


def measure_responses(runner: ProbeRunner, facts: dict[str, Any], reps: int = UNTHROTTLED_REPS,
                      screen: Callable[[bool], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run the probes (two phases: unthrottled page size and co-runner, then quota at the planned levels).

    ``screen`` (the knob catalogue's screening) runs between the two: a kept knob makes the fleet a screening
    design, whose quota has two levels, so the quota cells to probe depend on it. It is told whether the stream
    co-runner was kept (then core sharing, which would take the same CPU, is not probed).

    Cells are measured round-robin within each phase (:meth:`ProbeRunner.rounds`). The unthrottled cells get
    ``reps`` repetitions (they decide the noise, hence the quota step, and the page-size effect); the co-runner
    cell 4. The quota cells probed are the lowest and the middle of the levels the first
    phase implies with 4 KiB pages, and the lowest with huge pages when the page-size axis is kept, at every
    candidate period, with 3 repetitions (a median of 3 outlasts one outlying run under load). The caller holds
    the locks and cleans up.
    """
    resp: dict[str, Any] = {"schema_version": RESPONSES_SCHEMA, "facts": facts, "reps": reps, "cells": []}
    load0 = [round(x, 2) for x in os.getloadavg()]
    probes = ["memory", "cpu"]

    def run(cells: list[tuple[Cell, int]]) -> None:
        for (cell, _), res in zip(cells, runner.rounds(cells, probes), strict=True):
            resp["cells"].append({**asdict(cell), **res})

    thp_ok = {"never", "always"} <= set(facts.get("thp_modes") or [])
    unthrottled = [(Cell(100, "never"), reps)]
    if thp_ok:
        unthrottled.append((Cell(100, "always"), reps))
    if int(facts.get("vcpus") or 1) >= 2:
        unthrottled.append((Cell(100, "never", corunner="stream"), min(reps, 4)))
    run(unthrottled)
    _reprobe_undecided(runner, resp, unthrottled, probes, reps)
    if screen is not None:
        resp["knobs"] = screen(_first_phase(resp).co.kept)
    first = _first_phase(resp)
    levels = first.levels
    low, mid = levels[-1], levels[len(levels) // 2]
    cells = [(q, "never") for q in sorted({mid, low} - {100}, reverse=True)]
    if first.page.kept and low < 100:  # huge pages can cancel throttling on some VMs: one cell shows it
        cells.append((low, "always"))
    run([(Cell(q, t, period), min(reps, 3)) for period in PERIODS_US for q, t in cells])
    _late_look(runner, resp, unthrottled, probes, reps)
    resp["load_before_after"] = [load0, [round(x, 2) for x in os.getloadavg()]]
    resp["probe_runs"] = runner.runs
    return resp


#: The cell that probes each memory axis (the reference is ``Cell(100, "never")``).
_AXIS_CELL = {"page-size": Cell(100, "always"), "co-runner": Cell(100, "never", corunner="stream")}


def _more_rounds(runner: ProbeRunner, resp: dict[str, Any], axes: list[str], probes: list[str], reps: int) -> int:
    """``reps`` more rounds of the reference and the cells of ``axes``, appended to their rows so rounds still pair.

    A shorter cell is padded with ``None`` for the rounds it was not measured in. Returns the rounds before them.
    """
    cells = [(Cell(100, "never"), reps)] + [(_AXIS_CELL[n], reps) for n in axes]
    unthrottled = [c for c in resp["cells"] if int(c["quota_pct"]) == 100]
    stored = {json.dumps({k: c[k] for k in asdict(Cell())}, sort_keys=True): c for c in unthrottled}
    width = max(len(c.get("memory") or []) for c in unthrottled)
    for (cell, _), res in zip(cells, runner.rounds(cells, probes), strict=True):
        row = stored[json.dumps(asdict(cell), sort_keys=True)]
        for p in probes:
            row[p] = append_rounds(row.get(p), res[p], width)
    return width


def _reprobe_undecided(runner: ProbeRunner, resp: dict[str, Any], unthrottled: list[tuple[Cell, int]],
                       probes: list[str], reps: int) -> None:
    """Probe undecided memory axes (:func:`undecided`) again: ``reps`` rounds a batch, up to :data:`REPROBE_BATCHES`.

    A busy minute (the main job's own set-up) widens the noise, and "> 3 SE" then drops an axis the machine has.
    The new rounds measure the reference cell with the undecided ones (:func:`_more_rounds`); the rules then
    decide on all rounds, and an axis still undecided gets the next batch. ``resp["reprobed"]`` names the axes
    probed again, ``resp["reprobe_batches"]`` counts the batches, and ``resp["last_look"]`` names the axes the
    last allowed batch probed (decided at :data:`LAST_LOOK_SE`).
    """
    names: list[str] = []
    for batch in range(REPROBE_BATCHES):
        first = _first_phase(resp)
        todo = [a.name for a in (first.page, first.co) if undecided(a.effect_memory, a.kept, a.se_memory)
                and any(c == _AXIS_CELL[a.name] for c, _ in unthrottled)]
        if not todo:
            break
        runner.on_step(f"calibration: {', '.join(todo)} undecided within the noise: {reps} more rounds"
                       f"{batch_note(batch)}")
        _more_rounds(runner, resp, todo, probes, reps)
        names += [n for n in todo if n not in names]
        resp["reprobed"], resp["reprobe_batches"] = names, batch + 1
        if batch == REPROBE_BATCHES - 1:
            resp["last_look"] = todo


def _late_look(runner: ProbeRunner, resp: dict[str, Any], unthrottled: list[tuple[Cell, int]],
               probes: list[str], reps: int) -> None:
    """Each memory axis the rounds so far dropped, probed once more after the quota cells: ``reps`` rounds.

    A VM's co-runner reach comes and goes for tens of seconds at a time (docs/design.md), so the first rounds
    can all fall where it does nothing. An axis is then kept if all its rounds or the late ones alone show it
    (:func:`_first_phase`); the quota levels stay those the first rounds planned. ``resp["late_look"]``: the
    axes, the rounds before it and its seconds.
    """
    first = _first_phase(resp)
    todo = [a.name for a in (first.page, first.co) if not a.kept and a.effect_memory is not None
            and any(c == _AXIS_CELL[a.name] for c, _ in unthrottled)]
    if not todo:
        return
    runner.on_step(f"calibration: {', '.join(todo)} not shown in the first rounds: {reps} more rounds now, "
                   "after the quota cells (another minute)")
    t0 = time.monotonic()
    before = _more_rounds(runner, resp, todo, probes, reps)
    resp["late_look"] = {"axes": todo, "rounds_before": before, "seconds": round(time.monotonic() - t0, 1)}


# --- the generated inventory and the store ------------------------------------------------------


def inventory_text(choice: Choice, facts: dict[str, Any], key: str) -> str:
    """The generated inventory (YAML), with comments that state the measured effects."""
    lines = [
        "# Generated by quiho fleet calibrate: the local fleet calibrated to this machine (do not edit; rerun",
        "# 'quiho fleet calibrate --force' instead). inventories/local.yml documents the knobs.",
        f"# machine: {facts.get('cpu_model')!s}, {facts.get('vcpus')} CPUs, kernel {facts.get('kernel')}, "
        f"facts key {key[:16]}",
        f"# probe noise (SD of log time per run): memory {choice.noise.get('memory', 0):.1%}, "
        f"cpu {choice.noise.get('cpu', 0):.1%}; quota step {math.expm1(choice.step):.1%}",
    ]
    for a in choice.axes:
        lines.append(f"# {a.name}: {'kept' if a.kept else 'DROPPED'}: {a.reason}")
    for k in choice.knobs:
        lines.append(f"# knob {k['name']}: {'kept' if k['kept'] else 'DROPPED'}: {k['reason']}")
    lines += [f"# knob {n}" for n in choice.knob_notes]
    lines += [f"# warning: {w}" for w in choice.warnings]
    lines += ["all:", "  vars:", "    ansible_connection: local",
              '    ansible_python_interpreter: "{{ ansible_playbook_python }}"',
              f"    quiho_prefault_mib: {PREFAULT_MIB}"]
    if choice.period_us:
        lines.append(f"    quiho_cfs_period_us: {choice.period_us}")
    lines += ["  children:", "    local:", "      hosts:"]
    for name, v in choice.hosts:
        # strings quoted: YAML 1.1 (Ansible's) reads an unquoted 254:0:50 as a base-60 integer
        body = ", ".join(f"{k}: {json.dumps(val) if isinstance(val, str) and ':' in val else val}"
                         for k, val in v.items() if not (k == "quiho_corunner" and val == "none"))
        lines.append(f"        {name}: {{{body}}}")
    return "\n".join(lines) + "\n"


def _inventory_path(store: Store, key: str) -> Path:
    return Path(store.path).resolve().parent / f"local-fleet-{key[:8]}.yml"


def _from_row(row: dict[str, Any], reused: bool, probe_runs: int = 0) -> Calibration:
    return Calibration(row_id=int(row["id"]), facts_key=row["facts_key"], facts=row["facts"],
                       choice=row["result"]["choice"], inventory=row["inventory"], elapsed_s=float(row["elapsed_s"]),
                       reused=reused, probe_runs=probe_runs, created_at=row["created_at"],
                       responses=row["result"].get("responses", {}))


def calibrate(
    store: Store, *, force: bool = False, facts: dict[str, Any] | None = None, reps: int = UNTHROTTLED_REPS,
    on_step: Callable[[str], None] | None = None, knobs: bool = True, knob_reps: int = KNOB_REPS,
) -> Calibration:
    """The local fleet's calibration for this machine: the stored one while the facts are the same, else probe.

    Parameters
    ----------
    store : Store
        Where the calibration row lives; the inventory is written next to the store file.
    force : bool, default False
        Probe again even if a calibration for these facts exists.
    facts : dict, optional
        Machine facts (default :func:`quiho.fleet.local.probes.machine_facts`); tests inject changed ones.
    reps : int, default :data:`UNTHROTTLED_REPS`
        Repetitions per probe in the unthrottled cells (see :func:`measure_responses`).
    on_step : callable, optional
        One line per probed cell (progress).
    knobs : bool, default True
        Also screen the knob catalogue (:func:`quiho.fleet.local.knobs.screen_knobs`, ``knob_reps`` rounds); a
        stored calibration without it is probed again. A kept knob makes the hosts a screening design
        (:func:`design_factors`); False keeps the quota x page size x co-runner grid.

    Returns
    -------
    Calibration
        ``reused`` True when nothing was probed (``probe_runs`` 0).

    Raises
    ------
    InventoryError
        Not root, no cgroup v1 cpu controller, no stress-ng, or a probe failed (cgroups and THP are restored).
    """
    facts = facts if facts is not None else machine_facts()
    key = facts_key(facts)
    row = latest_calibration(store, key)
    if row is not None and not force and not (knobs and "knobs" not in row["result"]["choice"]):
        path, text = Path(row["inventory"]), str(row["result"].get("inventory_text") or "")
        if text and not path.exists():  # the file went away: write it again from the row, no probing
            path.write_text(text)
        return _from_row(row, reused=True)
    require_root()
    from quiho._version import __version__

    runner = ProbeRunner(f"quiho-cal-{os.getpid()}", PREFAULT_MIB, on_step)
    _say_if_busy(on_step)
    with measuring(store, "quiho fleet calibrate"), local_fleet_lock():
        t0 = time.monotonic()  # the calibration's own time, not the wait for the locks
        try:
            screen = None
            if knobs:
                def screen(stream_kept: bool) -> dict[str, Any]:
                    Path(REMOTE_BASE).mkdir(mode=0o700, parents=True, exist_ok=True)
                    runner.workdir = REMOTE_BASE  # the storage probe writes where the fleet's applications run
                    return screen_knobs(runner, REMOTE_BASE, int(facts.get("vcpus") or 1), knob_reps, on_step,
                                        stream_kept)
            responses = measure_responses(runner, facts, reps, screen)
        finally:
            runner.cleanup()
    elapsed = time.monotonic() - t0
    responses["elapsed_s"] = elapsed
    choice = choose(responses)
    if on_step is not None:  # the axes' verdicts, as the knobs' were said when screened
        for a in choice.axes:
            on_step(f"calibration: {a.name}: {'kept' if a.kept else 'dropped'}: {a.reason}")
    path = _inventory_path(store, key)
    text = inventory_text(choice, facts, key)
    if choice.hosts:
        path.write_text(text)
    rid = save_calibration(
        store, facts_key=key, facts=facts,
        result={"choice": choice.to_dict(), "responses": responses, "inventory_text": text if choice.hosts else ""},
        inventory=str(path), elapsed_s=elapsed, schema_version=RESULT_SCHEMA, quiho_version=__version__)
    row = latest_calibration(store, key)
    assert row is not None and int(row["id"]) == rid
    return _from_row(row, reused=False, probe_runs=runner.runs)


def _say_if_busy(on_step: Callable[[str], None] | None) -> None:
    """Tell ``on_step`` when another local-fleet measurement holds the machine-wide lock (the wait is silent)."""
    try:
        with local_fleet_lock(blocking=False):
            return
    except BlockingIOError:
        if on_step is not None:
            on_step("calibration: waiting for another local-fleet measurement on this machine to finish")


@dataclass(frozen=True)
class ResolvedFleet:
    """The inventory a command runs on and, for the calibrated local fleet, along how many axes its hosts differ.

    ``axes`` None: an inventory given as is (its hosts' calibration, if any, is looked up where it matters).
    """

    inventory: str | os.PathLike[str]
    axes: int | None = None


def resolve_fleet(
    inventory: str | os.PathLike[str] | None, store: Store, on_step: Callable[[str], None] | None = None,
) -> ResolvedFleet:
    """``inventory`` if given; else the calibrated local fleet (calibrating first if needed) and its axes kept.

    The one place "no inventory" becomes the local fleet calibrated to this machine.

    Raises
    ------
    InventoryError
        The calibration cannot run (not root ...) or kept no axis: the machine cannot emulate distinct hosts.
    """
    if inventory is not None:
        return ResolvedFleet(inventory)
    cal = calibrated_fleet(store, on_step)
    return ResolvedFleet(cal.inventory, axes_kept(cal.choice))


def resolve_inventory(
    inventory: str | os.PathLike[str] | None, store: Store, on_step: Callable[[str], None] | None = None,
) -> str | os.PathLike[str]:
    """``inventory`` if given; else the calibrated local fleet's inventory (:func:`resolve_fleet`).

    Raises
    ------
    InventoryError
        The calibration cannot run (not root ...) or kept no axis: the machine cannot emulate distinct hosts.
    """
    return resolve_fleet(inventory, store, on_step).inventory


def calibrated_fleet(store: Store, on_step: Callable[[str], None] | None = None) -> Calibration:
    """The calibration whose inventory is the default local fleet (calibrating first if needed), warnings said.

    Raises
    ------
    InventoryError
        The calibration cannot run (not root ...) or kept no axis: the machine cannot emulate distinct hosts.
    """
    cal = calibrate(store, on_step=on_step)
    step = on_step or (lambda _m: None)
    if not cal.choice.get("hosts"):
        dropped = "; ".join(f"{a['name']}: {a['reason']}" for a in cal.choice["axes"])
        raise InventoryError("the local fleet cannot emulate distinct machines here (calibration "
                             f"{cal.row_id}: {dropped}); pass -i with an inventory of real hosts")
    for w in cal.choice.get("warnings") or []:
        step(f"warning: {w}")
    return cal
