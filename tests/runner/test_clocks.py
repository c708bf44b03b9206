"""The clock policy (runner.pipeline.machine.clocks): the pure plan over a GPU's facts, and the
locking and restoring against a fake NVML (testkit/fake_nvml.py: pynvml's names, its permission
refusals)."""

from __future__ import annotations

import pytest

from runner.pipeline.machine import clocks, machine_facts
from runner.pipeline.machine.clock_plan import plan
from testkit.fake_nvml import BOOSTING_H100, HEALTHY_H100, FakeNVML


def _gpu(euid=1000, **fields):
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100, **fields)])
    nvml.nvmlInit()
    return machine_facts.gpu_facts(nvml, 0, 0, euid=euid)


@pytest.mark.parametrize("lock, euid, fields, policy, method", [
    (True, 0, {}, "lock", "locked_clocks"),
    (True, 1000, {"app_clocks_restricted": 0}, "lock", "applications_clocks"),
    (True, 1000, {}, "monitor", None),                       # not root, application clocks restricted
    (False, 0, {}, "monitor", None),                         # allowed, but not asked
    (True, 0, {"reasons": 0x2}, "held", None),               # a setting of the runner holds them
    (True, 0, {"default_app_clock": None, "app_clock": None}, "monitor", None),   # no clock to lock to
])
def test_plan(lock, euid, fields, policy, method):
    chosen = plan(lock, 0, _gpu(euid, **fields))
    assert (chosen.policy, chosen.method) == (policy, method), chosen
    assert chosen.reason
    if policy == "lock":
        assert (chosen.sm_mhz, chosen.memory_mhz) == (1755, 2619)
    if policy == "monitor" and lock and euid:
        assert "nvidia-smi -acp UNRESTRICTED" in chosen.reason
    if not lock and euid == 0:
        assert "could lock them" in chosen.reason and chosen.lockable


def test_a_requested_clock_is_rounded_to_one_the_gpu_supports():
    assert plan(True, 1600, _gpu(0)).sm_mhz == 1590
    assert plan(True, 0, None).policy == "none"


def test_root_locks_sm_and_memory_for_the_run_and_restores_them():
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    control = clocks.ClockControl(True, nvml=nvml, euid=0)
    record = control.start()
    assert record["policy"] == "lock" and record["method"] == "locked_clocks"
    assert nvml.calls == ["lock sm 1755-1755", "lock memory 2619-2619"]
    assert nvml.gpus[0]["sm_clock"] == 1755
    control.restore()
    assert nvml.calls[2:] == ["reset memory", "reset sm"]
    assert nvml.gpus[0]["sm_clock"] == 1980 and control.record["restored"] is True
    assert nvml.initialised == 0
    control.restore()  # idempotent
    assert len(nvml.calls) == 4


def test_non_root_with_unrestricted_application_clocks_sets_and_resets_them():
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100, app_clocks_restricted=0)])
    control = clocks.ClockControl(True, 1410, nvml=nvml, euid=1000)
    assert control.start()["method"] == "applications_clocks"
    control.restore()
    assert nvml.calls == ["application clocks 2619,1410", "reset application clocks"]


def test_a_gpu_that_cannot_lock_its_memory_clock_is_locked_on_sm_only():
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100, memory_lock_unsupported=True)])
    control = clocks.ClockControl(True, nvml=nvml, euid=0)
    record = control.start()
    assert record["policy"] == "lock" and record["memory_mhz"] is None and "memory clock not locked" in record["reason"]
    control.restore()
    assert nvml.calls == ["lock sm 1755-1755", "lock memory 2619-2619", "reset sm"]


def test_a_refused_lock_falls_back_to_watching_and_leaves_nothing_set():
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)], root=False)  # NVML refuses: the process is not root after all
    control = clocks.ClockControl(True, nvml=nvml, euid=0)
    record = control.start()
    assert record["policy"] == "monitor" and "Insufficient Permissions" in record["reason"]
    assert "nvidia-smi -acp UNRESTRICTED" in record["reason"]
    control.restore()
    assert nvml.calls == ["lock sm 1755-1755"] and nvml.gpus[0]["sm_clock"] == 1980


@pytest.mark.parametrize("gpu, lock", [(HEALTHY_H100, True), (BOOSTING_H100, False)])
def test_held_or_unasked_clocks_are_never_touched(gpu, lock):
    nvml = FakeNVML(gpus=[dict(gpu)])
    control = clocks.ClockControl(lock, nvml=nvml, euid=0)
    assert control.start()["policy"] in ("held", "monitor")
    control.restore()
    assert nvml.calls == [] and nvml.initialised == 0


def test_without_nvml_the_policy_is_none_and_says_why():
    record = clocks.ClockControl(True, nvml=FakeNVML(init_error="Driver Not Loaded")).start()
    assert record["policy"] == "none" and record["error"] == "Driver Not Loaded"


def test_a_run_off_the_gpu_has_no_clocks_to_lock_or_watch_and_touches_no_nvml():
    from runner.pipeline.machine import clock_plan

    assert clock_plan.has_gpu_clocks("cuda:1") and not clock_plan.has_gpu_clocks("cpu")
    assert not clock_plan.has_gpu_clocks(None)
    nvml = FakeNVML(gpus=[dict(HEALTHY_H100)])
    control = clocks.ClockControl(True, nvml=nvml, euid=0, device="cpu")
    assert control.start() == {"policy": "none",
                               "reason": "not a CUDA run: no GPU clocks to lock or watch"}
    control.restore()
    assert nvml.calls == [] and nvml.initialised == 0
    assert clock_plan.locked_sm_mhz({"policy": "lock", "sm_mhz": 1410}) == 1410
    assert clock_plan.locked_sm_mhz({"policy": "monitor", "sm_mhz": None}) is None
