"""GPU telemetry during the timing pass (NVML through ``pynvml`` from ``nvidia-ml-py``).

Runs in the PARENT process (no torch): :class:`TelemetrySampler` samples on a thread while the
workers run; the parent calls :meth:`TelemetrySampler.set_side` as base and head alternate.
:func:`summarize_samples` (pure) turns the samples into ``environment.telemetry``:

``{"available": True, "device_name", "driver", "interval_s", "samples",
"sides": {"base"|"head": {samples, sm_clock_mhz, memory_clock_mhz, temperature_c, power_w:
{median, min, max}, power_limit_w, power_vs_limit_max (fraction), throttle_reasons: {reason:
fraction of samples}, throttled_fraction, energy_j, energy_s, mean_power_w}},
"device": {power_avg_w, gpu_utilization_pct, memory_utilization_pct: {median, min, max}},
"flags": {throttled, throttled_sides, clocks_differ, sm_clock_difference (fraction)},
"notes": [sentences]}``, or ``{"available": False, "reason": "..."}``.

Per side only what NVML gives at an instant: the clocks, temperature, clock-event reasons and
the instantaneous power (``power_w``, ``NVML_FI_DEV_POWER_INSTANT``); a side's energy and mean
power come from the cumulative energy counter across its own request windows
(:mod:`runner.pipeline.machine.energy`). NVML's power reading (a 1 s average) and utilisation
rates (1/6-1 s windows) mix both sides, which alternate every 20-40 ms, so they are in
``device``, for the run as a whole. Memory utilisation there is NVML's duty cycle (the share of
time global memory was read or written), not bandwidth: nothing infers saturation from it
(GPU review 2026-12-06, #10).

Sources: the clock-event (formerly "throttle") reason bits are NVML's
``nvmlClocksEventReason*`` constants (nvml.h); ``nvmlDeviceGetCurrentClocksEventReasons`` is
the current name, ``nvmlDeviceGetCurrentClocksThrottleReasons`` the deprecated one.
"""

from __future__ import annotations

import statistics
import threading
import time

from .clock_plan import THROTTLE_REASONS
from .energy import energy_mj, instant_power_w, side_energy

#: NVML clock-event reason bits (nvml.h) and the names perfgate reports.
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

#: A side counts as throttled when at least this fraction of its samples shows a throttle reason.
THROTTLED_FRACTION = 0.05
#: Median SM clocks of the two sides differing by more than this fraction are flagged.
CLOCK_DIFFERENCE = 0.02
#: A round during which the SM clock was more than this fraction away from the reference (the
#: locked clock where it held, else the benchmark's own median under load) counts as a clock change
#: (:func:`disturbed_rounds`); the same 2 % as :data:`CLOCK_DIFFERENCE` between sides.
ROUND_CLOCK_TOLERANCE = 0.02
#: NVML's cumulative clock-violation counters (``nvmlDeviceGetViolationStatus``, nanoseconds the
#: clocks were held down by each policy since the driver loaded) that mean power or heat; a
#: counter that moved across a round throttled it even when no sample fell inside the round.
VIOLATION_POLICIES = {"power_violation_ns": ("NVML_PERF_POLICY_POWER", 0),
                      "thermal_violation_ns": ("NVML_PERF_POLICY_THERMAL", 1)}


def decode_reasons(mask: int | None) -> list[str]:
    """Names of the clock-event reason bits set in ``mask`` (unknown bits are ignored)."""
    if not mask:
        return []
    return [name for bit, name in REASON_BITS.items() if mask & bit]


def _stats(values: list[float]) -> dict | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2)}


def summarize_side(samples: list[dict]) -> dict:
    """Summary of one side's samples (see the module docstring for the keys)."""
    n = len(samples)
    reasons: dict[str, int] = {}
    throttled = 0
    for s in samples:
        names = decode_reasons(s.get("reasons"))
        throttled += any(r in THROTTLE_REASONS for r in names)
        for r in names:
            reasons[r] = reasons.get(r, 0) + 1
    limits = [s.get("power_limit_w") for s in samples if s.get("power_limit_w")]
    ratios = [s["power_instant_w"] / s["power_limit_w"] for s in samples
              if s.get("power_instant_w") and s.get("power_limit_w")]
    return {
        "samples": n,
        "sm_clock_mhz": _stats([s.get("sm_clock_mhz") for s in samples]),
        "memory_clock_mhz": _stats([s.get("memory_clock_mhz") for s in samples]),
        "temperature_c": _stats([s.get("temperature_c") for s in samples]),
        "power_w": _stats([s.get("power_instant_w") for s in samples]),
        "power_limit_w": round(statistics.median(limits), 1) if limits else None,
        "power_vs_limit_max": round(max(ratios), 3) if ratios else None,
        "throttle_reasons": {k: round(v / n, 3) for k, v in sorted(reasons.items())} if n else {},
        "throttled_fraction": round(throttled / n, 3) if n else 0.0,
    }


def summarize_samples(samples: list[dict], *, device_name: str | None = None, driver: str | None = None,
                      interval_s: float | None = None, marks: list[dict] | None = None) -> dict:
    """``environment.telemetry`` from raw samples (pure).

    Args:
        samples: dicts ``{t (s), side ("base"|"head"|None), sm_clock_mhz, memory_clock_mhz,
            temperature_c, power_instant_w, power_avg_w, power_limit_w, memory_utilization_pct,
            gpu_utilization_pct, reasons (NVML clock-event bitmask)}``; missing fields are None.
            Samples with side None (set-up, between sides) count in ``samples`` only.
        device_name, driver, interval_s: recorded as given.
        marks: the energy counter at each change of side (:func:`.energy.side_energy`).

    Returns:
        the telemetry summary (module docstring); ``flags`` are all false without samples.
    """
    sides = {}
    for side in ("base", "head"):
        own = [s for s in samples if s.get("side") == side]
        if own:
            sides[side] = summarize_side(own)
    for side, energy in side_energy(marks or []).items():
        sides.setdefault(side, summarize_side([])).update(
            energy_j=energy["energy_j"], energy_s=energy["seconds"],
            mean_power_w=energy["mean_power_w"])
    running = [s for s in samples if s.get("side")]
    device = {key: _stats([s.get(key) for s in running])
              for key in ("power_avg_w", "gpu_utilization_pct", "memory_utilization_pct")}
    throttled_sides = [side for side, v in sides.items() if v["throttled_fraction"] >= THROTTLED_FRACTION]
    difference = None
    clocks_differ = False
    if "base" in sides and "head" in sides:
        cb = (sides["base"]["sm_clock_mhz"] or {}).get("median")
        ch = (sides["head"]["sm_clock_mhz"] or {}).get("median")
        mb = (sides["base"]["memory_clock_mhz"] or {}).get("median")
        mh = (sides["head"]["memory_clock_mhz"] or {}).get("median")
        if cb and ch:
            difference = round(ch / cb - 1, 4)
            clocks_differ = abs(difference) > CLOCK_DIFFERENCE
        if mb and mh and abs(mh / mb - 1) > CLOCK_DIFFERENCE:
            clocks_differ = True
    notes = []
    for side in throttled_sides:
        top = max(((r, sides[side]["throttle_reasons"].get(r, 0)) for r in THROTTLE_REASONS), key=lambda kv: kv[1])
        notes.append(f"{side}: clocks held down ({top[0]} in {top[1]:.0%} of samples)")
    if clocks_differ and difference is not None:
        notes.append(f"median SM clock differs between sides ({difference:+.1%} head vs base)")
    return {
        "available": True,
        "device_name": device_name,
        "driver": driver,
        "interval_s": interval_s,
        "samples": len(samples),
        "sides": sides,
        "device": device,
        "flags": {"throttled": bool(throttled_sides), "throttled_sides": throttled_sides,
                  "clocks_differ": clocks_differ, "sm_clock_difference": difference},
        "notes": notes,
    }


def disturbed_rounds(windows: list[tuple[float, float]], samples: list[dict], reference_mhz: float | None,
                     tolerance: float = ROUND_CLOCK_TOLERANCE) -> dict[int, str]:
    """The rounds the GPU's clocks disturbed, with why (pure).

    A round is ``throttled`` when a sample taken during it shows a power or thermal clock-event
    reason (:data:`THROTTLE_REASONS`), or a violation counter (:data:`VIOLATION_POLICIES`) moved
    between the last sample before it and the first after it; it is ``clock`` when a sample
    during it (GPU not idle) has an SM clock more than ``tolerance`` away from ``reference_mhz``.

    Args:
        windows: each round's ``(start, end)`` in the samples' clock (monotonic seconds).
        samples: telemetry samples (:func:`read_sample` plus ``t``), any order.
        reference_mhz: the benchmark's reference SM clock
            (:func:`runner.pipeline.machine.sustained.round_reference`); None: clocks not judged.
    Returns:
        ``{round index: "throttled" | "clock"}`` (throttled wins).
    """
    import bisect

    ordered = sorted((s for s in samples if s.get("t") is not None), key=lambda s: s["t"])
    times = [s["t"] for s in ordered]
    out: dict[int, str] = {}
    for i, (t0, t1) in enumerate(windows):
        lo, hi = bisect.bisect_left(times, t0), bisect.bisect_right(times, t1)
        inside = ordered[lo:hi]
        if any(r in THROTTLE_REASONS for s in inside for r in decode_reasons(s.get("reasons"))):
            out[i] = "throttled"
            continue
        before, after = (ordered[lo - 1] if lo > 0 else None), (ordered[hi] if hi < len(ordered) else None)
        if before is not None and after is not None and any(
                before.get(key) is not None and after.get(key) is not None and after[key] > before[key]
                for key in VIOLATION_POLICIES):
            out[i] = "throttled"
            continue
        if reference_mhz and any(s.get("sm_clock_mhz") and abs(s["sm_clock_mhz"] / reference_mhz - 1) > tolerance
                                 and "gpu_idle" not in decode_reasons(s.get("reasons")) for s in inside):
            out[i] = "clock"
    return out


# ---------------------------------------------------------------------------------------------
# NVML reading (imperative shell, kept thin)


def nvml_value(fn, *args):
    """``fn(*args)``, or None when NVML raises (NotSupported, NoPermission & co. are per field:
    a field the GPU or driver does not offer is missing, never an error)."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - NVML raises NotSupported & co. per field; a missing field is None
        return None


def nvml_text(value):
    """An NVML string (``bytes`` from older pynvml releases) as ``str``."""
    return value.decode() if isinstance(value, bytes) else value


def read_sample(nvml, handle) -> dict:
    """One sample from NVML (fields a GPU does not support are None): clocks (MHz), temperature
    (°C), power (W: instantaneous, and NVML's 1 s average) and its limit, utilisation (%), the
    clock-event reason bitmask, and the cumulative power and thermal violation counters (ns,
    :data:`VIOLATION_POLICIES`)."""
    util = nvml_value(nvml.nvmlDeviceGetUtilizationRates, handle)
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    power = nvml_value(nvml.nvmlDeviceGetPowerUsage, handle)
    limit = nvml_value(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    violations = {}
    status_fn = getattr(nvml, "nvmlDeviceGetViolationStatus", None)
    for key, (constant, default) in VIOLATION_POLICIES.items():
        status = nvml_value(status_fn, handle, getattr(nvml, constant, default)) if status_fn else None
        violations[key] = getattr(status, "violationTime", None)
    return {
        "sm_clock_mhz": nvml_value(nvml.nvmlDeviceGetClockInfo, handle, getattr(nvml, "NVML_CLOCK_SM", 1)),
        "memory_clock_mhz": nvml_value(nvml.nvmlDeviceGetClockInfo, handle, getattr(nvml, "NVML_CLOCK_MEM", 2)),
        "temperature_c": nvml_value(nvml.nvmlDeviceGetTemperature, handle, getattr(nvml, "NVML_TEMPERATURE_GPU", 0)),
        "power_instant_w": instant_power_w(nvml, handle),
        "power_avg_w": power / 1000.0 if power is not None else None,
        "power_limit_w": limit / 1000.0 if limit is not None else None,
        "memory_utilization_pct": getattr(util, "memory", None),
        "gpu_utilization_pct": getattr(util, "gpu", None),
        "reasons": nvml_value(reasons_fn, handle) if reasons_fn else None,
        **violations,
    }


def open_device(nvml, index: int, uuid: str | None = None):
    """``(nvml, handle)`` of the GPU with NVML's ``uuid`` (the workers' own, which their CUDA
    device reports), else of NVML's GPU ``index``, with NVML initialised: ``nvml`` a
    ``pynvml``-like module (tests pass a fake), by default ``pynvml`` itself. The caller shuts
    NVML down.

    Raises:
        ImportError: pynvml is not installed; whatever NVML raises (no driver, no such GPU).
    """
    if nvml is None:
        import pynvml as nvml  # noqa: PLC0415 - optional dependency (nvidia-ml-py)
    nvml.nvmlInit()
    if uuid:
        return nvml, nvml.nvmlDeviceGetHandleByUUID(uuid)
    return nvml, nvml.nvmlDeviceGetHandleByIndex(index)


class TelemetrySampler:
    """Samples NVML on a background thread; never raises when NVML or a GPU is missing.

    ``TelemetrySampler(device_index=0, interval_s=0.1)``; ``start()``, ``set_side("base"|"head"|None)``,
    ``stop()``, ``summary()`` (``{"available": False, "reason"}`` when NVML could not start).
    ``nvml`` may be given (a module-like object) for tests; by default ``pynvml`` is imported.
    """

    def __init__(self, device_index: int = 0, interval_s: float = 0.1, *, nvml=None,
                 clock=time.monotonic, device_uuid: str | None = None):
        self.device_index = device_index
        #: the workers' GPU as NVML names it (runner.devices.cuda.nvml_uuid); wins over the index
        self.device_uuid = device_uuid
        self.interval_s = interval_s
        self._nvml = nvml
        self._clock = clock
        self._samples: list[dict] = []
        #: the energy counter each time the side changed (:func:`.energy.side_energy`)
        self._marks: list[dict] = []
        self._side: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle = None
        self._reason: str | None = "not started"
        self._device_name = None
        self._driver = None

    def start(self) -> "TelemetrySampler":
        """Initialise NVML and start sampling; on any failure record why and do nothing."""
        try:
            nvml, self._handle = open_device(self._nvml, self.device_index, self.device_uuid)
            self._nvml = nvml
            self._device_name = nvml_text(nvml_value(nvml.nvmlDeviceGetName, self._handle))
            self._driver = nvml_text(nvml_value(nvml.nvmlSystemGetDriverVersion))
        except ImportError:
            self._reason = "pynvml is not installed (pip install nvidia-ml-py)"
            return self
        except Exception as exc:  # noqa: BLE001 - no driver, no GPU, no permission: record, never fail
            self._reason = f"NVML unavailable: {str(exc) or type(exc).__name__}"
            self._handle = None
            return self
        self._reason = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="perfgate-telemetry", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.interval_s)

    def sample_once(self) -> None:
        """Take one sample now (the thread calls this every ``interval_s``)."""
        if self._handle is None:
            return
        sample = read_sample(self._nvml, self._handle)
        with self._lock:
            sample["t"] = self._clock()
            sample["side"] = self._side
            self._samples.append(sample)

    def set_side(self, side: str | None) -> None:
        """Attribute the following samples, and the energy from now to the next change, to
        ``"base"``, ``"head"`` or nobody (None)."""
        if side == self._side:
            return
        energy = energy_mj(self._nvml, self._handle)
        with self._lock:
            self._side = side
            self._marks.append({"t": self._clock(), "side": side, "energy_mj": energy})

    def stop(self) -> None:
        """Stop sampling, close the running side's energy window, and shut NVML down
        (idempotent)."""
        if self._thread is not None:
            self.set_side(None)
            self._stop.set()
            self._thread.join(timeout=5 * self.interval_s + 1)
            self._thread = None
            nvml_value(self._nvml.nvmlShutdown)

    @property
    def samples(self) -> list[dict]:
        with self._lock:
            return list(self._samples)

    def summary(self) -> dict:
        """``environment.telemetry`` (see :func:`summarize_samples`)."""
        if self._reason is not None:
            return {"available": False, "reason": self._reason}
        with self._lock:
            marks = list(self._marks)
        return summarize_samples(self.samples, device_name=self._device_name, driver=self._driver,
                                 interval_s=self.interval_s, marks=marks)
