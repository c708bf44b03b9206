"""Change points of one benchmark series: where its level moved, and by how much.

Method (E-Divisive style, as Apache Otava and MongoDB's signal-processing-algorithms do it,
with ``ruptures`` as the segmentation engine):

0. Values are compared as logarithms (a change is a ratio), winsorised at the median
   ± 4 MADs of their segment so that one wild sample cannot dominate.
1. Top-down binary segmentation. ``ruptures.Binseg`` with the least-squares cost
   (``model="l2"``) proposes where a segment splits; its gain for a split at ``k`` of ``n``
   points is ``S_k**2 * n / (k (n - k))``, ``S_k`` the sum of the first ``k`` centred values
   (a standardised CUSUM).
2. A permutation test of "this segment's level changes somewhere", with two statistics:
   the largest split gain (a step), and the largest gain of an interval ``[i, j)`` against
   the rest (a level that moved and came back, e.g. a regression fixed a few commits later,
   which no single split of the whole segment shows well; E-Divisive's (tau, kappa) search
   covers the same case). Each maximum is over *all* positions, so the search itself is in
   the null distribution (a plain two-sample test at the chosen split would be biased
   towards significance). p = 2 × the smaller of the two permutation p-values (Bonferroni),
   each (1 + #{T_perm >= T_obs}) / (1 + permutations), stopped early once both are clearly
   large (Besag & Clifford 1991). When the interval statistic is the stronger one, the
   segment is split twice (``Binseg`` with two breakpoints), else once.
3. Each round tests every open segment; Holm's correction over that round's tests;
   significant splits are kept and the pieces tested in the next round. Under pure noise the
   first round's single test stops everything, so the per-series false-positive rate is at
   most ``alpha`` (measured: evaluation/RESULTS_history.md).
4. A change point whose medians differ by less than ``min_change`` (fraction) is dropped
   afterwards: statistically real but too small to matter for a time per call.

Values are seconds per call (any positive unit works: only logs and ratios are used).
Everything here is pure and deterministic (seeded permutations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: Significance level of each round (Holm-corrected across its tests).
DEFAULT_ALPHA = 0.005
#: Shuffles per permutation test; p-values resolve to 1/(1 + this).
DEFAULT_PERMUTATIONS = 1999
#: Fewest points on each side of a change point (a level needs a few points to be a level).
DEFAULT_MIN_SIZE = 3
#: Smallest |after/before - 1| reported; DESIGN.md's default practical threshold is 0.02,
#: half of it keeps real small steps while hiding sub-percent wiggles.
DEFAULT_MIN_CHANGE = 0.01


@dataclass(frozen=True)
class Split:
    """One detected change: the level changes *before* point ``index`` (0-based).

    ``before``/``after``: medians of the segments on either side (same unit as the values);
    ``ratio`` = after / before (> 1 is slower); ``p_value`` of its permutation test.
    """

    index: int
    before: float
    after: float
    ratio: float
    p_value: float


def robust_log(values: Sequence[float]) -> np.ndarray:
    """``log(values)`` winsorised at median ± 4 × 1.4826 MAD (a no-op when the MAD is 0)."""
    y = np.log(np.asarray(values, dtype=float))
    med = float(np.median(y))
    mad = 1.4826 * float(np.median(np.abs(y - med)))
    return np.clip(y, med - 4 * mad, med + 4 * mad) if mad > 0 else y


def split_gain_max(y: np.ndarray, min_size: int) -> np.ndarray:
    """Max over splits ``k`` in ``[min_size, n - min_size]`` of ``S_k**2 * n / (k (n-k))``.

    ``y``: shape ``(rows, n)``, one ordering per row. Returns shape ``(rows,)``.
    This is ruptures' l2 gain of the best single split.
    """
    n = y.shape[1]
    centred = y - y.mean(axis=1, keepdims=True)
    sums = np.cumsum(centred, axis=1)[:, min_size - 1:n - min_size]
    k = np.arange(min_size, n - min_size + 1)
    return (sums ** 2 * (n / (k * (n - k)))).max(axis=1)


#: Segments longer than this test intervals on a grid of this many end points (the
#: single-split statistic always uses every position); bounds the cost at O(GRID**2).
GRID = 160


def interval_grid(n: int) -> np.ndarray:
    """Interval end points tested in a segment of ``n`` points: all, or an even grid with 0 and n."""
    if n + 1 <= GRID:
        return np.arange(n + 1)
    return np.unique(np.r_[np.linspace(0, n, GRID).round().astype(int), 0, n])


def interval_gain_max(y: np.ndarray, min_size: int) -> np.ndarray:
    """Max over intervals ``[i, j)`` of ``(S_j - S_i)**2 * n / (L (n - L))``, ``L = j - i``.

    ``S`` is the cumulative sum of centred values (``S_0 = 0``); the interval and the rest
    both hold at least ``min_size`` points. ``y``: shape ``(rows, n)``; returns ``(rows,)``.
    """
    rows, n = y.shape
    centred = y - y.mean(axis=1, keepdims=True)
    sums = np.concatenate([np.zeros((rows, 1)), np.cumsum(centred, axis=1)], axis=1)
    idx = interval_grid(n)
    length = idx[None, :] - idx[:, None]
    valid = (length >= min_size) & (length <= n - min_size)
    weight = np.where(valid, n / np.where(valid, length * (n - length), 1), 0.0)
    best = np.empty(rows)
    chunk = max(1, 2_000_000 // (len(idx) ** 2))
    for lo in range(0, rows, chunk):
        sub = sums[lo:lo + chunk][:, idx]
        diff = sub[:, None, :] - sub[:, :, None]
        best[lo:lo + chunk] = (diff ** 2 * weight).max(axis=(1, 2))
    return best


#: Besag-Clifford sequential stopping: a permutation test ends once this many shuffles
#: reached the observed statistic (then p = this / shuffles so far, clearly above alpha).
STOP_AFTER_EXCEEDANCES = 20


def change_p_values(values: Sequence[float], *, min_size: int = DEFAULT_MIN_SIZE,
                    permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> tuple[float, float]:
    """Permutation p-values ``(step, interval)`` of a segment (module docstring, step 2).

    Returns ``(1.0, 1.0)`` for segments too short to split or constant.
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 2 * min_size or np.all(x == x[0]):
        return 1.0, 1.0
    y = robust_log(x)
    # a tiny relative tolerance so float ties between equal sums count as ties
    obs_step = split_gain_max(y[None, :], min_size)[0] * (1 - 1e-12)
    obs_interval = interval_gain_max(y[None, :], min_size)[0] * (1 - 1e-12)
    rng = np.random.default_rng(seed)
    done = exceed_step = exceed_interval = 0
    batch = 50
    while done < permutations:
        size = min(batch, permutations - done)
        shuffled = rng.permuted(np.broadcast_to(y, (size, len(y))), axis=1)
        exceed_step += int(np.count_nonzero(split_gain_max(shuffled, min_size) >= obs_step))
        exceed_interval += int(np.count_nonzero(interval_gain_max(shuffled, min_size) >= obs_interval))
        done += size
        if min(exceed_step, exceed_interval) >= STOP_AFTER_EXCEEDANCES:
            return exceed_step / done, exceed_interval / done
        batch = min(batch * 2, 500)
    return (1 + exceed_step) / (1 + permutations), (1 + exceed_interval) / (1 + permutations)


def propose_splits(values: Sequence[float], count: int, min_size: int = DEFAULT_MIN_SIZE) -> list[int]:
    """Where ruptures' binary segmentation (l2 cost on :func:`robust_log`) splits a segment.

    Returns up to ``count`` indices (first point after each split), ascending.
    """
    import ruptures

    y = robust_log(values)
    count = min(count, len(y) // min_size - 1)
    if count < 1:
        return []
    algo = ruptures.Binseg(model="l2", min_size=min_size, jump=1).fit(y)
    return [int(k) for k in algo.predict(n_bkps=count)[:-1]]


def _holm(p_values: list[float], alpha: float) -> list[bool]:
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    keep = [False] * len(p_values)
    m = len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        keep[i] = True
    return keep


def segment_splits(values: Sequence[float], *, start: int = 0, alpha: float = DEFAULT_ALPHA,
                   permutations: int = DEFAULT_PERMUTATIONS,
                   min_size: int = DEFAULT_MIN_SIZE) -> list[tuple[int, float]]:
    """Significant split indices of ``values`` (offset by ``start``) with their p-values.

    The top-down rounds of the module docstring, without the magnitude filter.
    """
    x = np.asarray(values, dtype=float)
    found: list[tuple[int, float]] = []
    open_segments = [(0, len(x))]
    while open_segments:
        candidates = []
        for lo, hi in open_segments:
            segment = x[lo:hi]
            if len(segment) < 2 * min_size or np.all(segment == segment[0]):
                continue
            # the seed depends on the segment only, so results are reproducible
            p_step, p_interval = change_p_values(segment, min_size=min_size, permutations=permutations,
                                                 seed=(start + lo) * 7919 + (hi - lo))
            ks = propose_splits(segment, 1 if p_step <= p_interval else 2, min_size)
            if ks:
                candidates.append((lo, hi, [lo + k for k in ks], min(1.0, 2 * min(p_step, p_interval))))
        keep = _holm([c[3] for c in candidates], alpha)
        open_segments = []
        for (lo, hi, ks, p), ok in zip(candidates, keep):
            if ok:
                found += [(start + k, p) for k in ks]
                bounds = [lo, *ks, hi]
                open_segments += list(zip(bounds, bounds[1:]))
    return sorted(found)


def describe_splits(values: Sequence[float], splits: Sequence[tuple[int, float]], *,
                    min_change: float = DEFAULT_MIN_CHANGE) -> list[Split]:
    """Turn split indices into :class:`Split` (segment medians, ratio), dropping small ones.

    Small changes are dropped one at a time (the smallest first) and the neighbours'
    medians recomputed, so every reported ratio compares the levels actually shown.
    """
    x = np.asarray(values, dtype=float)
    kept = list(splits)
    while kept:
        described = _describe(x, kept)
        small = [i for i, s in enumerate(described) if abs(math.log(s.ratio)) < math.log1p(min_change)]
        if not small:
            return described
        drop = min(small, key=lambda i: abs(math.log(described[i].ratio)))
        del kept[drop]
    return []


def _describe(x: np.ndarray, splits: Sequence[tuple[int, float]]) -> list[Split]:
    bounds = [0] + [s[0] for s in splits] + [len(x)]
    medians = [float(np.median(x[a:b])) for a, b in zip(bounds, bounds[1:])]
    out = []
    for i, (index, p) in enumerate(splits):
        before, after = medians[i], medians[i + 1]
        ratio = after / before if before > 0 else math.inf
        out.append(Split(index=index, before=before, after=after, ratio=ratio, p_value=p))
    return out


def detect(values: Sequence[float], *, alpha: float = DEFAULT_ALPHA,
           permutations: int = DEFAULT_PERMUTATIONS, min_size: int = DEFAULT_MIN_SIZE,
           min_change: float = DEFAULT_MIN_CHANGE) -> list[Split]:
    """All change points of a series (full computation).

    Args:
        values: positive values in time order (seconds per call).
    Returns:
        :class:`Split` list in index order; empty for pure noise (with probability ~1-alpha).
    """
    splits = segment_splits(values, alpha=alpha, permutations=permutations, min_size=min_size)
    return describe_splits(values, splits, min_change=min_change)


def update(values: Sequence[float], previous: Sequence[Split], *, alpha: float = DEFAULT_ALPHA,
           permutations: int = DEFAULT_PERMUTATIONS, min_size: int = DEFAULT_MIN_SIZE,
           min_change: float = DEFAULT_MIN_CHANGE) -> list[Split]:
    """Change points after points were appended to a series whose change points were ``previous``.

    Incremental: every previous change point but the last is kept as it was (the history
    before it is settled); the tail from the second-to-last change point on (the whole
    series when there are fewer than two) is segmented again, so the last change point can
    move or vanish with the new evidence and new ones can appear. Cost: the tail's length,
    not the series'. :func:`detect` is the full recomputation (used after an out-of-order
    insertion).
    """
    if len(previous) < 2:
        return detect(values, alpha=alpha, permutations=permutations, min_size=min_size,
                      min_change=min_change)
    frozen = [(s.index, s.p_value) for s in previous[:-1]]
    start = frozen[-1][0]
    tail = segment_splits(list(values)[start:], start=start, alpha=alpha,
                          permutations=permutations, min_size=min_size)
    return describe_splits(values, frozen + tail, min_change=min_change)
