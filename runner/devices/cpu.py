"""The CPU: always there, timed on the host's clock, nothing of its own to wait for, flush or start.

Its memory is the process's: :mod:`runner.worker.measures` reads the host's allocations (torch's
CPU allocator and tracemalloc), so the peak-memory calls here answer None.
"""

from __future__ import annotations

from typing import Any


class Cpu:
    """:class:`runner.devices.base.Device` for the host's CPUs."""

    name = "cpu"
    title = "CPU"
    device_memory = False
    profiler_activity = None
    allocator_env = None
    event = None  # samples are timed with time.perf_counter_ns

    def unavailable(self) -> str | None:
        return None

    def initialised(self) -> bool:
        return False

    def torch_build(self, torch: Any) -> dict:
        return {}

    def facts(self) -> dict:
        return {}  # device_name: the worker's CPU model, already there

    def synchronize(self) -> None:
        pass

    def l2_flush_buffer(self, device: str) -> None:
        return None

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory(self) -> None:
        return None

    def reserved_peak(self) -> None:
        return None

    def empty_cache(self) -> None:
        pass


DEVICE = Cpu()
