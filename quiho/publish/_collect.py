"""Read what the site shows from the store, through the store's and the analysis packages' public functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quiho.errors import HistoryError, NotEnoughData, QuihoError
from quiho.publish.options import PublishOptions
from quiho.store import Store
from quiho.store.alerts import AlertRow
from quiho.store.profiles import list_profiles

__all__ = ["SeriesView", "HostView", "FleetView", "ProfileView", "SiteData", "read_site"]


@dataclass(frozen=True)
class SeriesView:
    """One stored series: its measured revisions (every repetition), counts by status and its verdict.

    ``verdict`` is None when the series cannot be analysed; ``error`` then says why.
    """

    name: str
    unit: str
    source: str
    n_ok: int
    n_failed: int
    n_pending: int
    revisions: tuple[str, ...]
    samples: tuple[np.ndarray, ...]
    verdict: Any = None  # quiho.history.SeriesVerdict
    error: str = ""
    failed: tuple[tuple[str, str], ...] = ()  # (revision, reason) of each revision whose build or run failed


@dataclass(frozen=True)
class HostView:
    """One fleet host: inventory facts, its hardware group in the newest run, its fingerprint history.

    ``history`` maps stressor → (run batches, per-run medians) in run order.
    """

    name: str
    inventory: str | None
    groups: tuple[str, ...]
    last_fingerprint: str | None
    last_status: str | None
    last_time: str | None
    facts: dict[str, Any]
    hardware_group: int | None
    history: dict[str, tuple[tuple[str, ...], tuple[float, ...]]]


@dataclass(frozen=True)
class FleetView:
    """The fleet: hosts, hardware groups of the newest run, and the drift report over all runs."""

    hosts: tuple[HostView, ...]
    runs: int
    hardware: dict[int, tuple[str, ...]]
    drift: Any = None  # quiho.schedule.drift.DriftReport, or None (``drift_note`` says why)
    drift_note: str = ""


@dataclass(frozen=True)
class ProfileView:
    """One stored profile: its row and its document (None, with ``error``, when unreadable)."""

    row: dict[str, Any]
    document: dict[str, Any] | None
    error: str = ""


@dataclass(frozen=True)
class SiteData:
    """Everything one publish shows."""

    series: tuple[SeriesView, ...]
    fleet: FleetView
    profiles: tuple[ProfileView, ...]
    warnings: tuple[str, ...] = field(default=())
    alerts: tuple[AlertRow, ...] = field(default=())  # the open history alerts (quiho.history.list_alerts)


def read_series(store: Store, options: PublishOptions) -> list[SeriesView]:
    """Every stored series with its verdict (:func:`quiho.history.verdict_of` with the options' detector)."""
    from quiho.history import list_series, load_history, load_state, make_detector, verdict_of

    make_detector(options.method)  # an unknown detector is a usage error, not a site of unanalysed series
    out = []
    for r in list_series(store):
        name = str(r["name"])
        base: dict[str, Any] = {"name": name, "unit": str(r["unit"] or ""), "source": str(r["source"] or ""),
                                **{f"n_{k}": int(r[k] or 0) for k in ("ok", "failed", "pending")}}  # type: ignore[call-overload]
        try:
            h = load_history(store, name)
        except QuihoError as exc:
            out.append(SeriesView(**base, revisions=(), samples=(), error=str(exc)))
            continue
        try:
            v = verdict_of(h, options.method, alpha=options.alpha, min_size=options.min_size,
                           magnitude_floor=options.magnitude_floor)
            err = ""
        except (HistoryError, NotEnoughData, ValueError) as exc:  # a series the detector refuses: shown, with why
            v, err = None, str(exc)
        failed = tuple((x.revision, x.reason or "") for x in load_state(store, name) if x.status == "failed") \
            if base["n_failed"] else ()
        out.append(SeriesView(**{**base, "unit": h.unit or base["unit"]}, revisions=h.revisions,
                              samples=h.samples, verdict=v, error=err, failed=failed))
    return out


def _hardware(hist: Any) -> dict[str, int]:
    """Host → hardware group (:func:`quiho.irup.groups.hardware_groups`) in the newest fingerprint run."""
    from quiho.irup.groups import hardware_groups

    if hist.empty:
        return {}
    newest = hist.sort_values(["started_at", "run_id"])["run_id"].iloc[-1]
    w = hist[hist["run_id"] == newest].pivot_table(index="host", columns="stressor", values="value").dropna(axis=1)
    if len(w) < 2 or w.shape[1] == 0:
        return {str(h): 0 for h in w.index}
    hw = hardware_groups(w.reset_index(drop=True), w.index.to_numpy())
    return {str(h): int(g) for h, g in hw.unit_groups.items()}


def _host_histories(hist: Any) -> dict[str, dict[str, tuple[tuple[str, ...], tuple[float, ...]]]]:
    """Host → stressor → (batches, medians) in run order."""
    out: dict[str, dict[str, tuple[tuple[str, ...], tuple[float, ...]]]] = {}
    if hist.empty:
        return out
    for (host, stressor), s in hist.sort_values(["started_at", "run_id"]).groupby(["host", "stressor"], sort=True):
        out.setdefault(str(host), {})[str(stressor)] = (tuple(s["batch"].astype(str)),
                                                        tuple(float(x) for x in s["value"]))
    return out


def read_fleet(store: Store, options: PublishOptions) -> FleetView:
    """Hosts (inventory records and fingerprinted hosts), hardware groups of the newest run, drift alerts."""
    from quiho.fleet.show import fleet_show
    from quiho.schedule.drift import detect_drift, fingerprint_history

    hist = fingerprint_history(store, source=options.fingerprints)
    group = _hardware(hist)
    histories = _host_histories(hist)
    known = {h.name: h for h in fleet_show(store)}
    last = {} if hist.empty else {  # host -> (batch, time) of its newest fingerprint run of this source
        str(r["host"]): (str(r["batch"]), str(r["started_at"]))
        for _, r in hist.sort_values(["started_at", "run_id"]).drop_duplicates("host", keep="last").iterrows()}
    hosts = []
    for name in sorted(set(known) | set(histories)):
        k = known.get(name)
        hosts.append(HostView(
            name=name, inventory=k.inventory if k else None, groups=k.groups if k else (),
            last_fingerprint=k.last_fingerprint if k and k.last_fingerprint else last.get(name, (None, None))[0],
            last_status=k.last_status if k else None, last_time=last.get(name, (None, None))[1],
            facts=k.facts if k else {}, hardware_group=group.get(name),
            history=histories.get(name, {})))
    hardware: dict[int, list[str]] = {}
    for h, g in sorted(group.items()):
        hardware.setdefault(g, []).append(h)
    try:
        # no staleness check: it depends on the clock, and a page must not change when the data did not
        drift, note = detect_drift(store, alpha=options.drift_alpha, min_change=options.drift_min_change,
                                   source=options.fingerprints), ""
    except NotEnoughData as exc:
        drift, note = None, str(exc)
    runs = int(hist["run_id"].nunique()) if not hist.empty else 0
    return FleetView(tuple(hosts), runs, {g: tuple(m) for g, m in hardware.items()}, drift, note)


def read_profiles(store: Store) -> list[ProfileView]:
    """Every stored profile with its document, read as ``quiho profile --batch`` reads one (:func:`load_profile`)."""
    from quiho.profile import load_profile

    out = []
    for row in list_profiles(store):
        try:
            out.append(ProfileView(row, load_profile(store, str(row["batch"]))))
        except QuihoError as exc:
            out.append(ProfileView(row, None, str(exc)))
    return out


def read_site(store: Store, options: PublishOptions) -> SiteData:
    """Everything the site shows, read once."""
    from quiho.history import list_alerts

    return SiteData(tuple(read_series(store, options)), read_fleet(store, options), tuple(read_profiles(store)),
                    alerts=tuple(list_alerts(store)))

