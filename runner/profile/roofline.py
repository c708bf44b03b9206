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
- peak FLOP/s and memory bandwidth per GPU model: :data:`GPU_PEAKS`, each row naming the vendor
  datasheet it comes from. Tensor/matrix figures are dense: datasheets print "with sparsity"
  figures (2:4 structured sparsity), which are halved here.
"""

from __future__ import annotations

import math
import re

#: Registers are allocated per warp in units of this many registers (all current GPUs).
REGISTER_ALLOCATION_UNIT = 256

#: Most registers a thread may have (all current GPUs).
MAX_REGISTERS_PER_THREAD = 255


def register_sub_partitions(cc: tuple[int, int]) -> int:
    """The SM's register file sub-partitions (``cudaOccSubPartitionsPerMultiprocessor`` of
    cuda_occupancy.h): 2 on compute capability 6.0, else 4."""
    return 2 if cc == (6, 0) else 4


#: Maximum resident blocks per SM by (major, minor) compute capability (CUDA Programming Guide).
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16,
                     (8, 9): 24, (9, 0): 32, (10, 0): 32, (12, 0): 32}

_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/)"
_NV_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/)"
_NV_H800 = "NVIDIA H800 Tensor Core GPU datasheet (same GH100 compute as H100; FP64 and NVLink reduced)"
_NV_BLACKWELL = ("NVIDIA HGX B200 / GB200 NVL72 datasheets (nvidia.com/en-us/data-center/hgx/, "
                 "/gb200-nvl72/), per-GPU dense figures as tabulated at glennklockwood.com/garden/processors/B200")
_NV_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100/)"
_NV_L40 = "NVIDIA L40 datasheet (nvidia.com/en-us/data-center/l40/)"
_NV_L40S = "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s/)"
_NV_L4 = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4/)"
_NV_A10 = "NVIDIA A10 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a10-gpu/)"
_NV_V100 = "NVIDIA V100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/v100/)"
_NV_T4 = "NVIDIA T4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/tesla-t4/)"
_NV_ADA = "NVIDIA Ada Lovelace GPU architecture whitepaper, appendix A (GeForce RTX 4090; FP32 accumulate)"
_AMD_MI300X = "AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x.html)"
_AMD_MI325X = "AMD Instinct MI325X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi325x.html)"
_AMD_MI300A = "AMD Instinct MI300A data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300a.html)"
_AMD_MI200 = ("AMD Instinct MI250X / MI250 data sheets (amd.com/en/products/accelerators/instinct/mi200/); "
              "each of the two GCDs is one device, so the per-package figures are halved")
_AMD_MI210 = "AMD Instinct MI210 data sheet (amd.com/en/products/accelerators/instinct/mi200/mi210.html)"

#: Peak rates per GPU model, one row per model/variant. ``match``: regular expression on the
#: upper-cased device name without vendor prefix; ``arch``: (computeMajor, computeMinor) as the
#: trace writes it (AMD: gfx major/minor); ``units``: SMs / CUs of the full device (a trace
#: showing fewer is a partition — MIG, CPX — and gets no peaks); ``memory_gib``: nominal device
#: memory (tells A100 40 GB from 80 GB, and names an unnamed device together with arch and
#: units); ``tflops`` per precision (dense; fp32 on CUDA cores / vector units); ``bandwidth_gbs``
#: in GB/s (10^9 bytes); ``source``: where every figure of the row comes from.
GPU_PEAKS = (
    {"model": "NVIDIA H100 SXM5", "vendor": "NVIDIA", "match": r"H100(?!.*(PCIE|NVL))", "arch": (9, 0), "units": 132,
     "memory_gib": 80, "tflops": {"fp64": 34.0, "fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5,
                                  "fp8": 1979.0, "int8": 1979.0}, "bandwidth_gbs": 3350, "source": _NV_H100},
    {"model": "NVIDIA H100 PCIe", "vendor": "NVIDIA", "match": r"H100.*PCIE", "arch": (9, 0), "units": 114,
     "memory_gib": 80, "tflops": {"fp64": 26.0, "fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5,
                                  "fp8": 1513.0, "int8": 1513.0}, "bandwidth_gbs": 2000, "source": _NV_H100},
    {"model": "NVIDIA H100 NVL", "vendor": "NVIDIA", "match": r"H100.*NVL", "arch": (9, 0), "units": 132,
     "memory_gib": 94, "tflops": {"fp64": 30.0, "fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5,
                                  "fp8": 1670.5, "int8": 1670.5}, "bandwidth_gbs": 3900, "source": _NV_H100},
    {"model": "NVIDIA H200 SXM", "vendor": "NVIDIA", "match": r"H200(?!.*NVL)", "arch": (9, 0), "units": 132,
     "memory_gib": 141, "tflops": {"fp64": 34.0, "fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5,
                                   "fp8": 1979.0, "int8": 1979.0}, "bandwidth_gbs": 4800, "source": _NV_H200},
    {"model": "NVIDIA H200 NVL", "vendor": "NVIDIA", "match": r"H200.*NVL", "arch": (9, 0), "units": 132,
     "memory_gib": 141, "tflops": {"fp64": 30.0, "fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5,
                                   "fp8": 1670.5, "int8": 1670.5}, "bandwidth_gbs": 4800, "source": _NV_H200},
    {"model": "NVIDIA H800 SXM5", "vendor": "NVIDIA", "match": r"H800(?!.*PCIE)", "arch": (9, 0), "units": 132,
     "memory_gib": 80, "tflops": {"fp64": 1.0, "fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5,
                                  "fp8": 1979.0, "int8": 1979.0}, "bandwidth_gbs": 3350, "source": _NV_H800},
    {"model": "NVIDIA H800 PCIe", "vendor": "NVIDIA", "match": r"H800.*PCIE", "arch": (9, 0), "units": 114,
     "memory_gib": 80, "tflops": {"fp64": 0.8, "fp32": 51.0, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5,
                                  "fp8": 1513.0, "int8": 1513.0}, "bandwidth_gbs": 2000, "source": _NV_H800},
    {"model": "NVIDIA B200 (HGX, 1000 W)", "vendor": "NVIDIA", "match": r"(?<!G)B200", "arch": (10, 0), "units": 148,
     "memory_gib": 180, "tflops": {"fp64": 40.0, "fp32": 80.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0,
                                   "fp8": 4500.0, "fp6": 4500.0, "fp4": 9000.0, "int8": 4500.0},
     "bandwidth_gbs": 8000, "source": _NV_BLACKWELL},
    {"model": "NVIDIA GB200 (NVL72, 1200 W)", "vendor": "NVIDIA", "match": r"GB200", "arch": (10, 0), "units": None,
     "memory_gib": 186, "tflops": {"fp64": 45.0, "fp32": 90.0, "tf32": 1250.0, "bf16": 2500.0, "fp16": 2500.0,
                                   "fp8": 5000.0, "fp6": 5000.0, "fp4": 10000.0, "int8": 5000.0},
     "bandwidth_gbs": 8000, "source": _NV_BLACKWELL},
    {"model": "NVIDIA A100 SXM4 40GB", "vendor": "NVIDIA", "match": r"A100(?!.*PCIE)", "arch": (8, 0), "units": 108,
     "memory_gib": 40, "tflops": {"fp64": 9.7, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0,
                                  "int8": 624.0}, "bandwidth_gbs": 1555, "source": _NV_A100},
    {"model": "NVIDIA A100 SXM4 80GB", "vendor": "NVIDIA", "match": r"A100(?!.*PCIE)", "arch": (8, 0), "units": 108,
     "memory_gib": 80, "tflops": {"fp64": 9.7, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0,
                                  "int8": 624.0}, "bandwidth_gbs": 2039, "source": _NV_A100},
    {"model": "NVIDIA A100 PCIe 40GB", "vendor": "NVIDIA", "match": r"A100.*PCIE", "arch": (8, 0), "units": 108,
     "memory_gib": 40, "tflops": {"fp64": 9.7, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0,
                                  "int8": 624.0}, "bandwidth_gbs": 1555, "source": _NV_A100},
    {"model": "NVIDIA A100 PCIe 80GB", "vendor": "NVIDIA", "match": r"A100.*PCIE", "arch": (8, 0), "units": 108,
     "memory_gib": 80, "tflops": {"fp64": 9.7, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0,
                                  "int8": 624.0}, "bandwidth_gbs": 1935, "source": _NV_A100},
    {"model": "NVIDIA L40S", "vendor": "NVIDIA", "match": r"L40S", "arch": (8, 9), "units": 142, "memory_gib": 48,
     "tflops": {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0, "int8": 733.0},
     "bandwidth_gbs": 864, "source": _NV_L40S},
    {"model": "NVIDIA L40", "vendor": "NVIDIA", "match": r"L40(?![A-Z0-9])", "arch": (8, 9), "units": 142,
     "memory_gib": 48, "tflops": {"fp32": 90.5, "tf32": 90.5, "bf16": 181.05, "fp16": 181.05, "fp8": 362.0,
                                  "int8": 362.0}, "bandwidth_gbs": 864, "source": _NV_L40},
    {"model": "NVIDIA L4", "vendor": "NVIDIA", "match": r"L4(?![A-Z0-9])", "arch": (8, 9), "units": 58,
     "memory_gib": 24, "tflops": {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5,
                                  "int8": 242.5}, "bandwidth_gbs": 300, "source": _NV_L4},
    {"model": "NVIDIA A10", "vendor": "NVIDIA", "match": r"A10(?![A-Z0-9])", "arch": (8, 6), "units": 72,
     "memory_gib": 24, "tflops": {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0, "int8": 250.0},
     "bandwidth_gbs": 600, "source": _NV_A10},
    {"model": "NVIDIA V100 SXM2", "vendor": "NVIDIA", "match": r"V100-(SXM2|DGXS)", "arch": (7, 0), "units": 80,
     "memory_gib": None, "tflops": {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0}, "bandwidth_gbs": 900,
     "source": _NV_V100},
    {"model": "NVIDIA V100 PCIe", "vendor": "NVIDIA", "match": r"V100-PCIE", "arch": (7, 0), "units": 80,
     "memory_gib": None, "tflops": {"fp64": 7.0, "fp32": 14.0, "fp16": 112.0}, "bandwidth_gbs": 900,
     "source": _NV_V100},
    {"model": "NVIDIA V100S PCIe", "vendor": "NVIDIA", "match": r"V100S", "arch": (7, 0), "units": 80,
     "memory_gib": 32, "tflops": {"fp64": 8.2, "fp32": 16.4, "fp16": 130.0}, "bandwidth_gbs": 1134,
     "source": _NV_V100},
    {"model": "NVIDIA T4", "vendor": "NVIDIA", "match": r"(?<![A-Z0-9])T4(?![A-Z0-9])", "arch": (7, 5), "units": 40,
     "memory_gib": 16, "tflops": {"fp32": 8.1, "fp16": 65.0, "int8": 130.0}, "bandwidth_gbs": 320,
     "source": _NV_T4},
    {"model": "NVIDIA GeForce RTX 4090", "vendor": "NVIDIA", "match": r"RTX 4090", "arch": (8, 9), "units": 128,
     "memory_gib": 24, "tflops": {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3,
                                  "int8": 660.6}, "bandwidth_gbs": 1008, "source": _NV_ADA},
    {"model": "AMD Instinct MI300X", "vendor": "AMD", "match": r"MI300X", "arch": (9, 4), "units": 304,
     "memory_gib": 192, "tflops": {"fp64": 81.7, "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4,
                                   "fp8": 2614.9, "int8": 2614.9}, "bandwidth_gbs": 5300, "source": _AMD_MI300X},
    {"model": "AMD Instinct MI325X", "vendor": "AMD", "match": r"MI325X", "arch": (9, 4), "units": 304,
     "memory_gib": 256, "tflops": {"fp64": 81.7, "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4,
                                   "fp8": 2614.9, "int8": 2614.9}, "bandwidth_gbs": 6000, "source": _AMD_MI325X},
    {"model": "AMD Instinct MI300A", "vendor": "AMD", "match": r"MI300A", "arch": (9, 4), "units": 228,
     "memory_gib": 128, "tflops": {"fp64": 61.3, "fp32": 122.6, "tf32": 490.3, "bf16": 980.6, "fp16": 980.6,
                                   "fp8": 1961.2, "int8": 1961.2}, "bandwidth_gbs": 5300, "source": _AMD_MI300A},
    {"model": "AMD Instinct MI250X (one GCD)", "vendor": "AMD", "match": r"MI250X", "arch": (9, 0), "units": 110,
     "memory_gib": 64, "tflops": {"fp64": 23.95, "fp32": 23.95, "bf16": 191.5, "fp16": 191.5, "int8": 191.5},
     "bandwidth_gbs": 1638.4, "source": _AMD_MI200},
    {"model": "AMD Instinct MI250 (one GCD)", "vendor": "AMD", "match": r"MI250(?!X)|MI250X / MI250", "arch": (9, 0),
     "units": 104, "memory_gib": 64, "tflops": {"fp64": 22.65, "fp32": 22.65, "bf16": 181.05, "fp16": 181.05,
                                                 "int8": 181.05}, "bandwidth_gbs": 1638.4, "source": _AMD_MI200},
    {"model": "AMD Instinct MI210", "vendor": "AMD", "match": r"MI210", "arch": (9, 0), "units": 104,
     "memory_gib": 64, "tflops": {"fp64": 22.6, "fp32": 22.6, "bf16": 181.0, "fp16": 181.0, "int8": 181.0},
     "bandwidth_gbs": 1638.4, "source": _AMD_MI210},
)

#: Vendor prefixes dropped before matching a device name.
_NAME_PREFIX = re.compile(r"^(?:NVIDIA|TESLA|AMD|INSTINCT|RADEON|INTEL|\s)+")

#: Relative tolerance between a trace's device memory and a row's nominal ``memory_gib``.
MEMORY_TOLERANCE = 0.15


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
    limits["registers"] = _register_limit(registers_per_thread, warps_per_block, warp, int(regs_sm),
                                          int(props.get("regsPerBlock") or regs_sm), cc)
    smem_sm = props.get("sharedMemPerMultiprocessor")
    if shared_memory_bytes and smem_sm:
        reserve = 1024 if cc >= (8, 0) else 0
        limits["shared_memory"] = int(smem_sm) // (int(shared_memory_bytes) + reserve)
    limiter = min(limits, key=lambda k: (limits[k], ["registers", "shared_memory", "threads", "blocks"].index(k)))
    return max(0, limits[limiter]), limiter


def _register_limit(registers_per_thread: int, warps_per_block: int, warp: int, regs_sm: int,
                    regs_block: int, cc: tuple[int, int]) -> int:
    """Blocks per SM its registers allow, as ``cudaOccMaxBlocksPerSMRegsLimit`` (cuda_occupancy.h)
    computes it: registers go to warps per sub-partition (so 40 registers × 64 threads on sm_90
    fit 24 blocks, not the 25 the whole register file would; GPU review 2026-12-06, #17), and a
    block whose registers — warps rounded up to the sub-partitions, as the hardware checks —
    exceed ``regsPerBlock``, or a thread over 255 registers, does not launch (0)."""
    per_warp = (math.ceil(registers_per_thread * warp / REGISTER_ALLOCATION_UNIT)
                * REGISTER_ALLOCATION_UNIT)
    parts = register_sub_partitions(cc)
    assumed = per_warp * math.ceil(warps_per_block / parts) * parts
    if (registers_per_thread > MAX_REGISTERS_PER_THREAD
            or regs_block < max(assumed, per_warp * warps_per_block)):
        return 0
    return (regs_sm // parts // per_warp) * parts // warps_per_block


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


def _peaks(row: dict, method: str) -> dict:
    out = {f"{precision}_flops": tflops * 1e12 for precision, tflops in row["tflops"].items()}
    out.update({"model": row["model"], "bandwidth_bytes_per_s": row["bandwidth_gbs"] * 1e9, "source": row["source"],
                "method": method})
    return out


def _memory_fits(row: dict, memory_gib: float | None) -> bool:
    return (row["memory_gib"] is None or memory_gib is None
            or abs(memory_gib / row["memory_gib"] - 1) <= MEMORY_TOLERANCE)


def _distinct(rows: list[dict]) -> bool:
    return len({(tuple(sorted(r["tflops"].items())), r["bandwidth_gbs"]) for r in rows}) == 1


def lookup_peaks(device_name: str | None, props: dict | None = None,
                 vendor: str | None = None) -> tuple[dict | None, str | None]:
    """Peak rates of the trace's GPU, or why there are none.

    Method: the device name (vendor prefix dropped, upper-cased) is matched against each row's
    ``match`` of :data:`GPU_PEAKS` — whole model tokens, so ``L40`` never takes ``L4``'s row;
    the rows that match are narrowed by the SM/CU count and the memory size in ``props`` (the
    trace's ``deviceProperties`` entry; memory also from a ``80GB`` token in the name). A
    device without a usable name (empty, or a generic one such as ``AMD Radeon Graphics``) is
    named from ``props`` alone when exactly one row has its vendor, architecture
    (``computeMajor``.``computeMinor``), SM/CU count and memory size. Clock rates and memory
    bus width are not in Kineto traces, so peaks are never computed from properties.

    Args:
        device_name: ``deviceProperties[].name`` (may be empty or None).
        props: that device's properties with perfgate's key names (``numSms``,
            ``computeMajor``, ``computeMinor``, ``totalGlobalMem``), or None.
        vendor: ``NVIDIA``/``AMD``/``Intel`` when known (used when naming from ``props``).

    Returns:
        ``(peaks, None)`` with peaks ``{model, <precision>_flops (per second, dense) for fp64,
        fp32, tf32, bf16, fp16, fp8, fp6, fp4, int8 where the datasheet gives one,
        bandwidth_bytes_per_s, source, method}``, or ``(None, note)`` with a one-line note
        ("no peaks known for NVIDIA A10G"); ``(None, None)`` when there is no device at all.
    """
    props = props or {}
    name = (device_name or "").strip()
    units = props.get("numSms")
    mem_bytes = props.get("totalGlobalMem")
    memory_gib = mem_bytes / 2**30 if isinstance(mem_bytes, (int, float)) and mem_bytes > 0 else None
    key = _NAME_PREFIX.sub("", name.upper()).strip()
    if memory_gib is None:
        m = re.search(r"(\d+)\s*GB", key)
        memory_gib = float(m.group(1)) if m else None
    matched = [r for r in GPU_PEAKS if key and re.search(r["match"], key)]
    if matched:
        fitting = [r for r in matched if not (units and r["units"] and units != r["units"])]
        if not fitting:
            return None, (f"no peaks known for {name} with {units} SMs/CUs: a partition (MIG, CPX) "
                          f"or a variant not in the table (the full device has {matched[0]['units']})")
        sized = [r for r in fitting if _memory_fits(r, memory_gib)] or fitting
        if _distinct(sized):
            return _peaks(sized[0], "device name"), None
        return None, (f"no peaks known for {name}: the name fits " + ", ".join(r["model"] for r in sized)
                      + " and the trace does not tell them apart")
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    label = name or "an unnamed GPU"
    if vendor and units and major is not None and memory_gib is not None:
        ident = [r for r in GPU_PEAKS if r["vendor"] == vendor and r["arch"] == (major, minor)
                 and r["units"] == units and _memory_fits(r, memory_gib)]
        if len(ident) == 1:
            how = (f"deviceProperties: {vendor}, architecture {major}.{minor}, {units} SMs/CUs, "
                   f"{memory_gib:.0f} GiB → {ident[0]['model']}")
            return _peaks(ident[0], how), None
        if ident:
            return None, (f"no peaks known for {label}: its properties fit "
                          + ", ".join(r["model"] for r in ident))
    if not name and not props:
        return None, None
    return None, f"no peaks known for {label}"


def position(flops: float | None, bytes_moved: float | None, duration_us: float | None,
             peaks: dict | None, *, precision: str | None = "fp32") -> dict | None:
    """Roofline position of a kernel.

    Args:
        flops: floating-point operations of the kernel (all its calls together).
        bytes_moved: bytes read + written (all calls), e.g. from operator input/output sizes.
        duration_us: total duration of those calls, microseconds.
        peaks: from :func:`lookup_peaks`.
        precision: the precision the kernel computes in (``fp32``, ``tf32``, ``bf16``,
            ``fp16``, ``fp8``, ``fp4``, ``int8``, ...); its peak is the compute roof.

    Returns:
        ``{precision, arithmetic_intensity (FLOP/byte), achieved_flops_per_s,
        attainable_flops_per_s, roofline_pct (percent of the attainable rate), bound
        ("memory"|"compute")}``, or None when an input is missing or the GPU has no known
        peak for that precision.
    """
    peak = (peaks or {}).get(f"{precision}_flops")
    if not flops or not bytes_moved or not duration_us or not peak:
        return None
    intensity = flops / bytes_moved
    attainable = min(peak, intensity * peaks["bandwidth_bytes_per_s"])
    achieved = flops / (duration_us * 1e-6)
    ridge = peak / peaks["bandwidth_bytes_per_s"]
    return {"precision": precision, "arithmetic_intensity": round(intensity, 3), "achieved_flops_per_s": achieved,
            "attainable_flops_per_s": attainable, "roofline_pct": round(100.0 * achieved / attainable, 2),
            "bound": "memory" if intensity < ridge else "compute"}


def grid_blocks(grid) -> int | None:
    """Number of blocks of a ``grid`` ``[x, y, z]`` (None if absent)."""
    return _prod(grid) if grid else None
