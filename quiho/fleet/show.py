"""What the store knows about the fleet: hosts, groups, last fingerprint and its age; the local fleet's calibration."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from quiho._text import printable
from quiho.fleet.local.knobs import effect_text
from quiho.store import Store
from quiho.store.calibrations import latest_calibration
from quiho.store.hosts import fleet_hosts

__all__ = ["FleetHostInfo", "calibration_info", "calibration_lines", "fleet_show", "show_lines"]


@dataclass(frozen=True)
class FleetHostInfo:
    """One host as ``quiho fleet show`` prints it."""

    name: str
    groups: tuple[str, ...]
    inventory: str | None
    last_fingerprint: str | None
    last_status: str | None
    age_s: float | None
    ok: int
    failed: int
    facts: dict[str, Any]


def fleet_show(store: Store, inventory: str | None = None) -> list[FleetHostInfo]:
    """Every host seen by a fleet run (optionally only those of ``inventory``) with its newest fingerprint."""
    now = datetime.now(UTC)
    out = []
    for r in fleet_hosts(store, inventory):
        last = r["last"]
        age = (now - datetime.fromisoformat(last["t"])).total_seconds() if last and last["t"] else None
        out.append(
            FleetHostInfo(
                name=r["name"],
                groups=tuple(json.loads(r["groups_json"] or "[]")),
                inventory=r["inventory"],
                last_fingerprint=last["batch"] if last else None,
                last_status=last["status"] if last else None,
                age_s=age,
                ok=int(last["ok"] or 0) if last else 0,
                failed=int(last["failed"] or 0) if last else 0,
                facts=json.loads(r["facts_json"] or "{}"),
            )
        )
    return out


def show_lines(hosts: list[FleetHostInfo]) -> list[str]:
    """The terminal text of ``quiho fleet show`` (names escaped with :func:`quiho._text.printable`)."""
    if not hosts:
        return ["no fleet hosts yet: run 'quiho fingerprint'"]
    out = []
    for h in hosts:
        age = f"{h.age_s / 3600:.1f} h ago" if h.age_s is not None else "never"
        cpu = printable(h.facts.get("cpu_model") or "?")
        out.append(f"{printable(h.name):24} groups {printable(','.join(h.groups)) or '-':14} last fingerprint "
                   f"{h.last_fingerprint or '-'} ({h.last_status or '-'}, {age}, ok {h.ok}, failed {h.failed})  {cpu}")
    return out


def calibration_info(store: Store) -> dict[str, Any] | None:
    """The newest local-fleet calibration in the store, as ``quiho fleet show --json`` gives it (None: none yet)."""
    row = latest_calibration(store)
    if row is None:
        return None
    choice = row["result"]["choice"]
    return {"id": int(row["id"]), "facts_key": row["facts_key"], "facts": row["facts"], "created_at": row["created_at"],
            "elapsed_s": float(row["elapsed_s"]), "inventory": row["inventory"],
            "quota_levels": choice["quota_levels"], "period_us": choice["period_us"], "kept": choice["kept"],
            "axes": choice["axes"], "noise": choice["noise"], "warnings": choice["warnings"],
            "hosts": [h["name"] for h in choice["hosts"]],
            **({"knobs": choice["knobs"], "knob_notes": choice["knob_notes"]} if "knobs" in choice else {}),
            **({"design": choice["design"]} if choice.get("design") else {})}


def _pct(effect: float | None, se: float | None) -> str:
    return "-" if effect is None else effect_text((effect, se or 0.0))


def calibration_lines(cal: dict[str, Any] | None) -> list[str]:
    """Terminal text of the local fleet's calibration: levels, period, each axis's measured effect (in SEs)."""
    if cal is None:
        return ["local fleet: not calibrated yet (quiho fleet calibrate; done before the first local run)"]
    period = f"{cal['period_us'] / 1000:g} ms CFS period" if cal["period_us"] else "no quota"
    out = [f"local fleet calibration {cal['id']} ({printable(cal['created_at'])}, {cal['elapsed_s']:.0f} s, "
           f"{printable(str(cal['facts'].get('cpu_model') or '?'))}): "
           f"quota levels {'/'.join(str(q) for q in cal['quota_levels']) or '-'}, {period}, "
           f"{len(cal['hosts'])} hosts",
           f"  inventory {printable(cal['inventory'])}"]
    for a in cal["axes"]:
        levels = "/".join(a["levels"]) if a["levels"] else "-"
        out.append(f"  {a['name']:10} {'kept' if a['kept'] else 'dropped':8} levels {levels:18} "
                   f"memory probe {_pct(a['effect_memory'], a['se_memory']):16} "
                   f"CPU probe {_pct(a['effect_cpu'], a['se_cpu']):16}")
        out.append(f"    {printable(a['reason'])}")
    for k in cal.get("knobs") or []:
        level = printable(k["level"]) or "-"
        out.append(f"  knob {k['name']:13} {'kept' if k['kept'] else 'dropped':8} level {level:14} "
                   f"own probe {_pct(k['effect_probe'], k['se_probe']):16} "
                   f"CPU probe {_pct(k['effect_cpu'], k['se_cpu'])}")
        out.append(f"    {printable(k['reason'])}")
    out += [f"  knob {printable(n)}" for n in cal.get("knob_notes") or []]
    if cal.get("design"):
        d = cal["design"]
        out.append(f"  hosts: {printable(d['kind'])} of {', '.join(map(printable, d['factors']))}"
                   + (f"; left out: {', '.join(map(printable, d['left_out']))}" if d.get("left_out") else ""))
    out += [f"  warning: {printable(w)}" for w in cal["warnings"]]
    return out
