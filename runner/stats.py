"""Statistics of a paired base/head comparison: estimates, intervals, verdicts, stopping.

Method (pure functions over plain lists; scipy provides the distributions):

* Each round gives one base sample ``b`` and one head sample ``h`` taken next to each other
  in time (ABBA order), so slow drift (clocks, heat, neighbours) is common to both. The
  analysis works on the paired log-ratios ``d = ln(h / b)``: the ratio of two times is
  multiplicative, its log is additive and close to symmetric, and each sample already
  averages many calls (so ``d`` is close to normal by the central limit theorem).
* Estimate: ``ratio = exp(HL(d))``, the Hodges–Lehmann estimate of the median log-ratio;
  its confidence interval inverts the Wilcoxon signed-rank test, and ``p`` is that test
  (``scipy.stats.wilcoxon``). Rank methods, because timing noise on shared machines has heavy
  tails (a neighbour's burst lands in one sample of a pair): they lose ~5 % efficiency
  against the t-test under normal noise and win by far under heavy tails.
* Process pairs: each look's new rounds run in a fresh pair of worker processes, and the
  per-pair estimates are combined with a random-effects model (:func:`blocked_estimate`):
  identical code in two processes can differ by a few percent for the process's whole life,
  so the interval must carry that between-process variance, not only the round-to-round noise.
* Sequential looks: a benchmark is looked at after ``n_1 = min_rounds`` rounds, then after
  ``2 n_1``, ``4 n_1``, ... up to ``max_rounds`` (``K`` planned looks). Looking repeatedly at a
  growing sample inflates the false-positive rate unless the level is spent across the looks;
  we use the Bonferroni split ``alpha / K`` per look (a Pocock-type group-sequential design,
  valid for any stopping rule because it bounds the union of the K events; Jennison &
  Turnbull, *Group Sequential Methods*, 2000, ch. 2). The intervals reported are therefore
  ``1 - alpha/K`` intervals, and a benchmark's sequential p-value is
  ``min(1, K * min_k p_k)``.
* Verdict (three-way decision against the practical threshold ``t``): ``unchanged`` when the
  whole interval lies inside ``[1/(1+t), 1+t]`` (equivalence, as in TOST); ``regression`` /
  ``improvement`` when the interval excludes 1 *and* the Benjamini–Hochberg adjusted
  sequential p-value across the run's benchmarks is below ``alpha``; ``inconclusive`` otherwise.
  A significant change smaller than the threshold therefore ends as ``unchanged`` once the
  interval is narrow enough, and a change at least as large as the threshold can never be
  called ``unchanged``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import Sequence

#: Default family-wise significance level of one benchmark's sequential test.
DEFAULT_ALPHA = 0.05
#: Default practical threshold: changes within +-2 % of the base time are "unchanged".
DEFAULT_THRESHOLD = 0.02


@dataclass(frozen=True)
class Estimate:
    """The state of one paired comparison after ``rounds`` rounds.

    ``ratio``/``ci_low``/``ci_high`` are head/base time per call (> 1: head slower);
    ``ci_level`` is the interval's coverage (fraction); ``p_value`` is the two-sided t-test p
    at this look; ``rounds`` is the number of pairs.
    """

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    ci_level: float
    rounds: int

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

    ``blocks`` is the number of process pairs; ``between_sd`` the between-process standard
    deviation of the log-ratio used (after the floor), ``within_se`` the pooled within-process
    standard error (log units).
    """

    blocks: int = 1
    between_sd: float = 0.0
    within_se: float = 0.0


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


def blocked_estimate(blocks: Sequence[tuple[float, float, int]], level: float, between_floor: float) -> BlockedEstimate:
    """Combine per-process-pair estimates with a random-effects model.

    Timing samples are nested: rounds within a process pair, process pairs within a run.
    Identical code in two fresh processes can differ by a few percent for the process's whole
    life (memory layout, allocator history), which pairing rounds cannot cancel; the honest
    interval therefore carries a between-process variance component (Kalibera & Jones,
    "Rigorous benchmarking in reasonable time", ISMM 2013). Method: DerSimonian–Laird
    (*Controlled Clinical Trials* 7, 1986) on the blocks' log-ratio estimates, with the
    between-process standard deviation never taken below ``between_floor`` (with one block it
    cannot be estimated at all; the floor is the machine's measured process-to-process spread,
    see evaluation/RESULTS.md). Normal interval and two-sided z-test on the combined estimate.

    Args:
        blocks: per process pair ``(center, se, n)`` from :func:`block_summary`.
        level: coverage of the interval (fraction).
        between_floor: lower bound of the between-process standard deviation, log units
            (0.01 ≈ 1 %).

    Raises:
        ValueError: no blocks.
    """
    from scipy import stats

    if not blocks:
        raise ValueError("no blocks")
    centers = [b[0] for b in blocks]
    variances = [b[1] ** 2 for b in blocks]
    w = [1.0 / v for v in variances]
    fixed = sum(wi * c for wi, c in zip(w, centers)) / sum(w)
    tau2 = 0.0
    if len(blocks) > 1:
        q = sum(wi * (c - fixed) ** 2 for wi, c in zip(w, centers))
        c_dl = sum(w) - sum(wi * wi for wi in w) / sum(w)
        tau2 = max(0.0, (q - (len(blocks) - 1)) / c_dl) if c_dl > 0 else 0.0
    tau2 = max(tau2, between_floor ** 2)
    w_star = [1.0 / (v + tau2) for v in variances]
    center = sum(wi * c for wi, c in zip(w_star, centers)) / sum(w_star)
    se = math.sqrt(1.0 / sum(w_star))
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    p = float(2.0 * stats.norm.sf(abs(center) / se))
    within = math.sqrt(1.0 / sum(w))
    return BlockedEstimate(math.exp(center), math.exp(center - z * se), math.exp(center + z * se), p, level,
                           sum(b[2] for b in blocks), blocks=len(blocks), between_sd=math.sqrt(tau2),
                           within_se=within)


def look_schedule(min_rounds: int, max_rounds: int) -> list[int]:
    """Planned looks: ``min_rounds, 2*min_rounds, 4*min_rounds, ...`` ending at ``max_rounds``.

    Raises:
        ValueError: min_rounds < 2 or max_rounds < min_rounds.
    """
    if min_rounds < 2:
        raise ValueError("min_rounds must be at least 2 (a paired t-interval needs two pairs)")
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds ({max_rounds}) must be >= min_rounds ({min_rounds})")
    looks = [min_rounds]
    while looks[-1] * 2 <= max_rounds:
        looks.append(looks[-1] * 2)
    if looks[-1] != max_rounds:
        looks.append(max_rounds)
    return looks


def per_look_alpha(alpha: float, looks: int) -> float:
    """The level spent at each look: ``alpha / looks`` (Bonferroni / Pocock-type split)."""
    return alpha / looks


def decide(est: Estimate, threshold: float, significant: bool, min_blocks: int = 1) -> str:
    """Three-way verdict for one estimate.

    Args:
        est: the interval at the current look.
        threshold: practical significance, a fraction (0.02 = 2 %).
        significant: whether the (adjusted) test rejects "no change" at this look.
        min_blocks: process pairs an estimate needs before any verdict. One pair cannot tell a
            code change from a process-level offset (seen: identical ``torch.softmax`` code 13 %
            faster in one of two fresh processes for their whole life), so the default of
            ``perfgate compare`` is 2.

    Returns:
        ``unchanged`` | ``regression`` | ``improvement`` | ``inconclusive``.
    """
    if getattr(est, "blocks", 1) < min_blocks:
        return "inconclusive"
    upper = 1.0 + threshold
    lower = 1.0 / upper
    if lower <= est.ci_low and est.ci_high <= upper:
        return "unchanged"
    if significant and (est.ci_low > 1.0 or est.ci_high < 1.0):
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


def sequential_p(p_values_at_looks: Sequence[float], planned_looks: int) -> float:
    """A valid p-value for the whole sequential test: ``min(1, K * min_k p_k)`` (Bonferroni)."""
    if not p_values_at_looks:
        return 1.0
    return min(1.0, planned_looks * min(p_values_at_looks))


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
    k = int(stats.binom.ppf((1 - level) / 2, n, 0.5))
    k = max(k, 1)
    return med, xs[k - 1], xs[n - k]
