"""Store queries of fingerprints: fingerprint runs, their measurements, per-host summaries, quick local fingerprints.

A fingerprint is one host's measurements in one fingerprint run, read as the long table ``(repetition, stressor,
value, status)`` (:class:`StoredFingerprint`). A fleet run is written host by host while it happens and may be
resumed; :func:`applicable_fingerprint_run` is the one rule for which run applies to some hosts, so runs and
profiles agree. A quick local fingerprint is a run of source :data:`LOCAL_SOURCE` plus one ``machine_fingerprints``
row keyed by the machine's facts, so a later call on the same machine state reuses it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from quiho._version import __version__
from quiho.errors import UsageError
from quiho.store._db import Connection, Store, dumps, insert_id, utcnow
from quiho.store.hosts import ensure_hosts, host_id, set_host_status

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "UNSTABLE_COV", "LOCAL_SOURCE", "MeasurementRow", "FingerprintRunRef", "StoredFingerprint",
    "applicable_fingerprint_run", "create_fingerprint_run", "fingerprint_run", "set_run_status", "latest_fleet_run",
    "mark_interrupted_runs", "controller", "batch_of", "missing_measurements", "host_counts", "upsert_measurements",
    "summarise_run", "ok_measurements", "fingerprint_run_age", "insert_complete_run", "insert_ok_measurements",
    "host_fingerprint", "fingerprint_by_id", "fingerprinted_hosts", "reusable_local_fingerprint",
    "write_local_fingerprint", "note_skipped_hosts", "skipped_hosts",
]


#: pyperf's stability rule: spread ≥ 10 % of the mean is flagged.
UNSTABLE_COV = 0.10


#: ``fingerprint_runs.source`` of a quick fingerprint of the machine quiho runs on.
LOCAL_SOURCE = "quick-local"


#: (run id, host id, repetition, stressor, value)
MeasurementRow = tuple[int, int, int, str, float]


@dataclass(frozen=True)
class FingerprintRunRef:
    """A fleet fingerprint run chosen for some hosts: id, batch, age and how many of the hosts it covers."""

    run_id: int
    batch: str
    age_s: float
    hosts_covered: int


def applicable_fingerprint_run(
    store: Store, hosts: Sequence[str], max_age_s: float | None = None
) -> FingerprintRunRef | None:
    """The fleet fingerprint run that applies to ``hosts``: the one rule for runs and profiles.

    Among complete/partial fleet runs with an ``ok`` measurement of any of ``hosts``
    (and, with ``max_age_s``, finished at most that long ago) the one covering most of
    ``hosts`` wins, then the newest: a newer run of one host must not hide an older run
    of the whole fleet. ``max_age_s`` of 0 or less means none applies (force a new one).
    """
    if not hosts or (max_age_s is not None and max_age_s <= 0):
        return None
    marks = ",".join("?" * len(hosts))
    rows = store.conn.execute(
        "SELECT r.id, r.batch, COALESCE(r.finished_at, r.started_at) AS t, COUNT(DISTINCT m.host_id) AS n "
        "FROM fingerprint_runs r JOIN measurements m ON m.run_id = r.id AND m.status = 'ok' "
        f"JOIN hosts h ON h.id = m.host_id AND h.name IN ({marks}) "
        "WHERE r.source = 'fleet' AND r.status IN ('complete','partial') GROUP BY r.id",
        list(hosts),
    ).fetchall()
    now = datetime.now(UTC)
    cands = [FingerprintRunRef(int(r["id"]), str(r["batch"]), (now - datetime.fromisoformat(r["t"])).total_seconds(),
                               int(r["n"])) for r in rows]
    cands = [c for c in cands if max_age_s is None or c.age_s <= max_age_s]
    if not cands:
        return None
    return max(cands, key=lambda c: (c.hosts_covered, -c.age_s, c.run_id))


def create_fingerprint_run(store: Store, batch: str, battery: str, params: dict[str, Any], version: str) -> int:
    """Insert a new ``running`` fleet fingerprint run; return its id."""
    with store.transaction() as conn:
        return insert_id(
            conn, "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, "
            "quiho_version, controller) VALUES ('fleet', ?, ?, 'running', ?, ?, ?, ?) RETURNING id",
            (batch, battery, dumps(params), utcnow(), version, controller()),
        )


def fingerprint_run(store: Store, ref: str) -> dict[str, Any]:
    """The fleet fingerprint run with batch label (or id) ``ref``.

    Raises
    ------
    UsageError
        No such run.
    """
    conn = store.conn
    row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND batch = ?", (ref,)).fetchone()
    if row is None and ref.isdigit():
        row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND id = ?", (int(ref),)).fetchone()
    if row is None:
        raise UsageError(f"no fleet fingerprint run {ref!r} in {store} (see 'quiho fleet show')")
    return dict(row)


def set_run_status(store: Store, run_id: int, status: str, *, note: str | None = None) -> None:
    """Set a fingerprint run's status (``running`` clears ``finished_at``); ``note`` goes into its params."""
    with store.transaction() as conn:
        if note is not None:
            _update_params(conn, run_id, interrupted=note)
        conn.execute("UPDATE fingerprint_runs SET status=?, finished_at=? WHERE id=?",
                     (status, None if status == "running" else utcnow(), run_id))
        if status == "running":
            conn.execute("UPDATE fingerprint_runs SET controller=? WHERE id=?", (controller(), run_id))


def _params(conn: Connection, run_id: int) -> dict[str, Any]:
    """A fingerprint run's params ({} for no such run)."""
    row = conn.execute("SELECT params_json FROM fingerprint_runs WHERE id=?", (run_id,)).fetchone()
    return json.loads(row["params_json"] or "{}") if row else {}


def _update_params(conn: Connection, run_id: int, **values: Any) -> None:
    """Set keys of a fingerprint run's params (inside the caller's transaction)."""
    conn.execute("UPDATE fingerprint_runs SET params_json=? WHERE id=?",
                 (dumps({**_params(conn, run_id), **values}), run_id))


def note_skipped_hosts(store: Store, run_id: int, hosts: Sequence[str], why: str) -> None:
    """Record that a fingerprint run leaves ``hosts`` out on purpose (``why``), so no reader calls them missing."""
    with store.transaction() as conn:
        known = _params(conn, run_id).get("skipped_hosts") or {}
        _update_params(conn, run_id, skipped_hosts={**known, **dict.fromkeys(hosts, why)})


def skipped_hosts(store: Store, run_ids: Iterable[int]) -> dict[str, str]:
    """Hosts the fingerprint runs ``run_ids`` leave out on purpose, and why (:func:`note_skipped_hosts`)."""
    out: dict[str, str] = {}
    for rid in run_ids:
        out.update(_params(store.conn, int(rid)).get("skipped_hosts") or {})
    return out


def latest_fleet_run(store: Store) -> dict[str, Any] | None:
    """Batch, status and start of the newest fleet fingerprint run, or None."""
    row = store.conn.execute("SELECT batch, status, started_at FROM fingerprint_runs WHERE source='fleet' "
                             "ORDER BY started_at DESC, id DESC LIMIT 1").fetchone()
    return dict(row) if row else None


def mark_interrupted_runs(store: Store) -> list[int]:
    """Mark fingerprint runs left ``running`` as ``partial``; call only while holding the measurement lock.

    Holding the lock proves no live quiho process of this controller machine is measuring into this store, so a
    ``running`` row this machine started was left by a process that died (``kill -9``, power loss); runs of other
    controllers sharing the store are theirs to judge. Returns the ids marked.
    """
    rows = store.conn.execute("SELECT id FROM fingerprint_runs WHERE status = 'running' "
                              "AND (controller IS NULL OR controller = ?)", (controller(),)).fetchall()
    for r in rows:
        set_run_status(store, int(r["id"]), "partial",
                       note=f"found running with no live holder at {utcnow()}; resumable")
    return [int(r["id"]) for r in rows]


def controller() -> str:
    """Name of the controller machine quiho runs on, as recorded with the fleet fingerprint runs it measures."""
    import socket

    return socket.gethostname()


def batch_of(store: Store, run_id: int) -> str:
    """Batch label of fingerprint run ``run_id``."""
    row = store.conn.execute("SELECT batch FROM fingerprint_runs WHERE id=?", (run_id,)).fetchone()
    return str(row["batch"])


def missing_measurements(store: Store, run_id: int, hid: int, stressors: list[str], reps: int) -> dict[int, list[str]]:
    """Repetition → stressors without a row for host ``hid`` in run ``run_id`` (what a resume reruns)."""
    have = {
        (r["repetition"], r["stressor"])
        for r in store.conn.execute(
            "SELECT repetition, stressor FROM measurements WHERE run_id = ? AND host_id = ?", (run_id, hid)
        )
    }
    out: dict[int, list[str]] = {}
    for rep in range(1, reps + 1):
        miss = [s for s in stressors if (rep, s) not in have]
        if miss:
            out[rep] = miss
    return out


def host_counts(store: Store, run_id: int, hid: int) -> tuple[int, int]:
    """(ok, failed) measurements of one host in one run."""
    row = store.conn.execute(
        "SELECT SUM(CASE WHEN status='ok' THEN 1 ELSE 0 END) AS ok, "
        "SUM(CASE WHEN status='failed' THEN 1 ELSE 0 END) AS failed FROM measurements "
        "WHERE run_id=? AND host_id=?",
        (run_id, hid),
    ).fetchone()
    return int(row["ok"] or 0), int(row["failed"] or 0)


def upsert_measurements(
    store: Store,
    run_id: int,
    host: str,
    rows: Sequence[tuple[int, str, float | None, str, str | None, dict[str, Any]]],
    *,
    facts: dict[str, Any] | None,
    status: str,
    reason: str | None,
) -> None:
    """Store one host's measurements ``(repetition, stressor, value, status, reason, extra)`` and its status."""
    with store.transaction() as conn:
        hid = host_id(conn, host, facts or None)
        for rep, stressor, value, st, why, extra in rows:
            conn.execute(
                "INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                "extra_json) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id, host_id, repetition, stressor) DO UPDATE "
                "SET value=excluded.value, status=excluded.status, reason=excluded.reason, "
                "extra_json=excluded.extra_json",
                (run_id, hid, rep, stressor, value, "bogo-ops/s", st, why, dumps(extra)),
            )
        set_host_status(conn, "fingerprint", batch_of(store, run_id), hid, status, reason)


def summarise_run(store: Store, run_id: int) -> None:
    """Median and spread per host and stressor of one run into ``fleet_fingerprint_summary``.

    ``cov`` is the population standard deviation over the mean of the ok
    repetitions; ``unstable`` flags cov ≥ 10 % or a value ≥ 50 % away from the median.
    """
    rows = store.conn.execute(
        "SELECT host_id, stressor, status, value FROM measurements WHERE run_id=?", (run_id,)
    ).fetchall()
    groups: dict[tuple[int, str], list[tuple[str, float | None]]] = {}
    for r in rows:
        groups.setdefault((r["host_id"], r["stressor"]), []).append((r["status"], r["value"]))
    with store.transaction() as conn:
        conn.execute("DELETE FROM fleet_fingerprint_summary WHERE run_id=?", (run_id,))
        for (hid, s), vals in groups.items():
            ok = [float(v) for st, v in vals if st == "ok" and v is not None]
            n_failed = sum(1 for st, _ in vals if st == "failed")
            med = statistics.median(ok) if ok else None
            mean = statistics.fmean(ok) if ok else None
            cov = statistics.pstdev(ok) / mean if ok and mean else None
            far = med is not None and med != 0 and any(abs(v - med) / med >= 0.5 for v in ok)
            unstable = int((cov is not None and cov >= UNSTABLE_COV) or far)
            conn.execute(
                "INSERT INTO fleet_fingerprint_summary(run_id, host_id, stressor, n_ok, n_failed, median, cov, min, "
                "max, unstable) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, hid, s, len(ok), n_failed, med, None if cov is None or cov != cov else cov,
                 min(ok) if ok else None, max(ok) if ok else None, unstable),
            )


def ok_measurements(store: Store, source: str = "fleet") -> pd.DataFrame:
    """Every ``ok`` measurement of the non-duplicate ``source`` runs.

    Columns: run_id, batch, started_at, host, stressor, value.
    """
    q = (
        "SELECT r.id AS run_id, r.batch, r.started_at, h.name AS host, m.stressor, m.value "
        "FROM measurements m JOIN fingerprint_runs r ON r.id = m.run_id JOIN hosts h ON h.id = m.host_id "
        "WHERE m.status = 'ok' AND r.source = ? AND r.duplicate_of IS NULL"
    )
    return store.conn.frame(q, [source])


def fingerprint_run_age(store: Store, run_id: int) -> tuple[str, float | None] | None:
    """(batch, seconds since it finished or started) of fingerprint run ``run_id``, or None."""
    row = store.conn.execute("SELECT batch, COALESCE(finished_at, started_at) AS t FROM fingerprint_runs WHERE id=?",
                             (run_id,)).fetchone()
    if row is None:
        return None
    age = (datetime.now(UTC) - datetime.fromisoformat(row["t"])).total_seconds() if row["t"] else None
    return str(row["batch"]), age


def insert_complete_run(conn: Connection, source: str, batch: str, battery: str,
                        params: Mapping[str, Any], started_at: str, finished_at: str) -> int:
    """A ``complete`` fingerprint run; returns its id."""
    return insert_id(
        conn, "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, finished_at, "
        "quiho_version) VALUES (?, ?, ?, 'complete', ?, ?, ?, ?) RETURNING id",
        (source, batch, battery, dumps(dict(params)), started_at, finished_at, __version__),
    )


def insert_ok_measurements(conn: Connection, rows: Iterable[MeasurementRow]) -> None:
    """Successful stress-ng measurements in bogo-ops/s."""
    conn.executemany("INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, "
                     "extra_json) VALUES (?, ?, ?, ?, ?, 'bogo-ops/s', 'ok', '{}')", rows)


@dataclass(frozen=True)
class StoredFingerprint:
    """One host's measurements in one fingerprint run: ``values`` has columns repetition, stressor, value, status."""

    run_id: int
    host: str
    batch: str
    created_at: str
    values: pd.DataFrame

    def medians(self) -> pd.Series:
        """Median bogo-ops/s per stressor over the ok repetitions (stressors with no ok value are absent)."""
        ok = self.values[self.values["status"] == "ok"]
        return ok.groupby("stressor")["value"].median().astype(float)

    def failed(self) -> list[str]:
        """Stressors with no ok repetition in this run."""
        st = self.values.groupby("stressor")["status"].apply(lambda s: bool((s == "ok").any()))
        return sorted(str(k) for k, ok in st.items() if not ok)


def _values(store: Store, run_id: int, host_id: int) -> pd.DataFrame:
    return store.conn.frame(
        "SELECT repetition, stressor, value, status FROM measurements WHERE run_id = ? AND host_id = ? "
        "ORDER BY stressor, repetition", [run_id, host_id])


def _first_fingerprint(store: Store, where: str, params: list[object], tail: str) -> StoredFingerprint | None:
    """The (run, host) fingerprint that ``where`` and ``tail`` (grouping, order, limit) pick first, or None."""
    row = store.conn.execute(
        "SELECT r.id, r.batch, COALESCE(r.finished_at, r.started_at) AS t, h.id AS hid, h.name FROM fingerprint_runs r "
        f"JOIN measurements m ON m.run_id = r.id JOIN hosts h ON h.id = m.host_id WHERE {where} {tail}", params,
    ).fetchone()
    if row is None:
        return None
    return StoredFingerprint(int(row["id"]), str(row["name"]), str(row["batch"]), str(row["t"] or ""),
                             _values(store, int(row["id"]), int(row["hid"])))


def host_fingerprint(store: Store, host: str, batch: str | None = None) -> StoredFingerprint | None:
    """The newest fingerprint of ``host`` (in ``batch`` if given), or None when it has none."""
    newest = "GROUP BY r.id, h.id ORDER BY t DESC, r.id DESC LIMIT 1"
    if batch is None:
        return _first_fingerprint(store, "h.name = ?", [host], newest)
    return _first_fingerprint(store, "h.name = ? AND r.batch = ?", [host, batch], newest)


def fingerprint_by_id(store: Store, run_id: int, host: str | None = None) -> StoredFingerprint | None:
    """Host ``host``'s part of fingerprint run ``run_id`` (None: its only or first host, as in a quick local run)."""
    if host is None:
        return _first_fingerprint(store, "r.id = ?", [run_id], "ORDER BY h.name LIMIT 1")
    return _first_fingerprint(store, "r.id = ? AND h.name = ?", [run_id, host], "ORDER BY h.name LIMIT 1")


def fingerprinted_hosts(store: Store, batch: str | None = None) -> list[str]:
    """Names of the hosts with at least one ok measurement (in ``batch`` if given), sorted."""
    q = ("SELECT DISTINCT h.name FROM hosts h JOIN measurements m ON m.host_id = h.id "
         "JOIN fingerprint_runs r ON r.id = m.run_id WHERE m.status = 'ok'")
    params: list[object] = []
    if batch is not None:
        q += " AND r.batch = ?"
        params.append(batch)
    return [str(r[0]) for r in store.conn.execute(q + " ORDER BY h.name", params)]


def reusable_local_fingerprint(store: Store, facts_key: str, max_age_s: float) -> tuple[int, float] | None:
    """(run id, age in seconds) of the newest quick fingerprint of this machine state younger than ``max_age_s``."""
    row = store.conn.execute(
        "SELECT run_id, created_at FROM machine_fingerprints WHERE facts_key = ? ORDER BY created_at DESC, "
        "run_id DESC LIMIT 1", (facts_key,)).fetchone()
    if row is None:
        return None
    age = (datetime.now(UTC) - datetime.fromisoformat(row["created_at"])).total_seconds()
    return (int(row["run_id"]), age) if age <= max_age_s else None


def write_local_fingerprint(store: Store, host: str, facts: Mapping[str, Any], facts_key: str,
                            params: Mapping[str, Any],
                            rows: Sequence[tuple[int, str, float | None, str, str | None]]) -> int:
    """Store one quick local fingerprint ``rows = (repetition, stressor, value, status, reason)``; its run id.

    One transaction: the host (created with its facts if new), a ``complete`` run (``partial`` when a stressor
    failed), the measurements and the ``machine_fingerprints`` row that lets the next call reuse it.
    """
    now = utcnow()
    status = "partial" if any(r[3] != "ok" for r in rows) else "complete"
    with store.transaction() as c:
        hid = ensure_hosts(c, {host: facts}, now)[host]
        batch = f"{LOCAL_SOURCE}-{facts_key[:12]}-{now}"
        run_id = insert_id(
            c, "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, finished_at, "
            "quiho_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (LOCAL_SOURCE, batch, str(params.get("battery", "")), status, dumps(dict(params)), now, now, __version__))
        c.executemany("INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                      "extra_json) VALUES (?, ?, ?, ?, ?, 'bogo-ops/s', ?, ?, '{}')",
                      [(run_id, hid, rep, s, v, st, why) for rep, s, v, st, why in rows])
        c.execute("INSERT INTO machine_fingerprints(run_id, host_id, facts_key, facts_json, created_at) "
                  "VALUES (?, ?, ?, ?, ?)", (run_id, hid, facts_key, dumps(dict(facts)), now))
    return run_id
