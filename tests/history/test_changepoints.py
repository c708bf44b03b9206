"""Change points on generated series: steps found where they are, none in pure noise."""

from __future__ import annotations

import numpy as np
import pytest

from bot.history import changepoints as cp
from tests.history.factory import step_series


@pytest.mark.parametrize("n, at, factor, noise", [
    (40, 20, 1.10, 0.02),    # +10 % in the middle
    (40, 20, 0.90, 0.02),    # an improvement
    (60, 45, 1.05, 0.01),    # +5 % late
    (30, 6, 1.08, 0.01),     # early
    (24, 12, 1.03, 0.005),   # small step, quiet machine
])
def test_single_step_found_at_its_position(n, at, factor, noise):
    values = step_series(n, [(at, factor)], noise=noise, seed=at + n)
    found = cp.detect(values)
    assert len(found) == 1
    assert abs(found[0].index - at) <= 1
    assert found[0].ratio == pytest.approx(factor, rel=0.02)
    assert found[0].before == pytest.approx(1e-3, rel=0.02)
    assert found[0].p_value <= cp.DEFAULT_ALPHA


def test_two_steps_both_found():
    values = step_series(60, [(20, 1.10), (40, 0.85)], noise=0.01, seed=3)
    found = cp.detect(values)
    assert [s.index for s in found] == pytest.approx([20, 40], abs=1)
    assert found[0].ratio > 1.05 and found[1].ratio < 0.9
    # the second one's "before" is the level the first one moved to
    assert found[1].before == pytest.approx(found[0].after, rel=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_pure_noise_has_no_change_point(seed):
    values = step_series(50, [], noise=0.03, seed=seed)
    assert cp.detect(values) == []


def test_a_single_outlier_is_not_a_change():
    values = step_series(40, [], noise=0.01, seed=7)
    values[25] *= 3.0
    assert cp.detect(values) == []


def test_significant_but_tiny_change_is_dropped_by_min_change():
    values = step_series(200, [(100, 1.004)], noise=0.001, seed=1)
    assert len(cp.detect(values, min_change=0.0)) == 1
    assert cp.detect(values) == []  # below DEFAULT_MIN_CHANGE (1 %)


def test_constant_and_short_series():
    assert cp.detect([1.0] * 30) == []
    assert cp.detect([1.0, 2.0, 1.0]) == []
    assert cp.detect([]) == []


def test_permutation_p_value_is_uniformish_under_noise_and_tiny_for_a_step():
    rng = np.random.default_rng(0)
    p_noise = [cp.change_p_values(np.exp(rng.normal(size=30) * 0.01), permutations=199, seed=i)[0]
               for i in range(60)]
    assert 0.3 < float(np.mean(p_noise)) < 0.7
    step = np.exp(np.r_[np.zeros(15), np.ones(15) * 0.1] + rng.normal(size=30) * 0.01)
    p_step, _ = cp.change_p_values(step, permutations=199)
    assert p_step == pytest.approx(1 / 200)


def test_split_statistic_is_ruptures_l2_gain():
    values = step_series(30, [(11, 1.2)], noise=0.02, seed=5)
    y = cp.robust_log(values)
    n, m = len(y), cp.DEFAULT_MIN_SIZE
    sums = np.cumsum(y - y.mean())
    k = np.arange(m, n - m + 1)
    stat = sums[k - 1] ** 2 * n / (k * (n - k))
    assert cp.propose_splits(values, 1) == [int(k[np.argmax(stat)])] == [11]
    assert cp.split_gain_max(y[None, :], m)[0] == pytest.approx(stat.max())
    # every single split is also an interval touching an end
    assert cp.interval_gain_max(y[None, :], m)[0] >= stat.max() * (1 - 1e-12)


def test_a_regression_fixed_later_is_two_change_points():
    # up 15 % for 12 commits, then back: one split of the whole series shows this poorly
    values = step_series(34, [(12, 1.15), (24, 1 / 1.15)], noise=0.005, seed=9)
    found = cp.detect(values)
    assert [s.index for s in found] == pytest.approx([12, 24], abs=1)
    assert found[0].ratio > 1.1 and found[1].ratio < 0.9


def test_a_recent_step_is_found_with_few_points_after_it():
    values = step_series(40, [(35, 1.05)], noise=0.01, seed=4)
    (found,) = cp.detect(values)
    assert abs(found.index - 35) <= 1


def test_heavy_tailed_noise_with_outliers_has_no_change_point():
    rng = np.random.default_rng(21)
    values = 1e-3 * np.exp(rng.standard_t(2, 60) * 0.01)
    values[[7, 30, 31, 50]] *= [1.5, 2.0, 1.8, 3.0]
    assert cp.detect(values) == []


def test_long_series_use_the_interval_grid():
    assert len(cp.interval_grid(50)) == 51
    grid = cp.interval_grid(1000)
    assert grid[0] == 0 and grid[-1] == 1000 and len(grid) <= cp.GRID + 2
    values = step_series(400, [(300, 1.05)], noise=0.01, seed=8)
    (found,) = cp.detect(values)
    assert abs(found.index - 300) <= 1


def test_incremental_update_matches_full_detection_as_points_arrive():
    values = step_series(70, [(20, 1.10), (45, 0.9)], noise=0.01, seed=11)
    previous: list = []
    for n in range(10, len(values) + 1):
        previous = cp.update(values[:n], previous)
    full = cp.detect(values)
    assert [s.index for s in previous] == [s.index for s in full]
    assert [round(s.ratio, 9) for s in previous] == [round(s.ratio, 9) for s in full]


def test_update_keeps_settled_change_points():
    values = step_series(80, [(20, 1.2), (40, 0.8), (60, 1.2)], noise=0.01, seed=2)
    previous = cp.detect(values[:70])
    assert len(previous) == 3
    updated = cp.update(values, previous)
    assert [s.index for s in updated[:2]] == [s.index for s in previous[:2]]
