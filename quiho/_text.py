"""Text that is safe to show on a terminal: names from user data never carry control characters through."""

from __future__ import annotations

import math
import re

# C0 controls (tab and newline included: a name must stay on its line), DEL, C1 controls (ESC-free CSI is
# U+009B), and the bidi overrides/isolates that reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

#: Why a designed fleet's change has no p: its factor moved neither version, so it was not tested.
UNTESTED_CHANGE = "not tested: moves neither version"


def fingerprint_word(fingerprinted: object, skipped: object = False) -> str:
    """A host's fingerprint as a report says it: ``yes``, ``not taken`` (left out on purpose) or ``MISSING``."""
    return "yes" if fingerprinted else "not taken" if skipped else "MISSING"


def holm_weight_note(weight: float | None) -> str:
    """``""`` for a full share of the weighted Holm; ``", weight 1/6: moves neither version"`` for a smaller one."""
    if weight is None or not weight < 1 or weight <= 0:
        return ""
    return f", weight 1/{round(1 / weight)}: moves neither version"


def printable(text: object) -> str:
    r"""Return ``str(text)`` with every control character written as a visible escape.

    Names come from files, stores and command lines; printed raw, a newline or an ANSI escape in one would let
    it forge output lines or recolour the terminal. Each such character becomes ``\xNN`` / ``\uNNNN``; other
    text, non-ASCII letters included, is unchanged.

    Parameters
    ----------
    text : object
        Anything; it is converted with ``str`` first.

    Returns
    -------
    str
        The text with control characters escaped.

    Examples
    --------
    >>> printable("a\nb\x1b[31m")
    'a\\x0ab\\x1b[31m'
    """
    return _UNSAFE.sub(lambda m: _escape(m.group()), str(text))


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def json_number(x: float | None, digits: int) -> float | None:
    """``x`` rounded to ``digits`` decimals for a JSON document, ``None`` where it is missing or not finite.

    JSON has no NaN or infinity, and a reader should see "no value" rather than a parser error.
    """
    if x is None:
        return None
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None
