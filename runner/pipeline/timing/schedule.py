"""The timing pass's decisions, as pure functions over plain numbers: how many calls a sample
takes on each side, how many rounds a process pair takes, which rounds were disturbed, when more
pairs are futile, what change the noise let the compare resolve, and how a compare's budget is
split. :mod:`.timing` drives the workers with them; each is tested on its own.

Units: seconds, and changes as log-ratios (``ln(head / base)``) unless a name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

#: Largest ratio of the two sides' warm per-call times at which they still take the same number
#: of calls per sample (:func:`calls_per_sample`).
#:
#: Why share at all: calibrated separately, identical code got different counts (A/A on a shared
#: 2-vCPU VM: base 100 calls, head 42 — cold calibration samples are that noisy), and samples of
#: different lengths meet different per-sample costs (the other process's cache footprint, the
#: timer and loop set-up), so head read 19 % "faster" in all 12 pairs. Why not always: with one
#: count for both, a head 800× slower took 205 calls per sample = 19 s per sample, so two rounds
#: filled the budget (a real report's regression came out ``inconclusive``). Within a factor of 4
#: the shared count keeps the slower side's samples under 4 × ``min_sample_time`` × 1.2 (≈ 10 ms
#: on a CPU by default); beyond it, each side takes its own count, so both sides' samples last
#: about ``min_sample_time`` (or one call), and what a per-sample cost could still do to the estimate —
#: a few percent at the 19 % extreme seen — is far inside a change of 4× or more: it cannot flip
#: the verdict's direction or bring it near the threshold.
SHARE_FACTOR = 4.0

#: Up to a benchmark's first look, a process pair's rounds last at most this long (seconds),
#: unless that leaves fewer than :data:`MIN_PAIR_ROUNDS`; see :func:`rounds_per_pair` (and
#: :func:`later_pair_rounds` for the pairs after it).
PAIR_SECONDS = 2.0

#: A pair of cheap rounds takes more of them, doubling ``pair_rounds`` while they last at most this
#: long (seconds) and up to :data:`MAX_PAIR_ROUNDS_FACTOR` × ``pair_rounds``.
FAST_PAIR_SECONDS = 0.25

#: At most this many times ``pair_rounds`` rounds per pair.
MAX_PAIR_ROUNDS_FACTOR = 8

#: Fewest rounds per process pair (a pair's Hodges–Lehmann estimate needs two rounds).
MIN_PAIR_ROUNDS = 2


def calls_per_sample(first: tuple[int, float], second: tuple[int, float],
                     factor: float = SHARE_FACTOR) -> tuple[int, int, bool]:
    """Calls per sample of the two sides, from each side's own calibration.

    Args:
        first: ``(number, per_call)`` of the side set up first (its calibrated calls per sample
            and its warm seconds per call).
        second: the same for the other side.
        factor: :data:`SHARE_FACTOR`.

    Returns:
        ``(first's number, second's number, shared)``: both take ``first``'s number while the
        per-call times are within ``factor`` of each other (``shared`` True), else each its own.
    """
    (n1, t1), (n2, t2) = first, second
    if alike(t1, t2, factor):
        return n1, n1, True
    return n1, n2, False


def in_turn(n: int, order: tuple[str, ...] = ("base", "head")) -> tuple[str, ...]:
    """The sides' order in round (or process pair) ``n``: ``order``, reversed every other time
    (ABBA), so that neither side always goes first."""
    return order if n % 2 == 0 else order[::-1]


def alike(t1: float, t2: float, factor: float = SHARE_FACTOR) -> bool:
    """Are two per-call times within ``factor`` of each other (both positive)?"""
    return t1 > 0 and t2 > 0 and 1.0 / factor <= t2 / t1 <= factor


def shared_after_first_pair(base: Sequence[float], head: Sequence[float], numbers: tuple[int, int],
                            factor: float = SHARE_FACTOR) -> int | None:
    """The calls per sample both sides should share from now on, when the first process pair's
    rounds show that separate counts were chosen on a disturbed calibration; None when the
    choice stands.

    The calibration behind :func:`calls_per_sample` reads each side's warm per-call time from a
    few warm-up samples in a fresh process. On a loaded runner another task can take the CPU in
    two of those three samples, and identical code then looks more than ``factor`` times slower
    on one side, which gets its own, smaller count. Samples of different lengths are not hit
    alike by another task's bursts (a longer sample more often), so a rank estimate over the
    rounds shifts: identical code read −22 % [−34, −8] % (a Triton grid under load 2–6 on 2
    CPUs, base 3 calls per sample, head 2, evaluation/RESULTS_conventions.md), and simulated
    (tests/runner/test_timing_pass.py) 8 of 20 such compares called identical code faster.
    The first pair's rounds — dozens of samples a side — judge the per-call ratio far better
    than three warm-up samples, so when their medians are within ``factor`` the split is undone.

    Args:
        base, head: the first pair's samples (seconds per call), round by round.
        numbers: ``(base's, head's)`` calls per sample they were taken with.
        factor: :data:`SHARE_FACTOR`.

    Returns:
        The larger of the two counts (the one calibrated on the faster-looking, i.e. less
        disturbed, side: each sample then lasts at least the sample time) when the counts
        differ and the medians' ratio is within ``factor``; else None.
    """
    if numbers[0] == numbers[1] or len(base) < 2 or len(head) < 2:
        return None
    mb, mh = sorted(base)[len(base) // 2], sorted(head)[len(head) // 2]
    if mb <= 0 or mh <= 0 or not 1.0 / factor <= mh / mb <= factor:
        return None
    return max(numbers)


def renumbering(shared: bool | None, dropped: int, pairs: int, base: Sequence[float],
                head: Sequence[float], numbers: tuple[int | None, int | None]) -> int | None:
    """:func:`shared_after_first_pair`, once per benchmark: right after its first process pair
    (``pairs`` 1), whose sides were given separate calls per sample (``shared`` False) and whose
    rounds were not dropped for it before (``dropped`` 0); None otherwise, or when a side has no
    count."""
    if shared is not False or dropped or pairs != 1 or None in numbers:
        return None
    return shared_after_first_pair(base, head, numbers)


def rounds_per_pair(round_seconds: float, pair_rounds: int, minimum: int = MIN_PAIR_ROUNDS) -> int:
    """Rounds each process pair of a benchmark takes, from what one round lasts.

    - A round too long for ``pair_rounds`` of them in :data:`PAIR_SECONDS`: fewer, down to
      ``minimum`` (a whole training step of a second per call would otherwise spend 16 s in each
      pair before the first look; the process pair, not the round, is what the interval replicates).
    - A cheap round: ``pair_rounds`` doubled while the pair's rounds last at most
      :data:`FAST_PAIR_SECONDS`, up to :data:`MAX_PAIR_ROUNDS_FACTOR` × ``pair_rounds``. Why: on a
      shared VM one round's ratio varies by 8–19 %, so rounds per second narrow the interval, and a
      pair's set-up (a fork, the first call, the warm-up; ~0.1–0.2 s) should not cost more than its
      rounds (A/A, 8 identical benchmarks, 2 ms samples: 6 of 8 ``unchanged`` with 8 rounds per
      pair, 8 of 8 with 32, in the same 22 s).

    Chosen after the first pair's set-up; a slow benchmark that the first look leaves undecided
    takes more from the next pair on (:func:`later_pair_rounds`).

    Args:
        round_seconds: one round's expected duration (both sides' samples).
        pair_rounds: the configured rounds per pair (``pair_rounds``).
    """
    if round_seconds <= 0:
        return pair_rounds
    if pair_rounds * round_seconds > PAIR_SECONDS:
        return max(min(minimum, pair_rounds), int(PAIR_SECONDS // round_seconds))
    rounds = pair_rounds
    while rounds * 2 * round_seconds <= FAST_PAIR_SECONDS and rounds * 2 <= MAX_PAIR_ROUNDS_FACTOR * pair_rounds:
        rounds *= 2
    return rounds


#: Rounds of a process pair after the first look last at least this many times what the pair's
#: set-up takes (:func:`later_pair_rounds`). Why 4: a pair costs its set-up ``S`` plus ``n``
#: rounds of ``r`` seconds and its estimate varies by ``σ_b² + σ_w²/n`` (``σ_b`` between
#: processes, ``σ_w`` one round's log-ratio); the cost per unit of information,
#: ``(S + n·r)(σ_b² + σ_w²/n)``, is least at ``n·r = √(S·r)·σ_w/σ_b``. With this VM's figures at
#: ~100 ms per call (``S`` ≈ 1.2 s for both sides' first call and warm-up, ``r`` ≈ 0.29 s,
#: ``σ_w`` ≈ 14 %, ``σ_b`` ≈ 1–2 %) that is 3.4–6.9 × ``S``; 4 keeps the pairs many.
SETUP_RATIO = 4.0

#: ... but a later pair's rounds last at most this long (seconds).
LONG_PAIR_SECONDS = 8.0

#: :func:`later_pair_rounds` lengthens only pairs whose rounds last at least this long (seconds):
#: below it :func:`rounds_per_pair` already takes many cheap rounds per pair.
SLOW_ROUND_SECONDS = 0.05

#: :func:`later_pair_rounds` lengthens pairs while the estimate lies within this many times the
#: threshold's band (±10 % at the default 2 %).
SMALL_CHANGE_BANDS = 5.0


def later_pair_rounds(rounds: int, round_seconds: float, setup_seconds: float, pair_rounds: int,
                      ratio: float | None = None, threshold: float = 0.0) -> int:
    """Rounds each process pair takes after a benchmark's look that left it undecided (pure).

    :func:`rounds_per_pair` keeps a slow benchmark's pairs short (:data:`PAIR_SECONDS`) so that a
    large change is decided at the first look in seconds (issue 26: 10× and beyond within 10 s of
    timing). A benchmark still undecided there is small-effect or noisy, and then each pair's
    set-up — both sides' first call and warm-up in fresh processes, ~1.2 s at ~100 ms per call —
    cost as much as half its rounds (A/A at ~100 ms, 512 rounds: 222 s per benchmark, of which
    125 s in rounds). Later pairs take rounds lasting :data:`SETUP_RATIO` × the set-up, at most
    :data:`LONG_PAIR_SECONDS` and :data:`MAX_PAIR_ROUNDS_FACTOR` × ``pair_rounds``, never fewer
    than before. Pairs of different lengths stay valid for the interval: it is a t-interval over
    the pairs' estimates, whose spread it measures.

    Only while the estimate ``ratio`` lies within :data:`SMALL_CHANGE_BANDS` × the ±``threshold``
    band: a large change lacks pairs (the t quantile of two pairs is wide), not rounds —
    lengthened, a ×10 change at ~100 ms per call that the first look left undecided took 18 s of
    timing to its verdict at the second, where short pairs take under 10.

    Args:
        rounds: the rounds per pair so far.
        round_seconds: what one round lasts (both sides' samples), seconds.
        setup_seconds: what a later pair's set-up takes (both sides), seconds.
        pair_rounds: the configured ``pair_rounds``.
        ratio: the look's estimate of head/base (None: not known).
        threshold: the practical threshold (fraction).

    Returns:
        The rounds per pair from the next pair on (``rounds`` for rounds shorter than
        :data:`SLOW_ROUND_SECONDS`, an unknown set-up, or a large change).
    """
    if round_seconds < SLOW_ROUND_SECONDS or setup_seconds <= 0:
        return rounds
    if ratio is not None and (ratio <= 0 or abs(math.log(ratio)) > SMALL_CHANGE_BANDS * math.log1p(threshold)):
        return rounds
    want = math.ceil(SETUP_RATIO * setup_seconds / round_seconds)
    cap = min(MAX_PAIR_ROUNDS_FACTOR * pair_rounds, int(LONG_PAIR_SECONDS // round_seconds))
    return max(rounds, min(want, cap))


def calls_for(per_call: float, min_sample_time: float, number: int) -> int:
    """Calls per sample so that a sample at the warm ``per_call`` seconds lasts at least
    ``min_sample_time`` (20 % margin); ``number`` when it already does (never fewer)."""
    if per_call <= 0 or per_call * number >= min_sample_time:
        return number
    return max(number, int(math.ceil(1.2 * min_sample_time / per_call)))


#: A sample is disturbed when its process got less than this fraction of the sample's wall time
#: on the CPU *and* was switched out involuntarily at least once (see :func:`disturbed_rounds`).
DISTURBED_CPU_FRACTION = 0.97


def disturbed_rounds(base: Sequence[dict], head: Sequence[dict], threads: int | None,
                     cpu_fraction: float = DISTURBED_CPU_FRACTION) -> list[int]:
    """Indices of the rounds in which another task took the measured CPU from either side.

    Each sample is ``{"wall_s", "cpu_s", "switches"}`` (:class:`runner.worker.sampling.Sample`).
    For a single-threaded CPU benchmark, a sample whose process was on the CPU for less than
    ``cpu_fraction`` of its wall time while the kernel switched it out involuntarily lost that
    time to someone else (a neighbour, the runner's agent, a kernel thread, the hypervisor's
    steal shows the same way); its time per call is then the benchmark's plus the neighbour's.
    Rounds are judged, not samples, so both sides of a round go out together and the pairing holds.
    Only defined for ``threads == 1`` (several threads can exceed the wall time; a GPU benchmark
    waits off the CPU): empty otherwise.
    """
    if threads != 1:
        return []
    out = []
    for i, (b, h) in enumerate(zip(base, head)):
        if any(_disturbed(s, cpu_fraction) for s in (b, h)):
            out.append(i)
    return out


def _disturbed(sample: dict, cpu_fraction: float) -> bool:
    wall, cpu, switches = sample.get("wall_s"), sample.get("cpu_s"), sample.get("switches")
    if not wall or cpu is None or not switches:
        return False
    return cpu < cpu_fraction * wall


#: Futility is judged from this many process pairs on (the second look by default).
FUTILITY_MIN_PAIRS = 4

#: The lower confidence bound of the pairs' spread that futility projects with (optimistic).
FUTILITY_CONFIDENCE = 0.8

#: Conditional power below which more pairs are futile (see :func:`futility`).
FUTILITY_POWER = 0.1


def pair_sd(centers: Sequence[float]) -> float | None:
    """Standard deviation of the process pairs' log-ratio estimates (≈ a fraction); None with
    fewer than two pairs."""
    if len(centers) < 2:
        return None
    mean = sum(centers) / len(centers)
    return math.sqrt(sum((c - mean) ** 2 for c in centers) / (len(centers) - 1))


@dataclass(frozen=True)
class Projection:
    """What more process pairs could give a benchmark (:func:`futility`).

    ``futile``: neither verdict is reachable by ``pairs`` pairs; ``half_width``: the interval's
    projected half-width there (log units); ``pairs``: the most pairs the looks and the budget
    allow.
    """

    futile: bool
    half_width: float
    pairs: int


def futility(centers: Sequence[float], threshold: float, look_alpha: float, floor: float,
             max_pairs: int, confidence: float | None = None, min_power: float | None = None) -> Projection:
    """Would more process pairs decide this benchmark? (the fix evaluation/RESULTS_peers.md asks
    for: noisy identical benchmarks ran to all 32 pairs and still ended ``inconclusive``).

    Stochastic curtailment by conditional power (Lan, Simon & Halperin, "Stochastically curtailed
    tests in long-term clinical trials", 1982): take the current centre as the truth and ask how
    likely the interval at ``max_pairs`` pairs would be to decide — the equivalence interval to lie
    inside the band (``unchanged``, two one-sided tests at ``look_alpha``) or the interval to
    exclude 1 (a change). The spread is taken optimistically, at the lower
    ``confidence`` bound of the pairs' standard deviation (chi-square on ``J − 1`` degrees of
    freedom, never below ``floor``), so a benchmark is stopped only when even a spread at the
    low end of what its pairs allow could not narrow the interval enough. When neither verdict
    has a conditional power of ``min_power`` or more, more pairs are futile and the benchmark
    ends ``inconclusive`` now.

    Args:
        centers: the process pairs' log-ratio estimates (at least 4 to judge; fewer: not futile).
        threshold: the practical threshold (fraction).
        look_alpha: the level of one look.
        floor: ``process_noise`` (log units).
        max_pairs: the most pairs this benchmark could reach (planned looks and budget).
        confidence, min_power: default :data:`FUTILITY_CONFIDENCE`, :data:`FUTILITY_POWER`.
    """
    from scipy import stats

    confidence = FUTILITY_CONFIDENCE if confidence is None else confidence
    min_power = FUTILITY_POWER if min_power is None else min_power
    j = len(centers)
    if j < FUTILITY_MIN_PAIRS or max_pairs <= j:
        return Projection(False, math.inf, max(j, max_pairs))
    mean = sum(centers) / j
    sd_hat = pair_sd(centers)
    sd = max(floor, sd_hat * math.sqrt((j - 1) / float(stats.chi2.ppf(confidence, j - 1))))
    se = sd / math.sqrt(max_pairs)
    half = float(stats.t.ppf(1 - look_alpha / 2, max_pairs - 1)) * se
    eq_half = float(stats.t.ppf(1 - look_alpha, max_pairs - 1)) * se  # two one-sided tests (runner.stats.decide)
    band = math.log1p(threshold)
    norm = stats.norm
    p_unchanged = 0.0
    if eq_half < band:
        p_unchanged = float(norm.cdf((band - eq_half - mean) / se) - norm.cdf((eq_half - band - mean) / se))
    p_change = float(norm.cdf((mean - half) / se) + norm.cdf((-mean - half) / se))
    return Projection(max(p_unchanged, p_change) < min_power, half, max_pairs)


def resolvable_change(centers: Sequence[float], level: float, floor: float, power_z: float = 0.8416) -> float | None:
    """The smallest change (fraction, e.g. 0.04 = 4 %) this benchmark's noise let the compare
    find: a true change of that size would have given an interval (at ``level``, over these many
    pairs) that excludes "no change" with probability ≈ 80 % — ``(t + z_0.8) × sd / √J``.

    None with fewer than two pairs (no spread to judge).
    """
    from scipy import stats

    j = len(centers)
    if j < 2:
        return None
    sd = max(pair_sd(centers), floor)
    q = float(stats.t.ppf(0.5 + level / 2, j - 1))
    return math.expm1((q + power_z) * sd / math.sqrt(j))


#: Seconds a compare keeps, at most, for what follows its measurements (intent, results.json).
FINISH_SECONDS = 3.0

#: Fraction of the budget the profile pass may count on (when profiling is on).
PROFILE_SHARE = 0.15


@dataclass(frozen=True)
class Budget:
    """A compare's deadlines (host monotonic seconds) within ``--max-time``.

    ``timing_end``: the timing pass takes no round, and starts no process pair, that would end
    after it. ``profile_end``: the profile pass starts no pass that would end after it. ``end``:
    the compare's own end (``start + max_time``).
    """

    start: float
    end: float
    timing_end: float
    profile_end: float


def measured_share(timing_end: float, now: float, measured: int, total: int) -> float:
    """When the ``measured`` benchmarks that measure themselves of a compare's ``total`` must be
    done (monotonic seconds): their share of the timing budget left at ``now``, by count; the
    timed benchmarks get the rest (what they leave too)."""
    return now + (timing_end - now) * measured / max(total, 1)


def split_budget(start: float, max_time: float, now: float, profile: bool) -> Budget:
    """Deadlines of a compare that started at ``start`` (before its checkouts) and may take
    ``max_time`` seconds, with ``now`` the moment its timing pass starts.

    What is left at ``now`` is split: the profile pass may count on :data:`PROFILE_SHARE` of it
    (it gets whatever the timing pass leaves too), and :data:`FINISH_SECONDS` (at most 5 % of the
    budget) stay for the end.
    """
    end = start + max_time
    finish = min(FINISH_SECONDS, 0.05 * max_time)
    left = max(0.0, end - finish - now)
    timing_end = now + left * ((1 - PROFILE_SHARE) if profile else 1.0)
    return Budget(start=start, end=end, timing_end=timing_end, profile_end=end - finish)
