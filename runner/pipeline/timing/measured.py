"""The pass for benchmarks that measure themselves: their runs interleaved in pairs, as process pairs.

A benchmark that measures itself (a command printing Google Benchmark, nvbench or custom JSON,
:mod:`runner.conventions.command`) is not timed by perfgate's sampler: one run of it reports every
benchmark of its ``group`` at once. So the unit here is the run: each round runs it once on each
side, in a fresh worker process, the order alternating (base first, then head first, …), and the two
runs of a round are one process pair for every benchmark of the group — each side's reported
repetitions its sample set. A pair's estimate is the log of the ratio of the two runs' medians
(:func:`runner.stats.unpaired_block_summary`: the repetitions of two runs are not paired one by
one); the estimate over the pairs, the planned looks, the verdicts, the futility rule and, after
the pass, Benjamini–Hochberg across the run are the timing pass's (:mod:`.timing`,
:mod:`runner.stats`), on the time per unit of work: a bigger-is-better value (a throughput) is
compared as its reciprocal, so ``ratio > 1`` is worse for every benchmark.

A benchmark whose value is memory (``measure: "memory"``, asv's ``peakmem_*`` and ``mem_*``: one
byte count per run) is decided as memory instead, at the same looks: each pair's head/base, their
median and its interval, the verdict against ``memory_threshold``
(:func:`runner.measures.value_memory_change`); Benjamini–Hochberg leaves it alone, as it does
a timed benchmark's memory verdict.

Each benchmark stops at the first look that decides it; the group stops running when none is left
open, at the last planned look, or when another pair would end past its share of the budget.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

from ... import measures
from ... import results as results_mod
from ... import stats
from ...protocol import Failure, SampleReply, SampleRequest
from ...results import PAIRED
from . import schedule, stops
from .benchstate import BenchState
from .entries import benchmark_entry
from .timing import TimingPass


def costs(values: list[float], direction: str, zero_ok: bool = False) -> list[float]:
    """Values as time-like costs (smaller is better): as they are, or ``1/value`` when bigger is
    better; values that are not finite and positive (with ``zero_ok``, not finite and ≥ 0: bytes)
    are left out."""
    good = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)
            and (v > 0 or (zero_ok and v == 0))]
    return [1.0 / v for v in good] if direction == "bigger" else good


def is_memory(state: BenchState) -> bool:
    """Whether the benchmark's own value is memory (``measure: "memory"``: bytes, a memory verdict)."""
    return state.case.get("measure") == "memory"


def memory_of(state: BenchState, threshold: float, min_pairs: int) -> dict | None:
    """The ``change.memory`` record of a memory-valued benchmark over its process pairs: each
    side's value of the pair (one per run; the median where a run reported several)."""
    base, head = pair_values(state)
    kind = str(state.case.get("memory_kind") or "value")
    return measures.value_memory_change(base, head, kind, threshold, min_pairs)


def pair_values(state: BenchState) -> tuple[list[float], list[float]]:
    """Each process pair's base and head value (the median of what its run reported: one value
    for asv's types), aligned by pair."""
    bounds = state.block_starts + [len(state.base)]
    pairs = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    return ([statistics.median(state.base[a:b]) for a, b in pairs],
            [statistics.median(state.head[a:b]) for a, b in pairs])


class MeasuredPass:
    """Drives the runs of the self-measured benchmarks of one compare through the timing pass's
    workers (``timing``: its requests, configuration, looks and clock)."""

    def __init__(self, timing: TimingPass):
        self.timing = timing

    def run(self, states: list[BenchState], end: float) -> None:
        """Every group of ``states`` in turn, each with its fair share of what is left before ``end``."""
        self._each_group(states, end, self.run_group)

    def run_one_side(self, states: list[BenchState], end: float, target: int) -> None:
        """``perfgate run``'s self-measured benchmarks: each group's runs on head alone, each in a
        fresh process, until each of its benchmarks has ``target`` values, two runs whatever the
        budget, then while another run ends within the group's fair share of what is left before
        ``end`` (:func:`runner.pipeline.timing.stops.another_run`). The values are kept as
        reported."""
        self._each_group(states, end,
                         lambda members, deadline: self._head_runs(members, deadline, target))

    def _each_group(self, states: list[BenchState], end: float,
                    step: Callable[[list[BenchState], float], None]) -> None:
        if not states:
            return
        groups: dict[str, list[BenchState]] = {}
        for state in states:
            groups.setdefault(str(state.case.get("group") or state.name), []).append(state)
        clock = self.timing.clock
        self.timing.progress.start(len(states))
        for i, members in enumerate(groups.values()):
            share = max(end - clock(), 0.0) / (len(groups) - i)
            for state in members:
                self.timing.progress.benchmark(states.index(state), state.name)
            step(members, clock() + share)
            for state in members:
                self.timing.progress.finished(state.name, state.verdict)

    def _head_runs(self, states: list[BenchState], deadline: float, target: int) -> None:
        timing, clock = self.timing, self.timing.clock
        t0 = clock()
        runs, last = 0, 0.0
        try:
            while stops.another_run(runs, min(len(s.head) for s in states), target,
                                    clock() + last <= deadline):
                r0 = clock()
                readings = self._one_run(states, "head", deadline)
                if readings is None:
                    return
                runs, last = runs + 1, clock() - r0
                for state in states:
                    values = ((readings.get(state.name) or {}).get("values") or [])
                    state.sides["head"].samples.extend(float(v) for v in values)
                timing.progress.rounds(states[0].name, runs, None)
        finally:
            timing.fresh_processes()
            for state in states:
                state.seconds += clock() - t0

    def _one_run(self, states: list[BenchState], side: str, deadline: float) -> dict | None:
        """One run on ``side`` in a fresh process: its readings, or None (the failure is recorded on
        every state's side)."""
        timing = self.timing
        timing.workers[side].end_child()
        lead = states[0]
        if not timing.setup(lead, side, deadline):
            for state in states[1:]:
                state.sides[side].error, state.sides[side].skipped = lead.sides[side].error, lead.sides[side].skipped
            return None
        reply = timing.ask(side, SampleRequest(1), SampleReply, lead.case.get("timeout"))
        if isinstance(reply, Failure):
            for state in states:
                state.sides[side].error = reply.error or "the run failed"
            return None
        return reply.readings or {}

    def run_group(self, states: list[BenchState], deadline: float) -> None:
        """The rounds of one group until every benchmark is decided (after Benjamini–Hochberg across
        the group, as the timing pass resumes the benchmarks its correction left undecided), the
        looks are spent or the next pair would end past ``deadline``."""
        timing, clock = self.timing, self.timing.clock
        t0 = clock()
        open_ = list(states)
        self.pair_seconds = 0.0
        try:
            while open_:
                self._rounds(open_, deadline)
                timing.finalize(states)
                open_ = [s for s in states if s.verdict == "inconclusive" and not s.futile and not s.budget_cut
                         and s.block_starts and s.look_index < len(timing.look_pairs)]
                if any(s.budget_cut for s in states):
                    break
        finally:
            timing.fresh_processes()
            for state in states:
                state.seconds += clock() - t0

    def _rounds(self, open_: list[BenchState], deadline: float) -> None:
        """Rounds until each of ``open_`` is decided at a look, futile, failed or out of looks."""
        timing, clock = self.timing, self.timing.clock
        while open_:
            if state_look(open_[0], timing) is None:
                for state in open_:
                    state.stop_reason = f"still inconclusive after {timing.look_pairs[-1]} process pairs (max_rounds)"
                return
            if self.pair_seconds and clock() + self.pair_seconds > deadline:
                for state in open_:
                    state.stop_reason, state.budget_cut = "time budget spent", True
                return
            r0 = clock()
            pairs = len(open_[0].block_starts)
            order = schedule.in_turn(pairs)
            readings = {side: self._one_run(open_, side, deadline) for side in order}
            self.pair_seconds = clock() - r0
            if readings["head"] is None:
                for state in open_:
                    state.verdict, state.stop_reason = "failed", "the head run failed"
                return
            if readings["base"] is None:
                if pairs == 0:
                    for state in open_:
                        state.verdict, state.stop_reason = "new", "cannot be run on base"
                        self._keep(state, None, readings["head"])
                    return
                for state in open_:
                    state.verdict, state.stop_reason = "failed", "the base run failed"
                return
            still = []
            for state in open_:
                if not self._keep(state, readings["base"], readings["head"]):
                    continue
                target = state_look(state, timing)
                if len(state.block_starts) >= target:
                    self._look(state)
                if state.verdict == "inconclusive" and not state.futile \
                        and state.look_index < len(timing.look_pairs):
                    still.append(state)
                elif state.verdict == "inconclusive" and not state.stop_reason:
                    state.stop_reason = f"still inconclusive after {timing.look_pairs[-1]} process pairs (max_rounds)"
            open_ = still

    def _keep(self, state: BenchState, base: dict | None, head: dict) -> bool:
        """Add one pair's values of ``state`` (``base`` None: head only, for a ``new`` benchmark);
        False (and ``failed``) when a side's run did not report it."""
        direction = state.case.get("direction") or "smaller"
        zero_ok = is_memory(state)
        h = costs(((head or {}).get(state.name) or {}).get("values") or [], direction, zero_ok)
        if not h:
            state.verdict, state.stop_reason = "failed", "the head run did not report it"
            state.sides["head"].error = f"{state.name}: the head run reported no value for it"
            return False
        if base is None:
            state.sides["head"].samples.extend(h)
            return True
        b = costs((base.get(state.name) or {}).get("values") or [], direction, zero_ok)
        if not b:
            state.verdict, state.stop_reason = ("new", "the base run does not report it") if not state.block_starts \
                else ("failed", "the base run did not report it")
            state.sides["head"].samples.extend(h)
            return False
        state.pair_rounds = 1
        state.start_pair(len(state.base))
        n = min(len(b), len(h))
        # each side's own repetitions; the estimate reads the pair's two sets as they are
        state.sides["base"].samples.extend(b[:n])
        state.sides["head"].samples.extend(h[:n])
        for side in state.sides.values():
            for values in (side.wall, side.cpu, side.switches, side.others_busy, side.steal):
                values.extend([None] * (len(side.samples) - len(values)))
        return True

    def _look(self, state: BenchState) -> None:
        """The planned look at ``state``: estimate over its pairs, verdict, futility."""
        timing, cfg = self.timing, self.timing.cfg
        if is_memory(state):
            state.look_index += 1
            memory = memory_of(state, cfg.memory_threshold, cfg.min_process_pairs)
            state.verdict = memory["verdict"] if memory else "inconclusive"
            if state.verdict != "inconclusive":
                state.stop_reason = f"decided at look {state.look_index} of {len(timing.looks)}"
            return
        state.estimate = estimate(state, timing.ci_level, cfg.process_noise, timing.eq_level)
        state.resolvable = schedule.resolvable_change(state.estimate.block_centers, timing.ci_level, cfg.process_noise)
        state.look_index += 1
        state.verdict = stats.decide(state.estimate, cfg.threshold, state.estimate.p_value < timing.look_alpha,
                                     cfg.min_process_pairs)
        if state.verdict != "inconclusive":
            state.stop_reason = f"decided at look {state.look_index} of {len(timing.looks)}"
            return
        if state.look_index < len(timing.look_pairs):
            projection = schedule.futility(state.estimate.block_centers, cfg.threshold, timing.look_alpha,
                                           cfg.process_noise, timing.look_pairs[-1])
            if projection.futile:
                state.futile = True
                state.stop_reason = (f"more runs cannot decide it: at {projection.pairs} pairs its interval "
                                     f"would still be ±{math.expm1(projection.half_width):.1%}")


def state_look(state: BenchState, timing: TimingPass) -> int | None:
    """The process pairs of ``state``'s next planned look (None when its looks are spent)."""
    return timing.look_pairs[state.look_index] if state.look_index < len(timing.look_pairs) else None


def blocks(state: BenchState) -> list[tuple[float, float, int]]:
    """The pairs' ``(center, se, n)`` of a self-measured benchmark (:func:`runner.stats.unpaired_block_summary`)."""
    bounds = state.block_starts + [len(state.base)]
    return [stats.unpaired_block_summary(state.base[a:b], state.head[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]


def estimate(state: BenchState, level: float, floor: float, eq_level: float | None = None) -> stats.BlockedEstimate:
    """The estimate over a self-measured benchmark's pairs (:func:`runner.stats.blocked_estimate`;
    ``eq_level``: the equivalence interval's coverage)."""
    return stats.blocked_estimate(blocks(state), level, floor, eq_level)


def entry(state: BenchState, ci_level: float, memory_threshold: float = 0.05, min_pairs: int = 2) -> dict:
    """The ``benchmarks[]`` entry of a self-measured benchmark: the timing pass's
    (:func:`runner.pipeline.timing.entries.benchmark_entry`) with each pair's own change from its
    medians, the values back in their unit (a bigger-is-better value un-reciprocated) and
    ``unit``/``direction``.

    A memory-valued benchmark (:func:`is_memory`) carries ``measure: "memory"``, its
    ``change.memory`` (:func:`memory_of`, against ``memory_threshold``) with ``change.ratio`` and
    its interval taken from it, and each side's ``memory`` record (:func:`runner.measures.memory_side`)."""
    out = benchmark_entry(state, ci_level)
    if is_memory(state):  # bytes may be 0: each pair's head/base as the memory verdict reads it
        ratios = [measures.memory_ratio(int(b), int(h)) for b, h in zip(*pair_values(state))]
    else:
        ratios = [math.exp(b[0]) for b in blocks(state)] if state.block_starts else []
    for pair, ratio in zip(results_mod.change_of(out)["pairs"], ratios):
        pair["ratio"], pair["used"] = round(ratio, 6), True
    if is_memory(state):
        _as_memory(out, state, memory_threshold, min_pairs)
    results_mod.update_change(out, rounds_per_pair=None)
    direction = state.case.get("direction") or "smaller"
    unit = state.case.get("unit") or "s"
    for side in ("base", "head"):
        own = out[side]
        if own is not None and direction == "bigger":
            values = [1.0 / v for v in own["samples"] if v > 0]
            out[side] = results_mod.side(values, error=own.get("error"))
    out["unit"] = unit
    if direction == "bigger":
        out["direction"] = "bigger"
    return out


def _as_memory(out: dict, state: BenchState, threshold: float, min_pairs: int) -> None:
    """Turn a memory-valued benchmark's entry ``out`` into a memory one (see :func:`entry`)."""
    memory = memory_of(state, threshold, min_pairs) if state.verdict in PAIRED else None
    if memory is not None:  # the memory verdict's record, and its ratio and interval as the change's
        results_mod.update_change(out, memory=memory, ratio=memory["ratio"],
                                  ci_low=memory["ci_low"], ci_high=memory["ci_high"],
                                  ci_level=memory["ci_level"], p_value=None)
    with_memory_sides(out, state.case)


def one_side_entry(state: BenchState) -> dict:
    """``perfgate run``'s ``benchmarks[]`` entry of a self-measured benchmark: head's values as
    reported (an error when there are none), no base, no change, its ``unit`` and ``direction``;
    a memory-valued one with its ``memory`` side (:func:`with_memory_sides`)."""
    own = state.sides["head"]
    out = results_mod.benchmark(state.name, state.case.get("file"), base=None,
                                head=results_mod.side(own.samples, error=None if own.samples
                                                      else own.error or "no value reported"),
                                change=None, family=state.case.get("family"),
                                params=state.case.get("params"), unit=state.case.get("unit") or "s",
                                direction=state.case.get("direction") or "smaller")
    return with_memory_sides(out, state.case) if is_memory(state) else out


def with_memory_sides(out: dict, case: dict) -> dict:
    """``out`` (a ``benchmarks[]`` entry of the memory-valued ``case``, :func:`is_memory`) with
    ``measure: "memory"`` and each measured side's ``memory`` record
    (:func:`runner.measures.memory_side` of its values, one per process): what the report's memory
    column and the history's memory series read."""
    out["measure"] = "memory"
    kind = str(case.get("memory_kind") or "value")
    for side in ("base", "head"):
        own = out.get(side)
        if own is not None and own.get("samples"):
            own["memory"] = measures.memory_side(measures.value_records(own["samples"], kind))
    return out
