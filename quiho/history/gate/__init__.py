"""The CI gate: does the newest revision regress, and which regressions are still open alerts.

``_levels`` reads each revision by its location (:func:`located`: its minimum by default, which a busy runner's
interference does not move) and compares the level of a few revisions with a baseline under a one-way
random-effects model (builds scatter, rounds scatter less); ``_ci`` checks the newest revision of every series
(:func:`check_newest`, :func:`verdict_of`); ``_alerts`` keeps each regression as a stored alert until the data or
a person closes it (:func:`run_gate`, settings in :class:`GateOptions`); ``_confirm`` reruns an alert's revisions
in pairs on one machine (:func:`confirm_alert`) and ``_rerun`` lets those reruns decide the gate
(:func:`confirm_gate`).
"""

from quiho.history.gate._alerts import (
    ALERT_STATES,
    OPEN_STATES,
    SPIKE_FILTERS,
    STACK_RULES,
    STACK_VARIANCES,
    GateOptions,
    GateResult,
    SeriesView,
    alert_lines,
    alert_markdown,
    alert_to_dict,
    list_alerts,
    run_gate,
    set_alert_state,
)
from quiho.history.gate._ci import NewestCheck, SeriesVerdict, check_newest, verdict_lines, verdict_markdown, verdict_of
from quiho.history.gate._levels import DEFAULT_LOCATION, LOCATIONS, WITHIN_RULES, located

__all__ = [
    # the newest revision of each series
    "NewestCheck",
    "SeriesVerdict",
    "check_newest",
    "verdict_of",
    "verdict_lines",
    "verdict_markdown",
    # stored alerts
    "GateOptions",
    "GateResult",
    "SeriesView",
    "run_gate",
    "list_alerts",
    "set_alert_state",
    "alert_lines",
    "alert_markdown",
    "alert_to_dict",
    "ALERT_STATES",
    "OPEN_STATES",
    "SPIKE_FILTERS",
    "STACK_RULES",
    "STACK_VARIANCES",
    "WITHIN_RULES",
    # each revision's value in the gate
    "LOCATIONS",
    "DEFAULT_LOCATION",
    "located",
]

# confirming a regression by rerunning its revisions in pairs (``_confirm``; the paired evidence: ``_paired``)
from quiho.history.gate._confirm import (  # noqa: E402
    CONFIRM_VERDICTS,
    Confirmation,
    ConfirmOptions,
    RerunPair,
    alert_revisions,
    change_text,
    confirm_alert,
    confirm_revisions,
    confirmation_lines,
    latest_confirmations,
)
from quiho.history.gate._paired import PairedChange, min_pairs, paired_change  # noqa: E402
from quiho.history.gate._rerun import ConfirmedGate, confirm_gate  # noqa: E402

__all__ += ["CONFIRM_VERDICTS", "ConfirmOptions", "Confirmation", "PairedChange", "RerunPair", "alert_revisions",
            "change_text", "confirm_alert", "confirm_revisions", "confirmation_lines", "latest_confirmations",
            "min_pairs", "paired_change",
            # the gate decided by rerunning its new alerts (``detect --all --rerun``)
            "ConfirmedGate", "confirm_gate"]
