"""The one Welch t-test p-value shared by detect and history (``quiho._stats.welch_p``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from quiho._stats import welch_p


def test_matches_scipy_and_is_symmetric() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(10, 1, 12), rng.normal(11, 3, 7)
    assert welch_p(a, b) == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-12)
    assert welch_p(a, b) == welch_p(b, a)


def test_small_and_constant_samples() -> None:
    assert math.isnan(welch_p([1.0], [1.0, 2.0])) and math.isnan(welch_p([], [1.0, 2.0]))  # not meaningful
    assert welch_p([5.0, 5.0], [5.0, 5.0, 5.0]) == 1.0
    assert welch_p([5.0, 5.0], [6.0, 6.0]) == 0.0
    assert welch_p([1e9, 1e9], [1e9 + 1e-4, 1e9 + 1e-4]) == 1.0  # below 1e-9 of the level: no difference
