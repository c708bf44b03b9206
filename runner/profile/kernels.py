"""A trace's kernels summarised per name (pure): durations, launch configuration, occupancy,
waves, precision, collective communication and, joined to their operators' work, the roofline
(:mod:`runner.profile.roofline`). Times in microseconds; occupancy a fraction 0..1.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from . import names, roofline
from .events import arg, num

#: Precision tokens in kernel names, first match wins (lowest precision first: a GEMM of fp8
#: activations and fp4 weights, ``bmm_MxE4m3_MxE2m1…``, is an fp4 GEMM). fp4: e2m1 (MXFP4,
#: NVFP4 ``ue4m3xe2m1``); fp6: e2m3/e3m2 (MXFP6); fp8: e4m3/e5m2 (and the fnuz variants).
_KERNEL_DTYPES = (
    ("fp4", re.compile(r"e2m1|(?:nv|mx)?fp4(?![0-9])", re.I)),
    ("fp6", re.compile(r"e2m3|e3m2|(?:mx)?fp6(?![0-9])", re.I)),
    ("fp8", re.compile(r"fp8|e4m3|e5m2|float8", re.I)),
    ("int8", re.compile(r"int8|imma|(?<![a-z])[si]8(?![0-9])", re.I)),
    ("bf16", re.compile(r"bf16|bfloat16|BFloat16", re.I)),
    ("fp16", re.compile(r"(?<!b)f16|fp16|half|hgemm|c10::Half|(?<![a-z])h\d{4,5}gemm", re.I)),
    ("tf32", re.compile(r"tf32|tensorop_s1688gemm", re.I)),
    ("fp64", re.compile(r"double|dgemm|f64", re.I)),
    ("fp32", re.compile(r"(?<![a-z])float(?![0-9])|f32|fp32|sgemm", re.I)),
)
#: ROCm Tensile/hipBLASLt GEMM names, ``Cijk_Alik_Bljk_<types>_…``: the first type code is the
#: input type (Tensile ``DataType`` codes: S float, D double, H half, B bfloat16, X xfloat32,
#: F8/B8 float8/bfloat8, I8 int8).
_TENSILE = re.compile(r"^Cijk_[A-Za-z]+_[A-Za-z]+_(F8|B8|I8|[SDHBX])")
_TENSILE_DTYPES = {"S": "fp32", "D": "fp64", "H": "fp16", "B": "bf16", "X": "tf32", "F8": "fp8", "B8": "fp8",
                   "I8": "int8"}
#: vLLM's KV-cache template argument ``(vllm::Fp8KVCacheDataType)N``: 0 is ``kAuto`` (the cache
#: keeps the model's dtype), 1 and 2 are fp8 e4m3/e5m2 (vLLM ``csrc/attention/dtype_fp8.cuh``).
_KV_CACHE_DTYPE = re.compile(r"\(?vllm::Fp8KVCacheDataType\)?(\d)?")

#: Precisions computed on tensor/matrix cores (the others on CUDA cores / vector units).
TENSOR_PRECISIONS = ("tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8")


def kernel_dtype(name: str) -> str | None:
    """Precision named by a kernel's name (``fp4``, ``fp6``, ``fp8``, ``int8``, ``bf16``,
    ``fp16``, ``tf32``, ``fp64``, ``fp32``), or None."""
    m = _TENSILE.match(name)
    if m:
        return _TENSILE_DTYPES[m.group(1)]
    name = _KV_CACHE_DTYPE.sub(lambda m: "fp8" if m.group(1) in ("1", "2") else "", name)
    for dtype, pattern in _KERNEL_DTYPES:
        if pattern.search(name):
            return dtype
    return None


def is_collective(kernel_name: str) -> bool:
    """Whether a kernel is collective communication (NCCL/RCCL, custom all-reduce):
    :data:`runner.profile.names.COLLECTIVE_KERNEL`."""
    return bool(names.COLLECTIVE_KERNEL.search(kernel_name))


def summarize_kernels(kernels: list[dict], props: dict | None, ops_by_ext: dict, peaks: dict | None) -> list[dict]:
    """One entry per kernel name, by total time, largest first: ``{name, count, total_us, mean_us,
    min_us, max_us, cv}`` (:func:`_durations`), its launch configuration (:func:`_launch`),
    ``streams, dtype, collective`` and, for a compute kernel joined to its operators' work,
    ``flops, bytes, roofline`` (:func:`_roofline`).

    Args:
        kernels: the trace's kernel events; props: the device's properties (or None);
        ops_by_ext: :func:`runner.profile.operators.summarize_operators`'s work by External id;
        peaks: the device's peak rates (:func:`runner.profile.roofline.lookup_peaks`) or None.
    """
    groups: dict[str, list[dict]] = defaultdict(list)
    for k in kernels:
        groups[k.get("name", "?")].append(k)
    out = []
    for name, evs in groups.items():
        collective = is_collective(name)
        streams = {(e.get("args") or {}).get("stream") for e in evs} - {None}
        entry = {"name": name, **_durations(evs), **_launch(evs, props),
                 "streams": sorted(streams, key=str),
                 "dtype": None if collective else kernel_dtype(name),
                 "collective": collective}
        if not collective:
            entry.update(_roofline(evs, ops_by_ext, entry["dtype"], peaks))
        out.append(entry)
    out.sort(key=lambda k: -k["total_us"])
    return out


def _durations(evs: list[dict]) -> dict:
    """``{count, total_us, mean_us, min_us, max_us, cv}`` of one kernel's events (µs; ``cv`` the
    population sd over the mean, 0 for a single event)."""
    durs = [num(e.get("dur")) for e in evs]
    total = sum(durs)
    mean = total / len(durs)
    std = math.sqrt(sum((d - mean) ** 2 for d in durs) / len(durs)) if len(durs) > 1 else 0.0
    return {"count": len(evs), "total_us": round(total, 3), "mean_us": round(mean, 3),
            "min_us": round(min(durs), 3), "max_us": round(max(durs), 3),
            "cv": round(std / mean, 4) if mean > 0 else 0.0}


def _launch(evs: list[dict], props: dict | None) -> dict:
    """One kernel's most common launch configuration and what it gives on the device
    ``{registers_per_thread, shared_memory_bytes, grid, block, blocks, threads_per_block,
    occupancy (theoretical, recomputed, fraction), est_achieved_occupancy (the trace's calculator
    estimate, fraction), occupancy_limiter, active_blocks_per_sm, waves}``."""
    configs = Counter()
    for e in evs:
        a = e.get("args") or {}
        configs[(a.get("registers per thread"), a.get("shared memory"), tuple(a.get("grid") or ()),
                 tuple(a.get("block") or ()))] += 1
    (regs, smem, grid, block), _ = configs.most_common(1)[0]
    args0 = next((e.get("args") or {} for e in evs
                  if (e.get("args") or {}).get("grid") is not None), evs[0].get("args") or {})
    est = arg(args0, "est. achieved occupancy %")
    threads = roofline.grid_blocks(block) if block else None
    blocks = roofline.grid_blocks(grid) if grid else None
    occ = (_kineto_occupancy(args0.get("occupancy"), threads, props)
           or roofline.theoretical_occupancy(int(regs) if regs is not None else None, threads,
                                             int(smem) if smem is not None else None, props))
    return {
        "registers_per_thread": int(regs) if regs is not None else None,
        "shared_memory_bytes": int(smem) if smem is not None else None,
        "grid": list(grid) or None,
        "block": list(block) or None,
        "blocks": blocks,
        "threads_per_block": threads,
        "occupancy": occ["occupancy"],
        "est_achieved_occupancy": round(num(est) / 100.0, 4) if est is not None else None,
        "occupancy_limiter": occ["limiter"],
        "active_blocks_per_sm": occ["active_blocks_per_sm"],
        "waves": roofline.waves(blocks, (props or {}).get("numSms"), occ["active_blocks_per_sm"]),
    }


#: Kineto's per-kernel occupancy record (CUPTI's calculator): its block limits by resource.
_KINETO_LIMITS = {"blockLimitRegs": "registers", "blockLimitSharedMem": "shared_memory",
                  "blockLimitWarps": "threads", "blockLimitBlocks": "blocks"}


def _kineto_occupancy(record, threads: int | None, props: dict | None) -> dict | None:
    """The occupancy CUPTI's own calculator wrote into the kernel's event (current Kineto:
    ``occupancy: {activeBlocksPerMultiprocessor, limitingFactors, blockLimit*}``), preferred to
    perfgate's recomputation where present (GPU review 2026-12-06, #17); None without it."""
    if not isinstance(record, dict) or not threads or not props:
        return None
    blocks, most = (num(record.get("activeBlocksPerMultiprocessor")),
                    num(props.get("maxThreadsPerMultiprocessor")))
    if not blocks or not most:
        return None
    warp = int(props.get("warpSize") or 32)
    limits = {name: num(record.get(key)) for key, name in _KINETO_LIMITS.items()
              if record.get(key) is not None}
    limiter = min(limits, key=lambda k: limits[k]) if limits else None
    return {"occupancy": round(min(1.0, int(blocks) * -(-threads // warp) * warp / most), 4),
            "active_blocks_per_sm": int(blocks), "limiter": limiter}


def _roofline(evs: list[dict], ops_by_ext: dict, dtype: str | None, peaks: dict | None) -> dict:
    """``{flops, bytes, [roofline]}`` of one kernel: its share of the work of the operators that
    launched it, and its place on the roofline (:func:`runner.profile.roofline.position`) in its
    precision (``dtype``, else its operators' most common); ``{}`` without both flops and bytes."""
    flops = nbytes = 0.0
    op_dtypes: Counter = Counter()
    for e in evs:
        op = ops_by_ext.get(arg(e.get("args") or {}, "External id"))
        if op is not None:
            f, b = op["work"]
            flops += (f or 0.0) / op["kernels"]
            nbytes += (b or 0.0) / op["kernels"]
            if op["dtype"]:
                op_dtypes[op["dtype"]] += 1
    if not (flops and nbytes):
        return {}
    found = {"flops": flops, "bytes": nbytes}
    precision = dtype or (op_dtypes.most_common(1)[0][0] if op_dtypes else None)
    total = sum(num(e.get("dur")) for e in evs)
    pos = roofline.position(flops, nbytes, total, peaks, precision=precision) if precision else None
    if pos:
        found["roofline"] = pos
    return found
