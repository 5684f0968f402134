"""The factors of a designed fleet: which known conditions each host was measured under.

A designed fleet is one whose hosts differ by conditions quiho knows, because it set them (the calibrated local
fleet's CPU quota, page size and co-runner) or because the inventory says so (``quiho_factors``). Each factor is
coded on [0, 1] between its reference and its far level, so a fitted coefficient is the factor's whole effect.
A factor is left out, with a one-line note, when it does not vary, when a host has no value for it, or when the
hosts vary it together with factors already in (confounded): its effect could not be told from theirs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiho._factors import FACTOR_BY_NAME, FACTORS

__all__ = ["Factor", "FactorTable", "factor_table", "local_fleet_vars", "KNOB_FACTORS"]

#: The local fleet's emulation knobs as factors: host variable -> (factor name, what it emulates).
KNOB_FACTORS: dict[str, tuple[str, str]] = {f.host_var: (f.name, f.label) for f in FACTORS if f.name != "core-sharing"}
#: A compute co-runner (``quiho_corunner: cpu``) is the core-sharing knob, not a memory co-runner: its own factor.
CORE_SHARING = (FACTOR_BY_NAME["core-sharing"].name, FACTOR_BY_NAME["core-sharing"].label)


@dataclass(frozen=True)
class Factor:
    """One factor: its name, the levels it was coded between and each host's coded value (0 = reference)."""

    name: str
    label: str
    reference: str
    far: str
    values: Mapping[str, float]

    def describe(self) -> str:
        """``"CPU quota 100 % → 68 %"``: what a coefficient of this factor compares."""
        return f"{self.label} {self.reference} → {self.far}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"name": self.name, "label": self.label, "reference": self.reference, "far": self.far,
                "values": {h: round(v, 6) for h, v in sorted(self.values.items())}}


@dataclass(frozen=True)
class FactorTable:
    """The factors kept for a set of hosts, and why any other factor was left out."""

    factors: tuple[Factor, ...]
    hosts: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.factors)

    @property
    def names(self) -> list[str]:
        """Names of the kept factors, in order."""
        return [f.name for f in self.factors]

    def matrix(self, hosts: list[str] | np.ndarray) -> np.ndarray:
        """Coded values, one row per entry of ``hosts`` and one column per factor."""
        return np.array([[f.values[str(h)] for f in self.factors] for h in hosts], dtype=float).reshape(
            len(hosts), len(self.factors))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"factors": [f.to_dict() for f in self.factors], "hosts": list(self.hosts), "notes": list(self.notes)}


def local_fleet_vars(host_vars: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each host's design variables: its emulation knobs (``quiho_cpu_quota_pct`` ...) and ``quiho_factors``.

    ``host_vars`` maps a host name to its inventory variables (with or without the ``quiho_`` prefix for the
    knobs). A knob at one level on every host is not a factor and is not returned.
    """
    out: dict[str, dict[str, Any]] = {}
    for host, hv in host_vars.items():
        row: dict[str, Any] = {}
        for var, (name, _label) in KNOB_FACTORS.items():
            short = var.removeprefix("quiho_")
            val = hv.get(var, hv.get(short))
            if val is not None:
                row[name] = val
        if "co-runner" in row:
            sharing = str(row["co-runner"]) == "cpu"
            row[CORE_SHARING[0]] = "cpu" if sharing else "none"
            if sharing:
                row["co-runner"] = "none"
        for name, val in (hv.get("quiho_factors") or hv.get("factors") or {}).items():
            row[str(name)] = val
        out[str(host)] = row
    # a knob every host leaves at one level is not a factor of this fleet (the calibration did not use it)
    for name, _label in [*KNOB_FACTORS.values(), CORE_SHARING]:
        levels = {str(r.get(name)) for r in out.values()}
        if len(levels) == 1:
            for r in out.values():
                r.pop(name, None)
    return out


def _code_quota(values: dict[str, Any]) -> tuple[dict[str, float], str, str]:
    """Quota levels as log(100/q) / log(100/q_min): 0 at the highest level, 1 at the lowest (time scales as 1/q)."""
    q = {h: float(v) for h, v in values.items()}
    hi, lo = max(q.values()), min(q.values())
    span = math.log(hi / lo) if lo > 0 and hi > lo else 1.0
    return {h: math.log(hi / v) / span for h, v in q.items()}, f"{hi:g} %", f"{lo:g} %"


_REFERENCE_LEVELS = ("none", "never", "off", "no", "false", "0")


def _code(name: str, values: dict[str, Any]) -> list[tuple[str, dict[str, float], str, str, str]]:
    """Coded columns of one factor: (column name, values, label, reference, far); several for a many-level factor."""
    label = next((lab for n, lab in [*KNOB_FACTORS.values(), CORE_SHARING] if n == name), name)
    if name == "cpu-quota":
        coded, ref, far = _code_quota(values)
        return [(name, coded, label, ref, far)]
    try:
        num = {h: float(v) for h, v in values.items()}
    except (TypeError, ValueError):
        num = None
    if num is not None and len(set(num.values())) > 2:
        lo, hi = min(num.values()), max(num.values())
        return [(name, {h: (v - lo) / (hi - lo) for h, v in num.items()}, label, f"{lo:g}", f"{hi:g}")]
    levels = sorted({str(v) for v in values.values()}, key=lambda s: (s.lower() not in _REFERENCE_LEVELS, s))
    ref = levels[0]
    cols = []
    for lev in levels[1:]:
        col = name if len(levels) == 2 else f"{name}={lev}"
        lab = label if len(levels) == 2 else f"{label} {lev}"
        cols.append((col, {h: float(str(v) == lev) for h, v in values.items()}, lab, ref, lev))
    return cols


def _checked(raw: dict[str, dict[str, float]], hosts: list[str]) -> tuple[list[tuple[str, dict[str, float]]],
                                                                          list[str]]:
    """Keep the columns that vary, cover every host and are not in the span of those kept before them."""
    kept: list[tuple[str, dict[str, float]]] = []
    notes: list[str] = []
    for name, vals in raw.items():
        missing = [h for h in hosts if h not in vals]
        if missing:
            notes.append(f"factor {name}: host(s) {', '.join(missing[:3])} have no value; left out")
            continue
        col = np.array([vals[h] for h in hosts])
        if np.ptp(col) == 0:
            notes.append(f"factor {name} does not vary over these hosts; left out")
            continue
        base = np.column_stack([np.ones(len(hosts))] + [[v[h] for h in hosts] for _, v in kept])
        resid = col - base @ np.linalg.lstsq(base, col, rcond=None)[0]
        if float(np.linalg.norm(resid)) < 1e-9 * max(1.0, float(np.linalg.norm(col))):
            others = [n for n, v in kept if abs(np.corrcoef(col, [v[h] for h in hosts])[0, 1]) > 0.5] or \
                     [n for n, _ in kept]
            notes.append(f"factor {name} is confounded with {', '.join(others)} (the hosts vary them together): "
                         "its effect cannot be told apart; left out")
            continue
        kept.append((name, vals))
    return kept, notes


def factor_table(design_vars: Mapping[str, Mapping[str, Any]], hosts: list[str] | None = None) -> FactorTable:
    """The factors of ``hosts`` from their design variables (:func:`local_fleet_vars`), coded and checked.

    Parameters
    ----------
    design_vars : mapping
        Host name -> {factor name: level}. Levels are numbers (coded linearly between min and max; the CPU
        quota in log time) or labels (two levels: an indicator of the non-reference one; more: one indicator
        per non-reference level). Reference level: ``none``/``never``/``off``/``0`` when present, else the
        first in sort order.
    hosts : list of str, optional
        The hosts to code (default: all of ``design_vars``); a host absent from ``design_vars`` has no values.

    Returns
    -------
    FactorTable
        Empty (falsy) when no factor is left; its ``notes`` say why each factor was left out.
    """
    hosts = sorted(hosts if hosts is not None else design_vars)
    names = list(dict.fromkeys(n for h in hosts for n in (design_vars.get(h) or {})))
    cols: dict[str, dict[str, float]] = {}
    meta: dict[str, tuple[str, str, str]] = {}
    notes: list[str] = []
    for name in names:
        values = {h: design_vars[h][name] for h in hosts if name in (design_vars.get(h) or {})}
        if len(values) < len(hosts):
            missing = [h for h in hosts if h not in values]
            notes.append(f"factor {name}: host(s) {', '.join(missing[:3])} have no value; left out")
            continue
        if len({str(v) for v in values.values()}) < 2:
            notes.append(f"factor {name} does not vary over these hosts; left out")
            continue
        for col, coded, label, ref, far in _code(name, values):
            cols[col] = coded
            meta[col] = (label, ref, far)
    kept, more = _checked(cols, hosts)
    factors = tuple(Factor(n, *meta[n], values=v) for n, v in kept)
    return FactorTable(factors, tuple(hosts), tuple(notes + more))
