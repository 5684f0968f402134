"""Hardware-normalised change detection, for histories measured on rotating machines.

``_detect`` removes what each revision's machine explains (a per-series model on the machines' fingerprints,
used only where it is validated on held-out machines) and detects changes in what it does not
(:func:`detect_normalised`, :func:`check_newest_normalised`); ``_machines`` records which machine measured each
revision and reads it back from the store; ``_gate`` gives the CI gate normalised values
(:func:`normalised_view`); ``_view`` shows raw and normalised side by side.
"""

from quiho.history.normalise._detect import (
    EFFECT_MODELS,
    GbmEffect,
    MachineChange,
    MachineEffect,
    MachineFingerprint,
    NormalisedDetection,
    NormalisedNewest,
    NormaliseOptions,
    RidgeEffect,
    check_newest_normalised,
    detect_normalised,
)
from quiho.history.normalise._gate import normalised_view
from quiho.history.normalise._machines import (
    MachineSource,
    attach_machine,
    detect_series_normalised,
    local_machine,
    machine_type,
    revision_fingerprints,
    stored_host,
)
from quiho.history.normalise._view import newest_text, normalised_lines, normalised_markdown, plot_normalised

__all__ = [
    # the detection
    "MachineFingerprint",
    "NormaliseOptions",
    "MachineEffect",
    "MachineChange",
    "NormalisedDetection",
    "NormalisedNewest",
    "detect_normalised",
    "check_newest_normalised",
    "EFFECT_MODELS",
    "RidgeEffect",
    "GbmEffect",
    # which machine measured each revision
    "MachineSource",
    "local_machine",
    "stored_host",
    "attach_machine",
    "machine_type",
    "revision_fingerprints",
    "detect_series_normalised",
    # the CI gate on normalised values
    "normalised_view",
    # views
    "newest_text",
    "normalised_lines",
    "normalised_markdown",
    "plot_normalised",
]
