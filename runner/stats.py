"""Statistics of a paired base/head comparison: estimates, intervals, verdicts, stopping.

Method (pure functions over plain lists; scipy provides the distributions):

* Each round gives one base sample ``b`` and one head sample ``h`` taken next to each other
  in time (ABBA order), so slow drift (clocks, heat, neighbours) is common to both. The
  analysis works on the paired log-ratios ``d = ln(h / b)``: the ratio of two times is
  multiplicative, its log is additive and close to symmetric, and each sample already
  averages many calls.
* Process pairs: a benchmark's rounds come in blocks of :data:`PAIR_ROUNDS` (a slow benchmark's
  later blocks may be longer: runner.pipeline.timing.schedule.later_pair_rounds), each block in a
  fresh pair of worker processes. Identical code in two fresh processes can differ by a few percent
  for the process's whole life, which pairing rounds cannot cancel; so the unit of replication
  is the process pair, not the round (Kalibera & Jones, "Rigorous benchmarking in reasonable
  time", ISMM 2013: the interval of a multi-level experiment comes from the means at the top
  level). Within a pair, the Hodges–Lehmann estimate of the median log-ratio (rank-based:
  timing noise on shared machines has heavy tails). Across the ``J`` pairs, the mean of those
  estimates with a Student t interval on ``J − 1`` degrees of freedom (:func:`blocked_estimate`).
  Its coverage with 2–8 pairs, between-pair spread and one outlying pair is measured in
  evaluation/RESULTS.md (``python evaluation/interval_coverage.py``).
* Sequential looks: a benchmark is looked at after ``J_1`` process pairs, then at geometrically
  spaced numbers of pairs up to :data:`MAX_ROUNDS` (``K`` planned looks, :func:`look_schedule`).
  Looking repeatedly at a growing sample inflates the false-positive rate unless the level is
  spent across the looks; we use the Bonferroni split ``alpha / K`` per look (valid for any
  stopping rule because it bounds the union of the K events; Jennison & Turnbull, *Group
  Sequential Methods*, 2000, ch. 2). The intervals reported are therefore ``1 - alpha/K``
  intervals, and a benchmark's sequential p-value is ``min(1, K * p)`` with ``p`` the test at the
  look whose interval is reported — so the interval excludes 1 exactly when that p-value is
  below ``alpha``.
* Verdict (three-way decision against the practical threshold ``t``): ``unchanged`` when the
  equivalence interval lies inside ``[1/(1+t), 1+t]``: two one-sided tests (TOST; Schuirmann,
  "A comparison of the two one-sided tests procedure…", J. Pharmacokinet. Biopharm. 15, 1987),
  each at the look's level ``alpha / K``, which is the ``1 - 2 alpha / K`` two-sided interval
  (:func:`equivalence_level`; 98 % at the defaults, beside the reported 99 %). Calling a change
  of ``t`` or more ``unchanged`` at some look therefore has probability at most ``alpha``, as
  the change verdicts do (the 99 % interval used before needed 13–20 % more process pairs on
  identical code, evaluation/RESULTS_sensitivity.md); ``regression`` / ``improvement`` when the
  interval excludes 1, the estimate lies beyond the threshold *and* the Benjamini–Hochberg
  adjusted sequential p-value across the run's benchmarks is below ``alpha``; ``inconclusive``
  otherwise. A significant change within the threshold ends ``unchanged`` once the interval is
  narrow enough; an estimate at or beyond it is never ``unchanged``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, asdict
from typing import Sequence

#: Internals (these four: keys of the configuration until deprecated, runner.config.INTERNALS).
#: Rounds of a fresh process pair (runner.pipeline.timing.schedule adapts them to cheap and slow
#: rounds) and of the last look: 32 pairs, looks after 2, 4, 8, 16, 32 pairs
#: (:func:`look_schedule`).
PAIR_ROUNDS, MAX_ROUNDS = 8, 256
#: Process pairs before any verdict (:func:`decide`): one cannot tell a code change from an offset
#: of its processes (identical ``torch.softmax`` code 13 % apart for two processes' whole life);
#: the t interval of 2 (1 df) is wide, so the first look decides only far changes (issue 26).
MIN_PROCESS_PAIRS = 2
#: Floor of the standard deviation between the pairs' log-ratio estimates (0.3 %), what processes
#: may differ by in ways no pair shows (:func:`blocked_estimate`; coverage: evaluation/RESULTS.md).
PROCESS_NOISE = 0.003


@dataclass(frozen=True)
class Estimate:
    """The state of one paired comparison after ``rounds`` rounds.

    ``ratio``/``ci_low``/``ci_high`` are head/base time per call (> 1: head slower);
    ``ci_level`` is the interval's coverage (fraction); ``p_value`` is the two-sided test of "no
    change" at this look that matches the interval; ``rounds`` is the number of paired rounds.
    ``eq_low``/``eq_high``: the equivalence interval at ``eq_level`` that :func:`decide` tests
    ``unchanged`` with (None: the interval above is used).
    """

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    ci_level: float
    rounds: int
    eq_low: float | None = None
    eq_high: float | None = None
    eq_level: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def log_ratios(base: Sequence[float], head: Sequence[float]) -> list[float]:
    """Paired ``ln(head_i / base_i)``; pairs where either value is not positive are dropped.

    Raises:
        ValueError: when base and head have different lengths.
    """
    if len(base) != len(head):
        raise ValueError(f"paired samples need equal lengths, got {len(base)} base and {len(head)} head")
    return [math.log(h / b) for b, h in zip(base, head) if b > 0 and h > 0]


def paired_estimate(base: Sequence[float], head: Sequence[float], level: float) -> Estimate:
    """Hodges–Lehmann ratio head/base with the Wilcoxon signed-rank interval of coverage ``level``.

    On the paired log-ratios ``d``: the estimate is the median of the Walsh averages
    ``(d_i + d_j) / 2, i <= j``; the interval is the inversion of the signed-rank test
    (Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., 2014, §3.2),
    with the order-statistic index from the test's normal approximation (continuity
    corrected); ``p_value`` is ``scipy.stats.wilcoxon`` (exact for small samples without ties).
    Rank-based, so a sample hit by a burst of contention from a neighbour moves the
    estimate and the interval by one rank rather than by its size.

    Args:
        base, head: paired samples, seconds per call, same length, at least 2 pairs.
        level: coverage of the interval, e.g. 0.99.

    Raises:
        ValueError: fewer than 2 usable pairs.
    """
    import numpy as np
    from scipy import stats

    d = np.asarray(log_ratios(base, head), dtype=float)
    n = len(d)
    if n < 2:
        raise ValueError(f"need at least 2 paired samples, got {n}")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    m = len(walsh)
    center = float(np.median(walsh))
    if np.all(d == d[0]):
        # Identical pairs (a quantised timer, or a constant-time benchmark): no spread.
        return Estimate(math.exp(center), math.exp(center), math.exp(center), 1.0 if d[0] == 0 else 0.0, level, n)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    mean_t = n * (n + 1) / 4.0
    sd_t = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    k = max(0, int(math.floor(mean_t - z * sd_t - 0.5)))
    low, high = float(walsh[k]), float(walsh[m - 1 - k])
    p = float(stats.wilcoxon(d).pvalue) if np.any(d != 0) else 1.0
    return Estimate(math.exp(center), math.exp(low), math.exp(high), p, level, n)


@dataclass(frozen=True)
class BlockedEstimate(Estimate):
    """An :class:`Estimate` over several process pairs (blocks), with the variance components.

    ``blocks`` is the number of process pairs used; ``between_sd`` the between-process standard
    deviation of the log-ratio (method of moments: the spread of the pairs' estimates beyond what
    their within-pair noise explains); ``within_se`` the standard error the within-pair noise
    alone would give (log units); ``block_centers`` the pairs' log-ratio estimates, in order.
    """

    blocks: int = 1
    between_sd: float = 0.0
    within_se: float = 0.0
    block_centers: tuple[float, ...] = ()


def block_summary(base: Sequence[float], head: Sequence[float]) -> tuple[float, float, int]:
    """One process pair's ``(center, se, n)`` in log-ratio units: the Hodges–Lehmann estimate and
    a standard error read off its 95 % Wilcoxon interval (half-width / 1.96).

    Raises:
        ValueError: fewer than 2 pairs.
    """
    est = paired_estimate(base, head, 0.95)
    center = math.log(est.ratio)
    se = (math.log(est.ci_high) - math.log(est.ci_low)) / (2 * 1.959964)
    return center, max(se, 1e-6), est.rounds


def unpaired_block_summary(base: Sequence[float], head: Sequence[float]) -> tuple[float, float, int]:
    """One process pair's ``(center, se, n)`` in log-ratio units when its samples are not paired
    round by round (a benchmark that measures itself: each side's run reports its own repetitions):
    the log of the ratio of the two medians, and the standard error of a difference of two means
    of logs (each side's variance of log values over its count; 0 when a side has one value).

    Raises:
        ValueError: a side without a positive value.
    """
    b = [math.log(v) for v in base if v > 0]
    h = [math.log(v) for v in head if v > 0]
    if not b or not h:
        raise ValueError("each side needs a positive value")

    def var(xs: list[float]) -> float:
        mean = sum(xs) / len(xs)
        return sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0

    se = math.sqrt(var(b) / len(b) + var(h) / len(h))
    return statistics.median(h) - statistics.median(b), max(se, 1e-6), min(len(b), len(h))


def equivalence_level(look_alpha: float) -> float:
    """The two-sided coverage whose interval carries the two one-sided tests of equivalence,
    each at ``look_alpha``: ``1 - 2 * look_alpha`` (Schuirmann 1987; e.g. 0.98 for 0.01).

    Raises:
        ValueError: ``look_alpha`` outside (0, 0.5).
    """
    if not 0.0 < look_alpha < 0.5:
        raise ValueError(f"look_alpha must lie in (0, 0.5), got {look_alpha}")
    return 1.0 - 2.0 * look_alpha


def blocked_estimate(blocks: Sequence[tuple[float, float, int]], level: float, between_floor: float,
                     eq_level: float | None = None) -> BlockedEstimate:
    """Combine the process pairs' estimates: mean with a Student t interval on ``J − 1`` df.

    Each process pair contributes one estimate (its Hodges–Lehmann log-ratio; pairs may differ in
    rounds, their spread is what the interval measures); the ``J`` estimates are treated as the sample, so everything that varies
    between processes (allocator and layout state, placement) and between rounds is in their
    spread, estimated from the data, with the t quantile paying for estimating it from few pairs
    (Kalibera & Jones, ISMM 2013, the top level of a multi-level experiment; with equal weights
    this is the Hartung–Knapp interval of a random-effects meta-analysis). The standard deviation
    used is never below ``between_floor`` (a machine whose processes differ by that much, in ways
    no process pair shows, still gets an honest interval). With a single pair there is no spread
    to estimate: the interval is that pair's own (its within-pair standard error combined with the
    floor, normal quantile) and :func:`decide` gives no verdict before ``min_blocks`` pairs.

    Args:
        blocks: per process pair ``(center, se, n)`` from :func:`block_summary`.
        level: coverage of the interval (fraction).
        between_floor: lower bound of the standard deviation between pairs' estimates, log units
            (:data:`PROCESS_NOISE`).
        eq_level: when given, also the equivalence interval at this coverage (``eq_low``,
            ``eq_high``; :func:`equivalence_level`), from the same centre and standard error.

    Raises:
        ValueError: no blocks.
    """
    from scipy import stats

    if not blocks:
        raise ValueError("no blocks")
    centers = [b[0] for b in blocks]
    j = len(blocks)
    rounds = sum(b[2] for b in blocks)
    within_var = sum(b[1] ** 2 for b in blocks) / j
    center = sum(centers) / j
    if j == 1:
        se = math.sqrt(blocks[0][1] ** 2 + between_floor ** 2)
        q = float(stats.norm.ppf(0.5 + level / 2.0))
        p = float(2.0 * stats.norm.sf(abs(center) / se))
        eq = _eq(center, se, eq_level, stats.norm.ppf)
        return BlockedEstimate(math.exp(center), math.exp(center - q * se), math.exp(center + q * se), p, level,
                               rounds, *eq, blocks=1, between_sd=between_floor, within_se=blocks[0][1],
                               block_centers=tuple(centers))
    var = sum((c - center) ** 2 for c in centers) / (j - 1)
    sd = max(math.sqrt(var), between_floor)
    se = sd / math.sqrt(j)
    q = float(stats.t.ppf(0.5 + level / 2.0, j - 1))
    p = float(2.0 * stats.t.sf(abs(center) / se, j - 1))
    eq = _eq(center, se, eq_level, lambda x: stats.t.ppf(x, j - 1))
    return BlockedEstimate(math.exp(center), math.exp(center - q * se), math.exp(center + q * se), p, level, rounds,
                           *eq, blocks=j, between_sd=math.sqrt(max(0.0, var - within_var)),
                           within_se=math.sqrt(within_var / j), block_centers=tuple(centers))


def _eq(center: float, se: float, eq_level: float | None, ppf) -> tuple:
    if eq_level is None:
        return None, None, None
    q = float(ppf(0.5 + eq_level / 2.0))
    return math.exp(center - q * se), math.exp(center + q * se), eq_level


def look_schedule(min_rounds: int, max_rounds: int, pair_rounds: int = 0, min_pairs: int = 1,
                  looks: int = 5) -> list[int]:
    """Planned looks, in rounds: ``looks`` numbers of process pairs spaced geometrically from
    ``J_1`` to the last whole pair within ``max_rounds`` (fewer when they would repeat).

    ``J_1`` is the larger of ``min_pairs`` and the pairs that ``min_rounds`` needs. Few looks,
    because each one spends ``alpha / looks`` of the level; geometric, because the interval narrows
    with the square root of the pairs. A compare's (16, :data:`MAX_ROUNDS`, :data:`PAIR_ROUNDS`,
    :data:`MIN_PROCESS_PAIRS`, 5): looks at 2, 4, 8, 16, 32 pairs (long rounds take fewer rounds
    per pair, :func:`runner.pipeline.timing.schedule.rounds_per_pair`, at the same pairs). With
    ``pair_rounds = 0`` (no process pairs) the looks double from ``min_rounds`` instead.

    Raises:
        ValueError: min_rounds < 2, max_rounds < min_rounds, or pair_rounds of 1.
    """
    if min_rounds < 2:
        raise ValueError("min_rounds must be at least 2")
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds ({max_rounds}) must be >= min_rounds ({min_rounds})")
    if pair_rounds == 1:
        raise ValueError("pair_rounds must be at least 2 (a pair's estimate needs two rounds)")
    if not pair_rounds:
        rounds = [min_rounds]
        while rounds[-1] * 2 <= max_rounds:
            rounds.append(rounds[-1] * 2)
        if rounds[-1] != max_rounds:
            rounds.append(max_rounds)
        return rounds
    last = max(1, max_rounds // pair_rounds)
    first = min(last, max(min_pairs, -(-min_rounds // pair_rounds)))
    pairs = sorted({math.ceil(first * (last / first) ** (k / max(1, looks - 1)) - 1e-9) for k in range(looks)})
    return [p * pair_rounds for p in pairs]


def per_look_alpha(alpha: float, looks: int) -> float:
    """The level spent at each look: ``alpha / looks`` (Bonferroni / Pocock-type split)."""
    return alpha / looks


def decide(est: Estimate, threshold: float, significant: bool, min_blocks: int = 1) -> str:
    """Three-way verdict for one estimate.

    ``unchanged`` tests the equivalence interval (``est.eq_low``/``eq_high``) where the estimate
    has one, else its interval; a change needs the interval itself to exclude 1.

    Args:
        est: the interval at the current look.
        threshold: practical significance, a fraction (0.02 = 2 %).
        significant: whether the (adjusted) test rejects "no change" at this look.
        min_blocks: process pairs an estimate needs before any verdict (a compare's:
            :data:`MIN_PROCESS_PAIRS`).

    A change needs the interval to exclude 1 *and* the estimate beyond the threshold: +1.2 %
    [+0.3, +2.1] % at ±2 % was a "regression" a maintainer read as a false alarm (issue 45).

    Returns:
        ``unchanged`` | ``regression`` | ``improvement`` | ``inconclusive``.
    """
    if getattr(est, "blocks", 1) < min_blocks:
        return "inconclusive"
    upper = 1.0 + threshold
    lower = 1.0 / upper
    eq_low = est.ci_low if est.eq_low is None else est.eq_low
    eq_high = est.ci_high if est.eq_high is None else est.eq_high
    if lower <= eq_low and eq_high <= upper:
        return "unchanged"
    if significant and (est.ci_low > 1.0 or est.ci_high < 1.0) and not lower < est.ratio < upper:
        return "regression" if est.ratio > 1.0 else "improvement"
    return "inconclusive"


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (false discovery rate), in the input order.

    Uses ``scipy.stats.false_discovery_control`` (scipy >= 1.11).
    """
    if not p_values:
        return []
    from scipy import stats

    return [float(p) for p in stats.false_discovery_control(list(p_values), method="bh")]


def sequential_p(p_at_reported_look: float, planned_looks: int) -> float:
    """A valid p-value for the whole sequential test: ``min(1, K * p)`` (Bonferroni over the K
    planned looks), with ``p`` the test at the look whose interval is reported.

    Valid for a data-dependent stopping look because ``K * p_stop < alpha`` implies that some
    look rejected at ``alpha / K``, an event of probability at most ``alpha`` under no change; it
    agrees with the reported interval (which excludes 1 exactly when it is below ``alpha``).
    """
    return min(1.0, planned_looks * p_at_reported_look)


def final_verdicts(estimates: Sequence[Estimate], p_seq: Sequence[float], alpha: float,
                   threshold: float, min_blocks: int = 1) -> tuple[list[str], list[float]]:
    """Verdicts across one run's benchmarks, after Benjamini–Hochberg on the sequential p-values.

    Args:
        estimates: per paired benchmark, the interval at its last look.
        p_seq: per benchmark, :func:`sequential_p` of its looks.
        alpha: the false-discovery level for regression/improvement verdicts.
        threshold: practical significance (fraction).
        min_blocks: see :func:`decide`.

    Returns:
        ``(verdicts, adjusted p-values)``, in the input order.
    """
    adjusted = benjamini_hochberg(p_seq)
    return [decide(e, threshold, q < alpha, min_blocks) for e, q in zip(estimates, adjusted)], adjusted


def median_interval(samples: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Median with a distribution-free confidence interval from binomial order statistics.

    Args:
        samples: seconds per call (at least 1 value).
        level: coverage, fraction.

    Returns:
        ``(median, low, high)`` in the samples' unit; with fewer than 6 samples the interval
        is the sample range (the exact order-statistic interval does not exist there).
    """
    from scipy import stats

    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    med = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    if n < 6:
        return med, xs[0], xs[-1]
    # Largest k with P(Binom(n, 1/2) < k) <= (1 - level) / 2: [x_(k), x_(n-k+1)] covers.
    k = max(1, int(stats.binom.ppf((1 - level) / 2, n, 0.5)))
    return med, xs[k - 1], xs[n - k]
