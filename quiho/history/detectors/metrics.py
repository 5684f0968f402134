"""Change-point accuracy metrics as defined by TCPDBench (one annotator)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["true_positives", "f1_margin", "covering", "f1_annotators", "covering_annotators"]


def true_positives(truth: Iterable[int], pred: Iterable[int], margin: int = 5) -> set[int]:
    """True changes matched by a prediction within ``margin``; each prediction matches at most once.

    Each true change, in increasing order, takes the closest unused prediction.

    Examples
    --------
    >>> sorted(true_positives({1, 10, 20, 23}, {3, 8, 20}))
    [1, 10, 20]
    """
    left = set(pred)
    tp: set[int] = set()
    for tau in sorted(set(truth)):
        close = sorted((abs(tau - x), x) for x in left if abs(tau - x) <= margin)
        if close:
            tp.add(tau)
            left.remove(close[0][1])
    return tp


def f1_margin(truth: Iterable[int], pred: Iterable[int], margin: int = 5) -> float:
    """F1 of predicted change indexes against the true ones; index 0 counts as a change in both.

    Counting 0 makes a series without changes and without alarms score 1, and
    any false alarm on it lower the score.

    References
    ----------
    .. [1] G. J. J. van den Burg, C. K. I. Williams, "An evaluation of change
       point detection algorithms", arXiv:2003.06222, 2020 (TCPDBench).
    """
    t = set(truth) | {0}
    x = set(pred) | {0}
    tp = len(true_positives(t, x, margin))
    p, r = tp / len(x), tp / len(t)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def covering(truth: Iterable[int], pred: Iterable[int], n: int) -> float:
    """Segment covering: length-weighted best Jaccard overlap of each true segment with a predicted one.

    References
    ----------
    .. [1] G. J. J. van den Burg, C. K. I. Williams, arXiv:2003.06222, 2020.
    .. [2] P. Arbelaez et al., "Contour detection and hierarchical image
       segmentation", IEEE TPAMI 33, 2011.
    """
    def segments(cps: Iterable[int]) -> list[tuple[int, int]]:
        b = [0, *sorted({c for c in cps if 0 < c < n}), n]
        return [(b[i], b[i + 1]) for i in range(len(b) - 1)]

    def jaccard(a: tuple[int, int], b: tuple[int, int]) -> float:
        inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
        return inter / (max(a[1], b[1]) - min(a[0], b[0]))

    s_pred = segments(pred)
    return sum((a[1] - a[0]) * max(jaccard(a, b) for b in s_pred) for a in segments(truth)) / n


def _clean(pred: Iterable[int], n: int) -> set[int]:
    return {int(p) for p in pred if 1 <= p <= n - 2}


def f1_annotators(annotations: Sequence[Iterable[int]], pred: Iterable[int], n: int, margin: int = 5) -> float:
    """TCPDBench F1 against several annotators of one series.

    Predictions are cleaned (duplicates dropped, ``1 <= tau <= n - 2`` kept)
    and 0 is added to every set. Precision uses the union of the
    annotations; recall is the mean over annotators.

    Examples
    --------
    >>> round(f1_annotators([[50], [20]], [49], 100), 3)
    0.857
    """
    x = _clean(pred, n) | {0}
    anns = [set(a) | {0} for a in annotations]
    union = set().union(*anns)
    p = len(true_positives(union, x, margin)) / len(x)
    r = sum(len(true_positives(a, x, margin)) / len(a) for a in anns) / len(anns)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def covering_annotators(annotations: Sequence[Iterable[int]], pred: Iterable[int], n: int) -> float:
    """TCPDBench covering averaged over annotators (predictions cleaned as in :func:`f1_annotators`)."""
    x = _clean(pred, n)
    return sum(covering(a, x, n) for a in annotations) / len(annotations)
