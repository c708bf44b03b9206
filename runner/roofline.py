"""Accelerator-level position of a kernel: theoretical occupancy, wave count, roofline.

Cheap models that sit next to the measurements (STRATEGIES.md, "Prediction"), never instead
of them. Everything here is a pure function over plain numbers and the trace's
``deviceProperties`` entry (keys as Kineto writes them: ``numSms``, ``regsPerMultiprocessor``,
``regsPerBlock``, ``maxThreadsPerMultiprocessor``, ``maxThreadsPerBlock``, ``warpSize``,
``sharedMemPerMultiprocessor``, ``computeMajor``, ``computeMinor``).

Sources of the constants:
- register allocation unit (256 registers per warp) and the per-block shared-memory reserve
  (1 KiB on compute capability >= 8.0): the CUDA Occupancy Calculator and the CUDA C
  Programming Guide, "Compute Capabilities" table;
- maximum resident blocks per SM by compute capability: same table;
- peak FLOP/s and memory bandwidth per GPU model: NVIDIA's product datasheets (dense, no
  sparsity; FP32 on CUDA cores, FP16/BF16 on tensor cores).
"""

from __future__ import annotations

import math

#: Registers are allocated per warp in units of this many registers (all current GPUs).
REGISTER_ALLOCATION_UNIT = 256

#: Maximum resident blocks per SM by (major, minor) compute capability (CUDA Programming Guide).
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16,
                     (8, 9): 24, (9, 0): 32, (10, 0): 32, (12, 0): 32}

#: Peak rates per GPU model, matched by substring of the device name (first match wins):
#: (fp32 TFLOP/s, fp16/bf16 tensor TFLOP/s dense, memory bandwidth GB/s). NVIDIA datasheets.
PEAKS = (
    ("H200", (67.0, 989.0, 4800.0)),
    ("H100 PCIe", (51.0, 756.0, 2000.0)),
    ("H100", (67.0, 989.0, 3350.0)),
    ("A100-SXM4-80GB", (19.5, 312.0, 2039.0)),
    ("A100 80GB PCIe", (19.5, 312.0, 1935.0)),
    ("A100", (19.5, 312.0, 1555.0)),
    ("A10G", (31.2, 125.0, 600.0)),
    ("L40S", (91.6, 362.0, 864.0)),
    ("L4", (30.3, 121.0, 300.0)),
    ("V100", (15.7, 125.0, 900.0)),
    ("T4", (8.1, 65.0, 320.0)),
    ("RTX 4090", (82.6, 165.0, 1008.0)),
)


def _prod(values) -> int:
    out = 1
    for v in values or []:
        out *= int(v)
    return out


def active_blocks_per_sm(registers_per_thread: int | None, threads_per_block: int | None,
                         shared_memory_bytes: int | None, props: dict | None) -> tuple[int | None, str | None]:
    """Resident blocks per SM and the resource that limits them.

    Args:
        registers_per_thread: from the kernel's ``registers per thread``.
        threads_per_block: product of the kernel's ``block`` dims.
        shared_memory_bytes: static + dynamic shared memory per block (``shared memory``).
        props: the trace's ``deviceProperties`` entry for the kernel's device.

    Returns:
        ``(blocks, limiter)`` with limiter one of ``registers``, ``threads``, ``shared_memory``,
        ``blocks``; ``(None, None)`` when an input is missing.
    """
    if not props or not registers_per_thread or not threads_per_block:
        return None, None
    warp = int(props.get("warpSize") or 32)
    max_threads = props.get("maxThreadsPerMultiprocessor")
    regs_sm = props.get("regsPerMultiprocessor")
    if not max_threads or not regs_sm:
        return None, None
    warps_per_block = math.ceil(threads_per_block / warp)
    cc = (int(props.get("computeMajor") or 0), int(props.get("computeMinor") or 0))
    limits = {"blocks": int(props.get("maxBlocksPerMultiProcessor") or MAX_BLOCKS_PER_SM.get(cc, 32)),
              "threads": int(max_threads) // (warps_per_block * warp)}
    regs_per_warp = math.ceil(registers_per_thread * warp / REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    limits["registers"] = (int(regs_sm) // regs_per_warp) // warps_per_block
    smem_sm = props.get("sharedMemPerMultiprocessor")
    if shared_memory_bytes and smem_sm:
        reserve = 1024 if cc >= (8, 0) else 0
        limits["shared_memory"] = int(smem_sm) // (int(shared_memory_bytes) + reserve)
    limiter = min(limits, key=lambda k: (limits[k], ["registers", "shared_memory", "threads", "blocks"].index(k)))
    return max(0, limits[limiter]), limiter


def theoretical_occupancy(registers_per_thread, threads_per_block, shared_memory_bytes, props) -> dict:
    """Theoretical occupancy of one launch configuration.

    Returns:
        ``{occupancy (fraction 0..1 of maxThreadsPerMultiprocessor), active_blocks_per_sm,
        limiter}``; values None when the inputs are missing.
    """
    blocks, limiter = active_blocks_per_sm(registers_per_thread, threads_per_block, shared_memory_bytes, props)
    if blocks is None:
        return {"occupancy": None, "active_blocks_per_sm": None, "limiter": None}
    warp = int(props.get("warpSize") or 32)
    warps = blocks * math.ceil(threads_per_block / warp)
    occ = warps * warp / float(props["maxThreadsPerMultiprocessor"])
    return {"occupancy": round(min(1.0, occ), 4), "active_blocks_per_sm": blocks, "limiter": limiter}


def waves(grid_blocks: int | None, num_sms: int | None, active_blocks: int | None) -> int | None:
    """Waves of one launch: ``ceil(grid blocks / (SMs x active blocks per SM))``; None if unknown."""
    if not grid_blocks or not num_sms or not active_blocks:
        return None
    return math.ceil(grid_blocks / (num_sms * active_blocks))


def peaks_for(device_name: str | None) -> dict | None:
    """``{fp32_flops, tensor_flops, bandwidth_bytes_per_s}`` (per second) for a known GPU, else None."""
    if not device_name:
        return None
    for key, (fp32, tensor, bw) in PEAKS:
        if key.lower() in device_name.lower():
            return {"fp32_flops": fp32 * 1e12, "tensor_flops": tensor * 1e12, "bandwidth_bytes_per_s": bw * 1e9}
    return None


def position(flops: float | None, bytes_moved: float | None, duration_us: float | None,
             peaks: dict | None, *, tensor_cores: bool = False) -> dict | None:
    """Roofline position of a kernel.

    Args:
        flops: floating-point operations of the kernel (all its calls together).
        bytes_moved: bytes read + written (all calls), e.g. from operator input/output sizes.
        duration_us: total duration of those calls, microseconds.
        peaks: from :func:`peaks_for`.
        tensor_cores: use the tensor-core peak instead of fp32.

    Returns:
        ``{arithmetic_intensity (FLOP/byte), achieved_flops_per_s, attainable_flops_per_s,
        roofline_pct (percent of the attainable rate), bound ("memory"|"compute")}`` or None
        when an input is missing.
    """
    if not flops or not bytes_moved or not duration_us or not peaks:
        return None
    peak = peaks["tensor_flops" if tensor_cores else "fp32_flops"]
    intensity = flops / bytes_moved
    attainable = min(peak, intensity * peaks["bandwidth_bytes_per_s"])
    achieved = flops / (duration_us * 1e-6)
    ridge = peak / peaks["bandwidth_bytes_per_s"]
    return {"arithmetic_intensity": round(intensity, 3), "achieved_flops_per_s": achieved,
            "attainable_flops_per_s": attainable, "roofline_pct": round(100.0 * achieved / attainable, 2),
            "bound": "memory" if intensity < ridge else "compute"}


def grid_blocks(grid) -> int | None:
    """Number of blocks of a ``grid`` ``[x, y, z]`` (None if absent)."""
    return _prod(grid) if grid else None
