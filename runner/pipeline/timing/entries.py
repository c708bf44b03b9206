"""results.json's ``benchmarks[]`` entry of a timed benchmark, from its finished
:class:`.benchstate.BenchState` (the estimate, every process pair, why it stopped, memory and
torch.compile base vs head)."""

from __future__ import annotations

import math

from ... import measures, results as results_mod, stats
from ...outputs.verdict import output_record
from ...results import PAIRED
from . import schedule
from .benchstate import BenchState, SideState


def skipped_apart(states: list[BenchState],
                  skipped: list[dict]) -> tuple[list[BenchState], list[dict]]:
    """``(the benchmarks that get an entry, settings.skipped)``: a benchmark its own suite skipped
    at set-up (verdict ``skipped``) is no result; it is listed apart, after ``skipped`` (those the
    listing skipped), as ``{name, file, reason}``."""
    apart = [{"name": s.name, "file": s.case.get("file"), "reason": s.stop_reason} for s in states
             if s.verdict == "skipped"]
    return [s for s in states if s.verdict != "skipped"], skipped + apart


def benchmark_entry(state: BenchState, ci_level: float, memory_threshold: float = 0.05,
                    min_pairs: int = 2) -> dict:
    """One ``benchmarks[]`` entry of results.json from a finished :class:`BenchState`: each side
    (:func:`side_entry`), the change (:func:`change_entry`) and, for a benchmark timed on both
    sides or whose pairs' outputs were asked for, base's output against head's
    (:func:`runner.outputs.verdict.output_record`)."""
    compared = state.outputs or state.verdict in PAIRED
    return results_mod.benchmark(state.name, state.case.get("file"),
                                 base=side_entry(state.sides["base"]),
                                 head=side_entry(state.sides["head"]),
                                 change=change_entry(state, ci_level, memory_threshold, min_pairs),
                                 family=state.case.get("family"), params=state.case.get("params"),
                                 output=output_record(state.outputs) if compared else None)


def one_side_entry(state: BenchState) -> dict:
    """``perfgate run``'s ``benchmarks[]`` entry of a benchmark timed on its one side: head
    (:func:`side_entry`), no base, no change."""
    return results_mod.benchmark(state.name, state.case.get("file"), base=None,
                                 head=side_entry(state.sides["head"]), change=None,
                                 family=state.case.get("family"), params=state.case.get("params"))


def change_entry(state: BenchState, ci_level: float, memory_threshold: float = 0.05,
                 min_pairs: int = 2) -> dict:
    """The ``change`` of a finished benchmark: the estimate, its process pairs and why it stopped.

    ``eq_low``/``eq_high``: the equivalence interval ``unchanged`` is tested with
    (:func:`runner.stats.decide`). ``pairs``: every process pair (:func:`pairs_entry`). Beside the
    estimate: ``rounds_per_pair``, the rounds of its latest process pairs (a slow benchmark the
    first look left undecided takes more from then on; ``pairs[].rounds`` has each pair's); ``pair_sd``, the standard deviation of the pairs' log-ratios
    (≈ a fraction: the noise the interval carries); ``resolvable``, the smallest change (fraction)
    this noise let the compare find (:func:`runner.pipeline.timing.schedule.resolvable_change`);
    ``disturbed_rounds``, the rounds left out because another task took the CPU (``disturbed_kept``
    the rounds the detector saw so but the estimate kept: most of their pair's); ``short_of_evidence``,
    why an ``inconclusive`` one's interval could not give its verdict yet
    (:func:`runner.pipeline.timing.evidence.short_of_evidence`); ``clock_rounds``,
    those left out because the GPU throttled or its SM clock moved during them, and
    ``clock_reasons`` how many for each reason (``throttled``, ``clock``); ``shared_number``,
    whether both sides took the same calls per sample; ``dropped_rounds``, the first pair's rounds
    dropped because the sides' calls per sample were re-chosen (:meth:`TimingPass.renumber`); ``futile`` and ``budget_cut``, why an
    undecided benchmark stopped. ``memory`` (:func:`runner.measures.memory_change`, the verdict
    against ``memory_threshold`` over at least ``min_pairs`` pairs) and ``compile``
    (:func:`runner.measures.compile_change`) compare what each side's processes measured after
    their timing; each side carries its own ``memory`` and ``compile`` records.
    """
    est = state.estimate
    sd = schedule.pair_sd(est.block_centers if est else ())
    reasons = list(state.clock_rounds.values())
    b_side, h_side = state.sides["base"], state.sides["head"]
    memory = compiled = None
    if state.verdict in PAIRED:
        memory = measures.memory_change(b_side.memory, h_side.memory, memory_threshold, min_pairs=min_pairs)
        compiled = measures.compile_change(b_side.compile, h_side.compile)
    change = results_mod.change(
        ratio=est.ratio if est else None, ci_low=est.ci_low if est else None, ci_high=est.ci_high if est else None,
        p_value=est.p_value if est else None, verdict=state.verdict, ci_level=ci_level if est else None,
        **({"eq_low": est.eq_low} if est is not None and est.eq_low is not None else {}),
        **({"eq_high": est.eq_high} if est is not None and est.eq_high is not None else {}),
        rounds=len(state.base), process_pairs=len(state.blocks()) if est else len(state.block_starts),
        rounds_per_pair=state.current_pair_rounds() or None, pairs=pairs_entry(state),
        between_process_sd=est.between_sd if est else None, pair_sd=None if sd is None else round(sd, 6),
        resolvable=round(state.resolvable, 6) if state.resolvable is not None and est else None,
        disturbed_rounds=len(state.disturbed) - state.disturbed_kept,
        clock_rounds=len(state.clock_rounds) - state.clock_kept,
        clock_reasons={r: reasons.count(r) for r in sorted(set(reasons))}, shared_number=state.shared_number,
        dropped_rounds=state.dropped_rounds, futile=state.futile, budget_cut=state.budget_cut,
        p_adjusted=state.p_adjusted, stop_reason=state.stop_reason, seconds=round(state.seconds, 3),
        timing_seconds=round(state.timing_seconds, 3),
        **({"memory": memory} if memory is not None else {}),
        **({"compile": compiled} if compiled is not None else {}))
    if state.disturbed_kept:
        change["disturbed_kept"] = state.disturbed_kept
    if state.clock_kept:
        change["clock_kept"] = state.clock_kept
    if state.verdict == "inconclusive" and state.short_of_evidence:
        change["short_of_evidence"] = state.short_of_evidence
    return change


def pairs_entry(state: BenchState) -> list[dict]:
    """``change.pairs``: every process pair ``{start, rounds, ratio, used, layout, warmup}``
    (``start`` is the index of its first round in the samples; ``used`` is false for a pair the
    budget cut short, or whose warm-up did not reach a steady state, which the estimate leaves
    out; ``layout`` the fork server it ran in, :mod:`runner.pipeline.machine.layouts`; ``warmup``
    its warm-up: rounds, calls a side, seconds, steady), so a reader can see a pair that
    disagrees."""
    used = set(state.blocks()) if state.pair_rounds else set()
    bounds = state.block_starts + [len(state.base)]
    pairs = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        ratio = None
        if b - a >= 2:
            ratio = round(math.exp(stats.block_summary(state.base[a:b], state.head[a:b])[0]), 6)
        pair = {"start": a, "rounds": b - a, "ratio": ratio, "used": (a, b) in used}
        if i < len(state.block_layouts):
            pair["layout"] = state.block_layouts[i]
        if i < len(state.warmups):
            pair["warmup"] = state.warmups[i]
        pairs.append(pair)
    return pairs


def side_entry(side: SideState) -> dict:
    """One side's record (:func:`runner.results.side`): its samples, what was measured beside."""
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
