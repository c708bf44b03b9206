"""Timing inside the worker: warm-up, inner-loop calibration, one sample.

A *sample* is ``number`` back-to-back calls of the benchmark's callable, timed as a whole and
divided by ``number`` (seconds per call). ``number`` is calibrated once per benchmark and side
so that one sample lasts at least ``min_sample_time`` seconds: long enough that timer
resolution and per-sample overhead vanish, short enough to give many samples per second.

* CPU: ``time.perf_counter_ns`` around the loop.
* CUDA: ``torch.cuda.Event(enable_timing=True)`` recorded around the loop on the current
  stream; before the end event the device is synchronised, so work the callable put on *other*
  streams (a side stream for copies, two streams competing for memory bandwidth) is inside the
  interval too — an end event on the current stream alone would close before that work ends.
  The synchronisation adds a few microseconds per sample (not per call), the same on both
  sides. ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` gives the
  peak memory of the sample. With ``cold_cache``, a buffer twice the L2 size is zeroed before
  every call and only the call itself sits between the events (as Triton's ``do_bench`` does).

The garbage collector is paused during a sample (as ``timeit`` does): a collection that
lands in one side's sample would be charged to that side. It is not run before each sample:
with torch imported a full ``gc.collect()`` costs ~0.1 s, more than the sample itself; the
worker collects once after set-up instead.
"""

from __future__ import annotations

import gc
import math
import time
from typing import Callable


class Timer:
    """Times ``number`` calls of ``fn`` on one device; see the module docstring.

    Args:
        device: ``cpu`` or ``cuda`` (or ``cuda:N``).
        cold_cache: flush the GPU L2 cache before every call (ignored on CPU).
    """

    def __init__(self, device: str, cold_cache: bool = False):
        self.device = device
        self.cuda = device.startswith("cuda")
        self.cold_cache = cold_cache and self.cuda
        self._flush_buf = None
        if self.cuda:
            import torch

            self.torch = torch
            if self.cold_cache:
                props = torch.cuda.get_device_properties(torch.cuda.current_device())
                l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
                self._flush_buf = torch.empty(2 * l2, dtype=torch.int8, device=device)

    def time(self, fn: Callable[[], object], number: int) -> float:
        """Seconds per call over ``number`` calls (one sample)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            if not self.cuda:
                t0 = time.perf_counter_ns()
                for _ in range(number):
                    fn()
                return (time.perf_counter_ns() - t0) * 1e-9 / number
            return self._time_cuda(fn, number)
        finally:
            if was_enabled:
                gc.enable()

    def _time_cuda(self, fn, number: int) -> float:
        torch = self.torch
        torch.cuda.synchronize()
        if self.cold_cache:
            total_ms = 0.0
            for _ in range(number):
                self._flush_buf.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                torch.cuda.synchronize()  # join every stream the call used
                end.record()
                end.synchronize()
                total_ms += start.elapsed_time(end)
            return total_ms * 1e-3 / number
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        torch.cuda.synchronize()  # join every stream the calls used
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / number

    def reset_peak_memory(self) -> None:
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats()

    def peak_memory(self) -> int | None:
        """Peak bytes allocated by torch on the GPU since the last reset; None on CPU."""
        if self.cuda:
            return int(self.torch.cuda.max_memory_allocated())
        return None


def calibrate(timer: Timer, fn: Callable[[], object], min_sample_time: float,
              max_number: int = 1_000_000) -> tuple[int, float]:
    """Smallest power-of-two-ish ``number`` such that one sample lasts >= ``min_sample_time``.

    Returns:
        ``(number, seconds_per_call)`` from the last calibration sample.
    """
    number = 1
    while True:
        per_call = timer.time(fn, number)
        elapsed = per_call * number
        if elapsed >= min_sample_time or number >= max_number:
            return number, per_call
        if elapsed <= 0:
            number *= 10
        else:
            # Aim 20 % past the target so the next try usually lands; never more than x10.
            number = min(max_number, max(number + 1, min(number * 10, int(number * 1.2 * min_sample_time / elapsed) + 1)))


def warm_up(timer: Timer, fn: Callable[[], object], number: int, *, tolerance: float = 0.05,
            max_seconds: float = 1.0, min_samples: int = 3, fixed_samples: int | None = None) -> tuple[int, list[float]]:
    """Take samples until the last ``min_samples`` agree within ``tolerance`` (relative to their
    median), or ``max_seconds`` have passed: caches, allocators, autotuners and clocks settle.

    With ``fixed_samples``, take exactly that many samples instead (a later process pair of a
    benchmark reuses the count its first pair needed, so warm-up costs the same every time and
    no adaptive loop runs on a fresh process's noise).

    Returns:
        ``(calls_made, warm-up samples in seconds per call)``.
    """
    if fixed_samples is not None:
        samples = [timer.time(fn, number) for _ in range(max(1, fixed_samples))]
        return number * len(samples), samples
    deadline = time.perf_counter() + max_seconds
    samples: list[float] = []
    calls = 0
    while True:
        samples.append(timer.time(fn, number))
        calls += number
        tail = sorted(samples[-min_samples:])
        if len(tail) == min_samples:
            mid = tail[len(tail) // 2]
            if mid > 0 and (tail[-1] - tail[0]) / mid <= tolerance:
                return calls, samples
        if time.perf_counter() >= deadline:
            return calls, samples


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
