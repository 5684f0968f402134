"""A screening design for the local fleet: two-level knobs on 8 hosts a round, the second round the fold-over.

Each kept knob has two levels, off (0) and its calibrated level (1). Up to 3 knobs fit a full 2^k factorial,
replicated to 8 hosts; 4 to 7 knobs take the 8-run fraction of Montgomery's table (the 2^(7-4) saturated design
is the 8-run Plackett–Burman design). Round 2 reverses every level of round 1, row by row (the full fold-over):
over both rounds every main effect is orthogonal to every two-factor interaction, and each round is balanced, so
main effects are orthogonal to the round block too. A design whose defining words all have even length (a full
factorial; the 2^(4-1) with I = ABCD) is its own fold-over, so round 2 revisits round 1's hosts; a resolution III
fraction's fold-over rows are 8 new conditions, hence 8 new hosts, each visited in round 2 only.

The calibration builds the local fleet's hosts from it (:func:`quiho.fleet.local.calibrate.choose`).

References
----------
Box, G. E. P., Hunter, J. S., Hunter, W. G. (2005). Statistics for Experimenters, 2nd ed., ch. 6 (fold-over).
Wiley.
Montgomery, D. C. (2017). Design and Analysis of Experiments, 9th ed., ch. 8 (2^(k-p) designs, resolution III
fractions and their fold-over, Plackett–Burman designs). Wiley.
Plackett, R. L., Burman, J. P. (1946). The design of optimum multifactorial experiments. Biometrika 33(4),
305-325.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quiho.errors import InventoryError

__all__ = ["ScreeningDesign", "DesignHost", "screening_design", "HOSTS_PER_ROUND", "MAX_KNOBS"]

#: Hosts visited per round: today's local fleet size, and the fewest an IRUP's leave-one-group-out needs.
HOSTS_PER_ROUND = 8
#: Most knobs 8 runs screen (one column per degree of freedom beyond the mean).
MAX_KNOBS = HOSTS_PER_ROUND - 1
_LETTERS = "ABCDEFG"
#: Columns 4-7 of the 8-run fractions as products of A, B, C (Montgomery ch. 8, selected 2^(k-p) designs): 4 knobs
#: D = ABC (resolution IV, mains clear of 2FIs already in round 1); with more, D = AB, E = AC, F = BC, G = ABC.
_GENERATORS: dict[int, tuple[str, ...]] = {4: ("ABC",), 5: ("AB", "AC"), 6: ("AB", "AC", "BC"),
                                           7: ("AB", "AC", "BC", "ABC")}
_KNOB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class DesignHost:
    """One condition of the design: its host name, each knob's level (0 off, 1 on) and the rounds visiting it."""

    name: str
    levels: tuple[int, ...]
    rounds: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"name": self.name, "levels": list(self.levels), "rounds": list(self.rounds)}


@dataclass(frozen=True)
class ScreeningDesign:
    """The hosts of a screening design and the order each round visits them in.

    ``rounds[r][i]`` is the host of row ``i`` in round ``r`` (0-based, as the profile numbers rounds); row ``i``
    of round 1 has every level of row ``i`` of round 0 reversed. ``generators`` are the fraction's columns 4-7 as
    products of the first three (letters ``A``... are the knobs in order; empty for a full factorial).
    """

    knobs: tuple[str, ...]
    kind: str
    generators: tuple[str, ...]
    hosts: tuple[DesignHost, ...]
    rounds: tuple[tuple[str, ...], ...]

    @property
    def split_rounds(self) -> bool:
        """True when each host belongs to one round (round 2 folds to new conditions), False when both visit all."""
        return set(self.rounds[0]) != set(self.rounds[-1])

    def host(self, name: str) -> DesignHost:
        """The host called ``name``."""
        return next(h for h in self.hosts if h.name == name)

    def levels(self, round_: int) -> list[tuple[int, ...]]:
        """Round ``round_``'s rows: each visited host's levels, in the round's order."""
        by_name = {h.name: h.levels for h in self.hosts}
        return [by_name[n] for n in self.rounds[round_]]

    def design_vars(self) -> dict[str, dict[str, int]]:
        """Host -> {knob: 0 or 1}, 0 the reference: :func:`quiho.design.factor_table`'s input for coded knobs.

        A fleet's hosts carry their knobs' real levels instead (``cpu-quota`` is coded from percent, not 0/1).
        """
        return {h.name: dict(zip(self.knobs, h.levels, strict=True)) for h in self.hosts}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``letters``: the knob each generator letter stands for)."""
        return {"knobs": list(self.knobs), "kind": self.kind, "generators": list(self.generators),
                "letters": dict(zip(_LETTERS, self.knobs, strict=False)),
                "hosts": [h.to_dict() for h in self.hosts], "rounds": [list(r) for r in self.rounds]}


def _host_name(levels: tuple[int, ...], replicate: int | None) -> str:
    """``local-abd``: the letters of the knobs at their far level (``local-base``: none), as in ``abd`` / ``(1)``."""
    on = "".join(_LETTERS[j].lower() for j, x in enumerate(levels) if x)
    return f"local-{on or 'base'}" + (f"-r{replicate}" if replicate else "")


def _round_one(k: int) -> tuple[list[tuple[int, ...]], tuple[str, ...]]:
    """Round 1's 8 rows (0/1 levels, standard order: the first knob alternates fastest) and the generators."""
    if 2 ** k <= HOSTS_PER_ROUND:
        full = [tuple((r >> j) & 1 for j in range(k)) for r in range(2 ** k)]
        return full * (HOSTS_PER_ROUND // 2 ** k), ()
    gens = _GENERATORS[k]
    rows = []
    for r in range(HOSTS_PER_ROUND):
        sign = {c: 1 if (r >> j) & 1 else -1 for j, c in enumerate("ABC")}
        signs = [sign[c] for c in "ABC"]
        for word in gens:
            s = 1
            for c in word:
                s *= sign[c]
            signs.append(s)
        rows.append(tuple((s + 1) // 2 for s in signs))
    return rows, tuple(f"{_LETTERS[3 + i]} = {w}" for i, w in enumerate(gens))


def screening_design(knobs: Sequence[str]) -> ScreeningDesign:
    """The hosts of a two-round screening design of ``knobs``: round 2 is round 1 folded over.

    Round 1 is the smallest two-level design that estimates every main effect on 8 hosts: the full 2^k factorial
    (replicated to 8) for k <= 3, else the 8-run fraction. Round 2 reverses every level, so over both rounds main
    effects are clear of two-factor interactions. Round 2 of a full factorial or of the 4-knob fraction (resolution
    IV, its own fold-over) revisits round 1's hosts; that of 5 to 7 knobs visits 8 new ones. A host is named by
    the letters of its knobs at the far level (``local-ad``; replicas end in ``-r1``, ``-r2`` ...).

    Parameters
    ----------
    knobs : sequence of str
        The kept two-level knobs, 1 to 7, in order (letters A, B, C ... in the generators): lower-case words
        joined by ``-``.

    Returns
    -------
    ScreeningDesign
        ``rounds``: 8 host names per round; ``hosts``: the distinct conditions, 8 (k <= 4) or 16 (k >= 5).

    Raises
    ------
    InventoryError
        No knob, more than :data:`MAX_KNOBS`, a repeated knob or a name that is not a lower-case word.

    References
    ----------
    Montgomery (2017), ch. 8; Plackett & Burman (1946); Box, Hunter & Hunter (2005), ch. 6 (module references).

    Examples
    --------
    >>> d = screening_design(["cpu-quota", "huge-pages", "co-runner", "storage", "kernel-entry"])
    >>> d.kind, d.generators
    ('2^(5-2) resolution III fraction + fold-over', ('D = AB', 'E = AC'))
    >>> d.rounds[0][:3], d.rounds[1][:3]
    (('local-de', 'local-a', 'local-be'), ('local-abc', 'local-bcde', 'local-acd'))
    >>> len(d.hosts), d.split_rounds
    (16, True)
    """
    knobs = tuple(knobs)
    if not 1 <= len(knobs) <= MAX_KNOBS:
        raise InventoryError(f"a screening design takes 1 to {MAX_KNOBS} two-level knobs on {HOSTS_PER_ROUND} "
                             f"hosts a round, not {len(knobs)}")
    if len(set(knobs)) < len(knobs):
        raise InventoryError(f"screening design: a knob is named twice ({', '.join(knobs)})")
    bad = [k for k in knobs if not _KNOB.match(k)]
    if bad:
        raise InventoryError(f"screening design: knob name(s) {', '.join(map(repr, bad))} are not lower-case "
                             "words joined by '-'")
    k = len(knobs)
    first, gens = _round_one(k)
    second = [tuple(1 - x for x in row) for row in first]
    if gens:
        kind = (f"2^({k}-{k - 3}) resolution IV fraction (its own fold-over)" if k == 4 else
                f"2^({k}-{k - 3}) resolution III fraction + fold-over")
        names = [[_host_name(row, None) for row in rows] for rows in (first, second)]
    else:
        reps = HOSTS_PER_ROUND // 2 ** k
        kind = f"2^{k} full factorial" + (f", {reps} replicates" if reps > 1 else "") + " (its own fold-over)"
        # a replica keeps its number in round 2: row i of round 1 is replica i // 2^k of its condition
        names = [[_host_name(row, i // 2 ** k + 1 if reps > 1 else None) for i, row in enumerate(rows)]
                 for rows in (first, second)]
    levels = {n: row for rows, ns in zip((first, second), names, strict=True) for n, row in zip(ns, rows, strict=True)}
    visited = {n: tuple(r for r in (0, 1) if n in names[r]) for n in levels}
    hosts = tuple(DesignHost(n, levels[n], visited[n]) for n in dict.fromkeys(itertools.chain(*names)))
    return ScreeningDesign(knobs, kind, gens, hosts, tuple(tuple(ns) for ns in names))
