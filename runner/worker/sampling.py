"""Timing inside the worker: warm-up, inner-loop calibration, one sample.

A *sample* is ``number`` back-to-back calls of the benchmark's callable, timed as a whole and
divided by ``number`` (seconds per call). ``number`` is calibrated in each side's first process
so that one sample lasts at least ``min_sample_time`` seconds: long enough that timer
resolution and per-sample overhead vanish, short enough to give many samples per second; the
parent then chooses the count each side samples with (shared while the sides are within 4× of
each other, :func:`runner.pipeline.timing.schedule.calls_per_sample`). Each :class:`Sample` also
records what the process got meanwhile (CPU time, involuntary context switches, the other CPUs'
load, steal), so the parent can tell a round another task disturbed.

The device's calls come from its module (:mod:`runner.devices`); the structure is here.

* CPU (a device without events): ``time.perf_counter_ns`` around the loop.
* A device with events (CUDA: ``torch.cuda.Event(enable_timing=True)``): an event pair recorded
  around the loop on the current stream; before the end event the device is synchronised, so work
  the callable put on *other* streams (a side stream for copies, two streams competing for memory
  bandwidth) is inside the interval too — an end event on the current stream alone would close
  before that work ends. The synchronisation adds a few microseconds per sample (not per call),
  the same on both sides. The device's peak allocated memory after a reset (CUDA:
  ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``) gives the peak memory of
  the sample.
* The same with ``cold_cache``: as Triton's ``do_bench`` does, a buffer twice the L2 size is
  zeroed (or read, :data:`runner.protocol.L2_FLUSHES`: a write's dirty lines are written back
  during the next call's interval) before every call and each call gets its own pair of events
  (``flush, start, call, end`` on the current stream), all enqueued without waiting; the device is
  synchronised once, after the last call, and the sample is the mean of the per-call intervals. A
  host synchronisation per call (as this timer did before) put the host's round trip — the wait
  returning, then the end event's submission, while the GPU idles — inside every interval:
  microseconds, the size of a small kernel itself (``python -m evaluation.gpu_acceptance``
  measures the harness's overhead per call on a GPU). So, as with ``do_bench``, a call's work on
  another stream is timed only when the call joins that stream back to the current one
  (``wait_stream``) before it returns; work it leaves running elsewhere ends after its interval.

The garbage collector is paused during a sample (as ``timeit`` does): a collection that
lands in one side's sample would be charged to that side. It is not run before each sample:
with torch imported a full ``gc.collect()`` costs ~0.1 s, more than the sample itself; the
worker collects the young generations once after set-up instead (a full collection there cost
half of a fast benchmark's process pair). A collection the benchmark itself asks for costs what
it costs in a plain process: the forked worker unfreezes the objects its server froze
(:func:`runner.worker.serve._run_child`).
"""

from __future__ import annotations

import gc
import math
import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from .. import devices
from ..protocol import L2_FLUSH, L2_FLUSHES


@dataclass(frozen=True)
class Sample:
    """One sample: ``per_call`` seconds per call (the measurement); ``wall_s`` the seconds the
    sample lasted on the host clock; ``cpu_s`` the CPU seconds this process (all its threads) got
    meanwhile; ``switches`` the involuntary context switches it suffered meanwhile (another task
    was given its CPU; None where ``getrusage`` is missing). The last three say whether something
    else ran on the measured CPU during the sample (:func:`runner.stats.disturbed_rounds`).
    ``span_s``: with ``cold_cache``, the seconds the GPU spent on the whole sample, the flushes
    between the calls included (what :func:`calibrate` sizes a sample by); None elsewhere."""

    per_call: float
    wall_s: float
    cpu_s: float
    switches: int | None
    others_busy: float | None = None
    steal: float | None = None
    span_s: float | None = None


def cpu_ticks(path: str = "/proc/stat") -> dict[int, tuple[int, int, int]] | None:
    """Per CPU ``(busy, total, steal)`` clock ticks since boot, from ``/proc/stat`` (Linux's
    ``cpuN user nice system idle iowait irq softirq steal …`` lines); None where it cannot be read.

    ``busy`` counts everything but idle and iowait; ``steal`` is the time the hypervisor ran
    something else on that virtual CPU.
    """
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        parts = line.split()
        try:
            values = [int(v) for v in parts[1:9]]
            cpu = int(parts[0][3:])
        except (ValueError, IndexError):
            continue
        values += [0] * (8 - len(values))
        user, nice, system, idle, iowait, irq, softirq, steal = values
        total = user + nice + system + idle + iowait + irq + softirq + steal
        out[cpu] = (total - idle - iowait, total, steal)
    return out


def neighbour_load(before: dict | None, after: dict | None, own: set[int]) -> tuple[float | None, float | None]:
    """``(others_busy, steal)`` between two :func:`cpu_ticks` readings: the busy fraction of the
    CPUs outside ``own`` (what the rest of the machine did meanwhile: the parent, the runner's
    agent, a neighbour sharing caches, memory bandwidth or a physical core), and the fraction of
    ``own`` CPUs' time the hypervisor stole. None for what the readings cannot tell (too short a
    sample for a tick, no other CPU)."""
    if not before or not after:
        return None, None
    busy = total = steal = own_total = 0
    for cpu, (b1, t1, s1) in after.items():
        b0, t0, s0 = before.get(cpu, (b1, t1, s1))
        if cpu in own:
            steal += s1 - s0
            own_total += t1 - t0
        else:
            busy += b1 - b0
            total += t1 - t0
    return (busy / total if total > 0 else None), (steal / own_total if own_total > 0 else None)


def _usage() -> tuple[int] | None:
    """``(involuntary context switches,)`` of this process so far, or None without ``resource``."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    return (resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw,)


class Timer:
    """Times ``number`` calls of ``fn`` on one device; see the module docstring.

    Args:
        device: a registered device's torch device string (:mod:`runner.devices`): ``cpu``,
            ``cuda``, ``cuda:N``.
        cold_cache: flush the device's L2 cache before every call (ignored where there is none
            to flush: the CPU).
        flush: how (:data:`runner.protocol.L2_FLUSHES`): ``zero`` writes the buffer, ``read``
            sums it into one scalar.

    Raises:
        KeyError: ``device`` is no registered device.
        ValueError: ``flush`` is no flush kind.
    """

    def __init__(self, device: str, cold_cache: bool = False, flush: str = L2_FLUSH):
        if flush not in L2_FLUSHES:
            raise ValueError(f"flush must be one of {', '.join(L2_FLUSHES)} (got {flush!r})")
        self.device, self.flush = device, flush
        self.backend = devices.get(device)
        self.own_cpus = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
        self._flush_buf = self.backend.l2_flush_buffer(device) if cold_cache else None
        self.cold_cache = self._flush_buf is not None
        #: bytes of the flush buffer, perfgate's own, left out of the benchmark's peak memory
        self._flush_bytes = int(getattr(self._flush_buf, "nbytes", 0) or 0)
        #: calls of the benchmark this timer has made (every sample's, calibration's included)
        self.calls = 0

    def time(self, fn: Callable[[], object], number: int) -> float:
        """Seconds per call over ``number`` calls (one sample)."""
        return self.sample(fn, number).per_call

    def sample(self, fn: Callable[[], object], number: int) -> "Sample":
        """One sample of ``number`` calls, with what the process received meanwhile (:class:`Sample`)."""
        was_enabled = gc.isenabled()
        gc.disable()
        self.calls += number
        try:
            ticks0 = cpu_ticks()
            usage0 = _usage()
            c0 = time.process_time_ns()
            w0 = time.perf_counter_ns()
            span = None
            if self.backend.event is None:
                for _ in range(number):
                    fn()
                w1 = time.perf_counter_ns()
                per_call = (w1 - w0) * 1e-9 / number
            else:
                per_call, span = self._time_with_events(fn, number)
                w1 = time.perf_counter_ns()
            c1 = time.process_time_ns()
            usage1 = _usage()
            others, steal = neighbour_load(ticks0, cpu_ticks(), self.own_cpus)
            return Sample(per_call, (w1 - w0) * 1e-9, (c1 - c0) * 1e-9,
                          (usage1[0] - usage0[0]) if usage0 and usage1 else None, others, steal, span)
        finally:
            if was_enabled:
                gc.enable()

    def _time_with_events(self, fn, number: int) -> tuple[float, float | None]:
        """``(seconds per call, the sample's span on the device with cold cache else None)``."""
        backend = self.backend
        backend.synchronize()
        if self.cold_cache:
            return self._time_cold(fn, number)
        start, end = backend.event(), backend.event()
        start.record()
        for _ in range(number):
            fn()
        backend.synchronize()  # join every stream the calls used
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / number, None

    def _time_cold(self, fn, number: int) -> tuple[float, float]:
        """Seconds per call, each call after an L2 flush and between its own events, nothing
        waited for until the last call is enqueued (module docstring; Triton's ``do_bench``), and
        the sample's whole span on the device, flushes included."""
        event = self.backend.event
        first = event()
        starts = [event() for _ in range(number)]
        ends = [event() for _ in range(number)]
        flush = self._flush_buf.sum if self.flush == "read" else self._flush_buf.zero_
        first.record()
        for start, end in zip(starts, ends):
            flush()
            start.record()
            fn()
            end.record()
        self.backend.synchronize()
        calls_ms = sum(s.elapsed_time(e) for s, e in zip(starts, ends))
        return calls_ms * 1e-3 / number, first.elapsed_time(ends[-1]) * 1e-3

    def release(self) -> None:
        """Drop what the timer holds for itself (the L2-flush buffer): after the timing, before
        the benchmark's own memory is measured (:mod:`runner.worker.measures`)."""
        self._flush_buf = None
        self.cold_cache = False
        self._flush_bytes = 0

    def reset_peak_memory(self) -> None:
        self.backend.reset_peak_memory()

    def peak_memory(self) -> int | None:
        """Peak bytes the benchmark allocated on the device since the last reset, the timer's own
        L2-flush buffer left out (it was in: +100 MB on an H100, GPU review #16); None on CPU."""
        peak = self.backend.peak_memory()
        return None if peak is None else max(0, peak - self._flush_bytes)


def calibrate(timer: Timer, fn: Callable[[], object], min_sample_time: float,
              max_number: int = 1_000_000) -> tuple[int, float]:
    """Smallest power-of-two-ish ``number`` such that one sample lasts >= ``min_sample_time``
    (its calls' time, or with ``cold_cache`` its whole span on the GPU, the flushes included: a
    call too short to time would otherwise grow the count to ``max_number``).

    Returns:
        ``(number, seconds_per_call)`` from the last calibration sample.
    """
    number = 1
    while True:
        sample = timer.sample(fn, number)
        per_call = sample.per_call
        # with cold cache the calls' time leaves the flushes out; the sample lasts its whole span
        elapsed = max(per_call * number, sample.span_s or 0.0)
        if elapsed >= min_sample_time or number >= max_number:
            return number, per_call
        if elapsed <= 0:
            number *= 10
        else:
            # Aim 20 % past the target so the next try usually lands; never more than x10.
            number = min(max_number, max(number + 1, min(number * 10, int(number * 1.2 * min_sample_time / elapsed) + 1)))


def warm_up(timer: Timer, fn: Callable[[], object], number: int, *, tolerance: float = 0.05,
            max_seconds: float = 1.0, min_samples: int = 3, fixed_samples: int | None = None,
            initial: Sequence[float] = ()) -> tuple[int, list[float]]:
    """Take samples until the last ``min_samples`` agree within ``tolerance`` (relative to their
    median), or until the next sample would end past ``max_seconds``: caches, allocators,
    autotuners and clocks settle.

    ``initial`` are samples already taken at this ``number`` (the calibration's last one): they
    count, so a benchmark whose one sample lasts longer than ``max_seconds`` (a training step of a
    second) takes no further warm-up sample beyond its first call and its calibration sample — as
    pyperf's and ``torch.utils.benchmark``'s single warm-up call. With ``fixed_samples``, take
    exactly that many samples instead (0 allowed; a later process pair of a benchmark reuses the
    count its first pair needed, so warm-up costs the same every time and no adaptive loop runs on
    a fresh process's noise).

    Returns:
        ``(calls made here, warm-up samples in seconds per call, ``initial`` first)``.
    """
    if fixed_samples is not None:
        samples = [timer.time(fn, number) for _ in range(max(0, fixed_samples))]
        return number * len(samples), samples
    start = time.perf_counter()
    samples: list[float] = list(initial)
    calls = 0
    while True:
        tail = sorted(samples[-min_samples:])
        if len(tail) == min_samples:
            mid = tail[len(tail) // 2]
            if mid > 0 and (tail[-1] - tail[0]) / mid <= tolerance:
                return calls, samples
        expected = samples[-1] * number if samples else 0.0
        if samples and time.perf_counter() - start + expected > max_seconds:
            return calls, samples
        samples.append(timer.time(fn, number))
        calls += number


def recalibrate(number: int, warm_samples: list[float], min_sample_time: float) -> int:
    """Raise ``number`` so that a sample at the warm per-call time lasts >= ``min_sample_time``.

    Args:
        number: calls per sample from :func:`calibrate`.
        warm_samples: seconds per call measured during warm-up (the last ones are steady).
        min_sample_time: seconds.

    Returns:
        ``number`` unchanged when the warm samples already last long enough, else the
        smallest count that reaches ``min_sample_time`` with 20 % margin.
    """
    if not warm_samples:
        return number
    tail = sorted(warm_samples[-3:])
    per_call = tail[len(tail) // 2]
    if per_call <= 0 or per_call * number >= min_sample_time:
        return number
    return max(number, int(math.ceil(1.2 * min_sample_time / per_call)))
