"""The timing pass: every benchmark in fresh process pairs, rounds interleaved (ABBA), looked
at on a schedule until decided, within a time budget; and ``perfgate run``'s pass over one side.

Schedule. Benchmarks are taken one after another. For each, a fresh pair of workers sets it up
(the first pair calibrates the calls per sample for both sides), then rounds alternate the order
base-head, head-base so each base sample has an adjacent head sample. After every
``pair_rounds`` rounds the benchmark moves to another fresh pair (which side starts first
alternates), so the process pair is the unit of replication. At each planned look
(:func:`runner.stats.look_schedule`) the estimate over the pairs
(:func:`runner.stats.blocked_estimate`) is tested and the benchmark stops when decided. Each
benchmark may spend its fair share of what is left of ``max_time``; benchmarks still
inconclusive after the first pass continue their looks with whatever budget remains, and
Benjamini–Hochberg across the run decides the final verdicts.

This module drives the workers and carries the decisions out: when a benchmark stops and with
what verdict is :mod:`.stops`'s, calls and rounds per pair, disturbed rounds and futility
:mod:`.schedule`'s, what counts as evidence :mod:`.evidence`'s, the estimate and the verdicts
:mod:`runner.stats`'s.
"""

from __future__ import annotations

import math
from typing import Callable

from ... import stats
from . import evidence, schedule, stops
from ..machine import layouts, sustained
from ..machine import telemetry as telemetry_mod
from .benchstate import BenchState
from .outputs import ask_outputs
from .pairs import ProcessPairs


class TimingPass(ProcessPairs):
    """The timing pass over every benchmark: rounds in process pairs (:class:`.pairs.ProcessPairs`
    sends the requests), looks, stops, the second pass for inconclusive ones and
    Benjamini–Hochberg across the run; or, over one side's worker, ``perfgate run``'s samples
    (:meth:`time_one_side`). Arguments as :class:`.pairs.ProcessPairs`."""

    def end_pair(self, state: BenchState, deadline: float = math.inf) -> None:
        """Before a process pair ends: both sides' outputs (:func:`.outputs.ask_outputs`), then
        the measures (:meth:`.pairs.ProcessPairs.end_pair`)."""
        ask_outputs(self, state, deadline)
        super().end_pair(state, deadline)

    def run_benchmark(self, state: BenchState, deadline: float) -> str:
        """Set up both sides in fresh processes and take rounds until decided, failed, futile,
        out of looks or past ``deadline``; returns the verdict so far."""
        t0 = self.clock()
        self.share_end = deadline
        try:
            if self.clock() >= self.budget_end:
                state.stop(stops.BUDGET_BEFORE_START)
                return state.verdict
            ok = self._first_pair(state, deadline)
            if ok is None:
                return state.verdict
            if not ok["base"]:
                state.stop(stops.NEW)
                if not self.head_samples(state, self.cfg.min_rounds, deadline):
                    state.stop(stops.NEW_FAILED)
                return state.verdict
            state.setup_seconds = self.clock() - t0
            state.start_pair(0, layouts.of_pair(0))
            self._continue(state, deadline)
        finally:
            self.end_pair(state, deadline)
            self.fresh_processes()
            state.seconds += self.clock() - t0
            self.share_end = math.inf
        return state.verdict

    def _first_pair(self, state: BenchState, deadline: float) -> dict[str, bool] | None:
        """The benchmark's first processes, one per side: set up, warmed up alike, calls per
        sample chosen. ``{side: set up}``, or None when the benchmark stopped (why in its state)."""
        sides = tuple(self.workers)
        self.fresh_processes(sides, pair=0)
        ok = {side: not state.budget_cut and self.setup(state, side, deadline) for side in sides}
        stop = stops.after_setup(ok["head"], state.sides["head"].skipped, state.budget_cut)
        if stop is not None:
            state.stop(stop)
            return None
        state.open_sides = tuple(side for side in sides if ok[side])
        if not self.warm_up(state, state.open_sides, deadline):
            state.stop(stops.WARMUP_FAILED)
            return None
        self.choose_numbers(state, first=sides[0])
        return ok

    def head_samples(self, state: BenchState, samples: int, deadline: float) -> bool:
        """Up to ``samples`` samples of head alone (:func:`.stops.another_sample`); False when one
        failed."""
        for _ in range(samples):
            fits = self.clock() + state.round_seconds <= deadline
            if not stops.another_sample(len(state.head), fits):
                return True
            if not self.sample(state, "head"):
                return False
        return True

    def _pair_fits(self, state: BenchState, deadline: float) -> bool:
        """Would a new process pair (set-up and all its rounds) end before ``deadline``?"""
        return (self.clock() + state.setup_seconds + state.pair_rounds * state.round_estimate()
                <= deadline)

    def _continue(self, state: BenchState, deadline: float) -> None:
        """Rounds and looks from the benchmark's next planned look on, until it stops."""
        for pairs in self.look_pairs[state.look_index:]:
            if not self._rounds_until(state, pairs, deadline):
                return
            stop = self._look(state)
            if stop is not None:
                state.stop(stop)
                return

    def _rounds_until(self, state: BenchState, pairs: int, deadline: float) -> bool:
        """Rounds, in a new process pair whenever the current one has its rounds, until ``pairs``
        pairs count for the estimate; False when the benchmark stopped (why in its state)."""
        while len(state.blocks()) < pairs:
            if state.pair_complete() and not self._next_pair(state, deadline):
                return False
            if self.clock() + state.round_estimate() > deadline:
                state.stop(stops.BUDGET_SPENT)
                return False
            if not self._round(state):
                return False
        return True

    def _next_pair(self, state: BenchState, deadline: float) -> bool:
        """After a pair's rounds: the first pair's calls per sample re-chosen where its rounds ask
        for it (:meth:`renumber`), then a new process pair if the pairs settle and it fits."""
        if not self.settles(state):
            return False
        self.renumber(state)
        if not self._pair_fits(state, deadline):
            state.stop(stops.BUDGET_SPENT)
            return False
        return self.new_process_pair(state, deadline)

    def _round(self, state: BenchState) -> bool:
        """One timed round, each side one sample (the order alternating, :func:`.schedule.in_turn`);
        False when a side failed (the round's other sample is dropped: the pairs stay complete)."""
        r0 = self.clock()
        n = len(state.base)
        for side in schedule.in_turn(n):
            if not self.sample(state, side):
                for own in state.sides.values():
                    own.truncate(n)
                state.stop(stops.sampling_failed(side))
                return False
        state.windows.append((r0, self.clock()))
        state.timing_seconds += self.clock() - r0
        state.last_round_seconds = self.clock() - r0
        self.progress.rounds(state.name, len(state.base), state.estimate)
        return True

    def _look(self, state: BenchState) -> stops.Stop | None:
        """A planned look: the estimate, the verdict (:meth:`gate`), and whether it stops there
        (:func:`.stops.after_look`). Undecided and near the band, later pairs amortise their
        set-up over more rounds (:func:`.schedule.later_pair_rounds`)."""
        est = state.estimate = self.estimate(state)
        state.look_index += 1
        state.verdict = self.gate(state, stats.decide(est, self.cfg.threshold,
                                                      est.p_value < self.look_alpha,
                                                      self.cfg.min_process_pairs))
        self.progress.rounds(state.name, len(state.base), est)
        projection = schedule.futility(est.block_centers, self.cfg.threshold, self.look_alpha,
                                       self.cfg.process_noise, self.reachable_pairs(state))
        stop = stops.after_look(state.verdict, state.look_index, len(self.looks),
                                self.look_pairs[-1], projection)
        if stop is None:
            state.pair_rounds = schedule.later_pair_rounds(
                state.pair_rounds, state.typical_round_seconds(), state.pair_setup_seconds,
                self.cfg.pair_rounds, est.ratio, self.cfg.threshold)
        return stop

    def gate(self, state: BenchState, verdict: str) -> str:
        """``verdict`` (:func:`runner.stats.decide`'s, at a look or across the run), or
        ``inconclusive`` while :func:`runner.pipeline.timing.evidence.gate` holds it back; why is
        kept in ``state.short_of_evidence``."""
        verdict, state.short_of_evidence = evidence.gate(
            verdict, state.estimate, bool(state.windows), state.timing_seconds,
            state.typical_round_seconds(), self.cfg.threshold)
        return verdict

    def settles(self, state: BenchState) -> bool:
        """False, with the stop, once the benchmark's pairs do not warm up to a steady state
        (:func:`runner.pipeline.timing.stops.unsteady`)."""
        stop = stops.unsteady(state.warmups, len(state.block_starts))
        if stop is not None:
            state.stop(stop)
        return stop is None

    def renumber(self, state: BenchState) -> None:
        """After the first process pair's rounds: when its sides took separate calls per sample
        but its rounds show the per-call times alike
        (:func:`runner.pipeline.timing.schedule.renumbering`: a disturbed calibration), both sides
        share one count from the next pair on and the first pair's rounds are dropped — they were
        taken with samples of different lengths, which another task's bursts hit unequally. Done at
        most once per benchmark."""
        b, h = state.sides["base"], state.sides["head"]
        number = schedule.renumbering(state.shared_number, state.dropped_rounds,
                                      len(state.block_starts), b.samples, h.samples,
                                      (b.number, h.number))
        if number is None:
            return
        state.dropped_rounds = len(b.samples)
        for own in (b, h):
            own.per_call = sorted(own.samples)[len(own.samples) // 2]
            own.number = number
            own.truncate(0)
        state.windows.clear()
        state.block_starts, state.block_rounds, state.block_layouts = [], [], []
        state.warmups.clear()
        state.shared_number = True
        state.round_seconds = sum((s.per_call or 0.0) * number for s in (b, h))
        state.pair_rounds = schedule.rounds_per_pair(state.round_seconds, self.cfg.pair_rounds)

    def reachable_pairs(self, state: BenchState) -> int:
        """The most process pairs this benchmark could still reach
        (:func:`.stops.reachable_pairs`)."""
        pair_cost = state.setup_seconds + state.pair_rounds * state.round_estimate()
        return stops.reachable_pairs(len(state.blocks()), pair_cost, self.budget_end - self.clock(),
                                     self.look_pairs[-1])

    def estimate(self, state: BenchState) -> stats.BlockedEstimate:
        """The estimate over the benchmark's complete process pairs so far, each pair's disturbed
        rounds left out as :func:`runner.pipeline.timing.evidence.kept_rounds` says, pairs of one
        memory layout one replicate once layouts repeat
        (:func:`runner.pipeline.timing.evidence.by_layout`)."""
        b_side, h_side = state.sides["base"], state.sides["head"]
        state.disturbed = schedule.disturbed_rounds(
            [b_side.sample_info(i) for i in range(len(state.base))],
            [h_side.sample_info(i) for i in range(len(state.head))],
            self.threads)
        state.clock_rounds = self.clock_disturbed(state)
        blocks, layout_of = [], []
        state.disturbed_kept = state.clock_kept = 0
        for a, b in state.blocks():
            keep, kept_disturbed, kept_throttled = evidence.kept_rounds(a, b, state.disturbed,
                                                                        state.clock_rounds)
            state.disturbed_kept += kept_disturbed
            state.clock_kept += kept_throttled
            blocks.append(stats.block_summary([state.base[i] for i in keep],
                                              [state.head[i] for i in keep]))
            layout_of.append(state.layout_at(a))
        est = stats.blocked_estimate(evidence.by_layout(blocks, layout_of), self.ci_level,
                                     self.cfg.process_noise, self.eq_level)
        state.resolvable = schedule.resolvable_change(est.block_centers, self.ci_level,
                                                      self.cfg.process_noise)
        return est

    def clock_disturbed(self, state: BenchState) -> dict[int, str]:
        """The rounds the GPU's clocks disturbed
        (:func:`runner.pipeline.machine.telemetry.disturbed_rounds`), judged against the locked
        clock where it held under this benchmark's load, else the benchmark's own SM clock under
        load, never the run's (:func:`runner.pipeline.machine.sustained.round_reference`, GPU
        review #8); empty without telemetry samples."""
        samples = list(getattr(self.telemetry, "samples", None) or [])
        windows = state.windows[:len(state.base)]
        own = sustained.under_load(sustained.in_windows(samples, windows))
        reference = sustained.round_reference(self.locked_sm_mhz, own)
        return telemetry_mod.disturbed_rounds(windows, samples, reference)

    def resume(self, state: BenchState, deadline: float) -> None:
        """Second pass for an inconclusive benchmark: continue its looks in fresh process pairs."""
        t0 = self.clock()
        self.share_end = deadline
        try:
            # A pair the first pass left unfinished stays in the samples but not in the estimate.
            if not self._pair_fits(state, deadline) or not self.settles(state):
                return
            if self.new_process_pair(state, deadline):
                self._continue(state, deadline)
        finally:
            self.end_pair(state, deadline)
            self.fresh_processes()
            state.seconds += self.clock() - t0
            self.share_end = math.inf

    def time_all(self, states: list[BenchState], end: float | None = None) -> None:
        """The timing pass, to end by ``end`` (monotonic seconds; default ``max_time`` from now):
        a first pass over every benchmark with its fair share of the budget, then, while budget
        remains, more looks for the benchmarks that are still inconclusive after
        Benjamini–Hochberg across the run (:meth:`finalize`) and that more pairs could decide,
        then the set-up-only pairs that compile times need (:meth:`compile_pairs`)."""
        budget_end = self.clock() + self.cfg.max_time if end is None else end
        self._time_all(states, budget_end)
        self.compile_pairs(states, budget_end)

    def time_one_side(self, states: list[BenchState], end: float, samples: int) -> None:
        """``perfgate run``'s pass over its one side (head): each benchmark in a fresh process, set
        up, warmed up to a steady state, its calls per sample chosen, then ``samples`` samples —
        two whatever the budget, more while they end within its fair share of what is left before
        ``end`` (monotonic seconds) — and the measures after them (:meth:`end_pair`). A set-up is
        not cut by the budget: every benchmark is measured."""
        self._each(states, end, lambda state, deadline: self._one_side(state, deadline, samples))

    def _one_side(self, state: BenchState, deadline: float, samples: int) -> str:
        t0 = self.clock()
        try:
            if (self._first_pair(state, deadline) is not None
                    and not self.head_samples(state, samples, deadline)):
                state.stop(stops.sampling_failed("head"))
        finally:
            self.end_pair(state, deadline)
            self.fresh_processes()
            state.seconds += self.clock() - t0
        return stops.run_outcome(state.verdict)

    def _each(self, states: list[BenchState], end: float,
              step: Callable[[BenchState, float], str]) -> None:
        """``step(state, deadline)`` for every benchmark in turn, each with its fair share of what
        is left before ``end``; ``step`` returns what the progress says of it."""
        if not states:
            return
        self.progress.start(len(states))
        for i, state in enumerate(states):
            self.progress.benchmark(i, state.name)
            share = max(end - self.clock(), 0.0) / (len(states) - i)
            self.progress.finished(state.name, step(state, self.clock() + share))

    def _time_all(self, states: list[BenchState], budget_end: float) -> None:
        self.budget_end = budget_end
        self._each(states, budget_end, self.run_benchmark)
        while True:
            self.finalize(states)
            pending = [s for s in states
                       if stops.resumable(s.verdict, s.look_index, len(self.looks),
                                          len(s.block_starts), s.futile)
                       and self._pair_fits(s, budget_end)]
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
        paired = [s for s in states if stops.corrected(s.verdict, s.estimate is not None)]
        p_seq = [stats.sequential_p(s.estimate.p_value, len(self.looks)) for s in paired]
        verdicts, adjusted = stats.final_verdicts([s.estimate for s in paired], p_seq,
                                                  self.cfg.alpha, self.cfg.threshold,
                                                  self.cfg.min_process_pairs)
        for s, verdict, q in zip(paired, verdicts, adjusted):
            s.verdict, s.p_adjusted = self.gate(s, verdict), q
