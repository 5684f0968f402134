"""Store queries of local-fleet calibrations: one ``fleet_calibrations`` row per probing, keyed by the machine facts.

Rows are only added, so the newest row for a facts key is the calibration that holds (an older one stays as the
record of what was chosen before).
"""

from __future__ import annotations

import json
from typing import Any

from quiho.store._db import Store, dumps, insert_id, utcnow

__all__ = ["save_calibration", "calibration_for_hosts", "latest_calibration"]


def save_calibration(
    store: Store, *, facts_key: str, facts: dict[str, Any], result: dict[str, Any], inventory: str,
    elapsed_s: float, schema_version: int, quiho_version: str,
) -> int:
    """Insert one ``fleet_calibrations`` row (the local fleet's probing on one machine); return its id."""
    with store.transaction() as c:
        cid = insert_id(
            c, "INSERT INTO fleet_calibrations(facts_key, facts_json, result_json, inventory, elapsed_s, "
            "schema_version, created_at, quiho_version) VALUES (?,?,?,?,?,?,?,?) RETURNING id",
            (facts_key, dumps(facts), dumps(result), inventory, float(elapsed_s), schema_version, utcnow(),
             quiho_version),
        )
    return cid


def _calibration_row(row: Any) -> dict[str, Any]:
    out = dict(row)
    out["facts"] = json.loads(out.pop("facts_json"))
    out["result"] = json.loads(out.pop("result_json"))
    return out


def calibration_for_hosts(store: Store, hosts: set[str]) -> dict[str, Any] | None:
    """The newest calibration row whose generated fleet has exactly these host names (None: no such row)."""
    for row in store.conn.execute("SELECT * FROM fleet_calibrations ORDER BY id DESC"):
        cal = _calibration_row(row)
        if {h["name"] for h in cal["result"].get("choice", {}).get("hosts") or []} == hosts:
            return cal
    return None


def latest_calibration(store: Store, facts_key: str | None = None) -> dict[str, Any] | None:
    """The newest calibration row (for ``facts_key``, if given) as a dict with parsed ``facts``/``result``, or None."""
    q = "SELECT * FROM fleet_calibrations" + (" WHERE facts_key = ?" if facts_key else "") + " ORDER BY id DESC LIMIT 1"
    row = store.conn.execute(q, (facts_key,) if facts_key else ()).fetchone()
    return None if row is None else _calibration_row(row)
