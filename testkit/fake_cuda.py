"""A stand-in for ``torch`` with a simulated CUDA device, for the timer's tests and the GPU
acceptance's ``--dry-run`` on machines without a GPU.

It keeps a log of every call (``log``) and simulates the two clocks that matter for timing: the
host's (microseconds of Python, launches and waits) and each stream's (when its queued work
ends). What a call costs is set on the instance: ``launch_us`` the host's cost of a launch or an
event record, ``sync_us`` the host's round trip of a synchronisation (the wait's return), and
each kernel's own duration is given when it is launched (:meth:`FakeTorch.kernel`). Events
record the current stream's time when they run on it, so an interval includes the GPU idling
while the host waited — as real CUDA events do.

Only what :class:`runner.worker.sampling.Timer` and the acceptance use is there: ``cuda.Event``
(``record``, ``synchronize``, ``elapsed_time`` in milliseconds), ``cuda.synchronize``,
``cuda.Stream``/``cuda.stream``/``current_stream``/``wait_stream``,
``cuda.get_device_properties`` (``L2_cache_size``), ``cuda.current_device``,
``cuda.reset_peak_memory_stats``/``max_memory_allocated``/``max_memory_reserved``/``empty_cache``
(the caching allocator's segments simulated as 2 MiB blocks, :data:`SEGMENT`), ``cuda.is_available``,
``torch.empty`` (a buffer whose ``zero_`` is a kernel), ``torch.int8``; and what the worker's
``env`` and fork checks read: ``cuda.get_device_name``, ``cuda.get_device_capability``,
``cuda.is_initialized`` (``initialised``: torch starts CUDA lazily, on its first CUDA call; set it),
``torch.__version__``, ``torch.version.cuda``/``hip`` (a ROCm build: ``cuda`` None, ``hip`` set),
``get_num_threads``/``get_num_interop_threads``.
"""

from __future__ import annotations

import contextlib
import sys
import types

#: The simulated caching allocator reserves memory in segments of this many bytes.
SEGMENT = 2 * 2**20


def _segments(nbytes: int) -> int:
    return -(-nbytes // SEGMENT) * SEGMENT


class FakeStream:
    """One CUDA stream: ``ready`` is when its queued work ends (device µs)."""

    def __init__(self, torch: "FakeTorch", name: str):
        self.torch, self.name, self.ready = torch, name, 0.0

    def wait_stream(self, other: "FakeStream") -> None:
        self.torch.log.append(f"{self.name} waits for {other.name}")
        self.ready = max(self.ready, other.ready)


class FakeEvent:
    """``torch.cuda.Event``: records the current stream's time when it runs there."""

    def __init__(self, torch: "FakeTorch", enable_timing: bool = False):
        self.torch, self.at, self.name = torch, None, f"event{torch.events}"
        torch.events += 1

    def record(self, stream: FakeStream | None = None) -> None:
        t = self.torch
        stream = stream or t.current
        t.host += t.launch_us
        stream.ready = max(stream.ready, t.host)
        self.at = stream.ready
        t.log.append(f"record {self.name}")

    def synchronize(self) -> None:
        t = self.torch
        t.host = max(t.host, self.at) + t.sync_us
        t.log.append(f"wait {self.name}")

    def elapsed_time(self, other: "FakeEvent") -> float:
        """Milliseconds from this event to ``other``."""
        return (other.at - self.at) / 1000.0


class FakeBuffer:
    """``torch.empty(n, dtype=torch.int8, device=...)``: zeroing it, or summing it, is a kernel
    of ``flush_us``."""

    def __init__(self, torch: "FakeTorch", size: int):
        self.torch, self.size = torch, size

    @property
    def nbytes(self) -> int:  # torch.Tensor.nbytes of an int8 buffer
        return self.size

    def zero_(self) -> "FakeBuffer":
        self.torch.kernel(self.torch.flush_us, name="flush")
        return self

    def sum(self) -> "FakeBuffer":
        """A read of the whole buffer into one scalar: a kernel of ``flush_us`` too."""
        self.torch.kernel(self.torch.flush_us, name="read flush")
        return self


class FakeTorch(types.SimpleNamespace):
    """``torch`` with a simulated CUDA device; see the module docstring.

    Args:
        launch_us: host µs per launch or event record.
        sync_us: host µs a synchronisation takes to return after the device is idle.
        flush_us: device µs of zeroing the L2-flush buffer.
        l2_bytes: the device's ``L2_cache_size`` (None: the property is missing).
    """

    int8 = "int8"
    __version__ = "2.13.0"

    def __init__(self, launch_us: float = 2.0, sync_us: float = 8.0, flush_us: float = 30.0,
                 l2_bytes: int | None = 50 * 2**20):
        super().__init__()
        self.launch_us, self.sync_us, self.flush_us, self.l2_bytes = launch_us, sync_us, flush_us, l2_bytes
        self.log: list[str] = []
        self.host = 0.0
        self.events = 0
        self.allocated = self.peak = 0
        self.reserved = self.peak_reserved = 0
        self.buffers: list[FakeBuffer] = []
        self.initialised = False
        self.version = types.SimpleNamespace(cuda="12.4", hip=None)
        self.default = FakeStream(self, "stream0")
        self.current = self.default
        self.streams = [self.default]
        self.cuda = types.SimpleNamespace(
            Event=lambda enable_timing=False: FakeEvent(self, enable_timing),
            synchronize=self._synchronize, is_available=lambda: True, current_device=lambda: 0,
            get_device_properties=self._properties, reset_peak_memory_stats=self._reset_peak,
            max_memory_allocated=lambda: self.peak, max_memory_reserved=lambda: self.peak_reserved,
            empty_cache=self._empty_cache, Stream=self._new_stream, stream=self._use_stream,
            current_stream=lambda device=None: self.current,
            is_initialized=lambda: self.initialised, get_device_name=lambda device=None: "Fake GPU",
            get_device_capability=lambda device=None: (9, 0))

    def manual_seed(self, seed: int) -> None:
        """``torch.manual_seed``: seeds the CPU's and every device's generator (host work only,
        no launch; the worker seeds before each set-up and output call)."""
        self.seed = seed

    # -- the device, as a benchmark drives it ---------------------------------------------------
    def kernel(self, us: float, *, stream: FakeStream | None = None, name: str = "kernel") -> None:
        """Launch a kernel of ``us`` device µs on ``stream`` (default: the current one)."""
        stream = stream or self.current
        self.host += self.launch_us
        stream.ready = max(stream.ready, self.host) + us
        self.log.append(f"{name} on {stream.name}")

    def allocate(self, nbytes: int) -> None:
        """The caching allocator hands out ``nbytes`` (they stay allocated until :meth:`free`)."""
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)
        self.reserved = max(self.reserved, _segments(self.allocated))
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def free(self, nbytes: int) -> None:
        """``nbytes`` go back to the cache (still reserved)."""
        self.allocated -= nbytes

    # -- torch.cuda -------------------------------------------------------------------------------
    def _synchronize(self) -> None:
        self.host = max([self.host] + [s.ready for s in self.streams]) + self.sync_us
        self.log.append("synchronize device")

    def _properties(self, index: int):
        props = types.SimpleNamespace(name="Fake GPU", total_memory=80 * 2**30)
        if self.l2_bytes is not None:
            props.L2_cache_size = self.l2_bytes
        return props

    def _reset_peak(self) -> None:
        self.peak = self.allocated
        self.peak_reserved = self.reserved
        self.log.append("reset peak memory")

    def _empty_cache(self) -> None:
        self.reserved = _segments(self.allocated)
        self.log.append("empty cache")

    def _new_stream(self, device=None) -> FakeStream:
        stream = FakeStream(self, f"stream{len(self.streams)}")
        self.streams.append(stream)
        return stream

    @contextlib.contextmanager
    def _use_stream(self, stream: FakeStream):
        before, self.current = self.current, stream
        try:
            yield stream
        finally:
            self.current = before

    # -- torch --------------------------------------------------------------------------------------
    def get_num_threads(self) -> int:
        return 1

    def get_num_interop_threads(self) -> int:
        return 1

    def empty(self, size: int, dtype=None, device=None) -> FakeBuffer:
        buf = FakeBuffer(self, int(size))
        self.buffers.append(buf)
        self.allocate(int(size))
        self.log.append(f"allocate {int(size)} bytes")
        return buf


@contextlib.contextmanager
def installed(fake: FakeTorch):
    """``import torch`` gives ``fake`` inside the block (and the real one, if any, after it)."""
    saved = sys.modules.get("torch")
    sys.modules["torch"] = fake
    try:
        yield fake
    finally:
        if saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = saved
