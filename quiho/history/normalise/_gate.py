"""The CI gate on values with the machines' effect removed: ``quiho history detect --all --normalise``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from quiho.history._model import History
from quiho.history.gate import NewestCheck, SeriesView
from quiho.history.normalise._detect import MachineFingerprint, NormaliseOptions, check_newest_normalised
from quiho.history.normalise._machines import revision_fingerprints
from quiho.store import Store

__all__ = ["normalised_view"]

MachinesOf = Callable[[Store, History], Sequence[MachineFingerprint | None]]


def _stored_machines(store: Store, h: History) -> Sequence[MachineFingerprint | None]:
    return revision_fingerprints(store, h.name, h.revisions)


def normalised_view(options: NormaliseOptions | None = None, *, newest_alpha: float = 0.001,
                    test_within: str = "pooled",
                    machines_of: MachinesOf = _stored_machines) -> Callable[[Store, History], SeriesView]:
    """The gate's view of each series with its machines' effect removed, where the series validates it.

    Per series, :func:`check_newest_normalised` fits the effect on the revisions before the newest and divides each
    revision by its machine's factor; the gate (:func:`quiho.history.run_gate`) then reviews those values as it
    reviews stored ones, and an alert it raises says ``(normalised)``. Where the history is normalised but the
    newest revision cannot be (a machine the history has not measured, or no fingerprint), the series is unjudged
    this time: reading a new runner's raw value against the history is what makes a raw gate on a runner pool
    raise false alerts (docs/hardware-protocol.md). Where the history is not normalised (the leave-one-machine-out
    check fails, one machine, revisions without fingerprints) the raw series is reviewed and the note says why.

    Parameters
    ----------
    options : NormaliseOptions, optional
        The machine-effect model and the change points' settings of the fit.
    newest_alpha, test_within
        The gate's, for the newest revision's check inside the fit.
    machines_of : callable, optional
        ``(store, history) -> machine of each revision``; default: the fingerprints ``history import
        --fingerprint`` recorded.
    """
    opts = options or NormaliseOptions()

    def view(store: Store, h: History) -> SeriesView:
        if len(h) < 2:
            return SeriesView(h, "raw: a single revision, nothing to normalise")
        nn = check_newest_normalised(h, machines_of(store, h), opts, alpha=newest_alpha, test_within=test_within)
        if nn.normalised and nn.used is not None:
            return SeriesView(nn.used, nn.reason, tag="normalised")
        if not nn.history.normalised:
            return SeriesView(h, nn.reason)
        why = nn.reason if nn.check.verdict == "not meaningful" else \
            f"not meaningful: {nn.reason.removeprefix('raw check: ')}, and the history before it is read normalised"
        return SeriesView(h, why, unjudged=NewestCheck.not_meaningful(h.revisions[-1], why))

    return view
