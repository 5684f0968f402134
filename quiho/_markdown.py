"""Markdown tables for CI job summaries and pull-request comments, with user text escaped."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from quiho._text import printable

__all__ = ["md_escape", "md_table"]

# characters with a meaning inside GitHub-flavoured Markdown inline text and table cells: escapes, code,
# emphasis, links/images, cell separators, strikethrough (< > & are entity-escaped). '#', '-', '+' and digits
# matter only at the start of a line, where quiho's own text always stands.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: object) -> str:
    r"""``text`` as literal Markdown inline text, safe inside a table cell.

    Control characters become visible escapes (:func:`quiho._text.printable`,
    so a name cannot break the line or the table), HTML is entity-escaped (no
    tags, no comments), and every Markdown metacharacter, the cell
    separator ``|`` included, is backslash-escaped.

    Examples
    --------
    >>> md_escape("a|b *c* <img>")
    'a\\|b \\*c\\* &lt;img&gt;'
    """
    s = html.escape(printable(text), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", s)


def md_table(header: Sequence[object], rows: Sequence[Sequence[object]], *,
             align: Sequence[str] | None = None, escape: bool = True) -> str:
    r"""A GitHub-flavoured Markdown table.

    Parameters
    ----------
    header : sequence
        Column titles.
    rows : sequence of sequences
        Cells; each row must have ``len(header)`` cells.
    align : sequence of {"l", "r", "c"}, optional
        Column alignment; default left.
    escape : bool, default True
        Escape every cell with :func:`md_escape` (pass False only for cells
        the caller built from trusted Markdown).

    Returns
    -------
    str
        The table, one line per row, ending in a newline.

    Raises
    ------
    ValueError
        A row has the wrong number of cells, or an alignment is unknown.

    Examples
    --------
    >>> print(md_table(["name", "x"], [["a|b", 1]], align="lr"), end="")
    | name | x |
    |:---|---:|
    | a\|b | 1 |
    """
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    al = list(align) if align is not None else ["l"] * len(header)
    if len(al) != len(header) or any(a not in marks for a in al):
        raise ValueError(f"align must give one of l, r, c per column ({len(header)}), got {align!r}")
    cell = md_escape if escape else (lambda x: printable(x).replace("|", "\\|"))
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(marks[a] for a in al) + "|"]
    for i, r in enumerate(rows):
        if len(r) != len(header):
            raise ValueError(f"row {i} has {len(r)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(cell(c) for c in r) + " |")
    return "\n".join(lines) + "\n"
