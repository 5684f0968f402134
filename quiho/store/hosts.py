"""Store queries of hosts: the ``hosts`` table, the inventory a fleet saw them in, how their part of a fleet run went.

A host is one row of ``hosts`` however many runs measured it: every module that records a host goes through
:func:`host_id` or :func:`ensure_hosts`, so a name never gets two ids. ``fleet_hosts`` holds a host's inventory,
groups and quiho variables; ``fleet_host_status`` one status per host and fleet run, so a resume knows what to rerun.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from quiho.store._db import Connection, Store, dumps, insert_id, utcnow

__all__ = ["host_id", "ensure_hosts", "remember_hosts", "fleet_hosts", "set_host_status", "host_names_like"]


def host_id(conn: Connection, name: str, facts: dict[str, Any] | None = None) -> int:
    """Id of host ``name``, created if new; ``facts`` (if given) are merged into ``facts_json``."""
    row = conn.execute("SELECT id, facts_json FROM hosts WHERE name = ?", (name,)).fetchone()
    if row is None:
        return insert_id(conn, "INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?) RETURNING id",
                         (name, dumps(facts or {}), utcnow()))
    if facts:
        merged = {**json.loads(row["facts_json"] or "{}"), **facts}
        conn.execute("UPDATE hosts SET facts_json = ? WHERE id = ?", (dumps(merged), row["id"]))
    return int(row["id"])


def ensure_hosts(conn: Connection, facts: Mapping[str, Mapping[str, Any]], now: str | None = None) -> dict[str, int]:
    """Ids of the named hosts; a new host is created with its facts (at ``now``), a known one is left as it is."""
    now = now or utcnow()
    ids: dict[str, int] = {}
    for name in sorted(facts):
        conn.execute("INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING",
                     (name, dumps(dict(facts[name])), now))
        ids[name] = int(conn.execute("SELECT id FROM hosts WHERE name = ?", (name,)).fetchone()[0])
    return ids


def remember_hosts(
    store: Store, inventory: str, hosts: Iterable[tuple[str, list[str], dict[str, Any]]]
) -> dict[str, int]:
    """Record hosts (name, groups, quiho variables) of ``inventory``; return name → id."""
    ids = {}
    with store.transaction() as conn:
        for name, groups, host_vars in hosts:
            hid = host_id(conn, name)
            ids[name] = hid
            conn.execute(
                "INSERT INTO fleet_hosts(host_id, inventory, groups_json, vars_json, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(host_id) DO UPDATE SET inventory=excluded.inventory, groups_json=excluded.groups_json, "
                "vars_json=excluded.vars_json, updated_at=excluded.updated_at",
                (hid, inventory, dumps(list(groups)), dumps(host_vars), utcnow()),
            )
    return ids


def fleet_hosts(store: Store, inventory: str | None = None) -> list[dict[str, Any]]:
    """Hosts seen by a fleet run (of ``inventory``, if given), by name, each with its newest fleet fingerprint.

    ``last`` is that run's batch, status, time ``t`` and ok/failed counts, or None.
    """
    rows = store.conn.execute(
        "SELECT h.id, h.name, h.facts_json, f.inventory, f.groups_json FROM hosts h "
        "JOIN fleet_hosts f ON f.host_id = h.id ORDER BY h.name"
    ).fetchall()
    out = []
    for r in rows:
        if inventory is not None and r["inventory"] != inventory:
            continue
        last = store.conn.execute(
            "SELECT fr.batch, fr.status, COALESCE(fr.finished_at, fr.started_at) AS t, "
            "SUM(CASE WHEN m.status='ok' THEN 1 ELSE 0 END) AS ok, "
            "SUM(CASE WHEN m.status='failed' THEN 1 ELSE 0 END) AS failed FROM fingerprint_runs fr "
            "JOIN measurements m ON m.run_id = fr.id AND m.host_id = ? WHERE fr.source='fleet' "
            "GROUP BY fr.id ORDER BY fr.started_at DESC, fr.id DESC LIMIT 1",
            (r["id"],),
        ).fetchone()
        out.append({**dict(r), "last": dict(last) if last else None})
    return out


def set_host_status(
    conn: Connection, kind: str, batch: str, hid: int, status: str, reason: str | None
) -> None:
    """Upsert the status of one host in one fleet run (attempts counts invocations)."""
    conn.execute(
        "INSERT INTO fleet_host_status(kind, batch, host_id, status, reason, attempts, updated_at) "
        "VALUES (?,?,?,?,?,1,?) ON CONFLICT(kind, batch, host_id) DO UPDATE SET status=excluded.status, "
        "reason=excluded.reason, attempts=fleet_host_status.attempts+1, updated_at=excluded.updated_at",
        (kind, batch, hid, status, reason, utcnow()),
    )


def host_names_like(store: Store, text: str, limit: int = 8) -> list[str]:
    """Up to ``limit`` host names containing ``text`` (for 'did you mean' messages)."""
    return [str(r[0]) for r in store.conn.execute(
        "SELECT name FROM hosts WHERE name LIKE '%' || ? || '%' ORDER BY name LIMIT ?", (text, limit))]
