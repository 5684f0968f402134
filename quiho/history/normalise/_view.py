"""Raw and normalised side by side: text, Markdown table and a two-panel plot of a normalised detection."""

from __future__ import annotations

from pathlib import Path

from quiho._plotting import check_plot_path, literal_text, save_figure
from quiho._text import printable
from quiho.history.normalise._detect import NormalisedDetection, NormalisedNewest

__all__ = ["newest_text", "normalised_lines", "normalised_markdown", "plot_normalised"]


def _cp_text(nd: NormalisedDetection) -> list[str]:
    tag = "normalised" if nd.normalised else "raw"
    return [f"revision {cp.revision} (index {cp.index}): {cp.before:.4g} -> {cp.after:.4g} ({cp.magnitude:+.1%}), "
            f"p = {cp.p_value:.2g}{cp.location_text()}, {tag}" for cp in nd.detection.change_points]


def newest_text(nn: NormalisedNewest) -> str:
    """One line: the newest revision's verdict, magnitude, interval and p, and how its machine was handled."""
    c = nn.check
    if c.verdict == "not meaningful":
        return f"newest {c.revision}: {c.reason}" + (f" ({nn.reason})" if nn.reason != c.reason else "")
    return (f"newest {c.revision}: {c.verdict}, {c.magnitude:+.1%} [{c.ci[0]:+.1%}, {c.ci[1]:+.1%}] "
            f"({1 - nn.alpha:.1%}), p = {c.p_value:.2g} against {c.n_baseline} revisions; {nn.reason}")


def normalised_lines(nd: NormalisedDetection, newest: NormalisedNewest | None = None) -> list[str]:
    """Text of ``history detect --normalise``: the decision, the changes, the newest revision, the notes."""
    d = nd.detection
    lines = [printable(f"{d.series}: {d.n} revisions, method {d.method}, {nd.reason}")]
    if not d.meaningful:
        lines.append(printable(f"  {d.reason}"))
    elif not d.change_points:
        lines.append("  no change point passes the test")
    lines += [printable("  " + t) for t in _cp_text(nd)]
    if newest is not None:
        lines.append(printable("  " + newest_text(newest)))
    lines += [printable(f"  note: {n}") for n in nd.notes]
    return lines


def normalised_markdown(nd: NormalisedDetection, machines: list[str | None],
                        newest: NormalisedNewest | None = None) -> str:
    """A Markdown summary: the decision, the changes, the newest revision, every revision's raw and normalised mean."""
    from quiho._markdown import md_escape, md_table

    raw, used = nd.raw.values, nd.used.values
    rows = [[md_escape(rev[:12]), md_escape(m or "unknown"), f"{a:.4g}", f"{b:.4g}", f"{a / b:.3f}" if b else "-"]
            for rev, m, a, b in zip(nd.raw.revisions, machines, raw, used, strict=True)]
    changes = "\n".join(f"- {md_escape(t)}" for t in _cp_text(nd)) or "- no change point passes the test"
    if newest is not None:
        changes += f"\n- {md_escape(newest_text(newest))}"
    changes += "".join(f"\n- note: {md_escape(n)}" for n in nd.notes)
    return (f"### {md_escape(nd.detection.series)}: hardware-normalised detection\n\n{md_escape(nd.reason)}\n\n"
            f"{changes}\n\n" + md_table(["revision", "machine", "raw", "normalised", "machine factor"], rows,
                                        align="llrrr", escape=False))


@literal_text()
def plot_normalised(nd: NormalisedDetection, path: str | Path) -> Path:
    """Save raw (left) and normalised (right) revision means with the change points, one axis scale each.

    Raises
    ------
    UsageError
        The suffix is not .png or .svg, or the file cannot be written (:func:`quiho._plotting.check_plot_path`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = check_plot_path(path)  # refused before anything is drawn
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=110, sharex=True)
    unit = nd.raw.unit or "unit not given"
    for ax, h, title in ((axes[0], nd.raw, "raw"), (axes[1], nd.used, "normalised" if nd.normalised else
                                                    "normalised (not used: raw detected)")):
        ax.plot(h.orders, h.values, "o", mfc="white", mec="black", ms=4, label="revision mean")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("revision (order)")
        ax.set_ylabel(f"{h.name} ({unit})")
    target = axes[1] if nd.normalised else axes[0]
    for i, cp in enumerate(nd.detection.change_points):
        x = nd.raw.orders[cp.index] - 0.5
        target.axvline(x, color="black", ls="--", lw=1, label="change point" if i == 0 else None)
        target.annotate(f"{cp.magnitude:+.1%}\np={cp.p_value:.1g}", (x, 1), xycoords=("data", "axes fraction"),
                        xytext=(3, -4), textcoords="offset points", va="top", fontsize=8)
    for ax in axes:
        ax.legend(loc="best", fontsize=8, frameon=False)
    fig.suptitle(printable(f"{nd.raw.name}: {nd.reason}")[:160], fontsize=9)
    fig.tight_layout()
    save_figure(fig, out)
    return out
