"""Store helpers shared by fleet fingerprints and application runs."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from quiho.fleet.inventory import FleetHost, Inventory
from quiho.store._db import Store, dumps, utcnow


def host_id(conn: sqlite3.Connection, name: str, facts: dict[str, Any] | None = None) -> int:
    """Id of host ``name``, created if new; ``facts`` (if given) are merged into ``facts_json``."""
    row = conn.execute("SELECT id, facts_json FROM hosts WHERE name = ?", (name,)).fetchone()
    if row is None:
        cur = conn.execute(
            "INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?)", (name, dumps(facts or {}), utcnow())
        )
        return int(cur.lastrowid or 0)
    if facts:
        merged = {**json.loads(row["facts_json"] or "{}"), **facts}
        conn.execute("UPDATE hosts SET facts_json = ? WHERE id = ?", (dumps(merged), row["id"]))
    return int(row["id"])


def remember_hosts(store: Store, inv: Inventory) -> dict[str, int]:
    """Record every inventory host with its groups and quiho variables; return name → id."""
    ids = {}
    with store.transaction() as conn:
        for h in inv.hosts:
            hid = host_id(conn, h.name)
            ids[h.name] = hid
            conn.execute(
                "INSERT INTO fleet_hosts(host_id, inventory, groups_json, vars_json, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(host_id) DO UPDATE SET inventory=excluded.inventory, groups_json=excluded.groups_json, "
                "vars_json=excluded.vars_json, updated_at=excluded.updated_at",
                (hid, inv.path, dumps(list(h.groups)), dumps(_host_vars(h)), utcnow()),
            )
    return ids


def _host_vars(h: FleetHost) -> dict[str, Any]:
    return {"connection": h.connection, "address": h.address, "cpu_quota_pct": h.cpu_quota_pct,
            "corunner": h.corunner, "thp": h.thp}


def set_host_status(
    conn: sqlite3.Connection, kind: str, batch: str, hid: int, status: str, reason: str | None
) -> None:
    """Upsert the status of one host in one fleet run (attempts counts invocations)."""
    conn.execute(
        "INSERT INTO fleet_host_status(kind, batch, host_id, status, reason, attempts, updated_at) "
        "VALUES (?,?,?,?,?,1,?) ON CONFLICT(kind, batch, host_id) DO UPDATE SET status=excluded.status, "
        "reason=excluded.reason, attempts=fleet_host_status.attempts+1, updated_at=excluded.updated_at",
        (kind, batch, hid, status, reason, utcnow()),
    )


def parse_facts(stdout: str) -> dict[str, Any]:
    """The machine metadata printed by the playbooks' ``quiho facts`` task (``key=value`` lines)."""
    raw = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    facts: dict[str, Any] = {
        "stress_ng_version": raw.get("stress_ng") or None,
        "cpu_model": raw.get("cpu_model") or None,
        "kernel": raw.get("kernel") or None,
        "arch": raw.get("arch") or None,
        "os": raw.get("os") or None,
        "l3_cache": raw.get("l3") or None,
    }
    for key, src, scale in (("vcpus", "vcpus", 1), ("cores", "cores", 1), ("memtotal_mb", "mem_kb", 1024)):
        try:
            facts[key] = int(raw.get(src, "")) // scale
        except ValueError:
            facts[key] = None
    return facts
