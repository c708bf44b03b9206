"""What keeps a fork server's children independent: the hazards that make forking unsafe or
share data between process pairs (threads, a device's runtime such as CUDA, tensors held at
import), and a random heap offset per child (where the allocator lets it move: :func:`shift_heap`).
Used by :mod:`.serve`."""

from __future__ import annotations

import gc
import os
import sys
import warnings

from .. import devices


def thread_count() -> int:
    """Threads of this process (``/proc/self/task``; 1 where that is not readable)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


#: Tensor/array data the fork server may hold after importing the benchmark files (bytes).
#:
#: Why: data a module allocates at import (model weights, a lookup table) is shared, copy-on-write,
#: by every child of the server, at the same physical pages for the whole compare; its placement
#: in the caches then is a property of the server, the same in every process pair, and no number
#: of pairs reveals it. Measured: an identical loss step reading 51 MB of module-level weights got
#: 2 false verdicts (+1.5 %, +2.1 %) in 10 A/A compares with the weights in the server, none with
#: each child importing (and allocating) them itself.
PRELOAD_MAX_DATA_BYTES = 2**20


def held_array_bytes() -> int:
    """Bytes of torch tensor storage and numpy array data this process holds (each buffer once)."""
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    seen: set[int] = set()
    total = 0

    def add(key: int, nbytes: int) -> None:
        nonlocal total
        if key not in seen:
            seen.add(key)
            total += nbytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on torch's deprecated lazy aliases warns
        for obj in gc.get_objects():
            if torch is not None and isinstance(obj, torch.Tensor):
                try:
                    storage = obj.untyped_storage()
                    add(storage.data_ptr(), storage.nbytes())
                except Exception:  # noqa: BLE001 - meta/sparse tensors have no plain storage
                    continue
            elif np is not None:
                # numpy arrays are not tracked by the collector: find them as referents
                for ref in gc.get_referents(obj):
                    if isinstance(ref, np.ndarray):
                        add(ref.__array_interface__["data"][0], ref.nbytes)
    return total


def fork_hazards(threads_before: int, data_check: bool = False) -> list[str]:
    """What would make a forked child of this process unsafe or its measurements shared: threads
    started since ``threads_before`` was counted, a device's runtime initialised ("CUDA
    initialised", :func:`runner.devices.initialised`), and (``data_check``) more than
    :data:`PRELOAD_MAX_DATA_BYTES` of tensor/array data. Empty when forking is safe."""
    hazards = []
    now = thread_count()
    if now > threads_before:
        hazards.append(f"{now - threads_before} thread(s) started")
    hazards += [f"{title} initialised" for title in devices.initialised()]
    if data_check:
        held = held_array_bytes()
        if held > PRELOAD_MAX_DATA_BYTES:
            hazards.append(f"{held / 2**20:.1f} MiB of tensors/arrays allocated at import (would be shared by "
                           "every process pair)")
    return hazards


#: Range of the random offset :func:`shift_heap` puts before a child's own heap allocations (bytes).
HEAP_SHIFT_MAX = 1 << 16


def shift_heap() -> int:
    """Move where this process's next heap allocations land by a random multiple of 64 bytes
    (below :data:`HEAP_SHIFT_MAX`), and return the size of the block that moved them.

    Why: every child of a fork server starts from the server's heap, with address-space
    randomisation off, so a benchmark's temporaries sit at the same addresses in every process
    pair of a side — and at slightly other ones on the other side wherever the revisions' code
    differs (a changed constant is enough). Alignment against pages and cache sets then differs
    between the sides for the whole compare: a layout effect of the change, not of the code
    measured, that no number of pairs reveals (measured: an untouched 25 MB loss step read +1.0 %
    and +1.1 % in 2 of 10 compares, with intervals excluding nothing but narrow). A random offset
    per process makes the layout vary from pair to pair, so its effect becomes spread the interval
    carries instead of a bias (layout randomisation: Curtsinger & Berger, "Stabilizer:
    statistically sound performance evaluation", ASPLOS 2013). The block is never freed.

    Where it moves nothing: the block (256–320 KiB) is carved from the heap only where glibc's
    mmap threshold lies above it (``allocator = "steady"``, or a larger exported
    ``MALLOC_MMAP_THRESHOLD_``). Under the default ``fresh`` (threshold 128 KiB) it is mapped
    instead, and every child of a server put its heap blocks and its large temporaries at the
    same addresses (measured 2026-12-07: 64 KiB and 1 MiB tensors in five children). There the
    layout varies by server only (:mod:`runner.pipeline.machine.layouts`), and the pairs of one
    server count as one replicate once layouts repeat
    (:func:`runner.pipeline.timing.evidence.by_layout`).
    """
    import ctypes
    import secrets

    # Above any free block the server left (256 KiB), so it is carved from the top of the heap,
    # where a benchmark's large temporaries come from too.
    size = (1 << 18) + secrets.randbelow(HEAP_SHIFT_MAX // 64) * 64
    if size:
        try:
            libc = ctypes.CDLL(None)
            libc.malloc.restype = ctypes.c_void_p
            libc.malloc(ctypes.c_size_t(size))
        except (OSError, AttributeError):  # no C library to ask (not Linux/glibc): nothing to shift
            return 0
    return size
