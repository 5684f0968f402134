"""What the store knows about the fleet: hosts, groups, last fingerprint and its age."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from quiho.store._db import Store

__all__ = ["FleetHostInfo", "fleet_show"]


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
    """Every host seen by a fleet run (optionally only those of ``inventory``), newest fingerprint first."""
    rows = store.conn.execute(
        "SELECT h.id, h.name, h.facts_json, f.inventory, f.groups_json FROM hosts h "
        "JOIN fleet_hosts f ON f.host_id = h.id ORDER BY h.name"
    ).fetchall()
    now = datetime.now(UTC)
    out = []
    for r in rows:
        if inventory is not None and r["inventory"] != inventory:
            continue
        last = store.conn.execute(
            "SELECT fr.batch, fr.status, COALESCE(fr.finished_at, fr.started_at) AS t, "
            "SUM(m.status='ok') AS ok, SUM(m.status='failed') AS failed FROM fingerprint_runs fr "
            "JOIN measurements m ON m.run_id = fr.id AND m.host_id = ? WHERE fr.source='fleet' "
            "GROUP BY fr.id ORDER BY fr.started_at DESC, fr.id DESC LIMIT 1",
            (r["id"],),
        ).fetchone()
        age = None
        if last is not None and last["t"]:
            age = (now - datetime.fromisoformat(last["t"])).total_seconds()
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
