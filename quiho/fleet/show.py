"""What the store knows about the fleet: hosts, groups, last fingerprint and its age."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from quiho._text import printable
from quiho.store import Store
from quiho.store import fleet as fleet_store

__all__ = ["FleetHostInfo", "fleet_show", "show_lines"]


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
    for r in fleet_store.fleet_hosts(store, inventory):
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
