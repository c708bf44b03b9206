"""What the timing pass counts as evidence (runner.pipeline.timing.evidence): a warm-up's steady
state, the minimum evidence behind a verdict; and, in simulated compares, that both sides of every
pair enter their rounds after the same calls and that pairs which never settle give no verdict."""

import math

import pytest

from runner.pipeline.timing import evidence
from runner.pipeline.timing.entries import benchmark_entry
from testkit.sim_workers import SideModel

from .test_timing_pass import _run

#: A real kornia ``pyrdown`` (4x3x128x128, one call per sample) on this project's 2-CPU VM, ms per
#: call: its calls cycle 4.4 -> 4.0 -> 3.6 -> 2.2 ms in a steady process (issue 45's docs-only commit).
PYRDOWN_CYCLE_MS = [4.4, 4.81, 4.08, 3.69, 2.14, 4.38, 4.02, 3.44, 2.47, 4.36, 3.93, 3.62, 2.17, 4.6, 3.49]
#: ... and a process that switches from a 2.2 ms mode to a 4.5 ms one (kornia ``pyrup``, head)
PYRUP_SWITCH_MS = [2.25, 2.77, 2.24, 2.31, 2.68, 2.41, 2.3, 2.28, 2.19, 2.33, 4.49, 4.8, 5.19, 4.41, 4.66]


def test_a_steady_cycle_is_steady_and_a_mode_switch_is_not():
    assert evidence.steadiness([x / 1e3 for x in PYRDOWN_CYCLE_MS]).steady is True
    switch = evidence.steadiness([x / 1e3 for x in PYRUP_SWITCH_MS])
    assert switch.steady is False and switch.drift > math.log(1.5)
    # too few samples to judge two windows
    assert evidence.steadiness([1e-3] * 14).steady is None
    # a steady side on a noisy machine: its windows' medians differ by more than the tolerance at
    # random, but within what its spread explains
    noisy = [1e-3 * f for f in (1.0, 1.2, 0.9, 1.15, 0.95, 1.1, 0.92, 1.18, 1.05, 0.97, 1.12, 0.94, 1.02, 1.16, 0.9)]
    judged = evidence.steadiness(noisy)
    assert judged.steady is True and judged.allowed > evidence.WARMUP_TOLERANCE


def test_a_slowly_settling_side_is_not_steady_until_it_settles():
    settling = [1e-3 * (1 + 0.5 * math.exp(-k / 8)) for k in range(40)]
    first = next(k for k in range(15, 41) if evidence.steadiness(settling[:k]).steady)
    assert first > 20  # not after the first windows, while it still falls by several % a window
    assert evidence.steadiness(settling).steady


def test_the_warm_up_windows_and_limit():
    assert evidence.warmup_windows(0.004) == (evidence.WARMUP_WINDOW, evidence.WARMUP_WINDOWS)
    assert evidence.warmup_windows(0.1) == (evidence.SLOW_WARMUP_WINDOW, evidence.SLOW_WARMUP_WINDOWS)
    assert evidence.warmup_limit(1000.0) == evidence.WARMUP_MAX_SECONDS
    assert evidence.warmup_limit(10.0) == pytest.approx(10.0 * evidence.WARMUP_SHARE)
    assert evidence.warmup_limit(0.0) == evidence.WARMUP_MIN_SECONDS


def test_a_verdict_within_two_times_needs_pairs_and_timed_seconds():
    # issue 45's false call: 1.50x [1.27, 1.78] after 4 pairs and 0.85 s of timing (3.5 ms calls)
    why = evidence.short_of_evidence("regression", 1.27, 1.78, 4, 0.85, 0.007)
    assert why and "0.85 s of timed rounds" in why
    assert evidence.short_of_evidence("regression", 1.27, 1.78, 4, 1.2, 0.007) is None
    assert "2 process pair(s)" in evidence.short_of_evidence("improvement", 0.6, 0.8, 2, 5.0, 0.007)
    # unchanged needs the seconds, not the pairs (two pairs agreeing within ~0.1 % are evidence)
    assert evidence.short_of_evidence("unchanged", 0.99, 1.01, 2, 5.0, 0.007) is None
    assert evidence.short_of_evidence("unchanged", 0.99, 1.01, 2, 0.5, 0.007)
    # scaled to the call: a 44 ms training step's rounds (~90 ms) need ~2.9 s, a second-long one 8 s
    assert evidence.min_timed_seconds(0.09) == pytest.approx(2.88)
    assert evidence.min_timed_seconds(2.0) == evidence.MAX_DECIDE_SECONDS
    # a large change over its whole interval is decided at once
    assert evidence.short_of_evidence("regression", 700.0, 900.0, 2, 0.1, 0.2) is None
    assert evidence.short_of_evidence("inconclusive", 0.9, 1.2, 1, 0.0, 0.1) is None


def test_never_steady_stops_only_when_unsteady_pairs_dominate():
    assert not evidence.never_steady(2, 2)
    assert evidence.never_steady(3, 4)
    assert not evidence.never_steady(3, 6)


@pytest.mark.parametrize("seed", range(6))
def test_identical_code_with_a_long_warm_up_enters_every_pair_alike_and_gets_no_change(seed):
    # a process's first ~200 calls are up to 2x slower (allocator and caches settling); head's
    # calibration was disturbed (3x slower), so its set-up made other calls than base's
    slow_start = dict(cold_factor=1.0, cold_calls=60.0)
    session, (state,), _, _ = _run({"b": (SideModel(1e-3, **slow_start),
                                          SideModel(1e-3, setup_slowdown=3.0, **slow_start))}, seed=seed)
    assert state.verdict in ("unchanged", "inconclusive")
    assert state.warmups and all(w["steady"] for w in state.warmups)
    assert all(w["calls"]["base"] == w["calls"]["head"] for w in state.warmups)
    # every later pair warms up at least as long as the first needed
    assert all(w["rounds"] >= state.warmups[0]["rounds"] for w in state.warmups)
    pairs = benchmark_entry(state, session.ci_level)["change"]["pairs"]
    assert [p["warmup"] for p in pairs] == state.warmups


def test_pairs_that_never_settle_give_no_verdict_and_say_so():
    drifting = dict(drift=1e-2)  # every call 1 % slower than the last, for ever
    session, (state,), _, _ = _run({"b": (SideModel(1e-3, **drifting), SideModel(1e-3, **drifting))}, seed=1)
    assert state.verdict == "inconclusive"
    assert state.stop_reason.startswith("its sides did not reach a steady state")
    assert state.blocks() == []  # no unsteady pair weighs in
    entry = benchmark_entry(state, session.ci_level)
    assert all(p["used"] is False for p in entry["change"]["pairs"])


def test_a_change_some_memory_layouts_switch_off_is_no_verdict():
    # real replicates (8 layouts) of docs-only kornia commits, each a false verdict before
    pyrup = [0.529, 0.969, 0.511, 0.513, 0.546, 0.514, 0.510, 0.523]
    why = evidence.layout_modes([math.log(r) for r in pyrup], 0.02)
    assert why and why.startswith("in 1 of 8 memory layouts there was no change (0.969)")
    grayscale = [1.375, 0.985, 1.243, 1.232, 1.171, 1.243, 1.144, 1.189]
    assert evidence.layout_modes([math.log(r) for r in grayscale], 0.02)
    # a real change shows in every layout, however noisy
    real = [0.70, 0.74, 0.69, 0.72, 0.75, 0.71, 0.68, 0.73]
    assert evidence.layout_modes([math.log(r) for r in real], 0.02) is None
    small = [1.05, 1.07, 1.04, 1.06, 1.03, 1.055, 1.065, 1.045]
    assert evidence.layout_modes([math.log(r) for r in small], 0.02) is None
    assert evidence.layout_modes([0.0, -0.6, -0.6], 0.02) is None  # too few replicates to tell
