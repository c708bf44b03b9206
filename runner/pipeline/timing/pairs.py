"""The timing pass's process pairs: the requests it sends each side's worker (set-up, samples,
the measures after a pair, the set-up-only pairs compile times need), read through the typed
protocol (:mod:`runner.protocol`). :class:`ProcessPairs` is the base of :class:`.timing.TimingPass`,
which decides when to take rounds, look and stop."""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable, Protocol

from ... import measures
from ... import stats
from ...config import Config
from ...protocol import (Failure, MeasureReply, MeasureRequest, SampleReply, SampleRequest,
                         SetupReply, SetupRequest, read_reply)
from ...results import PAIRED
from . import evidence, schedule, stops
from ..machine import layouts
from .benchstate import BenchState, _peak
from .workers import WorkerFailure, WorkerProcess


#: The least time a request is given, however little of the budget is left (seconds).
MIN_REQUEST_SECONDS = 0.5


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


class ProcessPairs:
    """The two workers of one compare and the telemetry sampler: the requests of one benchmark's
    process pairs (set-up, a sample, the measures after a pair), read through :mod:`runner.protocol`.

    Isolation: every benchmark starts in a fresh pair of worker processes (forked by each side's
    server, :mod:`runner.pipeline.timing.workers`), and after every pair's rounds the benchmark
    moves to another fresh pair, so the process pair is the unit the statistics replicate
    (:func:`runner.stats.blocked_estimate`) and no benchmark runs in a process another one used.

    Args:
        telemetry: the NVML sampler (:class:`runner.pipeline.machine.telemetry.TelemetrySampler`, or
            anything with ``set_side`` and ``samples`` on the same clock): its samples tell the
            rounds the GPU's clocks disturbed, left out of the estimate.
        threads: the workers' intra-op threads on a CPU device (1 lets disturbed rounds be told,
            :func:`runner.pipeline.timing.schedule.disturbed_rounds`); None on a GPU or if unknown.
        device: the workers' device (``cpu``, ``cuda``), for the sample time when it is automatic.
        clock: monotonic seconds (a test passes a simulated one).
        locked_sm_mhz: the SM clock perfgate locked for the run (the reference a round's clock
            is judged against where the benchmark held it under load); None, or a lock the
            benchmark did not hold: the benchmark's own median under load
            (:func:`runner.pipeline.machine.sustained.round_reference`).
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
        #: the equivalence interval's coverage (two one-sided tests at the look's level)
        self.eq_level = stats.equivalence_level(self.look_alpha) if self.look_alpha < 0.5 else None
        self.budget_end = math.inf
        #: the end of the current benchmark's share of the budget (monotonic s; the timing pass's)
        self.share_end = math.inf

    def limit(self, state: BenchState) -> tuple[float, bool]:
        """Seconds a request about ``state`` may take, and whether its share cut them: its
        ``timeout`` (a suite's own only shorter: security review P8), never past its share
        (:attr:`share_end`) or the budget, so a hang costs its own share (issue 47)."""
        configured = min(float(state.case.get("timeout") or self.cfg.timeout), self.cfg.timeout)
        left = min(self.share_end, self.budget_end) - self.clock()
        if left < configured:
            return max(left, MIN_REQUEST_SECONDS), True
        return configured, False

    def ask_about(self, state: BenchState, side: str, message, reply: type):
        """:meth:`ask` within :meth:`limit`; one the share cut short is a Failure saying so."""
        limit, cut = self.limit(state)
        answer = self.ask(side, message, reply, limit)
        if cut and isinstance(answer, Failure) and "timed out" in (answer.error or ""):
            return Failure(f"no answer within {limit:.1f} s, what was left of this benchmark's "
                           "share of the time budget: it hangs, or it needs a larger --max-time "
                           "(or --filter)")
        return answer

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

    def ask(self, side: str, message, reply: type, timeout: float | None = None):
        """One typed request (:mod:`runner.protocol`) to ``side``'s worker: the ``reply`` type read
        from its answer, or a :class:`runner.protocol.Failure` — the request failed, the worker
        died or hung, or its answer broke the protocol (a field of the wrong type or range: the
        worker runs the PR's code, so its answers are checked here, once)."""
        data = message.to_json()
        return read_reply(self.request(side, data.pop("cmd"), timeout=timeout, **data), reply)

    def fresh_processes(self, order: tuple[str, ...] | None = None,
                        pair: int | None = None) -> float:
        """End every side's current worker child, in ``order`` (default: the workers' own, base
        before head); the next request forks new ones, from the fork servers of process pair
        ``pair``'s layout when it is given (:func:`runner.pipeline.machine.layouts.of_pair`).
        Returns the seconds spent starting servers."""
        started = 0.0
        for side in order or tuple(self.workers):
            self.workers[side].end_child()
            if pair is not None:
                started += self.workers[side].use_layout(layouts.of_pair(pair))
        return started

    def setup(self, state: BenchState, side: str, deadline: float = math.inf) -> bool:
        """Set the benchmark up on ``side`` in its current (fresh) process; False when it cannot be.

        The set-up may take no longer than its ``timeout`` nor past the end of the timing budget:
        one cut short by the budget sets ``state.budget_cut`` (the benchmark ends ``inconclusive``,
        not ``failed``)."""
        case, own = state.case, state.sides[side]
        request = SetupRequest(dir=self.bench_dirs[side], file=case["file"], func=case["func"], name=case["name"],
                               suite=case.get("suite"), case=case, options=self.options,
                               min_sample_time=self.min_sample_time, number=own.number,
                               cold_cache=self.cfg.timer_cold_cache(), warmup_samples=0)
        reply = self.ask_about(state, side, request, SetupReply)
        if isinstance(reply, Failure):
            if state.block_starts and "share of the time budget" in reply.error:
                state.budget_cut = True  # pairs measured already: the budget ended it, inconclusive
                return False
            if reply.skipped:
                own.skipped = reply.skipped
            own.error = reply.error or "set-up failed"
            return False
        own.set_up(reply)
        return True

    def warm_up(self, state: BenchState, order: tuple[str, ...], deadline: float = math.inf) -> bool:
        """Warm the pair's freshly set-up processes up alike, to a steady state; False (the side's
        ``error`` set) when a side fails meanwhile.

        Warm-up rounds are rounds like the timed ones (one sample a side, the order alternating),
        kept out of the estimate: they go on until every side's samples are steady
        (:func:`runner.pipeline.timing.evidence.steadiness`), for at least
        :data:`~runner.pipeline.timing.evidence.WARMUP_MIN_SECONDS` and at least as many rounds as
        the benchmark's first pair needed, and at most
        :func:`runner.pipeline.timing.evidence.warmup_limit`
        (:func:`runner.pipeline.timing.evidence.warmup_done`). Then, when the sides' steady times
        per call are alike, the side that made fewer calls since its process started (first call and
        calibration included) makes up the difference in one more untimed sample
        (:func:`runner.pipeline.timing.evidence.make_up`), so both sides of the pair enter the timed
        rounds after the same number of calls. The pair's record (``state.warmups``: rounds, calls a
        side, seconds, steady) goes to results.json's ``change.pairs[].warmup``; a pair whose sides
        were still moving when the limit came (``steady`` false; null: steady a moment before, or
        too few samples to judge) gives the estimate nothing (:meth:`BenchState.blocks`).

        Why the parent and not each worker alone: each side warmed up by its own rule until its
        last three samples agreed, and a docs-only kornia commit's ``pyrdown`` then had 21 warm-up
        calls on base and 5 on head, its processes sitting in different allocator modes, and read
        1.50× slower in 4 agreeing pairs (issue 45)."""
        t0 = self.clock()
        taken: dict[str, list[float]] = {side: [] for side in order}
        calls = {side: state.sides[side].setup_calls or 1 for side in order}
        rounds = self._warmup_rounds(state, order, min(deadline, self.budget_end), taken, calls)
        if rounds is None:
            return False
        window, windows, done, steady = rounds
        warm = [_warm(taken[side], window) or state.sides[side].per_call or 0.0 for side in order]
        behind = evidence.make_up(calls, warm)
        if behind is not None:
            side, extra = behind
            reply = self.ask_about(state, side, SampleRequest(1, extra), SampleReply)
            if isinstance(reply, Failure):
                state.sides[side].error = reply.error or "warm-up failed"
                return False
            calls[side] += extra
        for side in order:
            own = state.sides[side]
            own.warm_per_call = _warm(taken[side], window)
            if own.warmup_calls is None:
                own.warmup_calls = calls[side]
        if not state.warmups:  # later pairs warm up at least as long, judged alike
            state.warmup_floor, state.warmup_windows = done, (window, windows)
        state.warmups.append({"rounds": done, "calls": dict(calls),
                              "seconds": round(self.clock() - t0, 3), "steady": steady})
        return True

    def _warmup_rounds(self, state: BenchState, order: tuple[str, ...], end: float,
                       taken: dict[str, list[float]],
                       calls: dict[str, int]) -> tuple[int, int, int, bool | None] | None:
        """The warm-up's rounds, its samples added to ``taken`` and its calls to ``calls``, until
        :func:`runner.pipeline.timing.evidence.warmup_done` says done (none for a round too long for
        two windows of them within the limit, a training step of a second: its first call and
        calibration sample were its warm-up, as pyperf's one warm-up value). Returns ``(samples
        per window, windows, rounds, steady)``, or None when a side failed (its ``error`` set)."""
        t0 = self.clock()
        limit = evidence.warmup_limit(end - t0)
        round_s = sum((own.per_call or 0.0) * (own.number or own.calibrated or 1)
                      for own in (state.sides[side] for side in order))
        window, windows = state.warmup_windows or evidence.warmup_windows(round_s)
        rounds, steady, done = 0, None, window * windows * round_s > limit
        last_steady = {side: -1 for side in order}  # the round each side was last judged steady
        while not done:
            r0 = self.clock()
            for side in schedule.in_turn(rounds, order):
                own = state.sides[side]
                number = own.number or own.calibrated or 1
                reply = self.ask_about(state, side, SampleRequest(1, number), SampleReply)
                if isinstance(reply, Failure):
                    own.error = reply.error or "warm-up failed"
                    return None
                taken[side].extend(reply.samples)
                calls[side] += number
            rounds += 1
            now = self.clock()
            judged = [evidence.steadiness(taken[side], window, windows) for side in order]
            last_steady = {side: rounds if j.steady else last_steady[side]
                           for side, j in zip(order, judged)}
            out_of_time = now - t0 + (now - r0) > limit or now + (now - r0) > end
            done, steady = evidence.warmup_done(judged, [rounds - last_steady[s] for s in order],
                                                window, rounds, state.warmup_floor, now - t0,
                                                out_of_time)
        return window, windows, rounds, steady

    def choose_numbers(self, state: BenchState, first: str = "base") -> None:
        """After the first pair's set-up and warm-up: each side's calls per sample (shared within
        :data:`runner.pipeline.timing.schedule.SHARE_FACTOR`, from the warm-up's steady times per
        call), the rounds per pair and the expected round time."""
        one, other = state.sides[first], state.sides["head" if first == "base" else "base"]
        sides = [s for s in (one, other) if s.calibrated is not None]
        for s in sides:  # the warm-up's steady time per call, and calls enough for it
            if s.warm_per_call:
                s.per_call = s.warm_per_call
                s.calibrated = schedule.calls_for(s.per_call, self.min_sample_time, s.calibrated)
        if len(sides) == 2:
            one.number, other.number, state.shared_number = schedule.calls_per_sample(
                (one.calibrated, one.per_call or 0.0), (other.calibrated, other.per_call or 0.0))
        else:
            for s in sides:
                s.number = s.calibrated
        state.round_seconds = sum((s.per_call or 0.0) * s.number for s in sides)
        state.pair_rounds = schedule.rounds_per_pair(state.round_seconds, self.cfg.pair_rounds)

    def sample(self, state: BenchState, side: str) -> bool:
        own = state.sides[side]
        reply = self.ask_about(state, side, SampleRequest(1, own.number), SampleReply)
        if isinstance(reply, Failure):
            own.error = reply.error or "sample failed"
            return False
        own.samples.extend(reply.samples)
        for values, got in ((own.wall, reply.wall_s), (own.cpu, reply.cpu_s), (own.switches, reply.switches),
                            (own.others_busy, reply.others_busy), (own.steal, reply.steal)):
            values.extend(got)
        own.peak = _peak(own.peak, reply.peak_memory_bytes)
        return True

    def new_process_pair(self, state: BenchState, deadline: float = math.inf) -> bool:
        """Move the benchmark to a fresh pair of worker processes; False (and ``failed``) if it
        cannot be set up again."""
        # Which side goes first alternates from pair to pair (as ABBA does for rounds): the first
        # process to start and allocate gets other memory than the second (pages the last pair's
        # processes freed come back last-in first-out), and in one order only that was a
        # systematic offset (A/A, a 51 MB-weights loss step: head 1.1 % faster over 10 pairs).
        order = schedule.in_turn(len(state.block_starts))
        t0 = self.clock()
        self.end_pair(state, deadline)
        started = self.fresh_processes(order, pair=len(state.block_starts))
        t1 = self.clock()
        if (self.setup(state, order[0], deadline) and self.setup(state, order[1], deadline)
                and self.warm_up(state, order, deadline)):
            now = self.clock()
            # a layout's server starts once per compare: not what the next pair will cost
            state.setup_seconds, state.pair_setup_seconds = now - t0 - started, now - t1
            state.start_pair(len(state.base), layouts.of_pair(len(state.block_starts)))
            state.open_sides = order
            return True
        state.stop(stops.BUDGET_IN_PAIR_SETUP if state.budget_cut else stops.PAIR_SETUP_FAILED)
        return False

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
        # what its rounds took so far bounds the measure too (a benchmark new on head has none; a
        # first pair whose rounds were dropped by renumber still took them)
        rounds_s = state.timing_seconds if state.windows or state.dropped_rounds else math.inf
        change = measures.memory_change(state.sides["base"].memory, state.sides["head"].memory,
                                        self.cfg.memory_threshold) or {"verdict": None}
        seen = (change["verdict"] != "unchanged"
                and abs(change.get("ratio", 1.0) - 1.0) > self.cfg.memory_threshold)
        memory = measures.memory_due(state.memory_pairs, per_call, left, self.device, rounds_s,
                                     spent_s=state.memory_seconds, sides=len(sides),
                                     change_seen=seen)
        state.memory_pairs += int(memory)
        for side in sides:
            own = state.sides[side]
            if not memory and state.memory_pairs == 0:
                own.measure_error = measures.memory_skipped(per_call, left, self.device, rounds_s, sides=len(sides))
            elif memory and str(own.measure_error or "").startswith("memory not measured"):
                own.measure_error = None  # skipped in an earlier pair, measured now
            t0 = self.clock()
            reply = self.ask_about(state, side, MeasureRequest(memory), MeasureReply)
            if memory:
                state.memory_seconds += self.clock() - t0
            if isinstance(reply, Failure):
                own.memory.append(None)
                own.compile.append(None)
                own.measure_error = reply.error or "measure failed"
                continue
            own.memory.append(reply.memory)
            own.compile.append(reply.compile)
            if reply.memory_error:
                own.measure_error = reply.memory_error

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
                order = schedule.in_turn(_compiled_pairs(state))
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


def _compiled_pairs(state: BenchState) -> int:
    """Process pairs in which both sides compiled (both have compile facts)."""
    return sum(1 for b, h in zip(state.sides["base"].compile, state.sides["head"].compile) if b and h)


def _warm(samples: list[float], window: int) -> float | None:
    """The warm-up's steady seconds per call: the (upper) median of its last window."""
    return statistics.median_high(samples[-window:]) if samples else None
