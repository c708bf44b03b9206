"""NVIDIA GPUs through ``torch.cuda``: events, synchronisation, the caching allocator's peaks, the
L2 size, the device's name and compute capability, the driver from NVML.

ROCm builds of torch run the same ``torch.cuda`` API (HIP behind it, ``torch.version.hip`` set,
``torch.version.cuda`` None; device strings are still ``cuda``), so an AMD GPU is this module:
its events, peaks and synchronisation are HIP's, and NVML, absent there, leaves ``driver`` None.

torch and NVML are imported inside the functions (the worker calls them; its server imported
torch already): importing this module loads neither.
"""

from __future__ import annotations

import sys
from typing import Any

#: The L2 size assumed where the device's properties do not carry ``L2_cache_size`` (bytes).
DEFAULT_L2_BYTES = 64 * 2**20


def _maps() -> str:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:  # not Linux: torch's flag is all there is
        return ""


def driver_loaded(maps: str) -> bool:
    """Whether a process's memory map (``/proc/self/maps`` text) has the CUDA driver library
    (``libcuda.so``) mapped — loaded by ``cuInit``, which is what breaks a forked child. NVML's
    own library (``libnvidia-ml.so``) and ``/dev/nvidiactl`` are not the driver: NVML-based checks
    open them and fork safely."""
    return any(line.rstrip().rsplit("/", 1)[-1].startswith("libcuda.so")
               for line in maps.splitlines())


def nvml_uuid(uuid: Any) -> str | None:
    """A CUDA device's UUID as NVML spells it (``GPU-`` and the hex groups): NVML numbers GPUs in
    PCI order and ignores ``CUDA_VISIBLE_DEVICES``, so the parent finds the workers' GPU by UUID,
    never by index 0 (GPU review 2026-12-06, #7). None without one."""
    text = str(uuid or "").strip()
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


class Cuda:
    """:class:`runner.devices.base.Device` for ``torch.cuda``."""

    name = "cuda"
    title = "CUDA"
    device_memory = True
    profiler_activity = "CUDA"
    allocator_env = "PYTORCH_CUDA_ALLOC_CONF"

    def unavailable(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "torch is not installed in this environment"
        return None if torch.cuda.is_available() else "torch.cuda.is_available() is False"

    def initialised(self) -> bool:
        """torch's CUDA state, or the CUDA driver itself, started in this process: either makes a
        forked child fail its first CUDA call ("initialization error"). torch's flag alone missed
        the driver that ``torch.cuda.is_available()`` starts (``cuInit``) without setting
        it — what a preloaded ``skipif(not torch.cuda.is_available())`` does (GPU review
        2026-12-06, #1)."""
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                return True
        except Exception:  # noqa: BLE001 - a broken torch cannot have initialised CUDA
            pass
        return driver_loaded(_maps())

    def torch_build(self, torch: Any) -> dict:
        """``{cuda}``: the CUDA toolkit torch was built with (None: a CPU or ROCm build, or no
        torch)."""
        return {"cuda": torch.version.cuda if torch is not None else None}

    def facts(self) -> dict:
        """``{device_name, compute_capability ("9.0"), driver?}`` of the current device; ``driver``
        (NVML's version string) only where NVML answers."""
        import torch

        name = torch.cuda.get_device_name()
        cap = torch.cuda.get_device_capability()
        out = {"device_name": name, "compute_capability": f"{cap[0]}.{cap[1]}"}
        uuid = nvml_uuid(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()),
                                 "uuid", None))
        if uuid:
            out["gpu_uuid"] = uuid  # the parent's NVML finds this GPU by it (not by index)
        try:
            import pynvml

            pynvml.nvmlInit()
            driver = pynvml.nvmlSystemGetDriverVersion()
            out["driver"] = driver.decode() if isinstance(driver, bytes) else driver
        except Exception:  # noqa: BLE001 - NVML is optional
            pass
        return out

    def event(self) -> Any:
        import torch

        return torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def l2_flush_buffer(self, device: str) -> Any:
        """``torch.empty`` of twice ``L2_cache_size`` int8 on ``device`` (:data:`DEFAULT_L2_BYTES`
        where the properties do not say)."""
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES)
        return torch.empty(2 * l2, dtype=torch.int8, device=device)

    def reset_peak_memory(self) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats()

    def peak_memory(self) -> int:
        """``torch.cuda.max_memory_allocated``: absolute (the benchmark's inputs included)."""
        import torch

        return int(torch.cuda.max_memory_allocated())

    def reserved_peak(self) -> int:
        """``torch.cuda.max_memory_reserved``: the caching allocator's segments."""
        import torch

        return int(torch.cuda.max_memory_reserved())

    def empty_cache(self) -> None:
        import torch

        torch.cuda.empty_cache()


DEVICE = Cuda()
