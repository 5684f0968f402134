"""Which machine measured each revision of a history: recorded at import, read back for normalised detection.

A revision's machine is a stored host and its fingerprint run (``--host NAME``: the host's newest stored
fingerprint; ``--fingerprint``: this machine's quick local fingerprint, reused while its facts and age allow), with
the facts. Read back, a revision with facts also carries its hardware type (its kind). A host without a fingerprint
is still recorded (its revisions are then detected raw, and said so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from quiho.errors import UnknownTargetError
from quiho.history.normalise._detect import MachineFingerprint, NormalisedDetection, NormaliseOptions, detect_normalised
from quiho.history.sources import load_history
from quiho.store import Store
from quiho.store import history as hstore
from quiho.store.fingerprints import fingerprint_by_id, host_fingerprint

__all__ = ["MachineSource", "local_machine", "stored_host", "attach_machine", "machine_type", "revision_fingerprints",
           "detect_series_normalised"]


@dataclass(frozen=True)
class MachineSource:
    """The machine to record on imported revisions; ``note`` says what a later normalisation will lack."""

    host: str | None
    fingerprint_run_id: int | None
    facts: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def local_machine(store: Store, max_age_s: float = 7 * 86400.0) -> MachineSource:
    """The machine quiho runs on, with its quick local fingerprint (measured now unless a young one is stored)."""
    from quiho.fingerprint.local import LocalFingerprintOptions, quick_local_fingerprint

    fp = quick_local_fingerprint(store, LocalFingerprintOptions(max_age_s=max_age_s))
    note = f"fingerprint has failed stressors: {', '.join(fp.failed)}" if fp.failed else ""
    return MachineSource(fp.host, fp.run_id, fp.facts, note)


def stored_host(store: Store, host: str) -> MachineSource:
    """A host of the store with its newest fingerprint (none: recorded without, and the note says so)."""
    fp = host_fingerprint(store, host)
    if fp is None:
        return MachineSource(host, None, {}, f"host {host} has no stored fingerprint: its revisions will be "
                                             "detected raw by --normalise")
    return MachineSource(host, fp.run_id, {}, "")


def attach_machine(store: Store, series: Sequence[str], revisions: Sequence[str] | None,
                   machine: MachineSource) -> int:
    """Record ``machine`` on ``revisions`` (None: every revision) of each series; the number of revisions."""
    n = 0
    for name in series:
        sid = hstore.series_id(store, name)
        if sid is None:
            raise UnknownTargetError(f"no history series {name!r}")
        revs = revisions if revisions is not None else [r.revision for r in hstore.revisions(store, sid)]
        for rev in revs:
            hstore.set_revision_machine(store, sid, rev, machine.host, machine.fingerprint_run_id, machine.facts)
            n += 1
    return n


def machine_type(facts: Mapping[str, Any]) -> str | None:
    """A machine's hardware type: CPU model, vCPUs, memory and architecture from its facts (None: no CPU model).

    Memory is rounded to whole GiB: two VMs of one type report a few MiB apart. A label, not quiho's "same
    hardware" (:func:`quiho.irup.groups.hardware_groups`, measured): it names the kind a hosted runner's fresh VM
    got, which the newest-revision check's measured rule (docs/hardware-protocol.md, round 3) knows it by.
    """
    if not facts.get("cpu_model"):
        return None
    mem = facts.get("memtotal_mb")
    parts = (" ".join(str(facts["cpu_model"]).split()), f"{facts['vcpus']} vCPUs" if facts.get("vcpus") else "",
             f"{round(float(mem) / 1024)} GiB" if mem else "", str(facts.get("arch") or ""))
    return ", ".join(p for p in parts if p)


def revision_fingerprints(store: Store, name: str, revisions: Sequence[str]) -> list[MachineFingerprint | None]:
    """The fingerprint of the machine of each of ``revisions`` of series ``name`` (None where there is none).

    A revision recorded with facts (``--fingerprint``) carries its hardware type as its kind (:func:`machine_type`):
    hosted CI runners are fresh VMs whose host names never repeat, so the newest-revision check knows them by kind.
    """
    sid = hstore.series_id(store, name)
    recs = hstore.revision_machines(store, sid) if sid is not None else {}
    cache: dict[tuple[int, str | None], MachineFingerprint | None] = {}
    out: list[MachineFingerprint | None] = []
    for rev in revisions:
        rec = recs.get(rev)
        if rec is None or rec.fingerprint_run_id is None:
            out.append(None)
            continue
        key = (rec.fingerprint_run_id, rec.host)
        if key not in cache:
            fp = fingerprint_by_id(store, rec.fingerprint_run_id, rec.host)
            med = fp.medians() if fp is not None else None
            # one machine = one host's fingerprint run (a quick local fingerprint is reused while its state holds)
            cache[key] = None if fp is None or med is None or med.empty else MachineFingerprint(
                f"{fp.host} (fingerprint run {fp.run_id})", med, tuple(fp.failed()), machine_type(rec.facts))
        out.append(cache[key])
    return out


def detect_series_normalised(store: Store, name: str, opts: NormaliseOptions | None = None) -> NormalisedDetection:
    """:func:`quiho.history.normalise.detect_normalised` on stored series ``name`` and its revisions' machines."""
    h = load_history(store, name)
    return detect_normalised(h, revision_fingerprints(store, name, h.revisions), opts)
