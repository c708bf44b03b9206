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

from .. import stats
from ..results import PAIRED
from . import evidence, layouts, schedule
from . import telemetry as telemetry_mod
from .benchstate import KEEP_AT_LEAST, BenchState
from .pairs import ProcessPairs


class TimingPass(ProcessPairs):
    """The timing pass over every benchmark: rounds in process pairs (:class:`.pairs.ProcessPairs`
    sends the requests), looks, stops, the second pass for inconclusive ones and
    Benjamini–Hochberg across the run. Arguments as :class:`.pairs.ProcessPairs`."""

    def run_benchmark(self, state: BenchState, deadline: float) -> None:
        """Set up both sides in fresh processes and take rounds until decided, failed, futile,
        out of looks or past ``deadline``."""
        t0 = self.clock()
        try:
            if self.clock() >= self.budget_end:
                state.stop_reason, state.budget_cut = "time budget spent before it started", True
                return
            self.fresh_processes(pair=0)
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
            state.open_sides = ("base", "head") if base_ok else ("head",)
            if not self.warm_up(state, state.open_sides, deadline):
                state.verdict, state.stop_reason = "failed", "failed during its warm-up"
                return
            self.choose_numbers(state)
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
            state.start_pair(0, layouts.of_pair(0))
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
                if len(state.base) - state.block_starts[-1] >= state.current_pair_rounds():
                    if not self.settles(state):
                        return
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
                state.timing_seconds += self.clock() - r0
                state.last_round_seconds = self.clock() - r0
                self.progress.rounds(state.name, len(state.base), state.estimate)
            state.estimate = self.estimate(state)
            state.look_index += 1
            state.verdict = self.gate(state, stats.decide(state.estimate, self.cfg.threshold,
                                                          state.estimate.p_value < self.look_alpha,
                                                          self.cfg.min_process_pairs))
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
                # undecided and near the band: later pairs amortise their set-up over more rounds
                # (unchanged until a later pair's set-up was measured)
                state.pair_rounds = schedule.later_pair_rounds(
                    state.pair_rounds, state.typical_round_seconds(), state.pair_setup_seconds,
                    self.cfg.pair_rounds, state.estimate.ratio, self.cfg.threshold)
        state.stop_reason = f"still inconclusive after {self.look_pairs[-1]} process pairs (max_rounds)"

    def gate(self, state: BenchState, verdict: str) -> str:
        """``verdict`` (:func:`runner.stats.decide`'s, at a look or across the run), or
        ``inconclusive`` while the benchmark is short of the evidence a verdict needs
        (:func:`runner.pipeline.evidence.short_of_evidence`) or its change is one that memory
        layouts switch on and off (:func:`runner.pipeline.evidence.layout_modes`); why is kept in
        ``state.short_of_evidence``."""
        est = state.estimate
        state.short_of_evidence = None
        if est is not None and state.windows:  # timed rounds (a benchmark that measures itself has none)
            state.short_of_evidence = evidence.short_of_evidence(
                verdict, est.ci_low, est.ci_high, est.blocks, state.timing_seconds, state.typical_round_seconds())
            if verdict in ("regression", "improvement") and not state.short_of_evidence:
                state.short_of_evidence = evidence.layout_modes(est.block_centers, self.cfg.threshold)
        return "inconclusive" if state.short_of_evidence else verdict

    def settles(self, state: BenchState) -> bool:
        """False, with the stop reason, once the benchmark's pairs do not warm up to a steady
        state (:func:`runner.pipeline.evidence.never_steady`): more of them only spend budget."""
        if not evidence.never_steady(state.unsteady_pairs(), len(state.block_starts)):
            return True
        moving = [w for w in state.warmups if w.get("steady") is False]
        calls = max(max(w["calls"].values()) for w in moving)
        seconds = max(w["seconds"] for w in moving)
        state.stop_reason = (f"its sides did not reach a steady state: in {len(moving)} of {len(state.warmups)} "
                             f"process pairs the warm-up's last samples still moved after {calls} calls "
                             f"({seconds:.1f} s), so those pairs give no verdict")
        return False

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
        state.block_starts, state.block_rounds, state.block_layouts = [], [], []
        state.warmups.clear()
        state.shared_number = True
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
        out (a pair keeps the rounds the CPU detector flagged when leaving them out would leave it
        less than :data:`KEEP_AT_LEAST` of them; rounds NVML saw throttled go while two remain: kept,
        they bias the pair — simulated, identical code with head throttled 30 % of the time was
        called a regression in 2 to 4 of 12 seeds)."""
        b_side, h_side = state.sides["base"], state.sides["head"]
        state.disturbed = schedule.disturbed_rounds([b_side.sample_info(i) for i in range(len(state.base))],
                                                    [h_side.sample_info(i) for i in range(len(state.head))],
                                                    self.threads)
        state.clock_rounds = self.clock_disturbed(state)
        out = set(state.disturbed) | set(state.clock_rounds)
        blocks, layout_of = [], []
        state.disturbed_kept = 0
        for a, b in state.blocks():
            keep = [i for i in range(a, b) if i not in out]
            if len(keep) < max(2, math.ceil(KEEP_AT_LEAST * (b - a))):
                # the CPU detector saw most of the pair disturbed: it keeps those rounds (it may
                # misread the machine), but NVML's word that the GPU was held down stands
                keep = [i for i in range(a, b) if i not in state.clock_rounds]
                if len(keep) < 2:
                    keep = list(range(a, b))
                state.disturbed_kept += sum(1 for i in keep if i in state.disturbed)
            blocks.append(stats.block_summary([state.base[i] for i in keep], [state.head[i] for i in keep]))
            layout_of.append(state.layout_at(a))
        est = stats.blocked_estimate(evidence.by_layout(blocks, layout_of), self.ci_level, self.cfg.process_noise,
                                     self.eq_level)
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


    def resume(self, state: BenchState, deadline: float) -> None:
        """Second pass for an inconclusive benchmark: continue its looks in fresh process pairs."""
        t0 = self.clock()
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
            s.verdict, s.p_adjusted = self.gate(s, verdict), q


