"""A stand-in for the ``pynvml`` module (nvidia-ml-py) over a scene of GPUs, for the doctor's and
the telemetry's tests on machines without NVIDIA's library.

Function names, argument orders, return shapes and constants are those of pynvml / ``nvml.h``:
``nvmlDeviceGetMigMode`` and ``nvmlDeviceGetEccMode`` answer ``[current, pending]``,
``nvmlSystemGetCudaDriverVersion`` an int (12040 for 12.4), power in milliwatts, process objects
with ``pid`` and ``usedGpuMemory``. A field a GPU's dict leaves out (or sets to None) raises
:class:`NVMLError` "Not Supported", as NVML does for a field the device does not offer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 0, 1
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0


NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1
NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS = 0
#: nvml.h's return codes the fake raises (pynvml's ``NVMLError.value``).
NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION = 3, 4
#: nvml.h's field id of the instantaneous power (milliwatts), and its value type
NVML_FI_DEV_POWER_INSTANT = 186
NVML_VALUE_TYPE_UNSIGNED_INT = 1


class NVMLError(Exception):
    """What pynvml raises (its per-code subclasses derive from ``NVMLError``); ``value`` is
    nvml.h's return code, the message pynvml's text for it."""

    def __init__(self, message: str, value: int | None = None):
        super().__init__(message)
        self.value = value


@dataclass
class FakeNVML:
    """``FakeNVML(gpus=[{...}], driver="550.54.15", cuda_driver=12040)``; ``init_error`` makes
    ``nvmlInit`` fail (no driver). GPU keys: name, processes ([(pid, bytes)]), graphics_processes,
    gpu_util, mem_util, mig ([cur, pending]), persistence (0/1), ecc ([cur, pending]),
    ecc_uncorrected, sm_clock, mem_clock, app_clock, default_app_clock, max_clock, reasons
    (bitmask), temperature, slowdown_temperature, power_mw, power_limit_mw, supported_sm ([MHz]),
    power_violation_ns, thermal_violation_ns (cumulative), app_clocks_restricted (0/1),
    power_instant_mw (``NVML_FI_DEV_POWER_INSTANT``; ``power_mw`` is NVML's 1 s average),
    energy_mj (``nvmlDeviceGetTotalEnergyConsumption``: the counter at the first read; from
    then on it grows by the instantaneous power over ``clock``'s seconds, as the GPU's does).

    Setting clocks: ``root`` says whether the caller may lock clocks (``nvmlDeviceSetGpuLockedClocks``
    and ``nvmlDeviceSetMemoryLockedClocks`` raise "Insufficient Permissions" otherwise, as NVML
    does); ``nvmlDeviceSetApplicationsClocks`` needs root or ``app_clocks_restricted`` 0. A locked
    SM clock becomes the GPU's ``sm_clock`` (and sets the applications-clocks reason bit) until
    reset; ``calls`` lists every setter and resetter called, in order."""

    gpus: list[dict] = field(default_factory=list)
    driver: str = "550.54.15"
    cuda_driver: int | None = 12040
    init_error: str | None = None
    initialised: int = 0
    root: bool = True
    calls: list = field(default_factory=list)
    #: seconds for the energy counter (a test passes a simulated clock)
    clock: Callable[[], float] = time.monotonic
    _energy: dict = field(default_factory=dict)

    def __post_init__(self):
        for name in ("NVML_CLOCK_GRAPHICS", "NVML_CLOCK_SM", "NVML_CLOCK_MEM", "NVML_TEMPERATURE_GPU",
                     "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",
                     "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC", "NVML_PERF_POLICY_POWER",
                     "NVML_PERF_POLICY_THERMAL", "NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS",
                     "NVML_FI_DEV_POWER_INSTANT", "NVML_VALUE_TYPE_UNSIGNED_INT"):
            setattr(self, name, globals()[name])

    # -- library ---------------------------------------------------------------------------------
    def nvmlInit(self):  # noqa: N802 - pynvml's names
        if self.init_error:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self):  # noqa: N802
        self.initialised -= 1

    def _field(self, handle, key):
        self._require_init()
        value = self.gpus[handle].get(key)
        if value is None:
            raise NVMLError("Not Supported", NVML_ERROR_NOT_SUPPORTED)
        return value

    def _require_init(self):
        if self.initialised <= 0:
            raise NVMLError("Uninitialized")

    def nvmlSystemGetDriverVersion(self):  # noqa: N802
        self._require_init()
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):  # noqa: N802
        self._require_init()
        if self.cuda_driver is None:
            raise NVMLError("Not Supported")
        return self.cuda_driver

    def nvmlDeviceGetCount(self):  # noqa: N802
        self._require_init()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802
        """By NVML's index: PCI bus order, whatever CUDA_VISIBLE_DEVICES says (NVML ignores it)."""
        self._require_init()
        if not 0 <= index < len(self.gpus):
            raise NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):  # noqa: N802
        self._require_init()
        for index, gpu in enumerate(self.gpus):
            if gpu.get("uuid", f"GPU-00000000-0000-0000-0000-{index:012d}") == uuid:
                return index
        raise NVMLError("Not Found", 6)  # NVML_ERROR_NOT_FOUND

    def nvmlDeviceGetUUID(self, handle):  # noqa: N802
        self._require_init()
        return self.gpus[handle].get("uuid", f"GPU-00000000-0000-0000-0000-{handle:012d}")

    # -- device ----------------------------------------------------------------------------------
    def nvmlDeviceGetName(self, handle):  # noqa: N802
        return self._field(handle, "name")

    def _procs(self, handle, key):
        return [SimpleNamespace(pid=pid, usedGpuMemory=memory) for pid, memory in self._field(handle, key)]

    def nvmlDeviceGetComputeRunningProcesses(self, handle):  # noqa: N802
        return self._procs(handle, "processes")

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle):  # noqa: N802
        return self._procs(handle, "graphics_processes")

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=self._field(handle, "gpu_util"), memory=self.gpus[handle].get("mem_util", 0))

    def nvmlDeviceGetMigMode(self, handle):  # noqa: N802
        return list(self._field(handle, "mig"))

    def nvmlDeviceGetPersistenceMode(self, handle):  # noqa: N802
        return self._field(handle, "persistence")

    def nvmlDeviceGetComputeMode(self, handle):  # noqa: N802
        """NVML_COMPUTEMODE_DEFAULT 0, EXCLUSIVE_THREAD 1 (gone), PROHIBITED 2,
        EXCLUSIVE_PROCESS 3."""
        self._require_init()
        return self.gpus[handle].get("compute_mode", 0)

    def nvmlDeviceGetEccMode(self, handle):  # noqa: N802
        return list(self._field(handle, "ecc"))

    def nvmlDeviceGetTotalEccErrors(self, handle, error_type, counter_type):  # noqa: N802
        assert (error_type, counter_type) == (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC)
        return self._field(handle, "ecc_uncorrected")

    def _clock(self, handle, clock_type, sm_key, mem_key):
        if clock_type not in (NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_CLOCK_GRAPHICS):
            raise NVMLError("Invalid Argument")
        return self._field(handle, mem_key if clock_type == NVML_CLOCK_MEM else sm_key)

    def nvmlDeviceGetClockInfo(self, handle, clock_type):  # noqa: N802
        return self._clock(handle, clock_type, "sm_clock", "mem_clock")

    def nvmlDeviceGetApplicationsClock(self, handle, clock_type):  # noqa: N802
        return self._clock(handle, clock_type, "app_clock", "mem_clock")

    def nvmlDeviceGetDefaultApplicationsClock(self, handle, clock_type):  # noqa: N802
        return self._clock(handle, clock_type, "default_app_clock", "mem_clock")

    def nvmlDeviceGetMaxClockInfo(self, handle, clock_type):  # noqa: N802
        return self._clock(handle, clock_type, "max_clock", "mem_clock")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):  # noqa: N802
        return self._field(handle, "reasons")

    def nvmlDeviceGetTemperature(self, handle, sensor):  # noqa: N802
        assert sensor == NVML_TEMPERATURE_GPU
        return self._field(handle, "temperature")

    def nvmlDeviceGetTemperatureThreshold(self, handle, threshold):  # noqa: N802
        assert threshold == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        return self._field(handle, "slowdown_temperature")

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        return self._field(handle, "power_mw")

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):  # noqa: N802
        """Millijoules since the driver loaded: the GPU's ``energy_mj``, then the instantaneous
        power (mW) integrated over the seconds between reads (Not Supported before Volta)."""
        start = self._field(handle, "energy_mj")
        now, watts = self.clock(), self._field(handle, "power_instant_mw") / 1000.0
        energy, last = self._energy.get(handle, (float(start), now))
        energy += watts * (now - last) * 1000.0
        self._energy[handle] = (energy, now)
        return int(energy)

    def nvmlDeviceGetFieldValues(self, handle, field_ids):  # noqa: N802
        """pynvml's ``c_nvmlFieldValue_t`` records: a field the GPU does not offer has
        ``nvmlReturn`` NOT_SUPPORTED (the call itself succeeds, as NVML's does)."""
        self._require_init()
        out = []
        for fid in field_ids:
            instant = fid == NVML_FI_DEV_POWER_INSTANT
            value = self.gpus[handle].get("power_instant_mw") if instant else None
            out.append(SimpleNamespace(
                fieldId=fid, scopeId=0, timestamp=int(self.clock() * 1e6), latencyUsec=0,
                valueType=NVML_VALUE_TYPE_UNSIGNED_INT,
                nvmlReturn=0 if value is not None else NVML_ERROR_NOT_SUPPORTED,
                value=SimpleNamespace(uiVal=int(value or 0), dVal=0.0, ulVal=0, ullVal=0,
                                      sllVal=0, siVal=0, usVal=0)))
        return out

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):  # noqa: N802
        return self._field(handle, "power_limit_mw")

    def nvmlDeviceGetViolationStatus(self, handle, policy):  # noqa: N802
        key = {NVML_PERF_POLICY_POWER: "power_violation_ns", NVML_PERF_POLICY_THERMAL: "thermal_violation_ns"}[policy]
        return SimpleNamespace(referenceTime=0, violationTime=self._field(handle, key))

    def nvmlDeviceGetSupportedGraphicsClocks(self, handle, memory_mhz):  # noqa: N802
        return list(self._field(handle, "supported_sm"))

    def nvmlDeviceGetAPIRestriction(self, handle, api):  # noqa: N802
        assert api == NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS
        return self._field(handle, "app_clocks_restricted")

    # -- setting clocks (root, or application clocks unrestricted) --------------------------------
    def _may(self, handle, what: str, allowed: bool):
        self._require_init()
        self.calls.append(what)
        if not allowed:
            raise NVMLError("Insufficient Permissions", NVML_ERROR_NO_PERMISSION)

    def _hold(self, handle, sm_mhz):
        gpu = self.gpus[handle]
        gpu.setdefault("_boost_clock", gpu.get("sm_clock"))
        gpu["sm_clock"], gpu["reasons"] = sm_mhz, (gpu.get("reasons") or 0) | 0x2

    def _release(self, handle):
        gpu = self.gpus[handle]
        if "_boost_clock" in gpu:
            gpu["sm_clock"] = gpu.pop("_boost_clock")
        gpu["reasons"] = (gpu.get("reasons") or 0) & ~0x2

    def nvmlDeviceSetGpuLockedClocks(self, handle, low, high):  # noqa: N802
        self._may(handle, f"lock sm {low}-{high}", self.root)
        self._hold(handle, high)

    def nvmlDeviceResetGpuLockedClocks(self, handle):  # noqa: N802
        self._may(handle, "reset sm", self.root)
        self._release(handle)

    def nvmlDeviceSetMemoryLockedClocks(self, handle, low, high):  # noqa: N802
        self._may(handle, f"lock memory {low}-{high}", self.root)
        if self.gpus[handle].get("memory_lock_unsupported"):
            raise NVMLError("Not Supported", NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceResetMemoryLockedClocks(self, handle):  # noqa: N802
        self._may(handle, "reset memory", self.root)

    def nvmlDeviceSetApplicationsClocks(self, handle, memory_mhz, sm_mhz):  # noqa: N802
        self._may(handle, f"application clocks {memory_mhz},{sm_mhz}",
                  self.root or not self.gpus[handle].get("app_clocks_restricted", 1))
        self._hold(handle, sm_mhz)

    def nvmlDeviceResetApplicationsClocks(self, handle):  # noqa: N802
        self._may(handle, "reset application clocks", self.root or not self.gpus[handle].get("app_clocks_restricted", 1))
        self._release(handle)


#: A well-kept H100 at idle: persistence on, clocks locked (applications clocks setting reason),
#: cool, nothing running, ECC on with no errors, MIG off.
HEALTHY_H100 = {
    "name": "NVIDIA H100 80GB HBM3", "processes": [], "graphics_processes": [], "gpu_util": 0, "mem_util": 0,
    "mig": [0, 0], "persistence": 1, "ecc": [1, 1], "ecc_uncorrected": 0, "sm_clock": 1755, "mem_clock": 2619,
    "app_clock": 1755, "default_app_clock": 1755, "max_clock": 1980, "reasons": 0x1 | 0x2, "temperature": 34,
    "slowdown_temperature": 87, "power_mw": 70_000, "power_limit_mw": 700_000,
    "supported_sm": [1980, 1755, 1590, 1410], "power_violation_ns": 0, "thermal_violation_ns": 0,
    "app_clocks_restricted": 1, "power_instant_mw": 72_000, "energy_mj": 9_000_000_000,
}

#: The same H100 as most clouds lend it: GPU Boost picks the clock (no setting holds it).
BOOSTING_H100 = dict(HEALTHY_H100, reasons=0x1, sm_clock=1980)
