"""The sustained lock target (GPU review #8): the p10 of the SM clock under a bf16 GEMM soak,
cached per GPU UUID; the lock judged by what it holds under load; the reference clock per
benchmark. Pure decisions over GPU-faithful telemetry (an H100 at its 700 W cap holds ~1650-1755
MHz of its 1980 MHz boost); the soak's shell against testkit's NVML fake; the real soak on a GPU
(``gpu`` mark)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from runner.pipeline.machine import clocks, doctor, machine_facts, sustained
from runner.pipeline.machine.clock_plan import plan
from testkit.fake_nvml import BOOSTING_H100, FakeNVML

UUID = "GPU-00000000-0000-0000-0000-000000000000"
SUPPORTED = [1980, 1755, 1590, 1410]


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGATE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _loaded(mhz, t=None, reasons=0x4, util=100):
    """An NVML sample of an H100 under a GEMM: sw_power_cap (0x4), busy."""
    return {"t": t, "sm_clock_mhz": mhz, "reasons": reasons, "gpu_utilization_pct": util}


# -- the decision (pure) -------------------------------------------------------------------------

def test_the_sustained_clock_is_the_p10_under_load_rounded_down_to_a_supported_clock():
    # a soak: boosts to 1980 for the first second, then the power cap pulls it to 1650-1755
    soak = [_loaded(1980, reasons=0)] * 10 + [_loaded(1755)] * 60 + [_loaded(1650)] * 30
    idle = [_loaded(345, reasons=0x1, util=0)] * 50  # before and after: idle, never counted
    assert sustained.quantile([1650.0] * 30 + [1755.0] * 70, 0.10) == 1650.0
    assert sustained.sustained_mhz(soak + idle) == 1650
    # a lock must hold: the supported clock at or below the p10, never the nearest above it
    assert sustained.sustained_mhz(soak + idle, SUPPORTED) == 1590
    assert sustained.sustained_mhz(idle + soak[:5]) is None  # too few readings under load


def test_the_default_application_clock_is_the_target_only_until_a_sustained_clock_is_measured():
    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    nvml.nvmlInit()
    gpu = machine_facts.gpu_facts(nvml, 0, 0, euid=0)
    assert gpu["uuid"] == UUID
    assert plan(True, 0, gpu).sm_mhz == 1755  # the default application clock (was always)
    locked = plan(True, 0, gpu, sustained_mhz=1590)
    assert locked.sm_mhz == 1590 and "sustained under load" in locked.reason
    assert plan(True, 1410, gpu, sustained_mhz=1590).sm_mhz == 1410  # an explicit request wins


def test_a_cached_figure_is_read_only_for_its_own_gpu_and_when_it_is_an_sm_clock():
    good = sustained.cache_record(UUID, 1590, 90, 0.0)
    assert sustained.from_cache(good, UUID) == 1590
    assert sustained.from_cache(good, "GPU-other") is None
    assert sustained.from_cache(good, None) is None
    for bad in (dict(good, sm_mhz="1590"), dict(good, sm_mhz=True), dict(good, sm_mhz=99_999),
                dict(good, version=0), [1590], None):
        assert sustained.from_cache(bad, UUID) is None


def test_a_lock_the_benchmark_does_not_hold_falls_back_to_its_own_clock_under_load():
    held = [1755.0] * 20
    capped = [1650.0, 1660.0, 1655.0] * 7  # a GEMM-heavy benchmark under a 1755 MHz lock
    assert sustained.lock_holds(1755, held) is True
    assert sustained.lock_holds(1755, capped) is False
    assert sustained.lock_holds(None, held) is None and sustained.lock_holds(1755, []) is None
    assert sustained.round_reference(1755, held) == 1755
    # not 1755, against which every round would be 6 % off
    assert sustained.round_reference(1755, capped) == 1655
    assert sustained.round_reference(1755, []) == 1755
    assert sustained.round_reference(None, []) is None


def test_the_reference_clock_is_each_benchmarks_own_not_the_runs():
    """Unlocked: a power-heavy GEMM benchmark at 1650 MHz and a light one at 1980 MHz in one run.
    The run's median (1980, the light one's many samples) flagged every GEMM round as 'clock'."""
    from runner.pipeline.machine import telemetry

    gemm_windows, light_windows = [(0.0, 1.0), (1.0, 2.0)], [(2.0, 3.0), (3.0, 4.0)]
    samples = ([_loaded(1650, t=0.1 * i) for i in range(1, 20)]
               + [_loaded(1980, t=2 + 0.05 * i, reasons=0) for i in range(1, 40)])
    for windows, mhz in ((gemm_windows, 1650), (light_windows, 1980)):
        own = sustained.under_load(sustained.in_windows(samples, windows))
        reference = sustained.round_reference(None, own)
        assert reference == mhz
        unflagged = [dict(s, reasons=0) for s in samples]
        assert telemetry.disturbed_rounds(windows, unflagged, reference) == {}
    run_median = 1980
    assert telemetry.disturbed_rounds(gemm_windows, [dict(s, reasons=0) for s in samples],
                                      run_median) == {0: "clock", 1: "clock"}


def test_the_doctor_soaks_only_an_idle_gpu_it_has_no_figure_for():
    gpu = {"uuid": UUID, "processes": [], "utilization_pct": 0, "sustained_clock_mhz": None}
    assert sustained.needs_soak(gpu)
    assert not sustained.needs_soak(dict(gpu, sustained_clock_mhz=1590))
    assert not sustained.needs_soak(dict(gpu, processes=[{"pid": 7}]))
    assert not sustained.needs_soak(dict(gpu, utilization_pct=80))
    assert not sustained.needs_soak(dict(gpu, uuid=None))


# -- the shell against the NVML fake -------------------------------------------------------------

class _CappedWhileRunning(FakeNVML):
    """The fake H100 under load while a soak runs: its SM clock at the power cap."""

    def __init__(self, marker):
        super().__init__(gpus=[dict(BOOSTING_H100)])
        self.marker = marker

    def nvmlDeviceGetClockInfo(self, handle, clock_type):  # noqa: N802
        if clock_type == 1 and self.marker.exists():
            return 1650
        return super().nvmlDeviceGetClockInfo(handle, clock_type)

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        from types import SimpleNamespace

        return SimpleNamespace(gpu=100 if self.marker.exists() else 0, memory=0)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):  # noqa: N802
        return 0x4 if self.marker.exists() else 0x1


def test_the_sustained_clock_is_measured_once_cached_by_uuid_and_locked_to(tmp_path, state_dir):
    marker = tmp_path / "soaking"
    # stands in for runner.worker.soak: "under load" while the marker exists
    soak = (sys.executable, "-c", "import pathlib, sys, time; m = pathlib.Path(sys.argv[1]); "
            "m.touch(); time.sleep(float(sys.argv[2])); m.unlink()", str(marker))
    nvml = _CappedWhileRunning(marker)
    mhz = clocks.measure_sustained(UUID, SUPPORTED, nvml=nvml, seconds=4.0, command=soak,
                                   interval_s=0.05)
    assert mhz == 1590  # p10 1650, rounded down to a supported clock
    record = json.loads((state_dir / f"sustained-{UUID}.json").read_text())
    assert record["sm_mhz"] == 1590 and record["readings"] >= sustained.MIN_READINGS
    assert machine_facts.read_sustained(UUID) == 1590
    # the compare's clock control locks to it (root), not to the 1755 MHz default
    control = clocks.ClockControl(True, nvml=FakeNVML(gpus=[dict(BOOSTING_H100)]), euid=0,
                                  uuid=UUID)
    record = control.start()
    control.restore()
    assert record["policy"] == "lock" and record["sm_mhz"] == 1590, record
    # the doctor proposes it
    facts_nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    _, gpus = machine_facts.nvml_facts(facts_nvml, euid=1000)
    assert gpus[0]["sustained_clock_mhz"] == 1590 and not sustained.needs_soak(gpus[0])
    finding = doctor.check_gpu_clock_policy(gpus[0])
    assert "nvidia-smi -i 0 -lgc 1590,1590" in finding.fix and "sustained" in finding.fix


def test_a_soak_that_never_loads_the_gpu_caches_nothing(tmp_path, state_dir):
    idle = (sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))")
    nvml = _CappedWhileRunning(tmp_path / "never")
    assert clocks.measure_sustained(UUID, SUPPORTED, nvml=nvml, seconds=1.0, command=idle,
                                    interval_s=0.05) is None
    assert not (state_dir / f"sustained-{UUID}.json").exists()


@pytest.mark.gpu
def test_a_real_soak_reads_a_sustained_clock_at_or_below_the_default(state_dir):
    """GPU-only: 10 s of bf16 GEMM on GPU 0; the sustained clock is a supported clock at or below
    the default application clock (an H100 SXM at 700 W: expected ~1600-1755 MHz)."""
    pynvml = pytest.importorskip("pynvml")
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        uuid = machine_facts.nvml_text(pynvml.nvmlDeviceGetUUID(handle))
    finally:
        pynvml.nvmlShutdown()
    _, gpus = machine_facts.nvml_facts()  # the real pynvml
    gpu = next(g for g in gpus if g["uuid"] == uuid)
    mhz = clocks.measure_sustained(uuid, gpu["sm_supported_clocks_mhz"])
    assert mhz is not None
    assert mhz <= (gpu["sm_default_application_clock_mhz"] or gpu["sm_max_clock_mhz"])
    print(f"sustained SM clock of {gpu['name']}: {mhz} MHz "
          f"(default application clock {gpu['sm_default_application_clock_mhz']} MHz)")


def test_perfgate_doctor_soaks_an_unmeasured_idle_gpu_once_and_proposes_the_figure(monkeypatch,
                                                                                   capsys):
    from runner.cli import doctor as doctor_cli

    nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    _, gpus = machine_facts.nvml_facts(nvml, euid=1000)
    monkeypatch.setattr(doctor_cli, "gather", lambda paths: {"nvml": {"available": True},
                                                             "gpus": [dict(g) for g in gpus]})
    soaked = []

    def measure(uuid, supported):
        soaked.append(uuid)
        return 1590

    monkeypatch.setattr(doctor_cli, "measure_sustained", measure)
    doctor_cli.main_doctor(SimpleNamespace(path=".", json=True))
    out = json.loads(capsys.readouterr().out)
    policy = next(f for f in out["checks"] if f["check"] == "gpu_clock_policy")
    assert soaked == [UUID] and "-lgc 1590,1590" in policy["fix"]

    def fails(uuid, supported):
        raise subprocess.CalledProcessError(1, "soak")

    monkeypatch.setattr(doctor_cli, "measure_sustained", fails)
    doctor_cli.main_doctor(SimpleNamespace(path=".", json=True))
    captured = capsys.readouterr()
    assert "the soak failed" in captured.err
    policy = next(f for f in json.loads(captured.out)["checks"] if f["check"] == "gpu_clock_policy")
    assert "-lgc 1590" not in policy["fix"]
