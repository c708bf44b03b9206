"""The clock policy (runner.pipeline.machine.clocks): the pure plan over a GPU's facts, and the
locking and restoring against a fake NVML (testkit/fake_nvml.py: pynvml's names, its permission
refusals)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runner.pipeline.machine import clocks, machine_facts
from runner.pipeline.machine.clock_plan import plan
from testkit.fake_nvml import BOOSTING_H100, HEALTHY_H100, FakeNVML


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    """Where a compare notes the clocks it holds (never the home folder of whoever runs the
    tests)."""
    monkeypatch.setenv("PERFGATE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


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


def test_a_compare_killed_holding_the_clocks_has_them_reset_by_the_next(state_dir):
    # GPU review #9: NVML reports a lock perfgate left like the owner's own setting ("held"), so
    # a compare killed before its finally left the GPU locked for good
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    killed = clocks.ClockControl(True, nvml=nvml, euid=0)
    assert killed.start()["policy"] == "lock" and (state_dir / "clocks-0.json").exists()
    # ... killed here: no restore; the next compare finds the note and the pid gone
    state = json.loads((state_dir / "clocks-0.json").read_text())
    (state_dir / "clocks-0.json").write_text(json.dumps({**state, "pid": _dead_pid()}))
    record = clocks.ClockControl(True, nvml=nvml, euid=0).start()
    assert "never restored" in record["reclaimed"] and record["policy"] == "lock"  # not "held"
    assert nvml.calls[2:4] == ["reset memory", "reset sm"]


def test_a_lock_a_live_compare_holds_is_left_to_it(state_dir):
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    clocks.ClockControl(True, nvml=nvml, euid=0).start()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        state = json.loads((state_dir / "clocks-0.json").read_text())
        (state_dir / "clocks-0.json").write_text(json.dumps({**state, "pid": other.pid}))
        record = clocks.ClockControl(True, nvml=nvml, euid=0).start()
        assert "reclaimed" not in record and record["policy"] == "held"
    finally:
        other.kill()
        other.wait()


def test_a_restored_lock_leaves_no_note(state_dir):
    control = clocks.ClockControl(True, nvml=FakeNVML(gpus=[dict(BOOSTING_H100)]), euid=0)
    control.start()
    control.restore()
    assert not (state_dir / "clocks-0.json").exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_measuring_command_ends_on_sigterm_through_its_finally_blocks():
    # GPU review #9: a cancelled CI job's SIGTERM killed a compare where it stood, clocks locked;
    # now it is an interrupt, so the restore in the finally runs, and the exit status is 130
    import signal

    code = ("import os, signal, sys\n"
            "from runner.cli import main as cli\n"
            "def handler(args):\n"
            "    try:\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "        signal.pause()\n"
            "    finally:\n"
            "        print('restored', flush=True)\n"
            "cli._resolve = lambda name: handler\n"
            "sys.exit(cli.main(['run', '--rev', 'HEAD']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130 and "restored" in proc.stdout and "interrupted" in proc.stderr
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # this process: untouched


def test_the_workers_gpu_is_found_by_its_uuid_not_nvml_index_0():
    # GPU review #7: NVML numbers GPUs in PCI order and ignores CUDA_VISIBLE_DEVICES; a runner
    # pinned to GPU 1 sampled, and locked, GPU 0 (maybe another runner's)
    from runner.devices.cuda import nvml_uuid
    from runner.pipeline.machine.telemetry import open_device

    ours = "GPU-5e0b4a9c-1f2d-4e3a-9b8c-7d6e5f4a3b2c"
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100), dict(BOOSTING_H100, uuid=ours)])
    assert nvml_uuid("5e0b4a9c-1f2d-4e3a-9b8c-7d6e5f4a3b2c") == ours == nvml_uuid(ours)
    _, handle = open_device(nvml, 0, ours)
    assert handle == 1
    nvml.nvmlShutdown()
    control = clocks.ClockControl(True, nvml=nvml, euid=0, uuid=ours)
    assert control.start()["policy"] == "lock"
    assert nvml.gpus[1]["sm_clock"] == 1755 and nvml.gpus[0]["sm_clock"] == 1980  # GPU 0 untouched
    control.restore()


def test_the_gpu_uuid_is_taken_only_where_both_sides_name_the_same_well_formed_one():
    from runner.pipeline.session import Sides

    ours = "GPU-5e0b4a9c-1f2d-4e3a-9b8c-7d6e5f4a3b2c"

    def sides(base, head):
        return Sides(workers={"base": None, "head": None}, conditions={}, listings={},
                     env={"base": {"gpu_uuid": base}, "head": {"gpu_uuid": head}}, options={},
                     doctor={})

    assert sides(ours, ours).gpu_uuid == ours
    # head's code may lie
    assert sides(ours, "GPU-00000000-0000-0000-0000-000000000000").gpu_uuid is None
    assert sides("GPU-not-a-uuid", "GPU-not-a-uuid").gpu_uuid is None
