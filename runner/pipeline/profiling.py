"""The profile pass after the timing (profiling perturbs time): which benchmarks are profiled, in
which order and how many passes each side gets (pure: :func:`profile_order`, :func:`pass_cost`,
:func:`passes_for`), then the passes themselves (:func:`profile_pass`: trace both sides, summarise,
diff, hint), and a compare's hints after its timing (:func:`hint_entries`)."""

from __future__ import annotations

import math
import time
from pathlib import Path

from ..errors import UserError
from ..hints.evidence import with_compile_hint
from ..protocol import Failure, ProfileRequest
from ..results import CHANGED, HINTED, PAIRED, change_of, verdict_of
from .timing.benchstate import BenchState, SideState, measures_itself, safe_filename

#: Profile passes per side for a benchmark that may get hints (changed or inconclusive).
PROFILE_PASSES = 3

#: Seconds a profile pass is expected to add beyond its calls (a fresh process, the trace written
#: and summarised), before one has been measured.
PROFILE_PASS_OVERHEAD_S = 1.0

#: Calls one profile pass records.
PROFILE_CALLS = 5

#: The order benchmarks are profiled in, by verdict: changes first, unchanged last.
_RANK = {"regression": 0, "improvement": 0, "inconclusive": 1, "unchanged": 2}


def profile_order(verdicts: list[str]) -> list[int]:
    """Indices of the benchmarks to profile, in order: changed ones first, then inconclusive, then
    unchanged (stable within each); failed and new ones are not profiled (nothing to diff)."""
    return sorted((i for i, v in enumerate(verdicts) if v in PAIRED), key=lambda i: _RANK.get(verdicts[i], 3))


def pass_cost(side: SideState, overhead: float = PROFILE_PASS_OVERHEAD_S) -> float:
    """Seconds one profile pass of one side is expected to take: its first call (or one warm call),
    :data:`PROFILE_CALLS` calls and ``overhead`` (its set-up takes no warm-up samples; the worker's
    profiler makes its own untimed calls first, runner.worker.profiling.WARMUP_CALLS)."""
    per_call = side.per_call or 0.0
    return (side.first_call_s or per_call) + PROFILE_CALLS * per_call + overhead


def passes_for(verdict: str, one_round_s: float, left_s: float) -> int:
    """Profile passes per side for a benchmark: :data:`PROFILE_PASSES` for one that may get hints
    (:data:`runner.results.HINTED`), else 1; fewer when they would not end within ``left_s``
    seconds (one round of both sides costs ``one_round_s``): 1 when one fits, else 0."""
    wanted = PROFILE_PASSES if verdict in HINTED else 1
    if wanted * one_round_s <= left_s:
        return wanted
    return 1 if one_round_s <= left_s else 0


def hint_entries(session, states: list[BenchState], entries: list[dict], out: Path,
                 telemetry_summary: dict, progress, deadline: float,
                 profile: bool) -> tuple[list[str], float]:
    """A compare's hints after its timing: with ``profile`` (the configuration's), the profile pass
    over the benchmarks perfgate timed (:func:`profile_pass`; ``entries`` begin with those of
    ``states``, in order), then every entry's compile hint
    (:func:`runner.hints.evidence.with_compile_hint`). Returns the benchmarks left unprofiled and
    the profile pass's seconds (0 without one)."""
    unprofiled: list[str] = []
    seconds = 0.0
    if profile:
        t0 = time.monotonic()
        profiled = [(s, e) for s, e in zip(states, entries) if not measures_itself(s)]
        unprofiled = profile_pass(session, [s for s, _ in profiled], [e for _, e in profiled], out,
                                  telemetry_summary, progress, deadline=deadline)
        seconds = time.monotonic() - t0
    for entry in entries:
        entry["hints"] = with_compile_hint(entry.get("hints"), change_of(entry))
    return unprofiled, seconds


def profile_pass(session, states: list[BenchState], entries: list[dict], out: Path,
                 telemetry_summary: dict, progress, deadline: float = math.inf) -> list[str]:
    """After timing: trace both sides of each benchmark, summarise, diff, hint (``session`` is the
    compare's :class:`runner.pipeline.timing.timing.TimingPass`; ``entries`` the results.json
    entries of ``states``, completed in place with ``profile``, ``hints`` and ``profile_errors``).

    A benchmark that may get hints is profiled :data:`PROFILE_PASSES` times per side, sides
    alternating, each pass in a fresh process; the pass with the median total time of each side is
    the one diffed and kept (``traces/<side>/<benchmark>.json.gz``), and the spread over the passes
    decides which differences a hint may cite (:mod:`runner.profile.noise`). An ``unchanged``
    benchmark gets one pass (its side-by-side table; it gets no hints). Budget: :func:`profile_order`
    and :func:`passes_for` before ``deadline`` (monotonic seconds).

    Returns:
        The names of the benchmarks left unprofiled for lack of budget.
    """
    from ..hints.evidence import hints_for

    order = profile_order([s.verdict for s in states])
    progress.phase(f"profiling {len(order)} benchmark(s)")
    session.budget_end = deadline  # a profile pass's set-up may run up to the profiling deadline
    overhead = PROFILE_PASS_OVERHEAD_S
    unprofiled: list[str] = []
    for i in order:
        state, entry = states[i], entries[i]
        one_round = pass_cost(state.sides["base"], overhead) + pass_cost(state.sides["head"], overhead)
        passes = passes_for(state.verdict, one_round, deadline - time.monotonic())
        if passes == 0:
            unprofiled.append(state.name)
            if verdict_of(entry) in CHANGED:
                entry["hints"] = hints_for(change_of(entry), None, None, telemetry_summary)
            continue
        summaries, overhead = _traces(session, state, entry, out, passes, overhead)
        _keep_and_hint(state, entry, summaries, out, telemetry_summary)
    return unprofiled


def _traces(session, state: BenchState, entry: dict, out: Path, passes: int,
            overhead: float) -> tuple[dict[str, list[tuple[Path, dict]]], float]:
    """``passes`` profile passes per side, sides alternating, each in fresh processes: each side's
    ``(trace path, summary)`` list and the pass overhead as measured (the next estimate uses it)."""
    from ..profile.kineto import load_trace
    from ..profile.summaries import summarize

    summaries: dict[str, list[tuple[Path, dict]]] = {"base": [], "head": []}
    for p in range(passes):
        for side in (("base", "head") if p % 2 == 0 else ("head", "base")):
            t0 = time.monotonic()
            trace_path = out / "traces" / side / f"{safe_filename(state.name)}.pass{p + 1}.json.gz"
            session.fresh_processes()
            ok = session.setup(state, side)
            reply = session.ask(side, ProfileRequest(str(trace_path), PROFILE_CALLS), _Done) if ok else None
            if not ok or isinstance(reply, Failure):
                entry.setdefault("profile_errors", {})[side] = (reply.error if isinstance(reply, Failure)
                                                                else None) or state.sides[side].error
                continue
            try:
                summaries[side].append((trace_path, summarize(load_trace(trace_path))))
            except UserError as exc:
                entry.setdefault("profile_errors", {})[side] = str(exc)
            spent = time.monotonic() - t0
            own = state.sides[side]
            overhead = max(0.1, spent - (own.first_call_s or 0.0) - PROFILE_CALLS * (own.per_call or 0.0))
    session.fresh_processes()
    return summaries, overhead


class _Done:
    """A reply read for its ``ok`` alone (a profile pass: the trace is the file it wrote)."""

    @classmethod
    def from_json(cls, data: dict) -> "_Done":
        return cls()


def _keep_and_hint(state: BenchState, entry: dict, summaries: dict[str, list[tuple[Path, dict]]], out: Path,
                   telemetry_summary: dict) -> None:
    """Keep each side's median pass (the others' traces removed), diff the sides into
    ``entry["profile"]`` and hint from it (with the passes' spread when there were several)."""
    from ..profile.diff import profile_for_results
    from ..hints.evidence import hints_for
    from ..profile.noise import median_pass, pass_spread

    kept = {}
    for side, done in summaries.items():
        if not done:
            continue
        keep = median_pass([summary for _, summary in done])
        final = out / "traces" / side / f"{safe_filename(state.name)}.json.gz"
        for i, (path, _) in enumerate(done):
            if i == keep:
                path.replace(final)
            else:
                path.unlink(missing_ok=True)
        kept[side] = done[keep][1]
    if len(kept) == 2:
        noise = pass_spread([s for _, s in summaries["base"]], [s for _, s in summaries["head"]])
        entry["profile"] = profile_for_results(kept["base"], kept["head"])
        entry["profile"]["traces"] = {side: str(Path("traces") / side / f"{safe_filename(state.name)}.json.gz")
                                      for side in ("base", "head")}
        entry["profile"]["passes"] = noise["passes"]
        entry["hints"] = hints_for(change_of(entry), kept["base"], kept["head"], telemetry_summary,
                                   noise=noise if min(noise["passes"].values()) > 1 else None)
    elif verdict_of(entry) in CHANGED:
        entry["hints"] = hints_for(change_of(entry), None, None, telemetry_summary)
