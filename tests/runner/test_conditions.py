"""The conditions both workers run under: CPU plan, allocator, environment (pure parts)."""

from __future__ import annotations

import pytest

from runner.pipeline.machine import conditions
from runner.environment import ASLR_LEFT_ON


def test_big_machine_keeps_the_default_threads_and_leaves_a_cpu_to_the_parent():
    plan = conditions.plan_cpus("auto", 0, list(range(16)), 8)
    assert plan.cpus == list(range(1, 16)) and plan.threads == 8 and not plan.reduced
    assert "CPU 0 left to perfgate" in plan.note


def test_small_machine_runs_reduced_and_says_so():
    """The real case: 2 CPUs, torch's default of 2 threads; pinning to 'all but the first' silently
    measured a 1-thread world (1.08x where the user's 2-thread world saw 2.6x)."""
    plan = conditions.plan_cpus("auto", 0, [0, 1], 2)
    assert plan.cpus == [1] and plan.threads == 1 and plan.reduced
    assert "too few to keep torch's default of 2 threads" in plan.note and 'cpus = "all"' in plan.note


def test_all_keeps_the_default_threading_unpinned():
    plan = conditions.plan_cpus("all", 0, [0, 1], 2)
    assert plan.cpus == [] and plan.threads is None and not plan.reduced


def test_explicit_cpus_and_threads():
    plan = conditions.plan_cpus("2,3", 0, [0, 1, 2, 3], 4)
    assert plan.cpus == [2, 3] and plan.threads == 2 and plan.reduced
    assert conditions.plan_cpus("auto", 1, [0, 1, 2, 3], 4).threads == 1
    with pytest.raises(ValueError, match="not available"):
        conditions.plan_cpus("7", 0, [0, 1], 2)
    with pytest.raises(ValueError, match="list of CPU ids"):
        conditions.plan_cpus("two", 0, [0, 1], 2)


def test_exported_thread_count_is_the_default_and_perfgate_cpus_overrides(monkeypatch):
    plan = conditions.cpu_plan({"OMP_NUM_THREADS": "1", "PERFGATE_CPUS": "all"})
    assert plan.default_threads == 1 and plan.cpus == []


def test_worker_env_sets_the_same_allocator_and_threads_for_both_sides():
    env = conditions.worker_env({}, allocator="steady", cuda_alloc_conf="expandable_segments:True", threads=3)
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 * 2**20)
    assert env["OMP_NUM_THREADS"] == "3" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "MALLOC_MMAP_THRESHOLD_" not in conditions.worker_env({}, allocator="system", cuda_alloc_conf="", threads=None)
    # a value the user exported wins (an experiment can vary one)
    assert conditions.worker_env({"MALLOC_TOP_PAD_": "0"}, allocator="steady", cuda_alloc_conf="",
                                 threads=None)["MALLOC_TOP_PAD_"] == "0"


def test_missing_preload_allocator_names_its_package(monkeypatch):
    monkeypatch.setattr(conditions, "_PRELOAD_DIRS", ())
    monkeypatch.setattr(conditions.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(conditions.AllocatorNotFound, match="libjemalloc2"):
        conditions.allocator_env("jemalloc", {})


def test_describe_records_what_both_sides_ran_under():
    plan = conditions.plan_cpus("auto", 0, [0, 1], 2)
    env = conditions.worker_env({}, allocator="steady", cuda_alloc_conf="", threads=plan.threads)
    rec = conditions.describe(env, plan, allocator="steady", layout_pinned=True, isolation="x")
    assert rec["cpus"] == [1] and rec["threads"] == 1 and rec["reduced"] is True
    assert rec["allocator_env"]["MALLOC_TRIM_THRESHOLD_"] == str(16 * 2**30)
    assert set(rec["host"]) >= {"transparent_hugepages", "numa_nodes", "cpu_governor"}
    assert rec["aslr"] == "off (setarch -R)"
    # the value the report names (runner.report.view.conditions_line) when layout was left random
    unpinned = conditions.describe(env, plan, allocator="steady", layout_pinned=False, isolation="x")
    assert unpinned["aslr"] == ASLR_LEFT_ON


def test_a_single_cpu_is_shared_and_said_so():
    plan = conditions.plan_cpus("auto", 0, [0], 1)
    assert plan.cpus == [0] and plan.threads == 1 and "parent shares it" in plan.note and "left to" not in plan.note


def test_intra_op_threads_are_read_on_a_cpu_device_only():
    assert conditions.intra_op_threads({"device": "cpu", "threads": {"intra_op": 1}}) == 1
    assert conditions.intra_op_threads({"device": "cuda", "threads": {"intra_op": 1}}) is None
    assert conditions.intra_op_threads({"device": "cpu"}) is None
