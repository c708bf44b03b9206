"""runner.telemetry: the pure summary on synthetic samples; the sampler with a fake NVML and without one."""

from __future__ import annotations

import time

from runner.pipeline.machine import energy, telemetry


def _samples(side, n, **fields):
    return [{"side": side, "t": i * 0.1, **fields} for i in range(n)]


def test_summary_per_side_and_no_flags_when_steady():
    common = {"sm_clock_mhz": 1980, "memory_clock_mhz": 2619, "power_limit_w": 700}
    s = telemetry.summarize_samples(
        _samples("base", 10, **common, temperature_c=55, power_instant_w=400,
                 memory_utilization_pct=40, reasons=0)
        + _samples("head", 10, **common, temperature_c=56, power_instant_w=420,
                   memory_utilization_pct=42, reasons=0x1)
        + _samples(None, 3, sm_clock_mhz=300))
    assert s["available"] and s["samples"] == 23
    assert s["sides"]["base"]["sm_clock_mhz"] == {"median": 1980, "min": 1980, "max": 1980}
    assert s["sides"]["head"]["power_vs_limit_max"] == 0.6
    assert s["sides"]["head"]["throttle_reasons"] == {"gpu_idle": 1.0}
    assert s["flags"] == {"throttled": False, "throttled_sides": [], "clocks_differ": False,
                          "sm_clock_difference": 0.0}


def test_throttled_and_clocks_differ_flags():
    s = telemetry.summarize_samples(_samples("base", 10, sm_clock_mhz=1980, reasons=0)
                                    + _samples("head", 10, sm_clock_mhz=1600, reasons=0x4 | 0x40))
    assert s["flags"]["throttled"] and s["flags"]["throttled_sides"] == ["head"]
    assert s["flags"]["clocks_differ"] and s["flags"]["sm_clock_difference"] == round(1600 / 1980 - 1, 4)
    assert s["sides"]["head"]["throttle_reasons"] == {"hw_thermal_slowdown": 1.0, "sw_power_cap": 1.0}
    assert any("clocks held down" in n for n in s["notes"])


def test_each_sides_power_is_its_energy_over_its_own_windows_and_utilisation_is_the_runs():
    """GPU review #10: base and head alternate every 30 ms while NVML's power reading is a 1 s
    average and its utilisation a 1/6-1 s window, so a side's samples of them mix both sides;
    the energy counter's differences across each side's windows give each side its own power.
    Memory utilisation is a duty cycle: 85 % is reported for the run, never as saturation."""
    from testkit.fake_nvml import BOOSTING_H100, FakeNVML as NVML

    now = [100.0]
    gpu = dict(BOOSTING_H100, power_mw=450_000, gpu_util=100, mem_util=85)
    nvml = NVML(gpus=[gpu], clock=lambda: now[0])
    sampler = telemetry.TelemetrySampler(interval_s=3600, nvml=nvml, clock=lambda: now[0]).start()
    for _ in range(20):
        for side, milliwatts in (("base", 300_000), ("head", 600_000)):
            sampler.set_side(side)
            gpu["power_instant_mw"] = milliwatts
            now[0] += 0.015
            sampler.sample_once()
            now[0] += 0.015
            sampler.set_side(None)
            now[0] += 0.002  # between requests: nobody's
    sampler.stop()
    s = sampler.summary()
    base, head = s["sides"]["base"], s["sides"]["head"]
    assert (base["mean_power_w"], head["mean_power_w"]) == (300.0, 600.0)
    assert (base["energy_j"], head["energy_j"]) == (180.0, 360.0) and base["energy_s"] == 0.6
    assert (base["power_w"]["median"], head["power_w"]["median"]) == (300, 600)  # instantaneous
    assert head["power_vs_limit_max"] == round(600 / 700, 3)
    assert "memory_utilization_pct" not in head and "gpu_utilization_pct" not in head
    assert s["device"]["power_avg_w"]["median"] == 450
    assert s["device"]["memory_utilization_pct"]["median"] == 85
    assert "memory_saturated_sides" not in s["flags"] and not s["notes"]


def test_stopping_closes_the_running_sides_energy_window():
    from testkit.fake_nvml import BOOSTING_H100, FakeNVML as NVML

    now = [0.0]
    gpu = dict(BOOSTING_H100, power_instant_mw=250_000)
    nvml = NVML(gpus=[gpu], clock=lambda: now[0])
    sampler = telemetry.TelemetrySampler(interval_s=3600, nvml=nvml, clock=lambda: now[0]).start()
    sampler.set_side("base")
    now[0] += 2.0
    sampler.stop()
    assert sampler.summary()["sides"]["base"]["mean_power_w"] == 250.0


def test_side_energy_skips_windows_nobody_ran_or_the_counter_lost():
    readings = [(0.0, "base", 1000), (0.5, None, 101_000), (0.6, "head", 130_000),
                (1.0, "base", None), (1.2, "head", 50), (1.3, None, 10)]
    marks = [{"t": t, "side": side, "energy_mj": mj} for t, side, mj in readings]
    assert energy.side_energy(marks) == {
        "base": {"energy_j": 100.0, "seconds": 0.5, "mean_power_w": 200.0}}
    assert energy.side_energy([]) == {}


def test_decode_reasons():
    assert telemetry.decode_reasons(0x4 | 0x8) == ["sw_power_cap", "hw_slowdown"]
    assert telemetry.decode_reasons(None) == [] and telemetry.decode_reasons(0x10000) == []


class FakeNVML:
    """Enough of pynvml for the sampler, with the new clock-event API name only."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self):
        self.clock = 1980
        self.shut = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"gpu{i}"

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlSystemGetDriverVersion(self):
        return "570.00"

    def nvmlDeviceGetClockInfo(self, h, which):
        return self.clock if which == 1 else 3201

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60

    def nvmlDeviceGetPowerUsage(self, h):
        return 500_000

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetUtilizationRates(self, h):
        class U:
            gpu, memory = 90, 70
        return U()

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4 if self.clock < 1900 else 0


class OldFakeNVML(FakeNVML):
    """A pynvml with only the deprecated "throttle" name; one field unsupported."""

    nvmlDeviceGetCurrentClocksEventReasons = None

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return 0x20

    def nvmlDeviceGetTemperature(self, h, sensor):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")


def test_sampler_with_fake_nvml_attributes_samples_to_sides():
    nvml = FakeNVML()
    sampler = telemetry.TelemetrySampler(interval_s=0.01, nvml=nvml).start()
    sampler.stop()  # stop the thread; sample by hand for determinism
    sampler._handle = "gpu0"
    sampler.set_side("base")
    for _ in range(4):
        sampler.sample_once()
    nvml.clock = 1500
    sampler.set_side("head")
    for _ in range(4):
        sampler.sample_once()
    s = sampler.summary()
    assert s["available"] and s["device_name"] == "NVIDIA H200" and s["driver"] == "570.00"
    assert s["sides"]["base"]["sm_clock_mhz"]["median"] == 1980 and s["sides"]["head"]["sm_clock_mhz"]["median"] == 1500
    assert s["sides"]["head"]["power_limit_w"] == 700.0
    assert s["device"]["memory_utilization_pct"]["median"] == 70
    assert s["flags"]["clocks_differ"] and s["flags"]["throttled_sides"] == ["head"]
    assert nvml.shut


def test_sampler_thread_samples_and_old_api_fallback():
    sampler = telemetry.TelemetrySampler(interval_s=0.005, nvml=OldFakeNVML()).start()
    sampler.set_side("base")
    deadline = time.monotonic() + 5
    while len(sampler.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    s = sampler.summary()
    assert s["sides"]["base"]["throttle_reasons"] == {"sw_thermal_slowdown": 1.0}
    assert s["sides"]["base"]["temperature_c"] is None


def test_without_nvml_or_gpu_it_says_so_and_never_raises():
    class Broken:
        def nvmlInit(self):
            raise OSError("NVML Shared Library Not Found")

    sampler = telemetry.TelemetrySampler(nvml=Broken()).start()
    sampler.set_side("base")
    sampler.stop()
    assert sampler.summary() == {"available": False, "reason": "NVML unavailable: NVML Shared Library Not Found"}
    default = telemetry.TelemetrySampler().start()  # this machine: no GPU (or no pynvml)
    default.stop()
    if not default.summary()["available"]:
        assert default.summary()["reason"]


def _at(t, side="base", clock=1980, reasons=0, power=0, thermal=0):
    return {"t": t, "side": side, "sm_clock_mhz": clock, "reasons": reasons, "power_violation_ns": power,
            "thermal_violation_ns": thermal}


def test_rounds_with_a_throttle_reason_a_moved_violation_counter_or_a_clock_off_the_reference():
    windows = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0), (4.0, 5.0), (5.0, 6.0)]
    samples = [_at(0.5), _at(1.5, reasons=0x4), _at(2.5), _at(2.9, power=5_000),   # round 3: counter moved after 2.5
               _at(3.5, power=5_000), _at(4.5, clock=1900, power=5_000), _at(5.5, clock=1950, power=5_000),
               _at(6.5, power=5_000)]
    flagged = telemetry.disturbed_rounds(windows, samples, reference_mhz=1980)
    assert flagged == {1: "throttled", 2: "throttled", 4: "clock"}  # 1950 is within 2 % of 1980
    assert telemetry.disturbed_rounds(windows, samples, reference_mhz=None) == {1: "throttled", 2: "throttled"}
    # an idle GPU's low clock between samples is not a clock change
    assert telemetry.disturbed_rounds([(0, 1)], [_at(0.5, clock=345, reasons=0x1)], 1980) == {}


def test_a_sample_reads_the_power_and_thermal_violation_counters():
    from testkit.fake_nvml import HEALTHY_H100
    from testkit.fake_nvml import FakeNVML as PynvmlFake

    nvml = PynvmlFake(gpus=[dict(HEALTHY_H100, power_violation_ns=7_000, thermal_violation_ns=None)])
    nvml.nvmlInit()
    sample = telemetry.read_sample(nvml, 0)
    assert sample["power_violation_ns"] == 7_000 and sample["thermal_violation_ns"] is None  # not supported
    assert sample["sm_clock_mhz"] == 1755 and sample["reasons"] == 0x3
    assert telemetry.read_sample(FakeNVML(), "gpu0")["power_violation_ns"] is None  # a pynvml without the call
