"""The timing pass's decisions at every magnitude and duration, within the budget, on simulated
workers (testkit/sim_workers.py: the worker protocol's answers from a model, a simulated
clock), so each case runs in milliseconds with the truth known. The real workers are exercised by
test_compare_pipeline.py and evaluation/sensitivity.py."""

from __future__ import annotations

import math

import pytest

from runner.config import Config
from runner.pipeline.timing import schedule
from runner.pipeline.timing.entries import benchmark_entry
from testkit.sim_workers import SideModel, SimTelemetry, sim_pass


def _run(models, max_time=60.0, seed=0, threads=1, **cfg):
    session, states, clock, workers = sim_pass(models, Config(max_time=max_time, **cfg), seed=seed, threads=threads)
    start = clock()
    session.time_all(states, end=start + max_time)
    return session, states, clock() - start, workers


@pytest.mark.parametrize("base_s, factor", [
    (117e-6, 800.0),   # the real report: a mask over the whole buffer on every step (117 µs → 94 ms)
    (25e-6, 1000.0), (2e-3, 1000.0), (1e-6, 1000.0),
    (25e-6, 10.0), (2e-3, 10.0), (1e-3, 100.0),
    (2e-3, 1 / 1000), (25e-6, 1 / 10), (1e-3, 1 / 100),
])
def test_a_change_of_ten_times_or_more_is_decided_at_the_first_look_with_a_finite_interval(base_s, factor):
    session, (state,), wall, _ = _run({"b": (SideModel(base_s), SideModel(base_s * factor))})
    entry = benchmark_entry(state, session.ci_level)
    change = entry["change"]
    assert change["verdict"] == ("regression" if factor > 1 else "improvement")
    assert math.isfinite(change["ci_low"]) and math.isfinite(change["ci_high"])
    assert change["ci_low"] <= factor <= change["ci_high"]
    assert change["stop_reason"] == "decided at look 1 of 5"
    # within 10 s of timing, set-up and the memory measure included, unless one call of the slow
    # side lasts 2 s (then its rounds alone last that long)
    assert state.seconds <= (10.0 if base_s * max(factor, 1) < 1.0 else 24.0)
    # ... and within 10 s of timing alone (the rounds' samples) in every case
    assert 0 < change["timing_seconds"] <= min(10.0, change["seconds"])
    # each side's samples last between min_sample_time and a few times it, or one call
    for side in ("base", "head"):
        per_call = base_s * (factor if side == "head" else 1.0)
        sample = state.sides[side].number * per_call
        assert sample >= 0.9 * session.min_sample_time or state.sides[side].number == 1
        assert sample <= 10 * session.min_sample_time or state.sides[side].number == 1


@pytest.mark.parametrize("factor, shared", [(1.0, True), (1.02, True), (3.0, True), (1 / 3, True),
                                            (6.0, False), (1 / 6, False), (800.0, False)])
def test_calls_per_sample_are_shared_within_four_times_and_each_sides_own_beyond(factor, shared):
    _, (state,), _, _ = _run({"b": (SideModel(1e-4), SideModel(1e-4 * factor))})
    assert state.shared_number is shared
    numbers = state.sides["base"].number, state.sides["head"].number
    assert (numbers[0] == numbers[1]) is shared or factor == 1.0


def test_an_identical_benchmark_is_unchanged_and_a_two_percent_change_is_a_regression():
    for factor, verdict in ((1.0, "unchanged"), (1.05, "regression"), (1 / 1.05, "improvement")):
        _, (state,), _, _ = _run({"b": (SideModel(1e-4), SideModel(1e-4 * factor))}, threshold=0.02)
        assert state.verdict == verdict, (factor, state.stop_reason)


@pytest.mark.parametrize("per_call", [1e-6, 1e-3, 0.1, 1.0, 2.0])
def test_every_duration_fits_the_budget_and_gets_a_verdict_for_identical_code(per_call):
    models = {f"b{i}": (SideModel(per_call, first_call=1.0), SideModel(per_call, first_call=1.0)) for i in range(3)}
    session, states, wall, _ = _run(models, max_time=120.0)
    assert wall <= 120.0 * 1.1
    for state in states:
        # slow: fewer, longer rounds up to the first look; cheap (2 ms samples): more of them
        first = {1e-6: 32, 1e-3: 32, 0.1: 8, 1.0: 2, 2.0: 2}[per_call]
        assert state.block_rounds[:2] == [first, first]
        # undecided at the first look, a slow benchmark's later pairs amortise their set-up (1 s
        # first calls) over more rounds, up to LONG_PAIR_SECONDS; cheap ones keep theirs
        later = set(state.block_rounds[2:])
        if per_call < 0.05:
            assert later <= {first}
        elif per_call == 2.0:
            assert later <= {2}  # 4 s rounds: two fill LONG_PAIR_SECONDS already
        elif len(state.block_rounds) > 2:
            assert min(later) > first
            assert max(later) * per_call * 2 <= schedule.LONG_PAIR_SECONDS * 1.1
        assert state.verdict in ("unchanged", "inconclusive")
    if per_call <= 0.1:
        assert all(s.verdict == "unchanged" for s in states)


@pytest.mark.parametrize("max_time", [5.0, 20.0, 60.0])
def test_the_budget_is_kept_however_slow_the_benchmarks(max_time):
    models = {"fast": (SideModel(1e-5), SideModel(1e-5)),
              "slow": (SideModel(0.8, first_call=1.5), SideModel(0.8 * 1.01, first_call=1.5)),
              "huge": (SideModel(1e-4), SideModel(0.3))}
    _, states, wall, _ = _run(models, max_time=max_time)
    assert wall <= max_time * 1.1
    cut = [s for s in states if s.budget_cut]
    assert all(s.verdict == "inconclusive" and s.stop_reason.startswith("time budget spent") for s in cut)
    if max_time >= 60:  # the fast and the huge one decided; only the slow 1 % change is cut short
        assert [s.verdict for s in states] == ["unchanged", "inconclusive", "regression"]
        assert [s.name for s in cut] == ["slow"]


def test_noise_no_pair_count_can_beat_ends_the_benchmark_early_and_says_what_it_could_resolve():
    noisy = SideModel(1e-4, process_sd=0.06)
    session, (state,), wall, _ = _run({"b": (noisy, SideModel(1e-4, process_sd=0.06))}, max_time=600.0)
    entry = benchmark_entry(state, session.ci_level)
    assert state.verdict == "inconclusive" and state.futile
    assert len(state.blocks()) < session.look_pairs[-1]
    assert "more pairs cannot decide it" in state.stop_reason
    assert entry["change"]["resolvable"] > session.cfg.threshold


def test_futility_keeps_going_while_a_verdict_is_still_reachable():
    quiet = schedule.futility([0.001, -0.002, 0.0015, 0.0], 0.02, 0.01, 0.003, 32)
    assert not quiet.futile
    loud = schedule.futility([0.08, -0.05, 0.02, -0.07, 0.06, -0.01, 0.03, -0.04], 0.02, 0.01, 0.003, 32)
    assert loud.futile and loud.half_width > math.log1p(0.02)
    # a large change is reachable however noisy: never futile
    assert not schedule.futility([0.9, 1.1, 0.8, 1.2], 0.02, 0.01, 0.003, 32).futile
    # with the budget for no more pairs there is nothing to project
    assert not schedule.futility([0.08, -0.05, 0.02], 0.02, 0.01, 0.003, 3).futile


def test_disturbed_rounds_are_left_out_of_the_estimate():
    # a head whose samples often lose a third of their wall time to another task: left in, they
    # would read as a regression of identical code
    disturbed = SideModel(1e-4, disturbed=0.3, steal=0.3)
    session, (state,), _, _ = _run({"b": (SideModel(1e-4), disturbed)}, seed=3)
    assert state.disturbed
    assert state.verdict != "regression"
    session, (state,), _, _ = _run({"b": (SideModel(1e-4), disturbed)}, seed=3, threads=None)
    assert not state.disturbed  # not judged without a single-threaded CPU benchmark


@pytest.mark.parametrize("reasons", [True, False])
def test_rounds_the_gpu_throttled_are_left_out_of_the_estimate(reasons):
    """Identical code, head's samples throttled 30 % of the time (30 % slower then): with NVML's
    word on which rounds were held down — a reason bit in a sample, or only the power violation
    counter moving — those rounds go, and the verdict is not a false regression."""
    models = {"b": (SideModel(1e-3, sample_sd=0.002), SideModel(1e-3, sample_sd=0.002, throttled=0.3))}
    for seed in range(5, 11):  # a pair with more than half its rounds throttled keeps only the others
        session, states, clock, _ = sim_pass(models, Config(max_time=60.0), seed=seed, threads=None,
                                             telemetry=SimTelemetry(reasons=reasons))
        session.time_all(states, end=clock() + 60.0)
        (state,) = states
        entry = benchmark_entry(state, session.ci_level)["change"]
        assert entry["clock_rounds"] > 0 and sum(entry["clock_reasons"].values()) == entry["clock_rounds"]
        assert entry["clock_reasons"]["throttled"] >= 0.9 * entry["clock_rounds"]  # a few read as a clock move
        assert state.verdict == "unchanged", (seed, state.stop_reason)
    blind, blind_states, blind_clock, _ = sim_pass(models, Config(max_time=60.0), seed=5, threads=None)
    blind.time_all(blind_states, end=blind_clock() + 60.0)
    assert blind_states[0].verdict == "regression" and not blind_states[0].clock_rounds  # what it would say


def test_rounds_the_gpu_throttled_but_the_estimate_kept_are_not_called_left_out():
    # GPU review #8: a GEMM under a lock above what the GPU sustains had every round flagged; the
    # pairs kept them all (too few others), and the report said "N of N rounds left out"
    models = {"b": (SideModel(1e-3, throttled=1.0), SideModel(1e-3, throttled=1.0))}
    session, states, clock, _ = sim_pass(models, Config(max_time=30.0), seed=1, threads=None,
                                         telemetry=SimTelemetry())
    session.time_all(states, end=clock() + 30.0)
    entry = benchmark_entry(states[0], session.ci_level)["change"]
    assert (entry["clock_rounds"] == 0
            and entry["clock_kept"] == sum(p["rounds"] for p in entry["pairs"] if p["used"]))


def test_disturbed_rounds_need_less_cpu_than_wall_time_and_a_switch():
    quiet = {"wall_s": 0.02, "cpu_s": 0.0199, "switches": 0}
    switched_but_on_cpu = {"wall_s": 0.02, "cpu_s": 0.0199, "switches": 2}
    lost = {"wall_s": 0.02, "cpu_s": 0.015, "switches": 2}
    waited_without_switch = {"wall_s": 0.02, "cpu_s": 0.015, "switches": 0}
    assert schedule.disturbed_rounds([quiet, quiet, quiet, quiet], [quiet, switched_but_on_cpu, lost, waited_without_switch], 1) == [2]
    assert schedule.disturbed_rounds([lost], [quiet], 2) == []


def test_a_benchmark_new_on_head_is_sampled_within_its_share():
    models = {"b": (SideModel(1.0, fails_setup=True), SideModel(1.0, first_call=1.0))}
    _, (state,), wall, _ = _run(models, max_time=10.0)
    assert state.verdict == "new" and 2 <= len(state.head) and wall <= 11.0


def test_rounds_per_pair():
    assert schedule.rounds_per_pair(0.0045, 8) == 32 and schedule.rounds_per_pair(0.001, 8) == 64
    assert schedule.rounds_per_pair(0.05, 8) == 8
    assert schedule.rounds_per_pair(0.5, 8) == 4
    assert schedule.rounds_per_pair(2.0, 8) == 2


def test_later_pairs_of_a_slow_benchmark_last_four_times_their_set_up_within_bounds():
    # ~144 ms per call on this VM: 0.29 s rounds, 1.15 s of set-up per pair -> 16 rounds (4.6 s)
    assert schedule.later_pair_rounds(6, 0.29, 1.15, 8) == 16
    # ~1 s per call: 2 s rounds, 2.2 s of set-up -> 5 wanted, 4 fit LONG_PAIR_SECONDS
    assert schedule.later_pair_rounds(2, 2.0, 2.2, 8) == 4
    # never beyond MAX_PAIR_ROUNDS_FACTOR x pair_rounds, never fewer than before
    assert schedule.later_pair_rounds(8, 0.06, 10.0, 8) == 64
    assert schedule.later_pair_rounds(8, 0.29, 0.1, 8) == 8
    # cheap rounds, or an unknown set-up: unchanged
    assert schedule.later_pair_rounds(32, 0.004, 0.2, 8) == 32
    assert schedule.later_pair_rounds(8, 0.29, 0.0, 8) == 8
    # a large change (beyond 5 x the ±2 % band) lacks pairs, not rounds: unchanged
    assert schedule.later_pair_rounds(2, 1.1, 1.4, 8, 9.6, 0.02) == 2
    assert schedule.later_pair_rounds(2, 1.1, 1.4, 8, 0.1, 0.02) == 2
    assert schedule.later_pair_rounds(2, 1.1, 1.4, 8, 1.12, 0.02) == 2
    assert schedule.later_pair_rounds(2, 1.1, 1.4, 8, 1.09, 0.02) == 6
    assert schedule.later_pair_rounds(2, 1.1, 1.4, 8, 1 / 1.09, 0.02) == 6


def test_a_pair_counts_when_it_completed_the_rounds_it_was_planned_with():
    from runner.pipeline.timing.benchstate import BenchState

    state = BenchState({"name": "b"})
    state.sides["base"].samples[:] = state.sides["head"].samples[:] = [1.0] * 30
    state.pair_rounds = 6
    state.start_pair(0)
    state.start_pair(6)
    state.pair_rounds = 16
    state.start_pair(12)   # 12..30: 18 rounds of 16, complete
    assert state.current_pair_rounds() == 16
    assert state.blocks() == [(0, 6), (6, 12), (12, 30)]
    state.sides["base"].samples[:] = state.sides["head"].samples[:] = [1.0] * 20
    assert state.blocks() == [(0, 6), (6, 12)]   # the third has 8 of its 16: left out
    assert state.blocks(4) == [(0, 6), (6, 12), (12, 20)]
    # the rule reads a typical round, not one disturbed round
    state.round_seconds = 0.3
    assert state.typical_round_seconds() == 0.3
    state.windows[:] = [(0.0, 0.29), (1.0, 1.3), (2.0, 4.0)]
    assert state.typical_round_seconds() == pytest.approx(0.3)


def test_a_slow_change_decided_at_the_first_look_keeps_its_short_pairs_and_a_small_one_gets_longer_ones():
    big = SideModel(0.1), SideModel(1.0)
    _, (state,), _, _ = _run({"b": big}, max_time=120.0)
    assert state.verdict == "regression" and state.stop_reason == "decided at look 1 of 5"
    assert len(set(state.block_rounds)) == 1
    # noisy enough that two pairs cannot decide it: the next look comes after two more short pairs
    noisy = SideModel(0.1, process_sd=0.1), SideModel(1.0, process_sd=0.1)
    _, (state,), _, _ = _run({"b": noisy}, max_time=120.0, seed=1)
    assert state.verdict == "regression" and state.stop_reason == "decided at look 2 of 5"
    assert state.block_rounds == [2, 2, 2, 2] and state.timing_seconds <= 10.0
    small = SideModel(0.1, sample_sd=0.12), SideModel(0.1, sample_sd=0.12)
    session, (state,), _, _ = _run({"b": small}, max_time=300.0)
    assert len(state.block_rounds) > 2 and state.block_rounds[2] > state.block_rounds[0]
    # results.json: each pair's own rounds, and rounds_per_pair a count some pair ran
    change = benchmark_entry(state, session.ci_level)["change"]
    assert [p["rounds"] for p in change["pairs"] if p["used"]] == state.block_rounds[:len(state.blocks())]
    assert change["rounds_per_pair"] == state.block_rounds[-1]


def test_the_budget_split_keeps_time_for_profiles_and_the_end():
    b = schedule.split_budget(start=0.0, max_time=100.0, now=10.0, profile=True)
    assert b.end == 100.0 and b.profile_end == 97.0 and b.timing_end == pytest.approx(10 + 87 * 0.85)
    b = schedule.split_budget(start=0.0, max_time=10.0, now=2.0, profile=False)
    assert b.timing_end == pytest.approx(9.5)


def test_resolvable_change_shrinks_with_pairs_and_grows_with_noise():
    few = schedule.resolvable_change([0.01, -0.01, 0.0], 0.99, 0.003)
    many = schedule.resolvable_change([0.01, -0.01, 0.0] * 6, 0.99, 0.003)
    noisy = schedule.resolvable_change([0.05, -0.05, 0.0], 0.99, 0.003)
    assert many < few < noisy
    assert schedule.resolvable_change([0.01], 0.99, 0.003) is None


def test_the_memory_measure_keeps_to_a_few_pairs_and_to_the_budget():
    # an identical benchmark that runs to many process pairs: memory in the first MEMORY_PAIRS only
    from runner import measures

    session, (state,), _, workers = _run({"b": (SideModel(1e-4, process_sd=0.02), SideModel(1e-4, process_sd=0.02))})
    assert len(state.block_starts) > measures.MEMORY_PAIRS
    for side in ("base", "head"):
        assert workers[side].measures_taken[:measures.MEMORY_PAIRS] == [True] * measures.MEMORY_PAIRS
        assert not any(workers[side].measures_taken[measures.MEMORY_PAIRS:])
    # a 2 s call, whose traced memory measure (~40 s) would dwarf its timing: not measured, and
    # the records stay paired (None on both sides)
    session, (state,), _, workers = _run({"b": (SideModel(2e-3), SideModel(2.0))})
    assert workers["head"].measures_taken and not any(workers["head"].measures_taken + workers["base"].measures_taken)
    assert len(state.sides["base"].memory) == len(state.sides["head"].memory)
    entry = benchmark_entry(state, session.ci_level)
    assert entry["change"]["verdict"] == "regression" and "memory" not in entry["change"]
    assert entry["head"]["measure_error"].startswith("memory not measured: measuring one call (~")
    assert "10 % of the" in entry["head"]["measure_error"]
    from runner.report.measures import memory_cell

    assert memory_cell(entry) == "not measured"
    # with a large budget too (900 s, perfgate compare's default): the measure may not take longer
    # than the rounds, so a x1000 regression is still decided in seconds
    session, (state,), _, workers = _run({"b": (SideModel(2e-3), SideModel(2.4))}, max_time=900.0)
    assert not any(workers["head"].measures_taken + workers["base"].measures_taken)
    assert state.verdict == "regression" and state.seconds < 40.0
    assert "longer than the benchmark's timed rounds" in benchmark_entry(state, session.ci_level)["head"]["measure_error"]
    # a slow identical benchmark: its first pair's rounds are too short for the measure, later
    # pairs' are not; the first pair's "not measured" does not outlive the records
    session, (state,), _, workers = _run({"b": (SideModel(0.14, first_call=0.2, sample_sd=0.12, memory=4096),
                                                SideModel(0.14, first_call=0.2, sample_sd=0.12, memory=4096))},
                                     max_time=300.0, seed=1)
    taken = workers["base"].measures_taken
    assert taken[0] is False and any(taken)
    entry = benchmark_entry(state, session.ci_level)
    assert "measure_error" not in entry["base"] and "measure_error" not in entry["head"]
    assert entry["base"]["memory"]["peak_bytes"] is not None
    # ~1 s per call, identical: the measures (~20 calls a side) take at most what the rounds took,
    # counted over every pair and both sides
    session, (state,), _, workers = _run({"b": (SideModel(1.0, sample_sd=0.12, memory=4096),
                                                SideModel(1.0, sample_sd=0.12, memory=4096))}, max_time=600.0)
    assert any(workers["base"].measures_taken)
    assert 0 < state.memory_seconds <= sum(end - start for start, end in state.windows)


def test_shared_after_first_pair_undoes_a_split_only_when_the_rounds_put_the_sides_within_four_times():
    same = [1e-3] * 16
    # split on a disturbed warm-up, but the rounds show identical code: share the larger count
    assert schedule.shared_after_first_pair(same, [1.05e-3] * 16, (3, 1)) == 3
    assert schedule.shared_after_first_pair(same, [0.99e-3] * 16, (1, 3)) == 3
    # a real 6x change keeps its own counts; counts already equal, or too few rounds: nothing to do
    assert schedule.shared_after_first_pair(same, [6e-3] * 16, (3, 1)) is None
    assert schedule.shared_after_first_pair(same, same, (3, 3)) is None
    assert schedule.shared_after_first_pair([1e-3], [1e-3], (3, 1)) is None
    # the median judges, so a few disturbed rounds cannot keep a wrong split
    assert schedule.shared_after_first_pair(same, [1e-3] * 10 + [9e-3] * 6, (3, 1)) == 3


@pytest.mark.parametrize("seed", range(8))
def test_a_calibration_disturbed_on_one_side_does_not_turn_identical_code_into_a_change(seed):
    # The real false call (evaluation/RESULTS_conventions.md): on a loaded runner, one side's
    # warm-up read identical code as more than 4x slower, so the sides sampled with different calls
    # per sample (base 3, head 2), and another task's bursts, hitting the longer samples more often,
    # made it read -22 %. Before the first pair's rounds re-chose the counts, 8 of 20 seeds of this
    # model called identical code an improvement. Since the parent's warm-up (both sides alike, to
    # a steady state: ProcessPairs.warm_up) reads the per-call times the counts are chosen from,
    # the disturbed set-up no longer splits them: the first pair's rounds are kept.
    bursts = dict(burst_rate=300.0, burst_s=0.002)
    session, (state,), _, _ = _run({"b": (SideModel(1e-3, **bursts), SideModel(1e-3, setup_slowdown=6.0, **bursts))},
                                   seed=seed)
    entry = benchmark_entry(state, session.ci_level)
    assert state.verdict in ("unchanged", "inconclusive"), (state.verdict, entry["change"]["ratio"])
    assert state.shared_number is True
    assert state.sides["base"].number == state.sides["head"].number == 3
    assert entry["change"]["dropped_rounds"] == state.dropped_rounds == 0
    assert all(p["start"] >= 0 for p in entry["change"]["pairs"])
    # the set-up's calibration was 6x slower on head, and still both sides entered every pair's
    # rounds after the same number of calls, warmed up to a steady state
    assert all(w["steady"] and w["calls"]["base"] == w["calls"]["head"] for w in state.warmups)


def test_futility_projects_unchanged_with_the_one_sided_tests():
    """Identical code whose 99 % interval could never fit the band at the last look, but whose
    equivalence interval (two one-sided tests, runner.stats.decide) could: more pairs are not
    futile."""
    centers = [0.055 * x for x in (1, -1, 0.5, -0.5, 1.2, -1.2, 0.2, -0.2)]
    projection = schedule.futility(centers, 0.02, 0.01, 0.003, 32)
    assert projection.half_width > math.log1p(0.02)  # the two-sided half-width: never inside
    assert not projection.futile


def test_the_timing_pass_tests_unchanged_on_the_equivalence_interval():
    session, (state,), _, _ = _run({"b": (SideModel(1e-4), SideModel(1e-4))})
    assert session.eq_level == pytest.approx(1 - 2 * session.look_alpha)
    est = state.estimate
    assert est.eq_level == session.eq_level and est.ci_low < est.eq_low <= est.eq_high < est.ci_high
    change = benchmark_entry(state, session.ci_level)["change"]
    assert (change["eq_low"], change["eq_high"]) == (est.eq_low, est.eq_high)
    assert state.verdict == "unchanged"


def test_a_level_too_loose_for_one_sided_tests_falls_back_to_the_reported_interval():
    # alpha 0.6 over a single look: a one-sided test at 0.6 has no two-sided interval
    session, (state,), _, _ = _run({"b": (SideModel(1e-4), SideModel(1e-4))}, alpha=0.6, min_rounds=16,
                                   max_rounds=16)
    assert session.look_alpha >= 0.5 and session.eq_level is None
    assert state.estimate.eq_low is None and state.verdict in ("unchanged", "inconclusive")


@pytest.mark.parametrize("hang", ["setup", "sample"])
def test_a_hanging_benchmark_costs_its_own_share_and_every_other_one_is_measured(hang):
    # the configured timeout (300 s) is five times the budget: a hang must still end at its share
    hangs = (SideModel(1e-3, first_call=1e9) if hang == "setup"
             else SideModel(1e-3, sample_hang=1e9))
    models = {"bench_0_hangs": (SideModel(1e-3), hangs)}  # first: its share is 60 s / 5
    models.update({f"bench_{i}": (SideModel(1e-3), SideModel(1e-3)) for i in range(1, 5)})
    session, states, spent, _ = _run(models, max_time=60.0, timeout=300.0)
    by = {s.name: s for s in states}
    assert [s.name for s in states][0] == "bench_0_hangs"
    assert spent <= 60.0 + 1.0
    assert by["bench_0_hangs"].seconds <= 60.0 / 5 + 1.0
    assert by["bench_0_hangs"].verdict == "failed"
    assert "share of the time budget" in by["bench_0_hangs"].sides["head"].error
    assert all(by[f"bench_{i}"].verdict == "unchanged" for i in range(1, 5))


def test_a_suites_own_timeout_may_shorten_the_configurations_never_lengthen_it():
    # security review P8: asv's `timeout` in the head's files chose how long a sample may hang
    from types import SimpleNamespace

    from runner.pipeline.timing.pairs import ProcessPairs

    pairs = ProcessPairs({}, Config(timeout=60.0), {})
    assert pairs.limit(SimpleNamespace(case={"timeout": 3600.0}))[0] == 60.0
    assert pairs.limit(SimpleNamespace(case={"timeout": 5.0}))[0] == 5.0
