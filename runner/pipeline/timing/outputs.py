"""The parent's side of the output comparison (:mod:`runner.outputs.verdict` decides): before a
process pair's processes end, each side's benchmark is called untimed with every generator seeded
alike (the worker's ``output`` request, :mod:`runner.outputs.summary`) — base twice, for its
run-to-run spread, head once — and the pair's summaries are kept on the benchmark's state for
:func:`runner.outputs.verdict.output_record`. After the pair's samples, so the calls perturb
none."""

from __future__ import annotations

from ...outputs.summary import OUTPUT_SEED, OutputReply, OutputRequest
from ...outputs.verdict import output_due
from ...protocol import Failure
from .benchstate import BenchState

#: Calls a side makes: base two (its spread), head one.
CALLS = {"base": 2, "head": 1}


def ask_outputs(pairs, state: BenchState, deadline: float) -> None:
    """Ask both sides of ``state``'s open process pair (``pairs``, a
    :class:`.pairs.ProcessPairs`) for their outputs, when both are open, the benchmark did not
    fail and :func:`runner.outputs.verdict.output_due` finds them due before ``deadline``; append
    ``(base calls, head calls)`` to ``state.outputs``, or the text of why they could not be had."""
    if state.verdict == "failed" or sorted(state.open_sides) != ["base", "head"]:
        return
    per_call = max(state.sides[side].per_call or 0.0 for side in CALLS)
    left = min(deadline, pairs.budget_end) - pairs.clock()
    if not output_due(per_call, left, len(state.outputs)):
        return
    seed = OUTPUT_SEED + len(state.outputs)  # the pair's own seed: a cached output shows
    got = {}
    for side, calls in CALLS.items():
        reply = pairs.ask_about(state, side, OutputRequest(seed, calls), OutputReply)
        if isinstance(reply, Failure):
            state.outputs.append(f"{side}: {reply.error}")
            return
        got[side] = list(reply.summaries)
    state.outputs.append((got["base"], got["head"]))
