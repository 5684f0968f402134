"""Read what the site shows from the store, through the store's and the analysis packages' public functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from quiho.errors import HistoryError, NotEnoughData, QuihoError
from quiho.publish._calls import cached_calls, prune_calls
from quiho.publish._drift import cached_drift, prune_drift
from quiho.publish._irups import TargetView, check_settings, read_targets
from quiho.publish._safe import page_file
from quiho.publish._verdicts import page_key, series_keys, verdict_doc, verdict_from
from quiho.publish.options import PublishOptions
from quiho.store import Store
from quiho.store.alerts import AlertRow
from quiho.store.profiles import list_profiles
from quiho.store.site_cache import cached_results, prune_results, save_results, series_digests

#: ``reuse(path, page key)``: is the page at ``path`` on disk as a page of this key is written?
Reuse = Callable[[str, str], bool]


def series_file(name: str) -> str:
    """Path (from the site root) of the page of series ``name``."""
    return "series/" + page_file("s", name)

__all__ = ["SeriesView", "HostView", "FleetView", "ProfileView", "SiteData", "TargetView", "read_site", "read_fleets"]


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
    key: str = ""  # the page key (quiho.publish._verdicts.page_key); "" when the series could not be read
    reused: bool = False  # its page is on disk as this key writes it: not rendered again, not read


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
    stale: bool = False  # its newest fingerprint is older than the schedule's period (``fleet`` hosts only)


@dataclass(frozen=True)
class FleetView:
    """One source's fleet: hosts, hardware groups of the newest run, and the drift report over all runs.

    ``source`` is the ``fingerprint_runs.source`` it shows (``fleet``, ``quick-local``, an import's name); ``note``
    says why a source has no host.
    """

    hosts: tuple[HostView, ...]
    runs: int
    hardware: dict[int, tuple[str, ...]]
    drift: Any = None  # quiho.schedule.drift.DriftReport, or None (``drift_note`` says why)
    drift_note: str = ""
    source: str = "fleet"
    note: str = ""


@dataclass(frozen=True)
class ProfileView:
    """One stored profile: its row and its document (None, with ``error``, when unreadable).

    ``calls`` are the traced calls behind the report's functions figure
    (:func:`quiho.profile.traces.trace_samples`; empty when nothing was traced, ``calls_note`` says why when
    they cannot be read).
    """

    row: dict[str, Any]
    document: dict[str, Any] | None
    error: str = ""
    calls: dict[str, Any] = field(default_factory=dict)
    calls_note: str = ""


@dataclass(frozen=True)
class SiteData:
    """Everything one publish shows."""

    series: tuple[SeriesView, ...]
    fleets: tuple[FleetView, ...]  # one per fingerprint source, ``fleet`` first
    profiles: tuple[ProfileView, ...]
    warnings: tuple[str, ...] = field(default=())
    alerts: tuple[AlertRow, ...] = field(default=())  # the open history alerts (quiho.history.list_alerts)
    targets: tuple[TargetView, ...] = field(default=())

    @property
    def hosts(self) -> int:
        """Hosts over every source (a host fingerprinted by two sources counts twice: two fleets)."""
        return sum(len(f.hosts) for f in self.fleets)


def read_series(store: Store, options: PublishOptions, reuse: Reuse | None = None,
                alerts: tuple[AlertRow, ...] = ()) -> list[SeriesView]:
    """Every stored series with its verdict (:func:`quiho.history.verdict_of` with the options' detector).

    A verdict is judged once per changed series (:mod:`quiho.publish._verdicts`); a series whose page
    ``reuse(path, page key)`` says is on disk as this key would write it is not even read (its view then has no
    revisions, ``reused=True``).
    """
    from quiho.history import list_series, load_history, load_state, verdict_of

    keys = series_keys(series_digests(store), options)
    prune_results(store, "series", keys)
    have = cached_results(store, list(keys.values()))
    by_series: dict[str, list[AlertRow]] = {}
    for a in alerts:
        by_series.setdefault(a.series, []).append(a)
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for r in list_series(store):
        name = str(r["name"])
        base: dict[str, Any] = {"name": name, "unit": str(r["unit"] or ""), "source": str(r["source"] or ""),
                                **{f"n_{k}": int(r[k] or 0) for k in ("ok", "failed", "pending")}}  # type: ignore[call-overload]
        key = keys.get(name, "")
        pkey = page_key(key, by_series.get(name, []), options)
        doc = have.get(key)
        v = verdict_from(doc["verdict"]) if doc and doc.get("verdict") else None
        if doc is not None and (v is not None or doc.get("error")) and reuse is not None \
                and reuse(series_file(name), pkey):
            out.append(SeriesView(**{**base, "unit": doc["unit"]}, revisions=(), samples=(), verdict=v,
                                  error=str(doc.get("error", "")), key=pkey, reused=True))
            continue
        try:
            h = load_history(store, name)
        except QuihoError as exc:
            out.append(SeriesView(**base, revisions=(), samples=(), error=str(exc)))
            continue
        try:
            v = verdict_from(verdict_doc(verdict_of(h, options.method, alpha=options.alpha,
                                                    min_size=options.min_size,
                                                    magnitude_floor=options.magnitude_floor)))
            err = ""
        except (HistoryError, NotEnoughData, ValueError) as exc:  # a series the detector refuses: shown, with why
            v, err = None, str(exc)
        pending[key] = (name, {"unit": h.unit or base["unit"], "verdict": None if v is None else verdict_doc(v),
                               "error": err})
        failed = tuple((x.revision, x.reason or "") for x in load_state(store, name) if x.status == "failed") \
            if base["n_failed"] else ()
        out.append(SeriesView(**{**base, "unit": h.unit or base["unit"]}, revisions=h.revisions,
                              samples=h.samples, verdict=v, error=err, failed=failed, key=pkey))
    save_results(store, "series", pending)
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


def _stale(last_time: str | None, options: PublishOptions) -> bool:
    """Older than the schedule's period (``options.stale_after_hours``) at ``options.now``, or the clock."""
    if options.stale_after_hours is None or not last_time:
        return False
    try:
        when = datetime.fromisoformat(last_time)
    except ValueError:
        return False
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    now = options.now or datetime.now(UTC)
    return (now - when).total_seconds() > options.stale_after_hours * 3600


#: What a source without hosts says, by source; any other source: :data:`_EMPTY_IMPORT`.
_EMPTY = {"fleet": "no host fingerprinted by quiho fingerprint or quiho schedule in this store (run quiho "
                   "fingerprint on an inventory)",
          "quick-local": "no quick local fingerprint in this store"}
_EMPTY_IMPORT = "no fingerprint of this source in this store"


def read_fleet(store: Store, options: PublishOptions, source: str = "fleet") -> FleetView:
    """One source's hosts (for ``fleet``: inventory records too), hardware groups of the newest run, drift alerts.

    Only ``fleet`` hosts can be stale: the schedule fingerprints those, an import is as old as it was.
    """
    from quiho.fleet.show import fleet_show
    from quiho.schedule.drift import fingerprint_history

    hist = fingerprint_history(store, source=source)
    group = _hardware(hist)
    histories = _host_histories(hist)
    known = {h.name: h for h in fleet_show(store)} if source == "fleet" else {}
    last = {} if hist.empty else {  # host -> (batch, time) of its newest fingerprint run of this source
        str(r["host"]): (str(r["batch"]), str(r["started_at"]))
        for _, r in hist.sort_values(["started_at", "run_id"]).drop_duplicates("host", keep="last").iterrows()}
    hosts = []
    for name in sorted(set(known) | set(histories)):
        k = known.get(name)
        when = last.get(name, (None, None))[1]
        hosts.append(HostView(
            name=name, inventory=k.inventory if k else None, groups=k.groups if k else (),
            last_fingerprint=k.last_fingerprint if k and k.last_fingerprint else last.get(name, (None, None))[0],
            last_status=k.last_status if k else None, last_time=when,
            facts=k.facts if k else {}, hardware_group=group.get(name),
            history=histories.get(name, {}), stale=source == "fleet" and _stale(when, options)))
    hardware: dict[int, list[str]] = {}
    for h, g in sorted(group.items()):
        hardware.setdefault(g, []).append(h)
    drift, note = cached_drift(store, hist, options, source)
    runs = int(hist["run_id"].nunique()) if not hist.empty else 0
    empty = "" if hosts else _EMPTY.get(source, _EMPTY_IMPORT)
    return FleetView(tuple(hosts), runs, {g: tuple(m) for g, m in hardware.items()}, drift, note, source, empty)


def read_fleets(store: Store, options: PublishOptions) -> list[FleetView]:
    """Every fingerprint source the store holds (``fleet`` always, first), or only ``options.fingerprints``."""
    from quiho.store.site_cache import fingerprint_sources

    if options.fingerprints is not None:
        return [read_fleet(store, options, options.fingerprints)]
    sources = ["fleet", *(s for s in fingerprint_sources(store) if s != "fleet")]
    prune_drift(store, sources)
    return [read_fleet(store, options, s) for s in sources]


def read_profiles(store: Store) -> list[ProfileView]:
    """Every stored profile with its document, read as ``quiho profile --batch`` reads one (:func:`load_profile`)."""
    from quiho.profile import load_profile

    out = []
    rows = list_profiles(store)
    prune_calls(store, [str(row["batch"]) for row in rows])
    for row in rows:
        try:
            doc = load_profile(store, str(row["batch"]))
        except QuihoError as exc:
            out.append(ProfileView(row, None, str(exc)))
            continue
        calls, note = cached_calls(store, row, doc)
        out.append(ProfileView(row, doc, calls=calls, calls_note=note))
    return out


def read_site(store: Store, options: PublishOptions, reuse: Reuse | None = None) -> SiteData:
    """Everything the site shows, read once; ``reuse`` (path, page key → kept?) lets unchanged series pages stay.

    Bad options are usage errors before anything is read or cached: a failing publish leaves the store as it was.
    """
    from quiho.history import list_alerts, make_detector

    make_detector(options.method)  # an unknown detector is a usage error, not a site of unanalysed series
    check_settings(options.irup)
    alerts = tuple(list_alerts(store))
    fleets = tuple(read_fleets(store, options))
    notes = tuple(f"fingerprint source {f.source}: {f.note}" for f in fleets if f.note)  # why a source is empty
    profiles = tuple(read_profiles(store))
    targets = designed_targets(store, read_targets(store, options.irup), profiles)
    return SiteData(tuple(read_series(store, options, reuse, alerts)), fleets, profiles,
                    warnings=notes, alerts=alerts, targets=tuple(targets))


def designed_targets(store: Store, targets: list[TargetView], profiles: tuple[ProfileView, ...]) -> list[TargetView]:
    """``targets`` with, for each, the stored profiles on a designed fleet that measured it and its side in them.

    A profile measured the target whose application, version (its stored label) and test its runs carry; the
    target page shows that profile's per-version factor effects, the numbers the profile stored.
    """
    from quiho.irup.data import target_name
    from quiho.store.app_runs import profile_tests

    tests = profile_tests(store)
    found: dict[str, list[tuple[ProfileView, str]]] = {}
    for p in profiles:
        doc = p.document or {}
        if not doc.get("design"):
            continue
        sides = {str(doc.get("version_a")): "a", str(doc.get("label_b") or doc.get("version_b")): "b"}
        for app, version, test in sorted(tests.get(str(p.row["batch"]), ())):
            if version in sides:
                found.setdefault(target_name(app, version, test), []).append((p, sides[version]))
    return [replace(t, designed=tuple(found.get(t.name, ()))) for t in targets]

