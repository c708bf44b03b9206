"""What the timing pass counts as evidence, as pure functions (issue 45: no verdict on identical
code). A process pair's rounds count once its warm-up reached a steady state on both sides
(:func:`steadiness`; :meth:`runner.pipeline.timing.pairs.ProcessPairs.warm_up` takes the warm-up
rounds); a benchmark whose pairs never settle stops without a verdict (:func:`never_steady`); the
rounds of a pair the estimate keeps (:func:`kept_rounds`); and a verdict within ×2 counts once
enough process pairs and timed seconds are behind it (:func:`short_of_evidence`), and a change
counts unless memory layouts switch it on and off (:func:`layout_modes`; both through :func:`gate`).

Units: seconds; drifts and changes as log-ratios or ratios head/base, as each name says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Sequence

from .schedule import SLOW_ROUND_SECONDS, alike


#: Warm-up (:func:`steadiness`): samples per window, and windows judged. A side is steady once
#: the medians of its last :data:`WARMUP_WINDOWS` windows of warm-up samples agree, each with the
#: one before (two agreements in a row: a side that still drifts passes one check now and then by
#: chance, as the windows slide round by round). Rounds of :data:`SLOW_ROUND_SECONDS` or more (a
#: training step) judge :data:`SLOW_WARMUP_WINDOWS` windows of :data:`SLOW_WARMUP_WINDOW`: their
#: warm-up would otherwise cost more than their timed rounds (simulated, 44-100 ms calls, 3
#: identical benchmarks in 67-120 s: 92 % ``unchanged`` with these, 58 % with two windows of 3).
WARMUP_WINDOW = 5
WARMUP_WINDOWS = 3
SLOW_WARMUP_WINDOW = 2
SLOW_WARMUP_WINDOWS = 2

#: ... within this fraction (log units), or within what the windows' own spread can explain
#: (:data:`WARMUP_NOISE_Z` standard errors of a difference of two medians), whichever is larger.
WARMUP_TOLERANCE = 0.03

#: Standard errors of the difference of two window medians that a steady side may still show.
WARMUP_NOISE_Z = 2.5

#: Each process pair warms up for at least this long (seconds, both sides together) and at
#: least the windows a side that steadiness is judged on.
WARMUP_MIN_SECONDS = 0.4

#: ... and for at most this long (seconds, both sides together), or the fraction
#: :data:`WARMUP_SHARE` of what is left of the benchmark's time when that is less (never under
#: :data:`WARMUP_MIN_SECONDS`).
WARMUP_MAX_SECONDS = 6.0
WARMUP_SHARE = 0.2


@dataclass(frozen=True)
class Steadiness:
    """What :func:`steadiness` found in one side's warm-up samples.

    ``steady``: True when the last windows' medians agree, False when they do not, None when
    there are too few samples to judge. ``drift``: the largest log-ratio of a window's median to
    the one before (None when not judged); ``allowed``: the largest ``|drift|`` still called
    steady (log units)."""

    steady: bool | None
    drift: float | None = None
    allowed: float | None = None


def steadiness(samples: Sequence[float], window: int = WARMUP_WINDOW, windows: int = WARMUP_WINDOWS,
               tolerance: float = WARMUP_TOLERANCE, z: float = WARMUP_NOISE_Z) -> Steadiness:
    """Has one side's warm-up reached a steady state? (pure)

    The last ``windows`` windows of ``window`` samples: steady when each window's median is,
    against the one before, within ``tolerance`` or within ``z`` standard errors of a difference of
    two medians of ``window`` samples (log units), the samples' spread read robustly (1.4826 × the
    median absolute deviation of each sample's log from its window's median; a median's standard
    error is ≈ 1.2533 σ/√n). So a state that still moves — allocator thresholds settling, caches
    filling, a process that switches from a 2 ms to a 4 ms mode — keeps warming, while a steady
    side on a noisy machine (its windows' medians a few percent apart at random) is not held back.
    Why windows and not the last three samples within 5 % (the rule before): a kornia ``pyrdown``
    whose calls cycle 4.4 → 4.0 → 3.6 → 2.2 ms passed that rule after 5 calls on one side and 21
    on the other (issue 45); its windows' medians agree once the cycle is steady.

    Args:
        samples: seconds per call, in the order taken.
        window: samples per window (:data:`WARMUP_WINDOW`); windows: how many are judged.
        tolerance: the drift always allowed (log units; :data:`WARMUP_TOLERANCE`).
        z: :data:`WARMUP_NOISE_Z`.
    """
    span = window * windows
    if windows < 2 or len(samples) < span or any(s <= 0 for s in samples[-span:]):
        return Steadiness(None)
    logs = [math.log(s) for s in samples[-span:]]
    groups = [sorted(logs[i:i + window]) for i in range(0, span, window)]
    medians = [_median(g) for g in groups]
    sigma = 1.4826 * _median(sorted(abs(x - m) for g, m in zip(groups, medians) for x in g))
    allowed = max(tolerance, z * 1.2533 * sigma * math.sqrt(2.0 / window))
    drift = max((b - a for a, b in zip(medians, medians[1:])), key=abs)
    return Steadiness(abs(drift) <= allowed, drift, allowed)


def _median(xs: Sequence[float]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def warmup_windows(round_seconds: float) -> tuple[int, int]:
    """``(samples per window, windows)`` of the warm-up's :func:`steadiness` for rounds of
    ``round_seconds``."""
    if round_seconds >= SLOW_ROUND_SECONDS:
        return SLOW_WARMUP_WINDOW, SLOW_WARMUP_WINDOWS
    return WARMUP_WINDOW, WARMUP_WINDOWS


def warmup_limit(left_seconds: float) -> float:
    """Seconds a process pair's warm-up may last at most (both sides together), with
    ``left_seconds`` left of the benchmark's time: :data:`WARMUP_MAX_SECONDS`, or
    :data:`WARMUP_SHARE` of what is left when that is less, never under :data:`WARMUP_MIN_SECONDS`."""
    return max(WARMUP_MIN_SECONDS, min(WARMUP_MAX_SECONDS, WARMUP_SHARE * max(0.0, left_seconds)))


def warmup_done(judged: Sequence[Steadiness], since_steady: Sequence[int], window: int, rounds: int,
                floor: int, spent_s: float, out_of_time: bool) -> tuple[bool, bool | None]:
    """After a warm-up round: ``(done, steady)``.

    Done and steady once every side is steady (``judged``: each side's :func:`steadiness`), after
    :data:`WARMUP_MIN_SECONDS` (``spent_s``) and at least ``floor`` rounds (what the benchmark's
    first pair needed). Done when the next round would pass the warm-up's limit or deadline
    (``out_of_time``): then ``steady`` is False when a side was moving — not once steady over its
    last window of rounds (``since_steady``: rounds since each side was last steady) — else None
    (a side steady a moment ago that a noisy sample tipped at the limit is not established, not
    moving).
    """
    if spent_s >= WARMUP_MIN_SECONDS and rounds >= floor and all(j.steady for j in judged):
        return True, True
    if out_of_time:
        moving = any(j.steady is False and since > window for j, since in zip(judged, since_steady))
        return True, (False if moving else None)
    return False, None


def make_up(calls: dict[str, int], warm: Sequence[float]) -> tuple[str, int] | None:
    """``(side, calls)``: the side of a pair that made fewer calls since its process started (its
    first call and calibration included), and how many more it makes in one untimed sample, so
    that both sides enter the timed rounds after the same number of calls; None for one side,
    calls already equal, or steady times per call (``warm``, in ``calls``' order) too far apart
    for one count (:func:`runner.pipeline.timing.schedule.alike`: no code change that large is an
    artefact of warm-up)."""
    if len(calls) != 2 or len(set(calls.values())) == 1 or not alike(*warm):
        return None
    behind = min(calls, key=calls.__getitem__)
    return behind, max(calls.values()) - calls[behind]


#: A benchmark stops, without a verdict, once this many of its process pairs did not warm up to
#: a steady state and they outnumber those that did (:func:`never_steady`).
UNSTEADY_PAIRS = 3


def never_steady(unsteady: int, pairs: int) -> bool:
    """Should a benchmark stop because its pairs' warm-ups do not reach a steady state? (pure)

    ``unsteady`` of its ``pairs`` process pairs were still moving when their warm-up's limit
    came (:func:`steadiness`): their rounds give no verdict, so more such pairs only spend budget."""
    return unsteady >= UNSTEADY_PAIRS and unsteady * 2 > pairs


#: A change whose whole interval lies beyond this factor (either way) is decided from
#: ``min_process_pairs`` pairs (issue 26: 800× in seconds); anything smaller needs the minimum
#: evidence of :func:`short_of_evidence`.
LARGE_CHANGE = 2.0

#: Fewest process pairs behind a verdict that is not a large change.
MIN_DECIDE_PAIRS = 4

#: Fewest seconds of timed rounds (both sides) behind a verdict that is not a large change: this
#: many rounds' worth, at least :data:`MIN_DECIDE_SECONDS` and at most :data:`MAX_DECIDE_SECONDS`.
MIN_DECIDE_ROUNDS = 32
MIN_DECIDE_SECONDS = 1.0
MAX_DECIDE_SECONDS = 8.0


def min_timed_seconds(round_seconds: float) -> float:
    """Seconds of timed rounds a verdict needs (both sides): :data:`MIN_DECIDE_ROUNDS` rounds of
    ``round_seconds``, within [:data:`MIN_DECIDE_SECONDS`, :data:`MAX_DECIDE_SECONDS`] — scaled to
    the call's duration, so a 3 ms call is timed for a second and a 44 ms training step for ~3 s."""
    return min(MAX_DECIDE_SECONDS, max(MIN_DECIDE_SECONDS, MIN_DECIDE_ROUNDS * max(0.0, round_seconds)))


def short_of_evidence(verdict: str, ci_low: float, ci_high: float, pairs: int, timing_seconds: float,
                      round_seconds: float) -> str | None:
    """Why a look may not give ``verdict`` yet, or None when the evidence suffices (pure).

    Within :data:`LARGE_CHANGE` any verdict needs :func:`min_timed_seconds` of timed rounds, and a
    change (``regression``, ``improvement``) also :data:`MIN_DECIDE_PAIRS` process pairs
    (``unchanged`` at two pairs already needs them to agree within ~0.1 %: the t quantile of one
    degree of freedom is 31.8). Why: a docs-only kornia commit's ``pyrdown`` was
    called 1.50× [1.27, 1.78] slower after 4 pairs and 0.85 s of timing, every pair agreeing,
    because one artefact (the two sides' warm-up) was in every pair (issue 45); the interval was
    valid for pairs that differ at random, not for an offset they all share. The minimum bounds
    how much a short-lived or per-process artefact can weigh; a change beyond ×2 or ÷2 over its
    whole interval is far beyond any such artefact seen (±9 % layout, ±50 % warm-up) and is
    decided at the first look.

    Args:
        verdict: what :func:`runner.stats.decide` would give.
        ci_low, ci_high: the look's interval of head/base.
        pairs: the process pairs behind it.
        timing_seconds: seconds spent in the benchmark's timed rounds so far (both sides).
        round_seconds: what one round lasts (both sides' samples).
    """
    if verdict == "inconclusive" or ci_low > LARGE_CHANGE or ci_high < 1.0 / LARGE_CHANGE:
        return None
    need = min_timed_seconds(round_seconds)
    if pairs < MIN_DECIDE_PAIRS and verdict != "unchanged":
        return f"{pairs} process pair(s), fewer than the {MIN_DECIDE_PAIRS} a verdict within ×{LARGE_CHANGE:g} needs"
    if timing_seconds < need:
        return (f"{timing_seconds:.2f} s of timed rounds, under the {need:.1f} s a verdict within "
                f"×{LARGE_CHANGE:g} needs")
    return None


#: Rounds of a pair that must stay when disturbed ones are left out (else the pair keeps all).
KEEP_AT_LEAST = 0.5


def kept_rounds(start: int, end: int, disturbed: Collection[int],
                throttled: Collection[int]) -> tuple[list[int], int, int]:
    """``(rounds kept, of them disturbed, of them throttled)``: the rounds ``start..end-1`` of one
    process pair the estimate keeps (the counts are what a report may not call left out).

    The rounds another task took the CPU in (``disturbed``,
    :func:`runner.pipeline.timing.schedule.disturbed_rounds`) and those NVML saw the GPU's clocks
    disturb (``throttled``, :func:`runner.pipeline.machine.telemetry.disturbed_rounds`) are left
    out, unless that would leave the pair fewer than :data:`KEEP_AT_LEAST` of its rounds (at least
    two): then the CPU detector saw most of the pair disturbed and its rounds stay (it may misread
    the machine), but NVML's word that the GPU was held down stands while two rounds remain —
    kept, throttled rounds bias the pair (simulated, identical code with head throttled 30 % of
    the time was called a regression in 2 to 4 of 12 seeds)."""
    out = set(disturbed) | set(throttled)
    keep = [i for i in range(start, end) if i not in out]
    if len(keep) >= max(2, math.ceil(KEEP_AT_LEAST * (end - start))):
        return keep, 0, 0
    keep = [i for i in range(start, end) if i not in throttled]
    if len(keep) < 2:
        keep = list(range(start, end))
    return keep, len(set(keep) & set(disturbed)), len(set(keep) & set(throttled))


def gate(verdict: str, estimate, timed: bool, timing_seconds: float, round_seconds: float,
         threshold: float) -> tuple[str, str | None]:
    """``(verdict, why it was held back)``: ``verdict`` (:func:`runner.stats.decide`'s, at a look or
    across the run), or ``inconclusive`` with the reason while the benchmark is short of the
    evidence a verdict needs (:func:`short_of_evidence`) or its change is one that memory layouts
    switch on and off (:func:`layout_modes`).

    Args:
        estimate: the :class:`runner.stats.BlockedEstimate` (``ci_low``, ``ci_high``, ``blocks``,
            ``block_centers``), or None.
        timed: whether the benchmark has timed rounds (one that measures itself has none: never
            held back).
        timing_seconds, round_seconds: as :func:`short_of_evidence`.
        threshold: the practical threshold (fraction), for :func:`layout_modes`.
    """
    if estimate is None or not timed:
        return verdict, None
    why = short_of_evidence(verdict, estimate.ci_low, estimate.ci_high, estimate.blocks,
                            timing_seconds, round_seconds)
    if verdict in ("regression", "improvement") and not why:
        why = layout_modes(estimate.block_centers, threshold)
    return ("inconclusive" if why else verdict), why


def by_layout(blocks: Sequence[tuple[float, float, int]], layouts: Sequence[int]) -> list[tuple[float, float, int]]:
    """The process pairs' ``(center, se, rounds)`` (:func:`runner.stats.block_summary`) as the
    replicates of the interval: each pair alone while no two share a memory layout; once layouts
    repeat, the pairs of one layout as one replicate (their centres' mean, its standard error,
    their rounds), in the order each layout first appears. Why: pairs forked from one server share
    its layout, whose effect can be an offset of ±50 % (:mod:`runner.pipeline.machine.layouts`);
    counted as separate replicates they would narrow the interval around that offset."""
    if len(set(layouts)) == len(layouts):
        return list(blocks)
    groups: dict[int, list[tuple[float, float, int]]] = {}
    for block, layout in zip(blocks, layouts):
        groups.setdefault(layout, []).append(block)
    out = []
    for members in groups.values():
        m = len(members)
        out.append((sum(c for c, _, _ in members) / m, math.sqrt(sum(se * se for _, se, _ in members)) / m,
                    sum(n for _, _, n in members)))
    return out


#: A layout replicate this many robust standard deviations from the others' median, where the
#: change vanishes, makes the change one that layouts switch on and off (:func:`layout_modes`).
MODE_Z = 3.0


def layout_modes(centers: Sequence[float], threshold: float) -> str | None:
    """Why a change is one that the memory layout switches on and off, or None (pure).

    ``centers``: the replicates' log-ratios (:func:`by_layout`: one per layout once pairs repeat
    layouts). A change the code makes appears in every layout; one that some layouts show and
    another does not is the layout's: a replicate where the change vanishes (within the threshold,
    or a third of the median change) and that lies more than :data:`MODE_Z` robust standard
    deviations from the others' median. Measured on docs-only kornia commits with 8 layouts:
    ``pyrup`` 0.51-0.55 in 7 layouts and 0.97 in the eighth, ``rgb_to_grayscale`` 1.14-1.37 and
    0.98 — every one of them a false verdict without this check. None with fewer than 4 replicates.
    """
    if len(centers) < 4:
        return None
    ordered = sorted(centers)
    m = _median(ordered)
    s = max(0.005, 1.4826 * _median(sorted(abs(c - m) for c in centers)))
    band = max(math.log1p(threshold), abs(m) / 3)
    vanished = [c for c in centers if abs(c) <= band and abs(c - m) > MODE_Z * s]
    if not vanished:
        return None
    return (f"in {len(vanished)} of {len(centers)} memory layouts there was no change ("
            + ", ".join(f"{math.exp(c):.3g}" for c in vanished) + f"), in the others {math.exp(m):.3g}: "
            "the layout, not the code, switches it on and off")
