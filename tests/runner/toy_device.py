"""A device that exists only in the tests: the ``toy`` accelerator, with a simulated clock and
allocator and no torch.

It is everything a new vendor needs — this module and one line in ``runner.devices.REGISTRY``
(the test adds that line, with a fresh :class:`ToyDevice` each time). A benchmark on it asks the
registry for its device and runs kernels on it (:meth:`ToyDevice.run`): each advances the
device's clock by its microseconds and holds its bytes while it runs. So what the worker reports
can only have come from the toy: a sample's seconds per call are the kernels' simulated time (not
the host's), its peak memory the toy allocator's. ``log`` keeps every call the worker made, in
order.
"""

from __future__ import annotations

from typing import Any


class ToyEvent:
    """An event on the toy's one stream: takes the device's clock when recorded."""

    def __init__(self, device: "ToyDevice"):
        self.device, self.at = device, None

    def record(self) -> None:
        self.at = self.device.clock_us
        self.device.log.append("record")

    def synchronize(self) -> None:
        self.device.log.append("wait event")

    def elapsed_time(self, other: "ToyEvent") -> float:
        """Milliseconds from this event to ``other``."""
        return (other.at - self.at) / 1000.0


class ToyL2Flush:
    """The buffer the timer zeroes to evict the toy's L2 (a toy with an L2): each ``zero_()`` is a
    flush kernel of :data:`FLUSH_US` device µs on the toy's one stream."""

    FLUSH_US = 40.0

    def __init__(self, device: "ToyDevice"):
        self.device = device

    def zero_(self) -> None:
        self.device.clock_us += self.FLUSH_US
        self.device.log.append("flush")


class ToyDevice:
    """:class:`runner.devices.base.Device` for the toy accelerator."""

    name = "toy"
    title = "Toy runtime"
    device_memory = True
    profiler_activity = None
    allocator_env = "TOY_ALLOC_CONF"

    def __init__(self):
        self.clock_us = 0.0
        self.allocated = self.peak = self.reserved = 0
        self.started = False
        self.log: list[str] = []
        #: whether the toy has an L2 cache for the timer to flush (``cold_cache``); off by default
        self.l2 = False

    # -- what a benchmark on the toy does -------------------------------------------------------
    def run(self, us: float, nbytes: int = 0) -> None:
        """A kernel of ``us`` device µs that holds ``nbytes`` while it runs."""
        self.started = True
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)
        self.reserved = max(self.reserved, self.allocated)
        self.clock_us += us
        self.allocated -= nbytes
        self.log.append("kernel")

    # -- the device protocol ---------------------------------------------------------------------
    def unavailable(self) -> str | None:
        return None

    def initialised(self) -> bool:
        return self.started

    def torch_build(self, torch: Any) -> dict:
        return {}

    def facts(self) -> dict:
        return {"device_name": "Toy accelerator", "driver": "toy 1.0"}

    def event(self) -> ToyEvent:
        return ToyEvent(self)

    def synchronize(self) -> None:
        self.log.append("synchronize")

    def l2_flush_buffer(self, device: str) -> ToyL2Flush | None:
        return ToyL2Flush(self) if self.l2 else None

    def reset_peak_memory(self) -> None:
        self.peak = self.allocated
        self.log.append("reset peak")

    def peak_memory(self) -> int:
        return self.peak

    def reserved_peak(self) -> int:
        return self.reserved

    def empty_cache(self) -> None:
        self.reserved = self.allocated
        self.log.append("empty cache")
