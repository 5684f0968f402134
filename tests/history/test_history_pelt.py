"""PELT, its noise scales, the combination, and auto's alternative dependence and trend settings."""

import numpy as np
import pytest

from quiho.datasets.history import ar_noise_history, step_history, trend_history
from quiho.errors import UsageError
from quiho.history import detect
from quiho.history.detectors._auto import differences_rho, pettitt, step_vs_trend_p, variogram_rho
from quiho.history.detectors._pelt import lag_sigma, long_run_sigma, pelt_l2


def brute_force(y: np.ndarray, pen: float, min_size: int) -> float:
    """Optimal penalised cost by the O(n^2) dynamic programme over every last-segment start (the reference)."""
    n = y.size
    f = np.full(n + 1, np.inf)
    f[0] = -pen
    for t in range(min_size, n + 1):
        for s in range(0, t - min_size + 1):
            if np.isfinite(f[s]):
                seg = y[s:t]
                f[t] = min(f[t], f[s] + float(((seg - seg.mean()) ** 2).sum()) + pen)
    return float(f[n])


def cost(y: np.ndarray, bkps: list[int], pen: float) -> float:
    b = [0, *bkps, y.size]
    return sum(float(((y[i:j] - y[i:j].mean()) ** 2).sum()) for i, j in zip(b[:-1], b[1:], strict=True)) \
        + pen * len(bkps)


@pytest.mark.parametrize("seed", range(5))
def test_pelt_is_the_exact_penalised_optimum(seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(rng.normal(0, 3, 4), 15) + rng.normal(0, 1, 60)
    for pen, m in [(2.0, 1), (8.0, 3), (20.0, 5)]:
        b = [int(x) for x in pelt_l2(y, pen, m)]
        assert all(j - i >= m for i, j in zip([0, *b], [*b, y.size], strict=True))
        assert cost(y, b, pen) == pytest.approx(brute_force(y, pen, m), abs=1e-8)


def test_noise_scales_from_differences():
    case = step_history(400, (200,), (100.0, 130.0), noise=2.0, random_state=1)
    assert lag_sigma(case.values) == pytest.approx(2.0, rel=0.15)  # the 15-sd step barely moves it
    assert case.values.std() > 5
    iid = long_run_sigma(case.values, 5)
    y_ar = ar_noise_history(2000, rho=0.7, noise=2.0, random_state=2).values
    ar = long_run_sigma(y_ar, 5)
    assert iid[1] < 0.15 and 0.45 < ar[1] < 0.85
    # long-run sd of AR(1) 0.7 with marginal sd 2: 2 sqrt(1.7 / 0.3) ~ 4.8 (lag 5 reads it low); lag-1
    # differences alone say 2 sqrt(0.3) ~ 1.1
    assert ar[0] > 3.0 and ar[0] > 2.5 * lag_sigma(y_ar)
    assert differences_rho(ar_noise_history(2000, rho=0.7, random_state=3).values, 11) > 0.4


def test_pelt_scale_and_auto_options_are_checked():
    y = step_history(60, (30,), (1.0, 2.0), noise=0.1).values
    with pytest.raises(UsageError, match="scale"):
        detect(y, "pelt", scale="nope")
    with pytest.raises(UsageError, match="rho_from"):
        detect(y, "auto", rho_from="nope")
    with pytest.raises(UsageError, match="trend_on"):
        detect(y, "auto", trend_on="nope")


def test_combo_keeps_only_changes_auto_finds():
    for seed in range(5):
        y = ar_noise_history(300, (150,), (100.0, 104.0), rho=0.6, random_state=seed).values
        auto = {c.index for c in detect(y).change_points}
        assert {c.index for c in detect(y, "combo").change_points} <= auto


def old_step_vs_trend_p(y: np.ndarray, k: int) -> float:
    """The check as it was (linear trend in plain time), written out: the reference for degree 1."""
    from scipy import stats

    n = y.size
    r = stats.rankdata(y)
    t = np.arange(n, dtype=float)
    x = np.column_stack([np.ones(n), (t - t.mean()) / n, (t >= k).astype(float)])
    beta, *_ = np.linalg.lstsq(x, r, rcond=None)
    resid = r - x @ beta
    se = np.sqrt(float(resid @ resid) / (n - 3) * np.linalg.inv(x.T @ x)[2, 2])
    return float(2 * stats.t.sf(abs(beta[2]) / se, n - 3))


def test_cubic_trend_check_is_exact_and_keeps_steps():
    t = np.arange(60, dtype=float)
    assert step_vs_trend_p(t, 30, degree=3) == 1.0
    assert step_vs_trend_p(np.r_[np.zeros(30), np.ones(30)], 30, degree=3) == 0.0
    # degree 1 in the Legendre basis is the test the default has always run
    for seed in range(3):
        y = trend_history(80, noise=2.0, random_state=seed).values
        assert step_vs_trend_p(y, 40) == pytest.approx(old_step_vs_trend_p(y, 40), rel=1e-9)
    # an S-shaped rank trend (a strong linear drift) is absorbed by the cubic, not by the line
    y = trend_history(200, drift=40.0, noise=2.0, random_state=5).values
    assert step_vs_trend_p(y, 100, degree=3) > step_vs_trend_p(y, 100)
    case = step_history(120, (60,), (100.0, 110.0), noise=1.0)
    assert [c.index for c in detect(case.values, "auto", trend_degree=3).change_points] == [60]


def test_variogram_rho_reads_ar1_and_not_steps():
    ar = [variogram_rho(ar_noise_history(400, rho=0.7, random_state=s).values) for s in range(20)]
    assert abs(float(np.median(ar)) - 0.7) <= 0.15
    assert abs(variogram_rho(ar_noise_history(4000, rho=0.7, random_state=1).values) - 0.7) <= 0.15
    steps = [step_history(400, (100, 200, 300), (100.0, 106.0, 100.0, 108.0), noise=1.0, random_state=s).values
             for s in range(20)]
    vario = [variogram_rho(y) for y in steps]
    # independent noise: about 0 although three 6-8 sd steps; lag-11 differences read the steps as dependence
    assert float(np.median(vario)) < 0.1 < float(np.median([differences_rho(y, 11) for y in steps]))
    y = ar_noise_history(300, rho=0.5, random_state=7).values
    assert variogram_rho(np.exp(y / 10)) == variogram_rho(y)  # ranks: any increasing transform
    assert variogram_rho(np.array([1.0, 2.0, 3.0])) == 0.0 and variogram_rho(np.ones(50)) == 0.0


def test_trend_check_on_values_absorbs_drift_and_keeps_steps():
    t = np.arange(60, dtype=float)
    for scale in (1.0, 1e-9):  # exact, whatever the unit
        assert step_vs_trend_p(scale * t, 30, on="values") == 1.0
        assert step_vs_trend_p(scale * np.r_[np.zeros(30), np.ones(30)], 30, on="values") == 0.0
    assert step_vs_trend_p(np.ones(60), 30, on="values") == 1.0
    # a linear drift of 6 sd over 200 builds: linear in values, S-shaped in ranks
    ranks, values = [], []
    for seed in range(30):
        y = trend_history(200, drift=6.0, noise=1.0, random_state=seed).values
        k, _ = pettitt(y, 5)
        ranks.append(step_vs_trend_p(y, k))
        values.append(step_vs_trend_p(y, k, on="values"))
    assert ranks[5] < 0.01 and values[5] > 0.05
    assert sum(p < 0.01 for p in values) <= sum(p < 0.01 for p in ranks) / 2
    # a 4-sd step with a 30-sd slow build before it: winsorising keeps the spike from the regression
    y = step_history(200, (100,), (100.0, 104.0), noise=1.0, random_state=3).values.copy()
    y[50] += 30.0
    assert step_vs_trend_p(y, 100, on="values") < 1e-3
    assert [c.index for c in detect(y, "auto", trend_on="values", rho_from="variogram").change_points] == [100]


def test_trend_check_with_difference_scale_sees_a_step_next_to_a_larger_one():
    # +6 sd at 40, +18 sd at 80: the second step stays in the residual and hides the first from the residual scale
    diff, resid = [], []
    for seed in range(30):
        y = step_history(120, (40, 80), (100.0, 106.0, 124.0), noise=1.0, random_state=seed).values
        diff.append(step_vs_trend_p(y, 40, on="values", scale="differences"))
        resid.append(step_vs_trend_p(y, 40, on="values"))
    assert max(diff) < 1e-4 and min(resid) > 1e-3
    # exact, whatever the unit; quantised values (MAD of differences 0) fall back to the residual scale
    t = np.arange(60, dtype=float)
    for scale in (1.0, 1e-9):
        assert step_vs_trend_p(scale * t, 30, on="values", scale="differences") == 1.0
        assert step_vs_trend_p(scale * np.r_[np.zeros(30), np.ones(30)], 30, on="values", scale="differences") == 0.0
    q = np.r_[np.zeros(30), np.ones(30)]
    q[::7] += 1.0  # most differences 0
    assert step_vs_trend_p(q, 30, on="values", scale="differences") == step_vs_trend_p(q, 30, on="values")
    with pytest.raises(UsageError):
        step_vs_trend_p(t, 30, scale="mad")
    with pytest.raises(UsageError):
        detect(t, "auto", trend_scale="mad")


def test_trend_check_with_difference_scale_keeps_drift_and_ar1_quiet():
    drift = []
    for seed in range(30):
        y = trend_history(200, drift=6.0, noise=1.0, random_state=seed).values
        drift.append(step_vs_trend_p(y, pettitt(y, 5)[0], on="values", scale="differences"))
    assert sum(p > 0.05 for p in drift) >= 20
    # AR(1) noise of rho 0.6, no step, the true rho's inflation: the level of the test holds at a fixed split
    infl = 1.6 / 0.4
    rejected = [step_vs_trend_p(ar_noise_history(200, rho=0.6, random_state=s).values, 100, infl, on="values",
                                scale="differences") < 0.01 for s in range(200)]
    assert sum(rejected) <= 10
    case = step_history(200, (100,), (100.0, 104.0), noise=1.0, random_state=3)
    assert [c.index for c in detect(case.values, "auto", trend_on="values", trend_scale="differences",
                                    rho_from="variogram").change_points] == [100]
