"""Why a benchmark of the timing pass stops, and with what verdict (pure).

The set-up's outcome (:func:`after_setup`: skipped, failed, or on to the rounds; ``new`` when
only base failed), a side that failed, the budget, a look's outcome (:func:`after_look`:
decided, futile, out of looks), pairs that never settle (:func:`unsteady`); which benchmarks a
second pass resumes (:func:`resumable`) and Benjamini–Hochberg covers (:func:`corrected`); and
the samples of a benchmark timed on one side (a benchmark new on head, ``perfgate run``'s).
:mod:`.timing` carries them out (:meth:`.benchstate.BenchState.stop`); the estimate and the
verdicts themselves are :mod:`runner.stats`'s, the schedule's numbers :mod:`.schedule`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ...results import PAIRED
from . import evidence
from .schedule import Projection


@dataclass(frozen=True)
class Stop:
    """Why a benchmark stops: ``reason`` (results.json's ``change.stop_reason``), the ``verdict``
    it ends with (None: the one it has stands), whether the budget cut it short (``budget_cut``;
    None: as it was) and whether more pairs were futile."""

    reason: str
    verdict: str | None = None
    budget_cut: bool | None = None
    futile: bool = False


BUDGET_BEFORE_START = Stop("time budget spent before it started", budget_cut=True)
BUDGET_SPENT = Stop("time budget spent", budget_cut=True)
#: the set-up itself was cut short by the budget (which set ``budget_cut`` already)
BUDGET_IN_SETUP = Stop("time budget spent while it was being set up")
BUDGET_IN_PAIR_SETUP = Stop("time budget spent while a process pair was being set up")
WARMUP_FAILED = Stop("failed during its warm-up", "failed")
PAIR_SETUP_FAILED = Stop("set-up or warm-up failed in a fresh process", "failed")
#: set up on head only: head's samples are kept for the record (and for the history)
NEW = Stop("cannot be set up on base", "new")
NEW_FAILED = Stop("cannot be set up on base", "failed")

#: ``perfgate run`` takes this many samples of each benchmark, or ``min_rounds`` when that is more.
RUN_SAMPLES = 16


def after_setup(head_ok: bool, head_skipped: str | None, budget_cut: bool) -> Stop | None:
    """The first process pair's set-up: a cut by the budget, a benchmark its own suite skips on
    head (listed apart, ``settings.skipped``: never ``failed``), one head cannot set up; None
    when the benchmark goes on (base may still have failed: :data:`NEW`)."""
    if budget_cut:
        return BUDGET_IN_SETUP
    if head_ok:
        return None
    if head_skipped:
        return Stop(head_skipped, "skipped")
    return Stop("head failed to set up", "failed")


def sampling_failed(side: str) -> Stop:
    """A side failed in a timed round (the round's other sample is dropped: pairs stay complete)."""
    return Stop(f"{side} failed while sampling", "failed")


def out_of_looks(pairs: int) -> Stop:
    return Stop(f"still inconclusive after {pairs} process pairs (max_rounds)")


def after_look(verdict: str, look: int, looks: int, last_pairs: int,
               projection: Projection) -> Stop | None:
    """The outcome of look ``look`` (1-based) of ``looks``: decided (no longer cut by the budget,
    whatever cut it before), out of looks (``last_pairs`` the last look's pairs), futile by
    ``projection`` (:func:`runner.pipeline.timing.schedule.futility`); None when the next look may
    decide."""
    if verdict != "inconclusive":
        return Stop(f"decided at look {look} of {looks}", budget_cut=False)
    if look >= looks:
        return out_of_looks(last_pairs)
    if projection.futile:
        return Stop(f"more pairs cannot decide it: at {projection.pairs} pairs its interval would "
                    f"still be ±{math.expm1(projection.half_width):.1%}", futile=True)
    return None


def unsteady(warmups: Sequence[dict], pairs: int) -> Stop | None:
    """The stop of a benchmark whose process pairs do not warm up to a steady state
    (:func:`runner.pipeline.timing.evidence.never_steady`: more of them only spend budget), or None.

    ``warmups``: each pair's warm-up record (``{rounds, calls, seconds, steady}``); ``pairs``:
    the process pairs started."""
    moving = [w for w in warmups if w.get("steady") is False]
    if not evidence.never_steady(len(moving), pairs):
        return None
    calls = max(max(w["calls"].values()) for w in moving)
    seconds = max(w["seconds"] for w in moving)
    return Stop(f"its sides did not reach a steady state: in {len(moving)} of {len(warmups)} "
                f"process pairs the warm-up's last samples still moved after {calls} calls "
                f"({seconds:.1f} s), so those pairs give no verdict")


def resumable(verdict: str, look: int, looks: int, pairs: int, futile: bool) -> bool:
    """Whether the second pass takes more looks at a benchmark: inconclusive after
    Benjamini–Hochberg across the run, looks left, a process pair behind it, not futile."""
    return verdict == "inconclusive" and look < looks and pairs > 0 and not futile


def corrected(verdict: str, estimated: bool) -> bool:
    """Whether Benjamini–Hochberg across the run decides this benchmark's final verdict: a paired
    verdict (:data:`runner.results.PAIRED`) with an estimate behind it."""
    return estimated and verdict in PAIRED


def cut_short(verdict: str, budget_cut: bool) -> bool:
    """Whether the budget left the benchmark without a verdict (``settings.budget.cut_short``)."""
    return budget_cut and verdict == "inconclusive"


def reachable_pairs(done: int, pair_seconds: float, seconds_left: float, most: int) -> int:
    """The most process pairs a benchmark could still reach: ``most`` (the last planned look's),
    or fewer when ``seconds_left`` of the budget (all of it, as if it were this benchmark's alone)
    holds fewer pairs of ``pair_seconds`` beyond the ``done`` ones (``most`` when either is
    unknown)."""
    if pair_seconds <= 0 or not math.isfinite(seconds_left):
        return most
    return min(most, done + int(max(0.0, seconds_left) // pair_seconds))


def run_samples(min_rounds: int) -> int:
    """The samples ``perfgate run`` takes of a benchmark: ``min_rounds`` or :data:`RUN_SAMPLES`,
    whichever is more."""
    return max(min_rounds, RUN_SAMPLES)


def another_sample(taken: int, fits: bool) -> bool:
    """Whether a benchmark timed on one side (new on head, or ``perfgate run``'s) takes another
    sample: two whatever the budget, then while the next one ``fits`` before its deadline."""
    return taken < 2 or fits


def another_run(runs: int, fewest: int, target: int, fits: bool) -> bool:
    """Whether ``perfgate run`` runs a self-measured group once more: until each of its benchmarks
    has ``target`` values (``fewest``: the fewest one has) or ``target`` runs, two runs whatever
    the budget, then while the next run ``fits`` before its deadline."""
    return runs < target and fewest < target and (runs < 2 or fits)


def run_outcome(verdict: str) -> str:
    """What ``perfgate run``'s progress says of a benchmark: failed, skipped or measured."""
    return verdict if verdict in ("failed", "skipped") else "measured"
