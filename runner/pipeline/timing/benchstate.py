"""One benchmark's state during the timing pass (:mod:`.timing`): each side's samples and what
the worker measured around them, the process pairs, the estimate and the verdict so far. Plain
mutable data; the pass drives it, :mod:`.entries` turns a finished one into results.json's entry."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ... import stats

if TYPE_CHECKING:
    from .stops import Stop


@dataclass
class SideState:
    """One side of one benchmark during the timing pass.

    ``samples`` are seconds per call in round order, with each sample's ``wall`` and ``cpu``
    seconds and involuntary context ``switches`` beside them (what the worker measured around it);
    ``number`` is the calls per sample this side samples with (chosen after the first pair's
    warm-up, :func:`runner.pipeline.timing.schedule.calls_per_sample`), ``calibrated`` its own
    calibration, ``per_call`` its warm seconds per call then; ``skipped`` is the reason when the
    benchmark's own suite skipped it on this side (asv's ``NotImplementedError`` from a setup, a
    pytest skip). ``memory`` and
    ``compile`` hold, per process pair that ended, what the worker's ``measure`` request found in
    it (peak memory of one call; torch.compile's facts, None where nothing compiled), aligned
    between the sides; ``measure_error`` the last reason one could not be measured.
    """

    samples: list[float] = field(default_factory=list)
    wall: list[float | None] = field(default_factory=list)
    cpu: list[float | None] = field(default_factory=list)
    switches: list[int | None] = field(default_factory=list)
    others_busy: list[float | None] = field(default_factory=list)
    steal: list[float | None] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None
    peak: int | None = None
    number: int | None = None
    calibrated: int | None = None
    per_call: float | None = None
    first_call_s: float | None = None
    #: calls the first pair's process made before its timed rounds (first call, calibration, warm-up)
    warmup_calls: int | None = None
    #: calls the current process made in its set-up (first call, calibration)
    setup_calls: int | None = None
    #: seconds per call at the end of the latest warm-up (the median of its last window)
    warm_per_call: float | None = None
    memory: list[dict | None] = field(default_factory=list)
    compile: list[dict | None] = field(default_factory=list)
    measure_error: str | None = None
    #: whether the timed calls ran after an L2 flush each (``cold_cache``), as the worker said
    cold_cache: bool | None = None

    def set_up(self, reply) -> None:
        """A set-up's reply (:class:`runner.protocol.SetupReply`): the process's set-up calls and
        the timer's cache mode; on the first pair, the calibration."""
        self.setup_calls = reply.warmup_calls or 1
        self.cold_cache = reply.cold_cache
        if self.calibrated is None:
            self.calibrated = reply.number
            self.per_call = reply.seconds_per_call
            self.first_call_s = reply.first_call_s

    def info(self) -> dict:
        first = None if self.first_call_s is None else round(self.first_call_s, 6)
        return {k: v for k, v in (("number", self.number), ("warmup_calls", self.warmup_calls),
                                  ("first_call_s", first), ("cold_cache", self.cold_cache))
                if v is not None}

    def sample_info(self, i: int) -> dict:
        return {"wall_s": self.wall[i], "cpu_s": self.cpu[i], "switches": self.switches[i],
                "others_busy": self.others_busy[i], "steal": self.steal[i]}

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` samples (and their measurements)."""
        for values in (self.samples, self.wall, self.cpu, self.switches, self.others_busy, self.steal):
            del values[n:]


@dataclass
class BenchState:
    """Mutable state of one benchmark during the timing pass.

    ``pair_rounds`` is the rounds its next process pair takes (chosen after the first pair's
    set-up, :func:`runner.pipeline.timing.schedule.rounds_per_pair`, and raised for a slow benchmark
    left undecided by a look, :func:`runner.pipeline.timing.schedule.later_pair_rounds`; each pair's
    own count is in ``block_rounds``); ``round_seconds`` what one round
    is expected to last, ``setup_seconds`` what the last pair's set-up took; ``disturbed`` the
    rounds the estimate leaves out because another task took the CPU
    (:func:`runner.pipeline.timing.schedule.disturbed_rounds`), ``clock_rounds`` those it leaves out
    because the GPU throttled or its clock moved
    (:func:`runner.pipeline.machine.telemetry.disturbed_rounds`: index → ``throttled`` |
    ``clock``);
    ``windows`` each round's ``(start, end)`` on the clock; ``open_sides`` the sides whose current
    processes hold the benchmark set up and not yet measured (:meth:`TimingPass.end_pair`).
    """

    case: dict
    sides: dict[str, SideState] = field(default_factory=lambda: {"base": SideState(), "head": SideState()})
    look_index: int = 0
    block_starts: list[int] = field(default_factory=list)
    #: the rounds each process pair was planned with, beside ``block_starts`` (a pair's count may
    #: grow after the first look: :func:`runner.pipeline.timing.schedule.later_pair_rounds`)
    block_rounds: list[int] = field(default_factory=list)
    #: the memory layout (fork server) each process pair ran in, beside ``block_starts``
    block_layouts: list[int] = field(default_factory=list)
    estimate: stats.BlockedEstimate | None = None
    verdict: str = "inconclusive"
    stop_reason: str = ""
    seconds: float = 0.0
    #: seconds spent in its rounds' samples alone (both sides; dropped rounds included): what
    #: "decided in so many seconds of timing" counts, without set-up, warm-up and calibration
    timing_seconds: float = 0.0
    p_adjusted: float | None = None
    pair_rounds: int = 0
    shared_number: bool | None = None
    #: process pairs whose peak memory was asked for (runner.measures.memory_due)
    memory_pairs: int = 0
    #: seconds its memory measures took so far (all sides; runner.measures.memory_due)
    memory_seconds: float = 0.0
    round_seconds: float = 0.0
    last_round_seconds: float = 0.0
    setup_seconds: float = 0.0
    #: what the latest later pair's two set-ups alone took (seconds; 0 before a second pair)
    pair_setup_seconds: float = 0.0
    disturbed: list[int] = field(default_factory=list)
    #: of ``disturbed``, the rounds the estimate kept (they were most of their pair's rounds)
    disturbed_kept: int = 0
    #: per process pair whose outputs were asked for: ``(base's call summaries, head's)``, or the
    #: text of why they could not be had (:mod:`.outputs`, compared by
    #: :mod:`runner.outputs.verdict`)
    outputs: list = field(default_factory=list)
    #: rounds NVML flagged that the estimate kept all the same (their pair had too few others)
    clock_kept: int = 0
    clock_rounds: dict[int, str] = field(default_factory=dict)
    windows: list[tuple[float, float]] = field(default_factory=list)
    futile: bool = False
    budget_cut: bool = False
    resolvable: float | None = None
    open_sides: tuple[str, ...] = ()
    #: rounds of a first pair dropped because its calls per sample were re-chosen
    #: (:meth:`TimingPass.renumber`; more than 0 once it has happened)
    dropped_rounds: int = 0
    #: per process pair, beside ``block_starts``: its warm-up ``{rounds, calls, seconds, steady}``
    #: (:meth:`.pairs.ProcessPairs.warm_up`; ``steady`` false: the estimate leaves the pair out)
    warmups: list[dict] = field(default_factory=list)
    #: warm-up rounds every later pair takes at least (what the first pair needed), and the
    #: ``(samples per window, windows)`` its steadiness was judged on
    warmup_floor: int = 0
    warmup_windows: tuple[int, int] | None = None
    #: why the latest look could not decide although its interval would have (too little
    #: evidence: :func:`runner.pipeline.timing.evidence.short_of_evidence`); None when it could
    short_of_evidence: str | None = None

    @property
    def name(self) -> str:
        return self.case["name"]

    @property
    def base(self) -> list[float]:
        return self.sides["base"].samples

    @property
    def head(self) -> list[float]:
        return self.sides["head"].samples

    def blocks(self, pair_rounds: int | None = None) -> list[tuple[int, int]]:
        """``(start, end)`` round indices of the process pairs that completed their rounds
        (``pair_rounds``; default each pair's own planned count, ``block_rounds``, else the
        benchmark's) after a warm-up that was not found unsteady: the estimate uses only those, so
        no pair cut short, and none whose sides were still settling, weighs in."""
        bounds = self.block_starts + [len(self.base)]
        planned = self.block_rounds
        return [(a, b) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))
                if b - a >= (pair_rounds or (planned[i] if i < len(planned) else self.pair_rounds))
                and self.pair_steady(i) is not False]

    def pair_steady(self, i: int) -> bool | None:
        """Whether process pair ``i``'s warm-up reached a steady state on both sides (None: not
        judged — too few warm-up samples in its limit, or no warm-up recorded)."""
        return self.warmups[i].get("steady") if i < len(self.warmups) else None

    def unsteady_pairs(self) -> int:
        """Process pairs whose sides were still moving when their warm-up's limit came."""
        return sum(1 for w in self.warmups if w.get("steady") is False)

    def start_pair(self, start: int, layout: int = 0) -> None:
        """Record a new process pair starting at round ``start``, planned with ``pair_rounds``, in
        memory layout ``layout`` (:mod:`runner.pipeline.machine.layouts`)."""
        self.block_starts.append(start)
        self.block_rounds.append(self.pair_rounds)
        self.block_layouts.append(layout)

    def layout_at(self, start: int) -> int:
        """The layout of the process pair whose first round is ``start``."""
        i = self.block_starts.index(start)
        return self.block_layouts[i] if i < len(self.block_layouts) else 0

    def current_pair_rounds(self) -> int:
        """The rounds the current process pair was planned with."""
        return self.block_rounds[-1] if self.block_rounds else self.pair_rounds

    def typical_round_seconds(self) -> float:
        """The median duration of its rounds so far (seconds; the set-up's forecast before any):
        one disturbed round moves it little."""
        if not self.windows:
            return self.round_seconds
        return statistics.median(end - start for start, end in self.windows)

    def round_estimate(self) -> float:
        """Seconds the next round is expected to take: the last one's, or the set-up's forecast."""
        return max(self.last_round_seconds, self.round_seconds)

    def pair_complete(self) -> bool:
        """Whether the current process pair has taken the rounds it was planned with."""
        return len(self.base) - self.block_starts[-1] >= self.current_pair_rounds()

    def stop(self, stop: "Stop") -> None:
        """Stop the benchmark as :mod:`.stops` decided: its reason, and its verdict, budget cut and
        futility where the :class:`.stops.Stop` sets them."""
        self.stop_reason = stop.reason
        if stop.verdict is not None:
            self.verdict = stop.verdict
        if stop.budget_cut is not None:
            self.budget_cut = stop.budget_cut
        self.futile = self.futile or stop.futile


def measures_itself(state: BenchState) -> bool:
    """Whether the benchmark measures itself (its convention's ``measures: "self"``,
    :mod:`runner.pipeline.timing.measured`) rather than being timed by perfgate's sampler."""
    return state.case.get("measures") == "self"


def partition(states: list[BenchState]) -> tuple[list[BenchState], list[BenchState]]:
    """``(timed, self-measured)`` benchmarks of ``states`` (:func:`measures_itself`), in order."""
    return [s for s in states if not measures_itself(s)], [s for s in states if measures_itself(s)]


def _peak(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def safe_filename(name: str) -> str:
    """A benchmark name as a file name: ``bench_x[rows=4096]`` → ``bench_x-rows=4096``."""
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "-", name).strip("-") or "benchmark"

