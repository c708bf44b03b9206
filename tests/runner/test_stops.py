"""Why a benchmark stops and with what verdict (runner.pipeline.timing.stops), the timing driver's
other decisions moved out of it (schedule.in_turn, renumbering, measured_share;
evidence.kept_rounds, gate, warmup_done, make_up), and ``perfgate run``'s pass over one side on
simulated workers."""

from __future__ import annotations

import math

import pytest

from runner.config import Config
from runner.pipeline.timing import evidence, schedule, stops
from runner.pipeline.timing.benchstate import BenchState, partition
from runner.pipeline.timing.entries import one_side_entry, skipped_apart
from runner.pipeline.timing.schedule import Projection
from runner.pipeline.timing.timing import TimingPass
from runner.stats import BlockedEstimate

from testkit.sim_workers import SideModel, SimClock, SimWorker


def test_the_first_set_up_stops_a_benchmark_head_cannot_set_up_or_its_suite_skips():
    assert stops.after_setup(True, None, False) is None
    assert stops.after_setup(False, "needs a GPU", False) == stops.Stop("needs a GPU", "skipped")
    assert stops.after_setup(False, None, False) == stops.Stop("head failed to set up", "failed")
    # a cut by the budget is no failure: the verdict stands (inconclusive), whatever head did
    assert stops.after_setup(False, None, True) == stops.BUDGET_IN_SETUP
    assert stops.BUDGET_IN_SETUP.verdict is None


@pytest.mark.parametrize("verdict, look, futile, reason", [
    ("regression", 1, False, "decided at look 1 of 5"),
    ("unchanged", 5, True, "decided at look 5 of 5"),
    ("inconclusive", 5, False, "still inconclusive after 32 process pairs (max_rounds)"),
    ("inconclusive", 2, True,
     "more pairs cannot decide it: at 32 pairs its interval would still be ±5.1%"),
    ("inconclusive", 2, False, None),
])
def test_a_look_decides_runs_out_or_finds_more_pairs_futile(verdict, look, futile, reason):
    stop = stops.after_look(verdict, look, 5, 32, Projection(futile, math.log(1.051), 32))
    assert (stop and stop.reason) == reason
    if verdict != "inconclusive":  # decided: no longer cut by the budget
        assert stop.budget_cut is False and stop.verdict is None
    else:
        assert stop is None or stop.futile is (look < 5)


def test_benchstate_carries_a_stop_out_and_keeps_what_it_does_not_set():
    state = BenchState(case={"name": "b"}, budget_cut=True, verdict="regression")
    state.stop(stops.Stop("decided at look 2 of 5", budget_cut=False))
    assert (state.verdict, state.budget_cut) == ("regression", False)
    assert state.stop_reason == "decided at look 2 of 5"
    state.stop(stops.Stop("x", futile=True))
    state.stop(stops.NEW_FAILED)
    assert state.futile and state.verdict == "failed" and state.budget_cut is False


def test_pairs_that_never_settle_stop_with_their_calls_and_seconds():
    moving = {"calls": {"base": 400, "head": 380}, "seconds": 1.25, "steady": False}
    assert stops.unsteady([moving, moving], 2) is None  # too few to give up
    stop = stops.unsteady([moving] * 3 + [{"calls": {}, "seconds": 0.5, "steady": True}], 4)
    assert stop.verdict is None
    assert stop.reason.startswith("its sides did not reach a steady state: in 3 of 4")
    assert "after 400 calls (1.2 s)" in stop.reason


def test_which_benchmarks_are_resumed_corrected_and_cut_short():
    assert stops.resumable("inconclusive", 2, 5, 3, False)
    assert not stops.resumable("inconclusive", 5, 5, 3, False)  # out of looks
    assert not stops.resumable("inconclusive", 2, 5, 0, False)  # no pair behind it
    assert not stops.resumable("inconclusive", 2, 5, 3, True)  # futile
    assert not stops.resumable("unchanged", 2, 5, 3, False)
    assert stops.corrected("regression", True) and not stops.corrected("regression", False)
    assert not stops.corrected("new", True) and not stops.corrected("failed", True)
    assert stops.cut_short("inconclusive", True) and not stops.cut_short("regression", True)


def test_reachable_pairs_are_the_last_looks_or_what_the_budget_holds():
    assert stops.reachable_pairs(4, 2.0, 10.0, 32) == 9
    assert stops.reachable_pairs(4, 2.0, 1000.0, 32) == 32
    assert stops.reachable_pairs(4, 0.0, 10.0, 32) == 32
    assert stops.reachable_pairs(4, 2.0, math.inf, 32) == 32
    assert stops.reachable_pairs(4, 2.0, -5.0, 32) == 4


def test_one_side_samples_and_runs():
    assert stops.run_samples(8) == 16 and stops.run_samples(40) == 40
    assert stops.another_sample(1, False) and stops.another_sample(5, True)
    assert not stops.another_sample(2, False)
    assert stops.another_run(1, 3, 16, False) and not stops.another_run(2, 3, 16, False)
    assert not stops.another_run(5, 16, 16, True) and not stops.another_run(16, 0, 16, True)
    outcomes = [stops.run_outcome(v) for v in ("inconclusive", "failed", "skipped")]
    assert outcomes == ["measured", "failed", "skipped"]


def test_the_sides_alternate_and_a_split_count_is_undone_once_after_the_first_pair():
    turns = [schedule.in_turn(n) for n in range(3)]
    assert turns == [("base", "head"), ("head", "base"), ("base", "head")]
    assert schedule.in_turn(1, ("head",)) == ("head",)
    same = [1e-3] * 16
    assert schedule.renumbering(False, 0, 1, same, same, (3, 1)) == 3
    assert schedule.renumbering(True, 0, 1, same, same, (3, 1)) is None  # shared from the start
    assert schedule.renumbering(False, 16, 1, same, same, (3, 1)) is None  # done before
    assert schedule.renumbering(False, 0, 2, same, same, (3, 1)) is None  # not after the first pair
    assert schedule.renumbering(False, 0, 1, same, same, (None, 1)) is None


def test_the_self_measured_share_of_the_budget_is_by_count():
    assert schedule.measured_share(110.0, 10.0, 1, 4) == 35.0
    assert schedule.measured_share(110.0, 10.0, 0, 0) == 10.0  # nothing measures itself: no share


def test_kept_rounds_leave_disturbed_rounds_out_unless_most_of_the_pair_was():
    assert evidence.kept_rounds(0, 8, [1], []) == ([0, 2, 3, 4, 5, 6, 7], 0, 0)
    # most of the pair disturbed: the CPU detector's word is set aside, NVML's stands
    assert evidence.kept_rounds(0, 8, [0, 1, 2, 3, 4, 5], [7]) == ([0, 1, 2, 3, 4, 5, 6], 6, 0)
    assert evidence.kept_rounds(0, 4, [0, 1, 2], [0, 1, 2]) == ([0, 1, 2, 3], 3, 3)
    # every round throttled: all kept, and counted as kept, not left out (GPU review #8)
    assert evidence.kept_rounds(0, 4, [], [0, 1, 2, 3]) == ([0, 1, 2, 3], 0, 4)


def _estimate(ci_low, ci_high, blocks, centers=()):
    return BlockedEstimate(ratio=math.sqrt(ci_low * ci_high), ci_low=ci_low, ci_high=ci_high,
                           p_value=0.001, ci_level=0.99, rounds=8 * blocks, blocks=blocks,
                           block_centers=tuple(centers))


def test_the_gate_holds_a_verdict_back_while_evidence_is_short_or_layouts_switch_it():
    est = _estimate(1.27, 1.78, 4)
    verdict, why = evidence.gate("regression", est, True, 0.85, 0.007, 0.02)
    assert verdict == "inconclusive" and "s of timed rounds" in why
    # a benchmark that measures itself has no timed rounds: never held back
    assert evidence.gate("regression", est, False, 0.85, 0.007, 0.02) == ("regression", None)
    assert evidence.gate("regression", None, True, 0.85, 0.007, 0.02) == ("regression", None)
    pyrup = [0.52, 0.53, 0.51, 0.55, 0.54, 0.52, 0.53, 0.97]
    modes = _estimate(0.5, 0.6, 8, [math.log(r) for r in pyrup])
    verdict, why = evidence.gate("improvement", modes, True, 10.0, 0.007, 0.02)
    assert verdict == "inconclusive" and "memory layouts" in why


def test_the_warm_up_ends_steady_moving_or_unjudged():
    steady, moving = evidence.Steadiness(True), evidence.Steadiness(False)
    assert evidence.warmup_done([steady, steady], [0, 0], 5, 6, 3, 0.5, False) == (True, True)
    # under the floor (the first pair's rounds)
    assert evidence.warmup_done([steady, steady], [0, 0], 5, 2, 3, 0.5, False) == (False, None)
    assert evidence.warmup_done([steady, moving], [0, 9], 5, 9, 3, 0.5, True) == (True, False)
    # steady a moment ago, tipped at the limit: not established, not moving
    assert evidence.warmup_done([steady, moving], [0, 2], 5, 9, 3, 0.5, True) == (True, None)


def test_the_side_behind_makes_up_its_calls_when_the_sides_are_alike():
    assert evidence.make_up({"base": 40, "head": 25}, [1e-3, 1.1e-3]) == ("head", 15)
    # too far apart for one count
    assert evidence.make_up({"base": 40, "head": 25}, [1e-3, 9e-3]) is None
    assert evidence.make_up({"base": 40, "head": 40}, [1e-3, 1e-3]) is None
    assert evidence.make_up({"head": 40}, [1e-3]) is None


def test_skipped_benchmarks_are_listed_apart_and_partition_keeps_order():
    states = [BenchState(case={"name": n, "file": "f.py", **extra}) for n, extra in
              (("a", {}), ("b", {"measures": "self"}), ("c", {}))]
    states[2].verdict, states[2].stop_reason = "skipped", "needs a GPU"
    kept, skipped = skipped_apart(states, [{"name": "z", "file": None, "reason": "listed"}])
    assert [s.name for s in kept] == ["a", "b"]
    assert skipped == [{"name": "z", "file": None, "reason": "listed"},
                       {"name": "c", "file": "f.py", "reason": "needs a GPU"}]
    timed, measured = partition(states)
    assert [s.name for s in timed] == ["a", "c"] and [s.name for s in measured] == ["b"]


def _one_side(models: dict, max_time: float = 30.0, **cfg):
    clock = SimClock()
    worker = SimWorker(clock, models)
    timing = TimingPass({"head": worker}, Config(max_time=max_time, **cfg), {"head": "/h"},
                        clock=clock)
    states = [BenchState(case={"name": name, "file": "bench_sim.py", "func": name})
              for name in models]
    timing.time_one_side(states, clock() + max_time, stops.run_samples(timing.cfg.min_rounds))
    return states, worker


def test_a_run_times_each_benchmark_on_its_one_side_warmed_up_as_a_compare_does():
    states, worker = _one_side({"fast": SideModel(1e-4, memory=4096), "slow": SideModel(0.05)})
    fast, slow = states
    assert len(fast.head) == 16 and fast.base == []  # max(min_rounds, 16) samples
    assert fast.warmups and fast.sides["head"].number > 1 and fast.open_sides == ()
    entry = one_side_entry(fast)
    assert entry["base"] is None and entry["change"] is None
    assert entry["head"]["ci_low"] <= entry["head"]["median"] <= entry["head"]["ci_high"]
    assert entry["head"]["median"] == pytest.approx(1e-4, rel=0.05)
    # measured after its samples, where its budget affords it
    assert entry["head"]["memory"]["peak_bytes"] == 4096
    # one process per benchmark
    assert [cmd for cmd, _ in worker.requests if cmd == "setup"] == ["setup", "setup"]
    assert len(slow.head) >= 2


def test_a_run_measures_every_benchmark_twice_however_short_its_budget():
    states, _ = _one_side({f"b{i}": SideModel(0.2) for i in range(3)}, max_time=0.5)
    assert all(len(s.head) == 2 and s.verdict == "inconclusive" for s in states)


def test_a_run_reports_a_benchmark_that_fails_to_set_up_with_its_error():
    states, _ = _one_side({"bad": SideModel(1e-3, fails_setup=True), "good": SideModel(1e-3)})
    bad, good = states
    assert bad.verdict == "failed" and bad.head == [] and stops.run_outcome(bad.verdict) == "failed"
    assert one_side_entry(bad)["head"]["error"] == "ValueError: cannot be set up"
    assert len(good.head) == 16
