"""The timing pass: every benchmark in fresh process pairs, rounds interleaved (ABBA), looked
at on a schedule until decided, within a time budget.

Schedule. Benchmarks are taken one after another. For each, a fresh pair of workers sets it up
(the first pair calibrates the calls per sample for both sides), then rounds alternate the order
base-head, head-base so each base sample has an adjacent head sample. After every
``pair_rounds`` rounds the benchmark moves to another fresh pair (which side starts first
alternates), so the process pair is the unit of replication. At each planned look
(:func:`runner.stats.look_schedule`) the estimate over the pairs
(:func:`runner.stats.blocked_estimate`) is tested and the benchmark stops when decided. Each
benchmark may spend its fair share of what is left of ``max_time``; benchmarks still
inconclusive after the first pass continue their looks with whatever budget remains, and
Benjamini–Hochberg across the run decides the final verdicts. The pure decisions live in
:mod:`runner.stats`; this module only drives the workers.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from .. import results as results_mod
from .. import stats
from ..config import Config
from .workers import WorkerFailure, WorkerProcess


class Progress(Protocol):
    """What the pipeline tells its caller while it runs (a rich progress bar, or nothing)."""

    def phase(self, text: str) -> None: ...
    def start(self, total: int) -> None: ...
    def benchmark(self, index: int, name: str) -> None: ...
    def rounds(self, name: str, rounds: int, estimate: "stats.Estimate | None") -> None: ...
    def finished(self, name: str, verdict: str) -> None: ...


class NoProgress:
    """A silent :class:`Progress`."""

    def phase(self, text): pass
    def start(self, total): pass
    def benchmark(self, index, name): pass
    def rounds(self, name, rounds, estimate): pass
    def finished(self, name, verdict): pass


@dataclass
class SideState:
    """One side of one benchmark during the timing pass.

    ``samples`` are seconds per call in round order; ``number`` is the calls per sample this
    side took (the benchmark's, :attr:`BenchState.number`), ``warmup_samples`` the warm-up its
    later process pairs take (from its first pair); ``skipped`` is the reason when the benchmark's
    own suite skipped it on this side (asv's ``NotImplementedError`` from a setup, a pytest skip).
    """

    samples: list[float] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None
    peak: int | None = None
    number: int | None = None
    warmup_samples: int | None = None
    warmup_calls: int | None = None

    def info(self) -> dict:
        return {k: v for k, v in (("number", self.number), ("warmup_calls", self.warmup_calls)) if v is not None}


@dataclass
class BenchState:
    """Mutable state of one benchmark during the timing pass."""

    case: dict
    sides: dict[str, SideState] = field(default_factory=lambda: {"base": SideState(), "head": SideState()})
    #: Calls per sample, the same on both sides and in every process pair: calibrated once, by the
    #: first side set up. Why: samples of different lengths meet different interference (A/A on a
    #: shared 2-vCPU VM: base calibrated to 100 calls, head to 42, and head read 19 % "faster" for
    #: all 12 pairs; 7 of 25 identical benchmarks had sides with different counts).
    number: int | None = None
    look_index: int = 0
    block_starts: list[int] = field(default_factory=list)
    estimate: stats.BlockedEstimate | None = None
    verdict: str = "inconclusive"
    stop_reason: str = ""
    seconds: float = 0.0
    p_adjusted: float | None = None

    @property
    def name(self) -> str:
        return self.case["name"]

    @property
    def base(self) -> list[float]:
        return self.sides["base"].samples

    @property
    def head(self) -> list[float]:
        return self.sides["head"].samples

    def blocks(self, pair_rounds: int) -> list[tuple[int, int]]:
        """``(start, end)`` round indices of the process pairs that completed ``pair_rounds``
        rounds (the estimate uses only those: every pair weighs the same)."""
        bounds = self.block_starts + [len(self.base)]
        return [(a, b) for a, b in zip(bounds, bounds[1:]) if b - a >= pair_rounds]


#: Warm-up samples of a benchmark's later process pairs, at most (see :meth:`Session.setup`).
WARMUP_SAMPLES_MAX = 3


def _peak(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def safe_filename(name: str) -> str:
    """A benchmark name as a file name: ``bench_x[rows=4096]`` → ``bench_x-rows=4096``."""
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "-", name).strip("-") or "benchmark"


class TimingPass:
    """The two workers of one compare and the telemetry sampler, with the sampling loop.

    Isolation: every benchmark starts in a fresh pair of worker processes (forked by each side's
    server, :mod:`runner.pipeline.workers`), and after every ``pair_rounds`` rounds the benchmark moves to
    another fresh pair, so the process pair is the unit the statistics replicate
    (:func:`runner.stats.blocked_estimate`) and no benchmark runs in a process another one used.
    """

    def __init__(self, workers: dict[str, WorkerProcess], cfg: Config, bench_dirs: dict[str, str],
                 telemetry=None, progress: Progress | None = None, clock: Callable[[], float] = time.monotonic):
        self.workers = workers
        self.cfg = cfg
        self.bench_dirs = bench_dirs
        self.telemetry = telemetry
        self.progress = progress or NoProgress()
        self.clock = clock
        self.looks = stats.look_schedule(cfg.min_rounds, cfg.max_rounds, cfg.pair_rounds, cfg.min_process_pairs)
        self.look_alpha = stats.per_look_alpha(cfg.alpha, len(self.looks))
        self.ci_level = 1.0 - self.look_alpha

    # -- one side -------------------------------------------------------------------------
    def request(self, side: str, cmd: str, **fields) -> dict:
        """One request to one side's worker, with telemetry tagged by side; a dead or hung worker
        comes back as ``{ok: False, error}`` (the next request forks a fresh one)."""
        if self.telemetry is not None:
            self.telemetry.set_side(side)
        try:
            return self.workers[side].request(cmd, **fields)
        except WorkerFailure as exc:
            return {"ok": False, "error": str(exc)}
        finally:
            if self.telemetry is not None:
                self.telemetry.set_side(None)

    def fresh_processes(self, order: tuple[str, str] = ("base", "head")) -> None:
        """End both sides' current worker children, in ``order``; the next request forks new ones."""
        for side in order:
            self.workers[side].end_child()

    def setup(self, state: BenchState, side: str) -> bool:
        case, own = state.case, state.sides[side]
        resp = self.request(side, "setup", dir=self.bench_dirs[side], file=case["file"], func=case["func"],
                            name=case["name"], suite=case.get("suite"), timeout=case.get("timeout"),
                            min_sample_time=self.cfg.min_sample_time,
                            cold_cache=self.cfg.cold_cache, number=state.number, warmup_samples=own.warmup_samples)
        if resp.get("skipped"):
            own.skipped = resp["skipped"]
        if not resp.get("ok"):
            own.error = resp.get("error") or "set-up failed"
            return False
        state.number = state.number or resp["number"]
        if own.number is None:
            own.number = resp["number"]
            own.warmup_calls = resp["warmup_calls"]
            # Later pairs start from a first call already made, in a process forked from the same
            # server: a fixed, short warm-up (the first pair's count, 1 to 3 samples) instead of
            # an adaptive loop that reads a fresh process's noise and costs more than the rounds.
            own.warmup_samples = min(WARMUP_SAMPLES_MAX, max(1, int(resp.get("warmup_samples") or 1)))
        return True

    def sample(self, state: BenchState, side: str) -> bool:
        own = state.sides[side]
        resp = self.request(side, "sample", count=1, timeout=state.case.get("timeout"))
        if not resp.get("ok"):
            own.error = resp.get("error") or "sample failed"
            return False
        own.samples.extend(resp["samples"])
        own.peak = _peak(own.peak, resp.get("peak_memory_bytes"))
        return True

    # -- one benchmark ----------------------------------------------------------------------
    def run_benchmark(self, state: BenchState, deadline: float) -> None:
        """Set up both sides in fresh processes and take rounds until decided, failed, out of
        looks or past ``deadline``."""
        t0 = self.clock()
        try:
            self.fresh_processes()
            base_ok = self.setup(state, "base")
            head_ok = self.setup(state, "head")
            if not head_ok and state.sides["head"].skipped:
                # not a result: the compare lists it apart (settings.skipped), never as failed
                state.verdict, state.stop_reason = "skipped", state.sides["head"].skipped
                return
            if not head_ok:
                state.verdict, state.stop_reason = "failed", "head failed to set up"
                return
            if not base_ok:
                # New on head: keep a few head samples for the record (and for history).
                state.verdict, state.stop_reason = "new", "cannot be set up on base"
                for _ in range(self.cfg.min_rounds):
                    if not self.sample(state, "head"):
                        state.verdict = "failed"
                        break
                return
            state.block_starts.append(0)
            self._continue(state, deadline)
        finally:
            self.fresh_processes()
            state.seconds += self.clock() - t0

    def _continue(self, state: BenchState, deadline: float) -> None:
        pair_rounds = self.cfg.pair_rounds
        round_seconds = 0.0
        while state.look_index < len(self.looks):
            target_pairs = self.looks[state.look_index] // pair_rounds
            while len(state.blocks(pair_rounds)) < target_pairs:
                if len(state.base) - state.block_starts[-1] >= pair_rounds and not self.new_process_pair(state):
                    return
                if self.clock() + round_seconds > deadline:
                    state.stop_reason = "time budget spent"
                    return
                r0 = self.clock()
                n = len(state.base)
                order = ("base", "head") if n % 2 == 0 else ("head", "base")
                for side in order:
                    if not self.sample(state, side):
                        # Keep the pairs complete: drop an unpaired sample of the other side.
                        del state.base[n:], state.head[n:]
                        state.verdict, state.stop_reason = "failed", f"{side} failed while sampling"
                        return
                round_seconds = self.clock() - r0
                self.progress.rounds(state.name, len(state.base), state.estimate)
            state.estimate = self.estimate(state)
            state.look_index += 1
            state.verdict = stats.decide(state.estimate, self.cfg.threshold, state.estimate.p_value < self.look_alpha,
                                         self.cfg.min_process_pairs)
            self.progress.rounds(state.name, len(state.base), state.estimate)
            if state.verdict != "inconclusive":
                state.stop_reason = f"decided at look {state.look_index} of {len(self.looks)}"
                return
        state.stop_reason = f"still inconclusive after {self.looks[-1]} rounds (max_rounds)"

    def estimate(self, state: BenchState) -> stats.BlockedEstimate:
        """The estimate over the benchmark's complete process pairs so far."""
        blocks = [stats.block_summary(state.base[a:b], state.head[a:b])
                  for a, b in state.blocks(self.cfg.pair_rounds)]
        return stats.blocked_estimate(blocks, self.ci_level, self.cfg.process_noise)

    def new_process_pair(self, state: BenchState) -> bool:
        """Move the benchmark to a fresh pair of worker processes; False (and ``failed``) if it
        cannot be set up again."""
        # Which side goes first alternates from pair to pair (as ABBA does for rounds): the first
        # process to start and allocate gets other memory than the second (pages the last pair's
        # processes freed come back last-in first-out), and in one order only that was a
        # systematic offset (A/A, a 51 MB-weights loss step: head 1.1 % faster over 10 pairs).
        order = ("base", "head") if len(state.block_starts) % 2 == 0 else ("head", "base")
        self.fresh_processes(order)
        if self.setup(state, order[0]) and self.setup(state, order[1]):
            state.block_starts.append(len(state.base))
            return True
        state.verdict, state.stop_reason = "failed", "set-up failed in a fresh process"
        return False

    def resume(self, state: BenchState, deadline: float) -> None:
        """Second pass for an inconclusive benchmark: continue its looks in fresh process pairs."""
        t0 = self.clock()
        try:
            # A pair the first pass left unfinished stays in the samples but not in the estimate.
            if self.new_process_pair(state):
                self._continue(state, deadline)
        finally:
            self.fresh_processes()
            state.seconds += self.clock() - t0

    # -- the whole timing pass --------------------------------------------------------------
    def time_all(self, states: list[BenchState]) -> None:
        """The timing pass: a first pass over every benchmark with its fair share of the budget,
        then, while budget remains, more looks for the benchmarks that are still inconclusive
        after Benjamini–Hochberg across the run (:meth:`finalize`)."""
        budget_end = self.clock() + self.cfg.max_time
        self.progress.start(len(states))
        for i, state in enumerate(states):
            self.progress.benchmark(i, state.name)
            share = max(budget_end - self.clock(), 0.0) / (len(states) - i)
            self.run_benchmark(state, self.clock() + share)
            self.progress.finished(state.name, state.verdict)
        while True:
            self.finalize(states)
            pending = [s for s in states if s.verdict == "inconclusive" and s.look_index < len(self.looks)
                       and s.block_starts]
            if not pending or self.clock() >= budget_end:
                return
            for j, state in enumerate(pending):
                left = budget_end - self.clock()
                if left <= 0:
                    break
                self.progress.benchmark(states.index(state), state.name)
                self.resume(state, self.clock() + left / (len(pending) - j))
                self.progress.finished(state.name, state.verdict)

    def finalize(self, states: list[BenchState]) -> None:
        """Run-level verdicts of the paired benchmarks: Benjamini–Hochberg across the run on each
        benchmark's sequential p-value (runner.stats.final_verdicts)."""
        paired = [s for s in states if s.estimate is not None and s.verdict not in ("failed", "new")]
        p_seq = [stats.sequential_p(s.estimate.p_value, len(self.looks)) for s in paired]
        verdicts, adjusted = stats.final_verdicts([s.estimate for s in paired], p_seq, self.cfg.alpha,
                                                  self.cfg.threshold, self.cfg.min_process_pairs)
        for s, verdict, q in zip(paired, verdicts, adjusted):
            s.verdict, s.p_adjusted = verdict, q


def benchmark_entry(state: BenchState, ci_level: float, pair_rounds: int) -> dict:
    """One ``benchmarks[]`` entry of results.json from a finished :class:`BenchState`.

    ``change.pairs`` lists every process pair ``{start, rounds, ratio, used}`` (``start`` is the
    index of its first round in the samples; ``used`` is false for a pair the budget cut short,
    which the estimate leaves out), so a reader can see a pair that disagrees.
    """
    est = state.estimate
    used = set(state.blocks(pair_rounds))
    bounds = state.block_starts + [len(state.base)]
    pairs = []
    for a, b in zip(bounds, bounds[1:]):
        ratio = None
        if b - a >= 2:
            ratio = round(math.exp(stats.block_summary(state.base[a:b], state.head[a:b])[0]), 6)
        pairs.append({"start": a, "rounds": b - a, "ratio": ratio, "used": (a, b) in used})
    change = {
        "ratio": est.ratio if est else None,
        "ci_low": est.ci_low if est else None,
        "ci_high": est.ci_high if est else None,
        "p_value": est.p_value if est else None,
        "verdict": state.verdict,
        "ci_level": ci_level if est else None,
        "rounds": len(state.base),
        "process_pairs": est.blocks if est else len(state.block_starts),
        "pairs": pairs,
        "between_process_sd": est.between_sd if est else None,
        "p_adjusted": state.p_adjusted,
        "stop_reason": state.stop_reason,
        "seconds": round(state.seconds, 3),
    }
    return results_mod.benchmark(state.name, state.case.get("file"), base=_side_entry(state.sides["base"]),
                                 head=_side_entry(state.sides["head"]), change=change)


def _side_entry(side: SideState) -> dict:
    return results_mod.side(side.samples, peak_memory_bytes=side.peak, error=side.error, **side.info())
