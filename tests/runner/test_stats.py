"""Pure statistics: estimates, intervals, looks, verdicts, multiple testing."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner import stats


def _pairs(n, ratio, noise, seed, outliers=0):
    rng = random.Random(seed)
    base, head = [], []
    for i in range(n):
        drift = 1.0 + 0.2 * math.sin(i / 5.0)  # slow drift common to both sides of a pair
        b = 1e-3 * drift * math.exp(rng.gauss(0, noise))
        h = 1e-3 * drift * ratio * math.exp(rng.gauss(0, noise))
        if i < outliers:
            h *= 3.0  # a neighbour's burst in one sample
        base.append(b)
        head.append(h)
    return base, head


def test_estimate_recovers_a_known_ratio_despite_drift():
    base, head = _pairs(64, 1.10, 0.01, seed=1)
    est = stats.paired_estimate(base, head, 0.99)
    assert est.ci_low < 1.10 < est.ci_high
    assert abs(est.ratio - 1.10) < 0.01
    assert est.p_value < 1e-6 and est.rounds == 64


def test_outliers_move_the_estimate_by_a_rank_not_by_their_size():
    base, head = _pairs(32, 1.0, 0.005, seed=2, outliers=3)
    est = stats.paired_estimate(base, head, 0.99)
    assert abs(est.ratio - 1.0) < 0.01  # a mean of log-ratios would be ~ +10 %


def test_identical_samples_give_a_point_interval():
    xs = [1e-3] * 10
    est = stats.paired_estimate(xs, xs, 0.99)
    assert est.ratio == est.ci_low == est.ci_high == 1.0 and est.p_value == 1.0


def test_paired_estimate_rejects_unpaired_or_tiny_input():
    with pytest.raises(ValueError):
        stats.paired_estimate([1.0, 2.0], [1.0], 0.95)
    with pytest.raises(ValueError):
        stats.paired_estimate([1.0], [1.0], 0.95)


def test_interval_coverage_is_at_least_nominal():
    misses = 0
    trials = 300
    for seed in range(trials):
        base, head = _pairs(16, 1.05, 0.02, seed=seed + 100)
        est = stats.paired_estimate(base, head, 0.9)
        misses += not (est.ci_low <= 1.05 <= est.ci_high)
    assert misses / trials <= 0.15  # nominal 10 %


def test_look_schedule_doubles_up_to_max_without_process_pairs():
    assert stats.look_schedule(8, 128) == [8, 16, 32, 64, 128]
    assert stats.look_schedule(10, 100) == [10, 20, 40, 80, 100]
    assert stats.look_schedule(5, 5) == [5]
    with pytest.raises(ValueError):
        stats.look_schedule(1, 10)
    with pytest.raises(ValueError):
        stats.look_schedule(10, 5)


def test_look_schedule_in_whole_process_pairs():
    # defaults: five looks, geometric from 3 to 32 pairs of 8 rounds
    assert stats.look_schedule(24, 256, 8, 3) == [24, 48, 80, 144, 256]
    # min_process_pairs wins over a smaller min_rounds; every look is a whole number of pairs
    assert stats.look_schedule(8, 256, 8, 3) == [24, 48, 80, 144, 256]
    assert stats.look_schedule(24, 128, 8, 3) == [24, 40, 56, 88, 128]
    assert all(n % 6 == 0 for n in stats.look_schedule(6, 100, 6, 2))
    assert stats.look_schedule(12, 24, 4, 3) == [12, 16, 20, 24]  # fewer looks when they would repeat
    assert stats.look_schedule(16, 16, 8, 3) == [16]  # not enough room for 3 pairs: one look
    with pytest.raises(ValueError):
        stats.look_schedule(8, 128, 1, 2)


@pytest.mark.parametrize("ci,significant,expected", [
    ((1.00, 0.99, 1.01), False, "unchanged"),
    ((1.015, 1.005, 1.019), True, "unchanged"),      # significant but inside the band
    ((1.30, 1.20, 1.40), True, "regression"),
    ((0.70, 0.60, 0.80), True, "improvement"),
    ((1.30, 1.20, 1.40), False, "inconclusive"),     # the adjusted test did not reject
    ((1.02, 0.97, 1.08), True, "inconclusive"),      # interval contains 1
    ((1.025, 1.01, 1.04), True, "regression"),       # crosses the threshold: not equivalent
])
def test_decide(ci, significant, expected):
    est = stats.Estimate(ci[0], ci[1], ci[2], 0.001, 0.99, 32)
    assert stats.decide(est, 0.02, significant) == expected


def test_benjamini_hochberg_matches_the_textbook_example():
    # p-values of Benjamini & Hochberg (1995), first five of their example
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201]
    q = stats.benjamini_hochberg(p)
    assert q == pytest.approx([0.0005, 0.001, 0.0031667, 0.011875, 0.0201], rel=1e-3)
    assert stats.benjamini_hochberg([]) == []


def test_sequential_p_is_bonferroni_over_planned_looks():
    assert stats.sequential_p(0.004, 5) == pytest.approx(0.02)
    assert stats.sequential_p(0.5, 5) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=1e-300, max_value=1.0), min_size=1, max_size=30), st.integers(1, 8))
def test_adjusted_p_values_are_never_below_the_raw_ones_and_keep_their_order(p_looks, looks):
    """Benjamini-Hochberg over the sequential p-values: what the report prints as p_adjusted
    beside p_value (the look's own p) can never be smaller, and a smaller p never gets a larger
    adjusted value (issue: p_adjusted 1e-20 beside p 0.46)."""
    adjusted = stats.benjamini_hochberg([stats.sequential_p(p, looks) for p in p_looks])
    for p, q in zip(p_looks, adjusted):
        assert q >= p
    for (p1, q1), (p2, q2) in itertools.combinations(zip(p_looks, adjusted), 2):
        if p1 < p2:
            assert q1 <= q2 + 1e-15


def test_final_verdicts_demote_what_does_not_survive_bh():
    strong = stats.Estimate(1.3, 1.2, 1.4, 1e-6, 0.99, 32)
    weak = stats.Estimate(1.3, 1.1, 1.5, 0.008, 0.99, 8)
    verdicts, adjusted = stats.final_verdicts([strong, weak, weak], [5e-6, 0.04, 0.9], 0.05, 0.02)
    assert verdicts == ["regression", "inconclusive", "inconclusive"]
    assert adjusted[1] == pytest.approx(0.06)


def test_sequential_a_a_false_positive_rate_is_controlled():
    """Simulated A/A with the real stopping rule: regressions/improvements stay rare."""
    looks = stats.look_schedule(8, 128)
    alpha_look = stats.per_look_alpha(0.05, len(looks))
    false_positives = 0
    trials = 400
    for seed in range(trials):
        base, head = _pairs(128, 1.0, 0.03, seed=seed + 5000)
        verdict = "inconclusive"
        for n in looks:
            est = stats.paired_estimate(base[:n], head[:n], 1 - alpha_look)
            verdict = stats.decide(est, 0.02, est.p_value < alpha_look)
            if verdict != "inconclusive":
                break
        verdict = stats.decide(est, 0.02, stats.sequential_p(est.p_value, len(looks)) < 0.05)
        false_positives += verdict in ("regression", "improvement")
    assert false_positives / trials <= 0.02


def test_median_interval_covers_the_median():
    xs = [float(i) for i in range(1, 42)]
    med, lo, hi = stats.median_interval(xs, 0.95)
    assert med == 21.0 and lo < med < hi and lo >= 1 and hi <= 41
    assert stats.median_interval([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)


def test_blocked_estimate_one_block_uses_the_between_process_floor():
    base, head = _pairs(16, 1.10, 0.001, seed=7)
    block = stats.block_summary(base, head)
    est = stats.blocked_estimate([block], 0.99, between_floor=0.01)
    assert est.blocks == 1 and est.between_sd == pytest.approx(0.01)
    # within-process noise is ~0.1 %, but the interval is at least +-2.58 * 1 % wide
    assert math.log(est.ci_high / est.ci_low) / 2 == pytest.approx(2.5758 * math.hypot(0.01, block[1]), rel=1e-3)
    assert est.ci_low < 1.10 < est.ci_high


def test_blocked_estimate_learns_a_large_process_effect_from_the_blocks():
    # Four process pairs of identical code whose offsets differ by several percent: each block
    # is precise on its own, yet the combined interval must cover 1 and report the spread.
    blocks = []
    for j, offset in enumerate([1.04, 0.97, 1.03, 0.96]):
        base, head = _pairs(16, offset, 0.002, seed=20 + j)
        blocks.append(stats.block_summary(base, head))
    est = stats.blocked_estimate(blocks, 0.99, between_floor=0.005)
    assert est.between_sd > 0.02
    assert est.ci_low < 1.0 < est.ci_high
    assert est.p_value > 0.05
    naive = stats.paired_estimate(*_pairs(64, 1.0, 0.002, seed=1), 0.99)
    assert naive.ci_high - naive.ci_low < est.ci_high - est.ci_low


def test_blocked_estimate_agreeing_blocks_give_a_tight_decisive_interval():
    blocks = [stats.block_summary(*_pairs(16, 1.3, 0.01, seed=40 + j)) for j in range(3)]
    est = stats.blocked_estimate(blocks, 0.99, between_floor=0.003)
    assert 1.25 < est.ci_low < 1.3 < est.ci_high < 1.35
    assert est.p_value < 1e-3 and est.rounds == 48 and est.blocks == 3
    with pytest.raises(ValueError):
        stats.blocked_estimate([], 0.99, 0.01)


def test_no_verdict_from_a_single_process_pair():
    one = stats.BlockedEstimate(1.30, 1.25, 1.35, 1e-9, 0.99, 8, blocks=1)
    two = stats.BlockedEstimate(1.30, 1.25, 1.35, 1e-9, 0.99, 16, blocks=2)
    assert stats.decide(one, 0.02, True, min_blocks=2) == "inconclusive"
    assert stats.decide(two, 0.02, True, min_blocks=2) == "regression"
    verdicts, _ = stats.final_verdicts([one, two], [1e-8, 1e-8], 0.05, 0.02, min_blocks=2)
    assert verdicts == ["inconclusive", "regression"]


def test_blocked_estimate_one_outlying_pair_does_not_make_a_change():
    """The real case: in the first worker pair head ran the untouched loss step in 24.5 ms and base
    in 43.5 ms; in the later pairs both ran at ~44 ms. The old DerSimonian-Laird interval called
    that an 11 % improvement ([-18.9, -2.3] %); the interval over pairs must cover 1."""
    ratios = [24.5 / 43.5, 44.1 / 43.9, 43.8 / 44.2]
    blocks = []
    for j, r in enumerate(ratios):
        base, head = _pairs(8, r, 0.004, seed=60 + j)
        blocks.append(stats.block_summary(base, head))
    est = stats.blocked_estimate(blocks, 0.99, between_floor=0.003)
    assert est.ci_low < 1.0 < est.ci_high
    assert stats.decide(est, 0.02, est.p_value < 0.01, min_blocks=3) == "inconclusive"


def test_equivalence_level_is_two_one_sided_tests_at_the_look_level():
    assert stats.equivalence_level(0.01) == pytest.approx(0.98)
    for bad in (0.0, 0.5, -0.1):
        with pytest.raises(ValueError):
            stats.equivalence_level(bad)


def test_blocked_estimate_gives_the_equivalence_interval_inside_the_reported_one():
    blocks = [(c, 0.01, 32) for c in (0.004, -0.006, 0.011, -0.002, 0.007, -0.009)]
    est = stats.blocked_estimate(blocks, 0.99, 0.003, eq_level=0.98)
    assert est.eq_level == 0.98
    assert est.ci_low < est.eq_low < est.ratio < est.eq_high < est.ci_high
    # same centre, same standard error: the log-interval shrinks by the ratio of the t quantiles
    from scipy import stats as sps
    shrink = sps.t.ppf(0.99, 5) / sps.t.ppf(0.995, 5)
    assert math.log(est.eq_high / est.ratio) == pytest.approx(shrink * math.log(est.ci_high / est.ratio))
    assert stats.blocked_estimate(blocks, 0.99, 0.003).eq_low is None


def test_unchanged_is_tested_on_the_equivalence_interval():
    # the 99 % interval sticks out of ±2 %; the 98 % one (two one-sided tests at 1 %) does not
    est = stats.BlockedEstimate(1.0, 0.979, 1.021, 0.9, 0.99, 64, 0.982, 1.018, 0.98, blocks=8)
    assert stats.decide(est, 0.02, significant=False, min_blocks=2) == "unchanged"
    without = stats.BlockedEstimate(1.0, 0.979, 1.021, 0.9, 0.99, 64, blocks=8)
    assert stats.decide(without, 0.02, significant=False, min_blocks=2) == "inconclusive"
    # a change is still read off the reported interval, never the narrower one
    shifted = stats.BlockedEstimate(1.012, 0.999, 1.025, 0.02, 0.99, 64, 1.002, 1.022, 0.98, blocks=8)
    assert stats.decide(shifted, 0.02, significant=True, min_blocks=2) == "inconclusive"


def test_a_change_at_the_threshold_is_called_unchanged_at_the_one_sided_level():
    """Schuirmann's TOST is exact for normal pair estimates: with the true change at the threshold,
    the equivalence interval lies inside the band in look_alpha of the looks (not half of it, as
    with the two-sided interval, and not more)."""
    rng = random.Random(7)
    band = math.log(1.02)
    reps, j, look_alpha = 8000, 4, 0.01
    hits = 0
    for _ in range(reps):
        blocks = [(band + rng.gauss(0, 0.01), 0.01, 16) for _ in range(j)]
        est = stats.blocked_estimate(blocks, 1 - look_alpha, 1e-6, stats.equivalence_level(look_alpha))
        hits += stats.decide(est, 0.02, significant=False, min_blocks=2) == "unchanged"
    rate = hits / reps
    sd = math.sqrt(look_alpha * (1 - look_alpha) / reps)
    assert look_alpha - 3 * sd < rate < look_alpha + 3 * sd, rate
