"""Per-function trace verdicts for a profile: stored ``quiho trace`` runs of both versions, compared.

``quiho profile APP@V1 APP@V2`` joins them into its hints when the store holds trace
runs of both versions (``quiho trace APP@V1 -- ...``), or when they are named explicitly
(a run id, ``APP@VERSION`` or a Perun profile file). Repeated trace runs of one version
are pooled as repetitions, exactly as ``quiho detect`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quiho.store import Store

__all__ = ["TraceJoin", "join_traces"]


@dataclass(frozen=True)
class TraceJoin:
    """What was compared and the detectors' verdicts (every function, flagged or not)."""

    baseline: str
    target: str
    changes: tuple[Any, ...]

    @property
    def flagged(self) -> int:
        """How many verdicts flag a change."""
        return sum(bool(c.flagged) for c in self.changes)

    def note(self) -> str:
        """One line for the profile's notes."""
        functions = len({c.function for c in self.changes})
        return (f"per-function traces joined: {self.baseline} -> {self.target}, {functions} function(s), "
                f"{self.flagged} change(s) flagged")


def _has_trace_runs(store: Store, app: str, version: str) -> bool:
    from quiho.store.traces import has_trace_run

    return has_trace_run(store, app, version)


def join_traces(
    store: Store,
    application: str,
    version_a: str,
    version_b: str,
    *,
    baseline: str | None = None,
    target: str | None = None,
    methods: Sequence[str] | None = None,
    x: str = "order",
    amount: str = "inclusive_ns",
) -> TraceJoin | None:
    """Compare the per-function traces of two versions with the default detectors.

    Parameters
    ----------
    store : Store
    application, version_a, version_b : str
        The profiled versions; their stored trace runs are used unless ``baseline`` / ``target`` name others.
    baseline, target : str, optional
        A trace run id, ``APP@VERSION`` or a Perun profile file.
    methods : sequence of str, optional
        Detector names (default :data:`quiho.detect.DEFAULT_METHODS`).
    x, amount : str
        Independent variable and duration, as in ``quiho detect``.

    Returns
    -------
    TraceJoin or None
        None when neither reference was given and the store lacks trace runs of either version.

    Raises
    ------
    UnknownTargetError
        A named reference does not exist (a missing automatic one gives None instead).
    TraceParseError, StoreError
        A trace that cannot be read.
    """
    from quiho.detect import DEFAULT_METHODS, detect
    from quiho.trace import load_trace_profile

    ref_a = baseline or f"{application}@{version_a}"
    ref_b = target or f"{application}@{version_b}"
    if baseline is None and target is None and not (
        _has_trace_runs(store, application, version_a) and _has_trace_runs(store, application, version_b)
    ):
        return None
    pa = load_trace_profile(store, ref_a, x, amount)
    pb = load_trace_profile(store, ref_b, x, amount)
    changes = detect(pa, pb, list(methods or DEFAULT_METHODS), {})
    return TraceJoin(str(pa.source), str(pb.source), tuple(changes))
