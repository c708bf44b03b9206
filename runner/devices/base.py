"""The protocol a device module satisfies (:data:`runner.devices.REGISTRY`).

The worker (:mod:`runner.worker`) asks its device for everything that differs between vendors:
whether it can run here, what it is, how to wait for it, how to time on it, its memory peaks,
its L2 flush and whether its runtime is already started (a fork hazard). The structure of the
timing (when to synchronise, one event pair per sample, the cold-cache loop) stays in
:mod:`runner.worker.sampling`; a device supplies the calls.
"""

from __future__ import annotations

from typing import Any, Protocol


class Event(Protocol):
    """One timing event on the device's current stream, as
    ``torch.cuda.Event(enable_timing=True)``."""

    def record(self) -> None:
        """Enqueue the event on the current stream: it takes the stream's time when it runs."""

    def synchronize(self) -> None:
        """Wait on the host until the event has run."""

    def elapsed_time(self, other: "Event") -> float:
        """Milliseconds from this event to ``other`` (both recorded and run)."""


class Device(Protocol):
    """One vendor's device, as the worker drives it.

    Attributes:
        name: the config's ``device`` value, the device type in torch's device strings (``cuda``,
            ``cuda:1``), ``environment.device`` and a device memory ``kind`` in results.json.
        title: the runtime's name in messages ("CUDA initialised").
        device_memory: the device has memory of its own whose allocator keeps peaks: the peak memory
            of a call is read there (absolute: the set-up's garbage is collected in full first);
            False: the host's allocations are measured instead (:mod:`runner.worker.measures`).
        profiler_activity: the ``torch.profiler.ProfilerActivity`` member profiled besides the
            CPU's (``"CUDA"``); None: the CPU's alone.
        allocator_env: the environment variable that configures the device's caching allocator,
            the same string for both workers (the parent sets it,
            :func:`runner.pipeline.machine.conditions.cuda_allocator_env`); None: none.
        event: makes one :class:`Event`; None where samples are timed on the host's clock
            (``time.perf_counter_ns`` around the calls).
    """

    name: str
    title: str
    device_memory: bool
    profiler_activity: str | None
    allocator_env: str | None
    event: Any

    def unavailable(self) -> str | None:
        """Why this device cannot run benchmarks in this process ("torch is not installed in this
        environment"), None when it can. May import torch."""

    def initialised(self) -> bool:
        """Whether this process has started the device's runtime (it does not survive ``fork``).
        Reads ``sys.modules`` only: never imports torch."""

    def torch_build(self, torch: Any) -> dict:
        """What the installed ``torch`` (None: not installed) was built with for this vendor,
        recorded whatever the device: keys of results.json's ``environment`` (``{cuda}``)."""

    def facts(self) -> dict:
        """The device this process runs on: ``device_name`` and beside it what the vendor tells
        (``compute_capability``, ``driver``); keys of results.json's ``environment``."""

    def synchronize(self) -> None:
        """Wait on the host until every stream's queued work has ended."""

    def l2_flush_buffer(self, device: str) -> Any:
        """A buffer twice the device's L2 cache on ``device`` (a torch device string), whose
        ``zero_()`` evicts the cache; None where there is nothing to flush."""

    def reset_peak_memory(self) -> None:
        """Start the allocator's peak statistics afresh (from what is allocated now)."""

    def peak_memory(self) -> int | None:
        """Peak bytes allocated on the device since the last reset; None without device memory."""

    def reserved_peak(self) -> int | None:
        """Peak bytes the caching allocator reserved since the last reset; None without device
        memory."""

    def empty_cache(self) -> None:
        """Give the caching allocator's unused blocks back to the device."""
