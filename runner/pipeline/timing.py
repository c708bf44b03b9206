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

from .. import measures
from .. import results as results_mod
from ..results import PAIRED
from .. import stats
from . import schedule
from . import telemetry as telemetry_mod
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

    ``samples`` are seconds per call in round order, with each sample's ``wall`` and ``cpu``
    seconds and involuntary context ``switches`` beside them (what the worker measured around it);
    ``number`` is the calls per sample this side samples with (chosen after the first pair's
    set-up, :func:`runner.pipeline.schedule.calls_per_sample`), ``calibrated`` its own
    calibration, ``per_call`` its warm seconds per call then; ``warmup_samples`` the warm-up its
    later process pairs take; ``skipped`` is the reason when the benchmark's own suite skipped it
    on this side (asv's ``NotImplementedError`` from a setup, a pytest skip). ``memory`` and
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
    first_warmup_samples: int | None = None
    warmup_samples: int | None = None
    warmup_calls: int | None = None
    memory: list[dict | None] = field(default_factory=list)
    compile: list[dict | None] = field(default_factory=list)
    measure_error: str | None = None

    def info(self) -> dict:
        return {k: v for k, v in (("number", self.number), ("warmup_calls", self.warmup_calls),
                                  ("first_call_s", None if self.first_call_s is None else round(self.first_call_s, 6)))
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

    ``pair_rounds`` is the rounds each of its process pairs takes (chosen after the first pair's
    set-up, :func:`runner.pipeline.schedule.rounds_per_pair`); ``round_seconds`` what one round
    is expected to last, ``setup_seconds`` what the last pair's set-up took; ``disturbed`` the
    rounds the estimate leaves out because another task took the CPU
    (:func:`runner.pipeline.schedule.disturbed_rounds`), ``clock_rounds`` those it leaves out
    because the GPU throttled or its clock moved (:func:`runner.pipeline.telemetry.disturbed_rounds`:
    index → ``throttled`` | ``clock``); ``windows`` each round's ``(start, end)`` on the clock;
    ``open_sides`` the sides whose current processes hold the benchmark set up and not yet measured
    (:meth:`TimingPass.end_pair`).
    """

    case: dict
    sides: dict[str, SideState] = field(default_factory=lambda: {"base": SideState(), "head": SideState()})
    look_index: int = 0
    block_starts: list[int] = field(default_factory=list)
    estimate: stats.BlockedEstimate | None = None
    verdict: str = "inconclusive"
    stop_reason: str = ""
    seconds: float = 0.0
    p_adjusted: float | None = None
    pair_rounds: int = 0
    shared_number: bool | None = None
    #: process pairs whose peak memory was asked for (runner.measures.memory_due)
    memory_pairs: int = 0
    round_seconds: float = 0.0
    last_round_seconds: float = 0.0
    setup_seconds: float = 0.0
    disturbed: list[int] = field(default_factory=list)
    clock_rounds: dict[int, str] = field(default_factory=dict)
    windows: list[tuple[float, float]] = field(default_factory=list)
    futile: bool = False
    budget_cut: bool = False
    resolvable: float | None = None
    open_sides: tuple[str, ...] = ()
    #: rounds of a first pair dropped because its calls per sample were re-chosen
    #: (:meth:`TimingPass.renumber`; more than 0 once it has happened)
    dropped_rounds: int = 0

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
        (``pair_rounds``, default the benchmark's own): the estimate uses only those, so every
        pair weighs the same."""
        pair_rounds = pair_rounds or self.pair_rounds
        bounds = self.block_starts + [len(self.base)]
        return [(a, b) for a, b in zip(bounds, bounds[1:]) if b - a >= pair_rounds]

    def round_estimate(self) -> float:
        """Seconds the next round is expected to take: the last one's, or the set-up's forecast."""
        return max(self.last_round_seconds, self.round_seconds)


#: Rounds of a pair that must stay when disturbed ones are left out (else the pair keeps all).
KEEP_AT_LEAST = 0.5


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
    server, :mod:`runner.pipeline.workers`), and after every pair's rounds the benchmark moves to
    another fresh pair, so the process pair is the unit the statistics replicate
    (:func:`runner.stats.blocked_estimate`) and no benchmark runs in a process another one used.

    Args:
        telemetry: the NVML sampler (:class:`runner.pipeline.telemetry.TelemetrySampler`, or
            anything with ``set_side`` and ``samples`` on the same clock): its samples tell the
            rounds the GPU's clocks disturbed, left out of the estimate.
        threads: the workers' intra-op threads on a CPU device (1 lets disturbed rounds be told,
            :func:`runner.pipeline.schedule.disturbed_rounds`); None on a GPU or when unknown.
        device: the workers' device (``cpu``, ``cuda``), for the sample time when it is automatic.
        clock: monotonic seconds (a test passes a simulated one).
        locked_sm_mhz: the SM clock perfgate locked for the run (the reference a round's clock
            is judged against); None: the run's median under load.
        options: the configuration keys the benchmarks' convention asks for, sent with every set-up
            (:func:`runner.pipeline.suites.options`).
    """

    def __init__(self, workers: dict[str, WorkerProcess], cfg: Config, bench_dirs: dict[str, str],
                 telemetry=None, progress: Progress | None = None, clock: Callable[[], float] = time.monotonic,
                 threads: int | None = None, device: str | None = None, locked_sm_mhz: float | None = None,
                 options: dict | None = None):
        self.workers = workers
        self.options = dict(options or {})
        self.cfg = cfg
        self.bench_dirs = bench_dirs
        self.telemetry = telemetry
        self.locked_sm_mhz = locked_sm_mhz
        self.progress = progress or NoProgress()
        self.clock = clock
        self.threads = threads
        self.device = device
        #: seconds a sample lasts at least (``min_sample_time``, by device when it is 0)
        self.min_sample_time = cfg.sample_time(device)
        self.looks = stats.look_schedule(cfg.min_rounds, cfg.max_rounds, cfg.pair_rounds, cfg.min_process_pairs)
        #: the planned looks in process pairs (the same for every benchmark, whatever its rounds per pair)
        self.look_pairs = [r // cfg.pair_rounds for r in self.looks]
        self.look_alpha = stats.per_look_alpha(cfg.alpha, len(self.looks))
        self.ci_level = 1.0 - self.look_alpha
        self.budget_end = math.inf

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

    def warmup_seconds(self, deadline: float) -> float:
        """Longest adaptive warm-up of a first pair: 1 s, or a tenth of what is left before
        ``deadline`` when that is less (never under 50 ms)."""
        return max(0.05, min(1.0, 0.1 * (deadline - self.clock())))

    def setup(self, state: BenchState, side: str, deadline: float = math.inf) -> bool:
        """Set the benchmark up on ``side`` in its current (fresh) process; False when it cannot be.

        The set-up may take no longer than its ``timeout`` nor past the end of the timing budget:
        one cut short by the budget sets ``state.budget_cut`` (the benchmark ends ``inconclusive``,
        not ``failed``)."""
        case, own = state.case, state.sides[side]
        timeout = float(case.get("timeout") or self.cfg.timeout)
        left = self.budget_end - self.clock()
        by_budget = left < timeout
        if by_budget:
            timeout = max(left, 0.5)
        resp = self.request(side, "setup", dir=self.bench_dirs[side], file=case["file"], func=case["func"],
                            name=case["name"], suite=case.get("suite"), case=case, options=self.options,
                            timeout=timeout,
                            min_sample_time=self.min_sample_time, cold_cache=self.cfg.cold_cache,
                            number=own.number, warmup_samples=own.warmup_samples,
                            warmup_seconds=self.warmup_seconds(deadline))
        if by_budget and not resp.get("ok") and "timed out" in str(resp.get("error")):
            state.budget_cut = True
            return False
        if resp.get("skipped"):
            own.skipped = resp["skipped"]
        if not resp.get("ok"):
            own.error = resp.get("error") or "set-up failed"
            return False
        if own.calibrated is None:
            own.calibrated = int(resp["number"])
            per_call = resp.get("per_call") or resp.get("estimate_s")
            own.per_call = float(per_call) if per_call else None
            own.first_call_s = resp.get("first_call_s")
            own.warmup_calls = resp.get("warmup_calls")
            own.first_warmup_samples = int(resp.get("warmup_samples") or 1)
        return True

    def choose_numbers(self, state: BenchState, first: str = "base") -> None:
        """After the first pair's set-up: each side's calls per sample (shared within
        :data:`runner.pipeline.schedule.SHARE_FACTOR`), the later pairs' warm-up, the rounds per
        pair and the expected round time."""
        one, other = state.sides[first], state.sides["head" if first == "base" else "base"]
        sides = [s for s in (one, other) if s.calibrated is not None]
        if len(sides) == 2:
            one.number, other.number, state.shared_number = schedule.calls_per_sample(
                (one.calibrated, one.per_call or 0.0), (other.calibrated, other.per_call or 0.0))
        else:
            for s in sides:
                s.number = s.calibrated
        for s in sides:
            sample_seconds = (s.per_call or 0.0) * s.number
            s.warmup_samples = schedule.later_warmup_samples(s.first_warmup_samples or 1, sample_seconds)
        state.round_seconds = sum((s.per_call or 0.0) * s.number for s in sides)
        state.pair_rounds = schedule.rounds_per_pair(state.round_seconds, self.cfg.pair_rounds)

    def sample(self, state: BenchState, side: str) -> bool:
        own = state.sides[side]
        resp = self.request(side, "sample", count=1, number=own.number, timeout=state.case.get("timeout"))
        if not resp.get("ok"):
            own.error = resp.get("error") or "sample failed"
            return False
        n = len(resp["samples"])
        own.samples.extend(resp["samples"])
        for key, values in (("wall_s", own.wall), ("cpu_s", own.cpu), ("switches", own.switches),
                            ("others_busy", own.others_busy), ("steal", own.steal)):
            got = resp.get(key) or []
            values.extend(list(got[:n]) + [None] * (n - len(got)))
        own.peak = _peak(own.peak, resp.get("peak_memory_bytes"))
        return True

    # -- one benchmark ----------------------------------------------------------------------
    def run_benchmark(self, state: BenchState, deadline: float) -> None:
        """Set up both sides in fresh processes and take rounds until decided, failed, futile,
        out of looks or past ``deadline``."""
        t0 = self.clock()
        try:
            if self.clock() >= self.budget_end:
                state.stop_reason, state.budget_cut = "time budget spent before it started", True
                return
            self.fresh_processes()
            base_ok = self.setup(state, "base", deadline)
            head_ok = not state.budget_cut and self.setup(state, "head", deadline)
            if state.budget_cut:
                state.stop_reason = "time budget spent while it was being set up"
                return
            if not head_ok and state.sides["head"].skipped:
                # not a result: the compare lists it apart (settings.skipped), never as failed
                state.verdict, state.stop_reason = "skipped", state.sides["head"].skipped
                return
            if not head_ok:
                state.verdict, state.stop_reason = "failed", "head failed to set up"
                return
            self.choose_numbers(state)
            state.open_sides = ("base", "head") if base_ok else ("head",)
            if not base_ok:
                # New on head: keep a few head samples for the record (and for history).
                state.verdict, state.stop_reason = "new", "cannot be set up on base"
                for _ in range(self.cfg.min_rounds):
                    if len(state.head) >= 2 and self.clock() + state.round_seconds > deadline:
                        break
                    if not self.sample(state, "head"):
                        state.verdict = "failed"
                        break
                return
            state.setup_seconds = self.clock() - t0
            state.block_starts.append(0)
            self._continue(state, deadline)
        finally:
            self.end_pair(state, deadline)
            self.fresh_processes()
            state.seconds += self.clock() - t0

    def _pair_fits(self, state: BenchState, deadline: float) -> bool:
        """Would a new process pair (set-up and all its rounds) end before ``deadline``?"""
        return self.clock() + state.setup_seconds + state.pair_rounds * state.round_estimate() <= deadline

    def _continue(self, state: BenchState, deadline: float) -> None:
        while state.look_index < len(self.look_pairs):
            target_pairs = self.look_pairs[state.look_index]
            while len(state.blocks()) < target_pairs:
                if len(state.base) - state.block_starts[-1] >= state.pair_rounds:
                    self.renumber(state)
                    if not self._pair_fits(state, deadline):
                        state.stop_reason, state.budget_cut = "time budget spent", True
                        return
                    if not self.new_process_pair(state, deadline):
                        return
                if self.clock() + state.round_estimate() > deadline:
                    state.stop_reason, state.budget_cut = "time budget spent", True
                    return
                r0 = self.clock()
                n = len(state.base)
                order = ("base", "head") if n % 2 == 0 else ("head", "base")
                for side in order:
                    if not self.sample(state, side):
                        # Keep the pairs complete: drop an unpaired sample of the other side.
                        for own in state.sides.values():
                            own.truncate(n)
                        state.verdict, state.stop_reason = "failed", f"{side} failed while sampling"
                        return
                state.windows.append((r0, self.clock()))
                state.last_round_seconds = self.clock() - r0
                self.progress.rounds(state.name, len(state.base), state.estimate)
            state.estimate = self.estimate(state)
            state.look_index += 1
            state.verdict = stats.decide(state.estimate, self.cfg.threshold, state.estimate.p_value < self.look_alpha,
                                         self.cfg.min_process_pairs)
            self.progress.rounds(state.name, len(state.base), state.estimate)
            if state.verdict != "inconclusive":
                state.stop_reason = f"decided at look {state.look_index} of {len(self.looks)}"
                state.budget_cut = False
                return
            if state.look_index < len(self.look_pairs):
                projection = schedule.futility(state.estimate.block_centers, self.cfg.threshold, self.look_alpha,
                                               self.cfg.process_noise, self.reachable_pairs(state))
                if projection.futile:
                    state.futile = True
                    state.stop_reason = (f"more pairs cannot decide it: at {projection.pairs} pairs its interval "
                                         f"would still be ±{math.expm1(projection.half_width):.1%}")
                    return
        state.stop_reason = f"still inconclusive after {self.look_pairs[-1]} process pairs (max_rounds)"

    def renumber(self, state: BenchState) -> None:
        """After the first process pair's rounds: when its sides took separate calls per sample
        but its rounds show the per-call times within :data:`runner.pipeline.schedule.SHARE_FACTOR`
        (:func:`runner.pipeline.schedule.shared_after_first_pair`: a disturbed calibration), both
        sides share one count from the next pair on and the first pair's rounds are dropped — they
        were taken with samples of different lengths, which another task's bursts hit unequally.
        Done at most once per benchmark."""
        if state.shared_number is not False or state.dropped_rounds or len(state.block_starts) != 1:
            return
        b, h = state.sides["base"], state.sides["head"]
        if b.number is None or h.number is None:
            return
        number = schedule.shared_after_first_pair(b.samples, h.samples, (b.number, h.number))
        if number is None:
            return
        state.dropped_rounds = len(b.samples)
        for own in (b, h):
            own.per_call = sorted(own.samples)[len(own.samples) // 2]
            own.number = number
            own.truncate(0)
        state.windows.clear()
        state.block_starts = []
        state.shared_number = True
        for own in (b, h):
            own.warmup_samples = schedule.later_warmup_samples(own.first_warmup_samples or 1, (own.per_call or 0.0) * number)
        state.round_seconds = sum((s.per_call or 0.0) * number for s in (b, h))
        state.pair_rounds = schedule.rounds_per_pair(state.round_seconds, self.cfg.pair_rounds)

    def reachable_pairs(self, state: BenchState) -> int:
        """The most process pairs this benchmark could still reach: the last planned look, or
        fewer when the rest of the timing budget (all of it, as if it were this benchmark's alone)
        holds fewer."""
        pair_cost = state.setup_seconds + state.pair_rounds * state.round_estimate()
        done = len(state.blocks())
        if pair_cost <= 0 or not math.isfinite(self.budget_end):
            return self.look_pairs[-1]
        more = int(max(0.0, self.budget_end - self.clock()) // pair_cost)
        return min(self.look_pairs[-1], done + more)

    def estimate(self, state: BenchState) -> stats.BlockedEstimate:
        """The estimate over the benchmark's complete process pairs so far, disturbed rounds left
        out (a pair keeps all its rounds when leaving them out would leave it less than
        :data:`KEEP_AT_LEAST` of them)."""
        b_side, h_side = state.sides["base"], state.sides["head"]
        state.disturbed = schedule.disturbed_rounds([b_side.sample_info(i) for i in range(len(state.base))],
                                                    [h_side.sample_info(i) for i in range(len(state.head))],
                                                    self.threads)
        state.clock_rounds = self.clock_disturbed(state)
        out = set(state.disturbed) | set(state.clock_rounds)
        blocks = []
        for a, b in state.blocks():
            keep = [i for i in range(a, b) if i not in out]
            if len(keep) < max(2, math.ceil(KEEP_AT_LEAST * (b - a))):
                keep = list(range(a, b))
            blocks.append(stats.block_summary([state.base[i] for i in keep], [state.head[i] for i in keep]))
        est = stats.blocked_estimate(blocks, self.ci_level, self.cfg.process_noise)
        state.resolvable = schedule.resolvable_change(est.block_centers, self.ci_level, self.cfg.process_noise)
        return est

    def clock_disturbed(self, state: BenchState) -> dict[int, str]:
        """The rounds the GPU's clocks disturbed (:func:`runner.pipeline.telemetry.disturbed_rounds`),
        judged against the locked clock or the run's median; empty without telemetry samples."""
        samples = list(getattr(self.telemetry, "samples", None) or [])
        if not samples or not state.windows:
            return {}
        reference = self.locked_sm_mhz or telemetry_mod.reference_clock(samples)
        return telemetry_mod.disturbed_rounds(state.windows[:len(state.base)], samples, reference)

    def new_process_pair(self, state: BenchState, deadline: float = math.inf) -> bool:
        """Move the benchmark to a fresh pair of worker processes; False (and ``failed``) if it
        cannot be set up again."""
        # Which side goes first alternates from pair to pair (as ABBA does for rounds): the first
        # process to start and allocate gets other memory than the second (pages the last pair's
        # processes freed come back last-in first-out), and in one order only that was a
        # systematic offset (A/A, a 51 MB-weights loss step: head 1.1 % faster over 10 pairs).
        order = ("base", "head") if len(state.block_starts) % 2 == 0 else ("head", "base")
        t0 = self.clock()
        self.end_pair(state, deadline)
        self.fresh_processes(order)
        if self.setup(state, order[0], deadline) and self.setup(state, order[1], deadline):
            state.setup_seconds = self.clock() - t0
            state.block_starts.append(len(state.base))
            state.open_sides = order
            return True
        if state.budget_cut:
            state.stop_reason = "time budget spent while a process pair was being set up"
            return False
        state.verdict, state.stop_reason = "failed", "set-up failed in a fresh process"
        return False

    def resume(self, state: BenchState, deadline: float) -> None:
        """Second pass for an inconclusive benchmark: continue its looks in fresh process pairs."""
        t0 = self.clock()
        try:
            # A pair the first pass left unfinished stays in the samples but not in the estimate.
            if not self._pair_fits(state, deadline):
                return
            if self.new_process_pair(state, deadline):
                self._continue(state, deadline)
        finally:
            self.end_pair(state, deadline)
            self.fresh_processes()
            state.seconds += self.clock() - t0

    def end_pair(self, state: BenchState, deadline: float = math.inf) -> None:
        """Before a process pair ends: ask each side whose process holds the benchmark for the
        peak memory of one call and what torch.compile did there (the worker's ``measure``
        request, after the pair's samples, so it perturbs none), one record per side and pair.
        Memory only while :func:`runner.measures.memory_due` says the pair can afford it before
        ``deadline`` and beside the rounds taken so far (both sides alike: the records stay paired). Nothing for a benchmark that
        failed (its processes may be gone)."""
        sides, state.open_sides = state.open_sides, ()
        if not sides or state.verdict == "failed":
            return
        per_call = max((state.sides[side].per_call or 0.0) for side in sides)
        left = deadline - self.clock()
        # what its rounds took so far bounds the measure too (a benchmark new on head has none)
        rounds_s = sum(end - start for start, end in state.windows) if state.windows else math.inf
        memory = measures.memory_due(state.memory_pairs, per_call, left, self.device, rounds_s)
        state.memory_pairs += int(memory)
        for side in sides:
            own = state.sides[side]
            if not memory and state.memory_pairs == 0:
                own.measure_error = measures.memory_skipped(per_call, left, self.device, rounds_s)
            resp = self.request(side, "measure", memory=memory, timeout=state.case.get("timeout"))
            if not resp.get("ok"):
                own.memory.append(None)
                own.compile.append(None)
                own.measure_error = resp.get("error") or "measure failed"
                continue
            own.memory.append(resp.get("memory"))
            own.compile.append(resp.get("compile"))
            if resp.get("memory_error"):
                own.measure_error = resp["memory_error"]

    def compile_pairs(self, states: list[BenchState], end: float) -> None:
        """Set-up-only process pairs (no rounds) for each benchmark that compiles on both sides
        and was measured in fewer than :data:`runner.measures.MIN_COMPILE_PAIRS` pairs, while they
        end before ``end``: every fresh process compiles cold, so its compile time is compared with
        an interval over that many processes per side. One that fails to set up stops its own."""
        for state in states:
            if state.verdict not in PAIRED:
                continue
            while 0 < _compiled_pairs(state) < measures.MIN_COMPILE_PAIRS:
                if self.clock() + state.setup_seconds > end:
                    return
                t0 = self.clock()
                order = ("base", "head") if _compiled_pairs(state) % 2 == 0 else ("head", "base")
                self.fresh_processes(order)
                errors = {side: state.sides[side].error for side in order}
                ok = self.setup(state, order[0], end) and self.setup(state, order[1], end)
                for side, error in errors.items():  # a failed extra pair does not make the timing failed
                    state.sides[side].error = error
                if ok:
                    state.open_sides = order
                    self.end_pair(state, end)
                self.fresh_processes()
                state.seconds += self.clock() - t0
                if not ok:
                    break

    # -- the whole timing pass --------------------------------------------------------------
    def time_all(self, states: list[BenchState], end: float | None = None) -> None:
        """The timing pass, to end by ``end`` (monotonic seconds; default ``max_time`` from now):
        a first pass over every benchmark with its fair share of the budget, then, while budget
        remains, more looks for the benchmarks that are still inconclusive after
        Benjamini–Hochberg across the run (:meth:`finalize`) and that more pairs could decide,
        then the set-up-only pairs that compile times need (:meth:`compile_pairs`)."""
        budget_end = self.clock() + self.cfg.max_time if end is None else end
        self._time_all(states, budget_end)
        self.compile_pairs(states, budget_end)

    def _time_all(self, states: list[BenchState], budget_end: float) -> None:
        self.budget_end = budget_end
        self.progress.start(len(states))
        for i, state in enumerate(states):
            self.progress.benchmark(i, state.name)
            share = max(budget_end - self.clock(), 0.0) / (len(states) - i)
            self.run_benchmark(state, self.clock() + share)
            self.progress.finished(state.name, state.verdict)
        while True:
            self.finalize(states)
            pending = [s for s in states if s.verdict == "inconclusive" and s.look_index < len(self.looks)
                       and s.block_starts and not s.futile and self._pair_fits(s, budget_end)]
            if not pending or self.clock() >= budget_end:
                return
            progressed = False
            for j, state in enumerate(pending):
                left = budget_end - self.clock()
                if left <= 0:
                    break
                before = len(state.base)
                self.progress.benchmark(states.index(state), state.name)
                self.resume(state, self.clock() + left / (len(pending) - j))
                self.progress.finished(state.name, state.verdict)
                progressed = progressed or len(state.base) > before
            if not progressed:
                return

    def finalize(self, states: list[BenchState]) -> None:
        """Run-level verdicts of the paired benchmarks: Benjamini–Hochberg across the run on each
        benchmark's sequential p-value (runner.stats.final_verdicts)."""
        paired = [s for s in states if s.estimate is not None and s.verdict in PAIRED]
        p_seq = [stats.sequential_p(s.estimate.p_value, len(self.looks)) for s in paired]
        verdicts, adjusted = stats.final_verdicts([s.estimate for s in paired], p_seq, self.cfg.alpha,
                                                  self.cfg.threshold, self.cfg.min_process_pairs)
        for s, verdict, q in zip(paired, verdicts, adjusted):
            s.verdict, s.p_adjusted = verdict, q


def _compiled_pairs(state: BenchState) -> int:
    """Process pairs in which both sides compiled (both have compile facts)."""
    return sum(1 for b, h in zip(state.sides["base"].compile, state.sides["head"].compile) if b and h)


def benchmark_entry(state: BenchState, ci_level: float, memory_threshold: float = 0.05,
                    min_pairs: int = 2) -> dict:
    """One ``benchmarks[]`` entry of results.json from a finished :class:`BenchState`.

    ``change.pairs`` lists every process pair ``{start, rounds, ratio, used}`` (``start`` is the
    index of its first round in the samples; ``used`` is false for a pair the budget cut short,
    which the estimate leaves out), so a reader can see a pair that disagrees. Beside the
    estimate: ``rounds_per_pair``; ``pair_sd``, the standard deviation of the pairs' log-ratios
    (≈ a fraction: the noise the interval carries); ``resolvable``, the smallest change (fraction)
    this noise let the compare find (:func:`runner.pipeline.schedule.resolvable_change`);
    ``disturbed_rounds``, the rounds left out because another task took the CPU; ``clock_rounds``,
    those left out because the GPU throttled or its SM clock moved during them, and
    ``clock_reasons`` how many for each reason (``throttled``, ``clock``); ``shared_number``,
    whether both sides took the same calls per sample; ``dropped_rounds``, the first pair's rounds
    dropped because the sides' calls per sample were re-chosen (:meth:`TimingPass.renumber`); ``futile`` and ``budget_cut``, why an
    undecided benchmark stopped. ``memory`` (:func:`runner.measures.memory_change`, the verdict
    against ``memory_threshold``) and ``compile`` (:func:`runner.measures.compile_change`) compare
    what each side's processes measured after their timing; each side carries its own ``memory``
    and ``compile`` records.
    """
    est = state.estimate
    used = set(state.blocks()) if state.pair_rounds else set()
    bounds = state.block_starts + [len(state.base)]
    pairs = []
    for a, b in zip(bounds, bounds[1:]):
        ratio = None
        if b - a >= 2:
            ratio = round(math.exp(stats.block_summary(state.base[a:b], state.head[a:b])[0]), 6)
        pairs.append({"start": a, "rounds": b - a, "ratio": ratio, "used": (a, b) in used})
    centers = est.block_centers if est else ()
    sd = schedule.pair_sd(centers)
    change = {
        "ratio": est.ratio if est else None,
        "ci_low": est.ci_low if est else None,
        "ci_high": est.ci_high if est else None,
        "p_value": est.p_value if est else None,
        "verdict": state.verdict,
        "ci_level": ci_level if est else None,
        "rounds": len(state.base),
        "process_pairs": est.blocks if est else len(state.block_starts),
        "rounds_per_pair": state.pair_rounds or None,
        "pairs": pairs,
        "between_process_sd": est.between_sd if est else None,
        "pair_sd": None if sd is None else round(sd, 6),
        "resolvable": round(state.resolvable, 6) if state.resolvable is not None and est else None,
        "disturbed_rounds": len(state.disturbed),
        "clock_rounds": len(state.clock_rounds),
        "clock_reasons": {r: list(state.clock_rounds.values()).count(r) for r in sorted(set(state.clock_rounds.values()))},
        "shared_number": state.shared_number,
        "dropped_rounds": state.dropped_rounds,
        "futile": state.futile,
        "budget_cut": state.budget_cut,
        "p_adjusted": state.p_adjusted,
        "stop_reason": state.stop_reason,
        "seconds": round(state.seconds, 3),
    }
    b_side, h_side = state.sides["base"], state.sides["head"]
    if state.verdict in PAIRED:
        memory = measures.memory_change(b_side.memory, h_side.memory, memory_threshold, min_pairs=min_pairs)
        if memory is not None:
            change["memory"] = memory
        compiled = measures.compile_change(b_side.compile, h_side.compile)
        if compiled is not None:
            change["compile"] = compiled
    return results_mod.benchmark(state.name, state.case.get("file"), base=_side_entry(b_side),
                                 head=_side_entry(h_side), change=change,
                                 family=state.case.get("family"), params=state.case.get("params"))


def _side_entry(side: SideState) -> dict:
    extra = side.info()
    memory, compiled = measures.memory_side(side.memory), measures.compile_side(side.compile)
    if memory is not None:
        extra["memory"] = memory
    if compiled is not None:
        extra["compile"] = compiled
    if side.measure_error:
        extra["measure_error"] = side.measure_error
    # what the rest of the machine did during the samples (mean fractions), where it could be read
    for key, values in (("others_busy", side.others_busy), ("steal", side.steal),
                        ("cpu_fraction", [c / w if w and c is not None else None for w, c in zip(side.wall, side.cpu)])):
        known = [v for v in values if v is not None]
        if known:
            extra[key] = round(sum(known) / len(known), 4)
    return results_mod.side(side.samples, peak_memory_bytes=side.peak, error=side.error, **extra)
