"""runner.telemetry: the pure summary on synthetic samples; the sampler with a fake NVML and without one."""

from __future__ import annotations

import time

from runner.pipeline.machine import telemetry


def _samples(side, n, **fields):
    return [{"side": side, "t": i * 0.1, **fields} for i in range(n)]


def test_summary_per_side_and_no_flags_when_steady():
    s = telemetry.summarize_samples(_samples("base", 10, sm_clock_mhz=1980, memory_clock_mhz=2619, temperature_c=55,
                                             power_w=400, power_limit_w=700, memory_utilization_pct=40, reasons=0)
                                    + _samples("head", 10, sm_clock_mhz=1980, memory_clock_mhz=2619, temperature_c=56,
                                               power_w=420, power_limit_w=700, memory_utilization_pct=42, reasons=0x1)
                                    + _samples(None, 3, sm_clock_mhz=300))
    assert s["available"] and s["samples"] == 23
    assert s["sides"]["base"]["sm_clock_mhz"] == {"median": 1980, "min": 1980, "max": 1980}
    assert s["sides"]["head"]["power_vs_limit_max"] == 0.6
    assert s["sides"]["head"]["throttle_reasons"] == {"gpu_idle": 1.0}
    assert s["flags"] == {"throttled": False, "throttled_sides": [], "clocks_differ": False,
                          "sm_clock_difference": 0.0, "memory_saturated_sides": []}


def test_throttled_and_clocks_differ_flags():
    s = telemetry.summarize_samples(_samples("base", 10, sm_clock_mhz=1980, reasons=0)
                                    + _samples("head", 10, sm_clock_mhz=1600, reasons=0x4 | 0x40))
    assert s["flags"]["throttled"] and s["flags"]["throttled_sides"] == ["head"]
    assert s["flags"]["clocks_differ"] and s["flags"]["sm_clock_difference"] == round(1600 / 1980 - 1, 4)
    assert s["sides"]["head"]["throttle_reasons"] == {"hw_thermal_slowdown": 1.0, "sw_power_cap": 1.0}
    assert any("clocks held down" in n for n in s["notes"])


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
    assert s["sides"]["head"]["power_limit_w"] == 700.0 and s["sides"]["head"]["memory_utilization_pct"]["median"] == 70
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


def test_the_reference_clock_is_the_median_under_load():
    samples = [_at(0, clock=1980), _at(1, clock=1965), _at(2, clock=1980), _at(3, side=None, clock=300),
               _at(4, clock=210, reasons=0x1)]
    assert telemetry.reference_clock(samples) == 1980
    assert telemetry.reference_clock([_at(0, side=None)]) is None


def test_a_sample_reads_the_power_and_thermal_violation_counters():
    from testkit.fake_nvml import HEALTHY_H100
    from testkit.fake_nvml import FakeNVML as PynvmlFake

    nvml = PynvmlFake(gpus=[dict(HEALTHY_H100, power_violation_ns=7_000, thermal_violation_ns=None)])
    nvml.nvmlInit()
    sample = telemetry.read_sample(nvml, 0)
    assert sample["power_violation_ns"] == 7_000 and sample["thermal_violation_ns"] is None  # not supported
    assert sample["sm_clock_mhz"] == 1755 and sample["reasons"] == 0x3
    assert telemetry.read_sample(FakeNVML(), "gpu0")["power_violation_ns"] is None  # a pynvml without the call
