"""The SM clock a GPU sustains under load, and what a compare does with it (pure; GPU review #8).

``lock_clocks`` locked the *default application clock*, which on A100/H100-class parts equals or
nearly equals the maximum boost clock: a power-heavy kernel cannot hold it at TDP, so its SM clock
sits below the lock (``sw_power_cap``) and every round is flagged. Triton's ``set_gpu_clock``
locks an A100 at 1350 MHz, not its 1410 MHz maximum, for that reason. The lock target is now a
*sustained* clock: the p10 (:data:`QUANTILE`) of the SM clock NVML reads during a
:data:`SOAK_SECONDS` bf16 GEMM soak (:mod:`runner.worker.soak`), the supported clock at or below
it, measured once per GPU (by its UUID) by ``perfgate doctor`` and cached in perfgate's state
folder (:func:`cache_record`, :func:`from_cache`); :func:`runner.pipeline.machine.clock_plan.plan`
locks to it.

A lock is judged by what it holds under load, not by what NVML reads back at idle: when a
benchmark's own SM clock under load misses the locked clock (:func:`lock_holds`), its rounds are
judged against the benchmark's own clock under load instead (:func:`round_reference`), never a
run-wide one, which another benchmark's power level dominates.
"""

from __future__ import annotations

import math
import statistics

#: Seconds of the bf16 GEMM soak the sustained clock is read during.
SOAK_SECONDS = 10.0
#: The quantile of the SM clock under the soak taken as the sustained clock.
QUANTILE = 0.10
#: Fewest SM clock readings under load (NVML read every 0.1 s) a sustained clock is taken from.
MIN_READINGS = 20
#: A benchmark's median SM clock under load within this fraction of the locked clock: the lock
#: holds (the 2 % a round's clock may move, :data:`.telemetry.ROUND_CLOCK_TOLERANCE`).
HOLD_TOLERANCE = 0.02
#: The cache record's version (a record of another version is measured again).
CACHE_VERSION = 1
#: A clock outside these MHz is no SM clock (a corrupt or hand-edited cache).
PLAUSIBLE_MHZ = (100, 5000)


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear between the order statistics, numpy's default)."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    lo, hi = math.floor(at), math.ceil(at)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (at - lo)


def under_load(samples: list[dict]) -> list[float]:
    """The SM clocks (MHz) of the telemetry samples taken while the GPU was busy: not idle
    (``gpu_idle`` clock-event reason, bit 0x1) and with some utilisation where NVML says."""
    out = []
    for s in samples:
        mhz, reasons, util = s.get("sm_clock_mhz"), s.get("reasons"), s.get("gpu_utilization_pct")
        if not mhz or (isinstance(reasons, int) and reasons & 0x1) or util == 0:
            continue
        out.append(float(mhz))
    return out


def sustained_mhz(samples: list[dict], supported: list[int] | None = None) -> int | None:
    """The sustained SM clock from a soak's telemetry samples: the :data:`QUANTILE` of the SM
    clock under load, then the highest supported clock at or below it (a lock above what the GPU
    held would not hold); None with fewer than :data:`MIN_READINGS` readings under load."""
    clocks = under_load(samples)
    if len(clocks) < MIN_READINGS:
        return None
    p = quantile(clocks, QUANTILE)
    below = [mhz for mhz in supported or [] if mhz <= p]
    return int(max(below)) if below else int(p)


def cache_record(uuid: str, mhz: int, readings: int, measured_at: float) -> dict:
    """What the state folder keeps for one GPU (``sustained-<uuid>.json``)."""
    return {"version": CACHE_VERSION, "uuid": uuid, "sm_mhz": int(mhz), "quantile": QUANTILE,
            "soak_s": SOAK_SECONDS, "readings": int(readings), "measured_at": measured_at}


def from_cache(record: object, uuid: str | None) -> int | None:
    """The cached sustained clock of the GPU ``uuid``, or None: no record, another GPU's, another
    version's, or a value that is no SM clock (the file is only read, never trusted)."""
    if not uuid or not isinstance(record, dict) or record.get("version") != CACHE_VERSION:
        return None
    mhz = record.get("sm_mhz")
    if record.get("uuid") != uuid or isinstance(mhz, bool) or not isinstance(mhz, int):
        return None
    return mhz if PLAUSIBLE_MHZ[0] <= mhz <= PLAUSIBLE_MHZ[1] else None


def lock_holds(locked_mhz: float | None, clocks: list[float],
               tolerance: float = HOLD_TOLERANCE) -> bool | None:
    """Whether a lock held under load: the median of the SM clocks read under load (``clocks``,
    :func:`under_load`) within ``tolerance`` of ``locked_mhz``; None when there is no lock or no
    reading to judge it by."""
    if not locked_mhz or not clocks:
        return None
    return abs(statistics.median(clocks) / locked_mhz - 1) <= tolerance


def round_reference(locked_mhz: float | None, clocks: list[float]) -> float | None:
    """The SM clock one benchmark's rounds are judged against (MHz): the locked clock where the
    lock held under this benchmark's load, else the benchmark's own median under load (``clocks``:
    its samples under load, :func:`under_load`), never the run's; None without either."""
    if lock_holds(locked_mhz, clocks) is not False and locked_mhz:
        return float(locked_mhz)
    return float(statistics.median(clocks)) if clocks else None


def in_windows(samples: list[dict], windows: list[tuple[float, float]]) -> list[dict]:
    """The samples taken inside one of ``windows`` (``(start, end)`` in the samples' clock): one
    benchmark's, for its own reference clock."""
    return [s for s in samples if s.get("t") is not None
            and any(t0 <= s["t"] <= t1 for t0, t1 in windows)]


def needs_soak(gpu: dict) -> bool:
    """Whether ``perfgate doctor`` soaks this GPU now (:data:`SOAK_SECONDS`): NVML names it (a
    UUID), no sustained clock is cached for it, and nothing else runs on it (a soak beside another
    process would read that process's power, and slow it)."""
    idle = not gpu.get("processes") and (gpu.get("utilization_pct") or 0) <= 5
    return bool(gpu.get("uuid")) and gpu.get("sustained_clock_mhz") is None and idle
