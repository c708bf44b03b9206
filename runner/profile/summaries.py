"""Kineto (torch.profiler) trace summaries: what a trace says, per kernel, runtime call, copy,
operator and device; and their compact form for results.json.

The summary is computed from the trace file itself, so perfgate's own traces, stored traces
and third-party traces of any torch version and GPU vendor work: every name that differs
between CUDA, ROCm and Intel XPU traces or between Kineto versions (event categories such as
PyTorch 1.8's ``Kernel``/``Runtime``/``Operator``, runtime calls such as ``cudaLaunchKernel`` /
``hipExtModuleLaunchKernel`` / ``urEnqueueKernelLaunch``, ``deviceProperties`` /
``computeProperties``) is looked up in :mod:`runner.profile.names`. Kernel ``args`` carry
``registers per thread``, ``shared memory``, ``grid``, ``block``, ``stream``, ``correlation``
and ``est. achieved occupancy %``; the top level carries the device properties.

Units: times in microseconds (``*_us``, as in the trace), sizes in bytes (``*_bytes``),
occupancy as a fraction 0..1. Pure: :func:`summarize` takes the document
:func:`runner.profile.kineto.load_trace` read; never imports torch.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Any

from . import names, roofline
from .names import REPAIRED_KEY

#: Device-side work (canonical categories, :data:`runner.profile.names.CATEGORIES`).
GPU_CATS = names.GPU_CATEGORIES

#: A kernel shorter than this is "small" (STRATEGIES.md, sync_overhead: under ~10 µs).
SMALL_KERNEL_US = 10.0

#: Annotations that mark one profiled call (perfgate's own) or one step (third-party traces).
CALL_ANNOTATION = "perfgate::call"
_STEP_RE = re.compile(r"^ProfilerStep#\d+$")

_MEMCPY_RE = re.compile(r"Memcpy\s+(\w+)(?:\s*\(([^)]*)\))?")
_COMPILE_RE = re.compile(r"compile_inner|_compile\.compile|compile_fx|Compiled?Function.*compile|dynamo.*compile",
                         re.IGNORECASE)

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
#: Operator ``Input type`` strings to precision names.
_INPUT_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                 "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
                 "c10::Float8_e5m2fnuz": "fp8", "c10::Float4_e2m1fn_x2": "fp4", "signed char": "int8"}
_DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
                "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
                "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float4_e2m1fn_x2": 1}
#: Precisions computed on tensor/matrix cores (the others on CUDA cores / vector units).
TENSOR_PRECISIONS = ("tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8")


def _num(value, default=0.0) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _union_us(intervals, lo: float | None = None, hi: float | None = None) -> float:
    total = 0.0
    for start, end in _merge(intervals):
        if lo is not None:
            start = max(start, lo)
        if hi is not None:
            end = min(end, hi)
        total += max(0.0, end - start)
    return total


def _multi_stream_overlap_us(intervals: list[tuple[float, float, Any]]) -> float:
    """Time during which GPU work of two or more streams runs at once (sweep line)."""
    points = []
    for start, end, stream in intervals:
        if end > start:
            points.append((start, 1, stream))
            points.append((end, -1, stream))
    points.sort(key=lambda p: (p[0], p[1]))
    active: Counter = Counter()
    busy_streams = 0
    last_t = None
    overlap = 0.0
    for t, step, stream in points:
        if last_t is not None and busy_streams >= 2:
            overlap += t - last_t
        before = active[stream]
        active[stream] += step
        if before == 0 and active[stream] > 0:
            busy_streams += 1
        elif before > 0 and active[stream] == 0:
            busy_streams -= 1
        last_t = t
    return overlap


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


def _arg(args: dict, key: str, default=None):
    """``args[key]`` under any spelling of :data:`runner.profile.names.ARG_NAMES`."""
    for spelling in names.ARG_NAMES.get(key, (key,)):
        if spelling in args:
            return args[spelling]
    return default


def _category(event: dict) -> str | None:
    cat = event.get("cat")
    if not isinstance(cat, str):
        return None
    return names.CATEGORIES.get(cat) or names.CATEGORIES.get(cat.lower())


def _tensor_bytes(dims, dtype) -> int:
    if not isinstance(dims, list) or not dims or dtype not in _DTYPE_BYTES:
        return 0
    n = 1
    for d in dims:
        if not isinstance(d, (int, float)):
            return 0
        n *= int(d)
    return n * _DTYPE_BYTES[dtype]


def _op_work(op: dict) -> tuple[float | None, float | None]:
    """(flops, bytes) of an operator call: ``flops`` arg where torch wrote it, else a GEMM estimate;
    bytes are the input tensors (plus the GEMM output), an estimate of the traffic."""
    args = op.get("args") or {}
    dims = _arg(args, "Input Dims") or []
    types = args.get("Input type") or []
    nbytes = sum(_tensor_bytes(d, t) for d, t in zip(dims, types))
    flops = args.get("flops")
    name = op.get("name", "")
    shapes = [d for d in dims if isinstance(d, list) and len(d) >= 2]
    if flops is None and name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm") and len(shapes) >= 2:
        a, b = (shapes[-2], shapes[-1]) if name in ("aten::addmm", "aten::baddbmm") else (shapes[0], shapes[1])
        try:
            batch = a[0] if len(a) == 3 else 1
            m, k, n = a[-2], a[-1], b[-1]
            flops = 2.0 * batch * m * k * n
            out_type = types[-1] if types else "float"
            nbytes += batch * m * n * _DTYPE_BYTES.get(out_type, 4)
        except (TypeError, IndexError):
            flops = None
    return (_num(flops, None) if flops is not None else None), (float(nbytes) if nbytes else None)


def _operator_self_times(ops: list[dict]) -> dict[int, float]:
    """Self time (µs) per operator event index: its duration minus its direct children's."""
    by_thread: dict[tuple, list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        by_thread[(op.get("pid"), op.get("tid"))].append(i)
    self_us = {}
    for idxs in by_thread.values():
        idxs.sort(key=lambda i: (_num(ops[i].get("ts")), -_num(ops[i].get("dur"))))
        stack: list[tuple[int, float]] = []
        for i in idxs:
            start = _num(ops[i].get("ts"))
            dur = _num(ops[i].get("dur"))
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                parent = stack[-1][0]
                self_us[parent] = self_us[parent] - dur
            self_us[i] = dur
            stack.append((i, start + dur))
    return {i: max(0.0, v) for i, v in self_us.items()}


def device_properties(doc: dict, device=None) -> dict | None:
    """The trace's properties of ``device`` (its ``id``; else the first entry), keys renamed to
    perfgate's (:data:`runner.profile.names.DEVICE_PROPERTY_KEYS`: ``numSms``, ``computeMajor``,
    ``maxThreadsPerMultiprocessor``, ...) from ``deviceProperties`` or the older
    ``computeProperties``; None when the trace has neither."""
    entries = []
    for key in names.DEVICE_PROPERTY_LISTS:
        value = doc.get(key)
        if isinstance(value, list):
            entries = [p for p in value if isinstance(p, dict)]
            if entries:
                break
    if not entries:
        return None
    raw = next((p for p in entries if device is not None and p.get("id") == device), entries[0])
    out = {}
    for key, spellings in names.DEVICE_PROPERTY_KEYS.items():
        value = next((raw[s] for s in spellings if raw.get(s) is not None), None)
        if value is not None:
            out[key] = value
    return out


def _device(props: dict | None, runtime: str | None, uses_gpu: bool) -> dict:
    """``{kind, vendor, name, units, label, peaks, peaks_note}`` of the profiled device."""
    if not uses_gpu:
        return {"kind": "cpu", "vendor": None, "name": None, "units": None, "label": "CPU only", "peaks": None,
                "peaks_note": None}
    name = ((props or {}).get("name") or "").strip() or None
    vendor = names.RUNTIME_VENDORS.get(runtime) if runtime else None
    units = (props or {}).get("numSms")
    label = name
    if label is None:
        label = "GPU, no name in trace"
        if units:
            label += f", {units} {names.UNIT_NAMES.get(vendor, 'SMs/CUs')}"
    peaks, note = roofline.lookup_peaks(name, props, vendor)
    if peaks is None and note is None:
        note = "no peaks known: the trace names no GPU and has no device properties"
    return {"kind": "gpu", "vendor": vendor, "name": name, "units": units, "label": label, "peaks": peaks,
            "peaks_note": note}


def _summarize_kernels(kernels: list[dict], props: dict | None, ops_by_ext: dict, peaks: dict | None) -> list[dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for k in kernels:
        groups[k.get("name", "?")].append(k)
    out = []
    for name, evs in groups.items():
        durs = [_num(e.get("dur")) for e in evs]
        total = sum(durs)
        mean = total / len(durs)
        std = math.sqrt(sum((d - mean) ** 2 for d in durs) / len(durs)) if len(durs) > 1 else 0.0
        configs = Counter()
        for e in evs:
            a = e.get("args") or {}
            configs[(a.get("registers per thread"), a.get("shared memory"), tuple(a.get("grid") or ()),
                     tuple(a.get("block") or ()))] += 1
        (regs, smem, grid, block), _ = configs.most_common(1)[0]
        args0 = next((e.get("args") or {} for e in evs if (e.get("args") or {}).get("grid") is not None),
                     evs[0].get("args") or {})
        est = _arg(args0, "est. achieved occupancy %")
        threads = roofline.grid_blocks(block) if block else None
        blocks = roofline.grid_blocks(grid) if grid else None
        occ = roofline.theoretical_occupancy(int(regs) if regs is not None else None, threads,
                                             int(smem) if smem is not None else None, props)
        collective = is_collective(name)
        entry = {
            "name": name,
            "count": len(evs),
            "total_us": round(total, 3),
            "mean_us": round(mean, 3),
            "min_us": round(min(durs), 3),
            "max_us": round(max(durs), 3),
            "cv": round(std / mean, 4) if mean > 0 else 0.0,
            "registers_per_thread": int(regs) if regs is not None else None,
            "shared_memory_bytes": int(smem) if smem is not None else None,
            "grid": list(grid) or None,
            "block": list(block) or None,
            "blocks": blocks,
            "threads_per_block": threads,
            "occupancy": occ["occupancy"],
            "est_achieved_occupancy": round(_num(est) / 100.0, 4) if est is not None else None,
            "occupancy_limiter": occ["limiter"],
            "active_blocks_per_sm": occ["active_blocks_per_sm"],
            "waves": roofline.waves(blocks, (props or {}).get("numSms"), occ["active_blocks_per_sm"]),
            "streams": sorted({(e.get("args") or {}).get("stream") for e in evs} - {None}, key=str),
            "dtype": None if collective else kernel_dtype(name),
            "collective": collective,
        }
        flops = nbytes = 0.0
        op_dtypes: Counter = Counter()
        for e in evs:
            op = ops_by_ext.get(_arg(e.get("args") or {}, "External id"))
            if op is not None:
                f, b = op["work"]
                flops += (f or 0.0) / op["kernels"]
                nbytes += (b or 0.0) / op["kernels"]
                if op["dtype"]:
                    op_dtypes[op["dtype"]] += 1
        if flops and nbytes and not collective:
            entry["flops"] = flops
            entry["bytes"] = nbytes
            precision = entry["dtype"] or (op_dtypes.most_common(1)[0][0] if op_dtypes else None)
            pos = roofline.position(flops, nbytes, total, peaks, precision=precision) if precision else None
            if pos:
                entry["roofline"] = pos
        out.append(entry)
    out.sort(key=lambda k: -k["total_us"])
    return out


def _runtime_of(calls_by_api: dict, doc: dict, device_name: str | None) -> str | None:
    """The GPU runtime that recorded the trace: by its runtime calls, else its top-level keys, else
    the device name's vendor; None for a trace without any of these."""
    votes: Counter = Counter()
    for api, c in calls_by_api.items():
        runtime, _ = names.call_kind(api)
        if runtime:
            votes[runtime] += c["count"]
    if votes:
        return votes.most_common(1)[0][0]
    for key, runtime in names.RUNTIME_TRACE_KEYS.items():
        if key in doc:
            return runtime
    for prefix, runtime in names.DEVICE_NAME_RUNTIMES.items():
        if (device_name or "").upper().startswith(prefix):
            return runtime
    return None


def summarize(doc: dict) -> dict:
    """Summarise one Kineto trace.

    Args:
        doc: a trace document (:func:`runner.profile.kineto.load_trace`).

    Returns:
        ``{device: {kind (gpu|cpu), vendor, name, units (SMs/CUs), label, peaks, peaks_note},
        device_name, device_properties, iterations, kernels: [{name, count, total_us, mean_us,
        min_us, max_us, cv, registers_per_thread, shared_memory_bytes, grid, block, blocks,
        threads_per_block, occupancy (theoretical, recomputed, fraction), est_achieved_occupancy
        (the trace's calculator estimate, fraction), occupancy_limiter, active_blocks_per_sm,
        waves, streams, dtype, collective, [flops, bytes, roofline]}], kernel_totals: {count,
        total_us, small_count, small_us}, communication: {count, total_us, streams},
        runtime: {api (cuda|hip|xpu), launches: {count, total_us} (kernel and graph launches),
        graph_launches, calls_by_kind: {kind: {count, total_us}} (kinds of
        :data:`runner.profile.names.CALL_KINDS`), sync: {API: {count, total_us}} (host
        synchronisations, stream waits and synchronous copies), cuda_sync: {kind: count},
        memcpy: {HtoD|DtoH|DtoD|...: {count, bytes, total_us, pageable_count}}, memset: {count,
        bytes, total_us}, launch_delay_mean_us, calls: {API: {count, total_us}}}, gpu_busy_us,
        gpu_idle_us, multi_stream_overlap_us, streams, span_us, operators: [{name, count,
        total_us, self_us, mean_us, input_types, dtype, [flops]}], operator_totals: {count,
        self_us}, compile_events, peak_memory_bytes, peak_memory_by_device_bytes, precision_us,
        repaired: [{issue, what, repair}]}``.

        Every count and time is a number (0 when the events are absent) except where the trace
        lacks the information: ``gpu_busy_us`` and ``gpu_idle_us`` are None when the trace
        launched GPU work but recorded no GPU activity (CUPTI range profiling), ``gpu_idle_us``
        is None without a GPU; ``device_name`` None when the trace names no device;
        ``iterations`` None without ``perfgate::call`` / ``ProfilerStep#N`` annotations;
        ``launch_delay_mean_us`` None without a launch joined to its kernel;
        ``peak_memory_bytes`` None without memory events.
    """
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    kernels, gpu, ops, runtime, annotations, memory, syncs = [], [], [], [], [], [], []
    span_lo, span_hi = math.inf, -math.inf
    for e in events:
        cat = _category(e)
        ph = e.get("ph")
        if ph == "X" and cat != "Trace":
            ts = _num(e.get("ts"))
            end = ts + _num(e.get("dur"))
            span_lo, span_hi = min(span_lo, ts), max(span_hi, end)
        if cat in GPU_CATS and ph == "X":
            gpu.append(e)
            if cat == "kernel":
                kernels.append(e)
        elif cat == "cpu_op" and ph == "X":
            ops.append(e)
        elif cat in ("cuda_runtime", "cuda_driver") and ph == "X":
            runtime.append(e)
        elif cat == "user_annotation" and ph == "X":
            annotations.append(e)
        elif cat == "cuda_sync":
            syncs.append(e)
        elif e.get("name") == "[memory]":
            memory.append(e)

    # runtime calls by API and by kind (runner.profile.names.RUNTIME_CALLS)
    calls_by_api: dict[str, dict] = {}
    for r in runtime:
        c = calls_by_api.setdefault(r.get("name", "?"), {"count": 0, "total_us": 0.0})
        c["count"] += 1
        c["total_us"] += _num(r.get("dur"))
    by_kind = {kind: {"count": 0, "total_us": 0.0} for kind in names.CALL_KINDS}
    for api, c in calls_by_api.items():
        _, kind = names.call_kind(api)
        if kind:
            by_kind[kind]["count"] += c["count"]
            by_kind[kind]["total_us"] += c["total_us"]

    # the device: the kernels' device decides which properties entry applies
    devices = Counter((k.get("args") or {}).get("device") for k in kernels)
    props = device_properties(doc, devices.most_common(1)[0][0] if devices else None)
    api = _runtime_of(calls_by_api, doc, (props or {}).get("name"))
    uses_gpu = bool(gpu) or any(v["count"] for v in by_kind.values())
    device = _device(props, api, uses_gpu)
    api = api or names.DEFAULT_RUNTIME

    # operators: inclusive and self time, work for the roofline
    self_us = _operator_self_times(ops)
    kernels_per_ext = Counter(_arg(k.get("args") or {}, "External id") for k in kernels)
    ops_by_ext = {}
    op_groups: dict[str, dict] = {}
    for i, op in enumerate(ops):
        args = op.get("args") or {}
        name = op.get("name", "?")
        g = op_groups.setdefault(name, {"name": name, "count": 0, "total_us": 0.0, "self_us": 0.0,
                                        "types": Counter(), "flops": 0.0})
        g["count"] += 1
        g["total_us"] += _num(op.get("dur"))
        g["self_us"] += self_us.get(i, 0.0)
        types = [t for t in (args.get("Input type") or []) if t]
        if types:
            g["types"][",".join(types)] += 1
        work = _op_work(op)
        if work[0]:
            g["flops"] += work[0]
        ext = _arg(args, "External id")
        if ext is not None and kernels_per_ext.get(ext):
            dtype = next((_INPUT_DTYPES[t] for t in types if t in _INPUT_DTYPES), None)
            ops_by_ext[ext] = {"work": work, "kernels": kernels_per_ext[ext], "dtype": dtype}
    operators = []
    for g in op_groups.values():
        common = g["types"].most_common(1)[0][0] if g["types"] else ""
        dtypes = [_INPUT_DTYPES[t] for t in common.split(",") if t in _INPUT_DTYPES]
        entry = {"name": g["name"], "count": g["count"], "total_us": round(g["total_us"], 3),
                 "self_us": round(g["self_us"], 3), "mean_us": round(g["total_us"] / g["count"], 3),
                 "input_types": common or None, "dtype": dtypes[0] if dtypes else None}
        if g["flops"]:
            entry["flops"] = g["flops"]
        operators.append(entry)
    operators.sort(key=lambda o: -o["self_us"])

    # iterations and the profiled window
    calls = [a for a in annotations + ops if a.get("name") == CALL_ANNOTATION]
    steps = calls or [a for a in annotations + ops if _STEP_RE.match(str(a.get("name", "")))]
    iterations = len(steps) or None
    gpu_iv = [(_num(e.get("ts")), _num(e.get("ts")) + _num(e.get("dur"))) for e in gpu]
    if steps:
        lo = min(_num(s.get("ts")) for s in steps)
        hi = max([_num(s.get("ts")) + _num(s.get("dur")) for s in steps] + [b for _, b in gpu_iv if b > lo])
    else:
        lo, hi = (span_lo, span_hi) if span_hi > span_lo else (0.0, 0.0)
    span = max(0.0, hi - lo)
    if gpu:
        busy = _union_us(gpu_iv, lo, hi)
        idle = span - busy
    elif uses_gpu:
        busy = idle = None  # GPU work was launched but the trace recorded no GPU activity
    else:
        busy, idle = 0.0, None

    # launches, synchronisations, copies
    launch_kinds = ("launch", "graph_launch")
    sync_kinds = ("sync", "stream_wait", "sync_copy")
    sync = {name: {"count": 0, "total_us": 0.0} for name in names.REPORTED_SYNCS[api]}
    for name, c in calls_by_api.items():
        if names.call_kind(name)[1] in sync_kinds:
            sync[name] = dict(c)
    memcpy: dict[str, dict] = {}
    memset = {"count": 0, "bytes": 0, "total_us": 0.0}
    for e in gpu:
        args = e.get("args") or {}
        cat = _category(e)
        if cat == "gpu_memcpy":
            m = _MEMCPY_RE.search(e.get("name", ""))
            direction = names.MEMCPY_DIRECTIONS.get(m.group(1), m.group(1)) if m else "other"
            c = memcpy.setdefault(direction, {"count": 0, "bytes": 0, "total_us": 0.0, "pageable_count": 0})
            c["count"] += 1
            c["bytes"] += int(_num(args.get("bytes")))
            c["total_us"] += _num(e.get("dur"))
            if m and m.group(2) and "Pageable" in m.group(2):
                c["pageable_count"] += 1
        elif cat == "gpu_memset":
            memset["count"] += 1
            memset["bytes"] += int(_num(args.get("bytes")))
            memset["total_us"] += _num(e.get("dur"))
    # launch delay: from the end of a launch call to the start of the first kernel it launched
    # (a graph launch starts many kernels; the later ones wait for the earlier, not for the launch)
    launch_by_corr = {(r.get("args") or {}).get("correlation"): r for r in runtime
                      if names.call_kind(r.get("name", ""))[1] in launch_kinds}
    first_start: dict = {}
    for k in kernels:
        corr = (k.get("args") or {}).get("correlation")
        if corr in launch_by_corr:
            first_start[corr] = min(first_start.get(corr, math.inf), _num(k.get("ts")))
    delays = [ts - _num(launch_by_corr[c].get("ts")) - _num(launch_by_corr[c].get("dur")) for c, ts in first_start.items()]
    k_durs = [_num(k.get("dur")) for k in kernels]
    summarized = _summarize_kernels(kernels, props, ops_by_ext, device["peaks"])
    precision: Counter = Counter()
    for k in summarized:
        if k["dtype"]:
            precision[k["dtype"]] += k["total_us"]
    if not kernels:
        for o in operators:
            if o["dtype"]:
                precision[o["dtype"]] += o["self_us"]
    comm = [k for k in summarized if k["collective"]]

    peaks: dict[str, float] = {}
    for m in memory:
        args = m.get("args") or {}
        dev_type = args.get("Device Type")
        key = "cpu" if dev_type in (0, None) else f"cuda:{args.get('Device Id', 0)}"
        total = _num(args.get("Total Allocated"), None)
        if total is not None:
            peaks[key] = max(peaks.get(key, 0), int(total))
    cuda_peaks = [v for k, v in peaks.items() if k.startswith("cuda")]
    peak = max(cuda_peaks) if cuda_peaks else peaks.get("cpu")

    launches = {kind: sum(by_kind[k][kind] for k in launch_kinds) for kind in ("count", "total_us")}
    return {
        "device": device,
        "device_name": device["name"],
        "device_properties": ({k: props[k] for k in ("numSms", "regsPerMultiprocessor", "maxThreadsPerMultiprocessor",
                                                      "sharedMemPerMultiprocessor", "computeMajor", "computeMinor",
                                                      "warpSize") if k in props} if props and uses_gpu else None),
        "iterations": iterations,
        "kernels": summarized,
        "kernel_totals": {"count": len(kernels), "total_us": round(sum(k_durs), 3),
                          "small_count": sum(1 for d in k_durs if d < SMALL_KERNEL_US),
                          "small_us": round(sum(d for d in k_durs if d < SMALL_KERNEL_US), 3)},
        "communication": {"count": sum(k["count"] for k in comm), "total_us": round(sum(k["total_us"] for k in comm), 3),
                          "streams": sorted({s for k in comm for s in k["streams"]}, key=str)},
        "runtime": {
            "api": api,
            "launches": {"count": launches["count"], "total_us": round(launches["total_us"], 3)},
            "graph_launches": by_kind["graph_launch"]["count"],
            "calls_by_kind": {k: {"count": v["count"], "total_us": round(v["total_us"], 3)} for k, v in by_kind.items()},
            "sync": {k: {"count": v["count"], "total_us": round(v["total_us"], 3)} for k, v in sync.items()},
            "cuda_sync": dict(Counter((s.get("args") or {}).get("cuda_sync_kind") or s.get("name") for s in syncs)),
            "memcpy": {k: {**v, "total_us": round(v["total_us"], 3)} for k, v in sorted(memcpy.items())},
            "memset": {**memset, "total_us": round(memset["total_us"], 3)},
            "launch_delay_mean_us": round(sum(delays) / len(delays), 3) if delays else None,
            "calls": {k: {"count": v["count"], "total_us": round(v["total_us"], 3)}
                      for k, v in sorted(calls_by_api.items(), key=lambda kv: -kv[1]["total_us"])},
        },
        "gpu_busy_us": None if busy is None else round(busy, 3),
        "gpu_idle_us": None if idle is None else round(idle, 3),
        "multi_stream_overlap_us": round(_multi_stream_overlap_us(
            [(a, b, (e.get("args") or {}).get("stream")) for (a, b), e in zip(gpu_iv, gpu)]), 3),
        "streams": len({(e.get("args") or {}).get("stream") for e in gpu} - {None}),
        "span_us": round(span, 3),
        "operators": operators,
        "operator_totals": {"count": len(ops), "self_us": round(sum(self_us.values()), 3)},
        "compile_events": sum(1 for e in ops + annotations if _COMPILE_RE.search(str(e.get("name", "")))),
        "peak_memory_bytes": peak,
        "peak_memory_by_device_bytes": peaks,
        "precision_us": {k: round(v, 3) for k, v in precision.most_common()},
        "repaired": list(doc.get(REPAIRED_KEY) or []),
    }


def _round_floats(value, digits=3):
    if isinstance(value, float):
        return round(value, digits) if abs(value) < 1e6 else float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _round_floats(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_round_floats(v, digits) for v in value]
    return value


def compact(summary: dict, top: int = 25, *, max_name: int = 300) -> dict:
    """The summary trimmed for results.json: the top-``top`` kernels and operators by time.

    Kernels are ranked by ``total_us``, operators by ``self_us``; what is left out is counted in
    ``kernels_omitted`` / ``operators_omitted`` (``{count, total_us}``). Runtime ``calls`` keep
    the ten most expensive APIs. Names longer than ``max_name`` characters are cut (with ``…``).
    """
    out = dict(summary)

    def cut(entries, key):
        kept = entries[:top]
        rest = entries[top:]
        trimmed = []
        for e in kept:
            e = dict(e)
            if len(e["name"]) > max_name:
                e["name"] = e["name"][: max_name - 1] + "…"
            trimmed.append(e)
        return trimmed, {"count": len(rest), "total_us": round(sum(e[key] for e in rest), 3)}

    out["kernels"], out["kernels_omitted"] = cut(summary.get("kernels") or [], "total_us")
    out["operators"], out["operators_omitted"] = cut(summary.get("operators") or [], "self_us")
    runtime = dict(summary.get("runtime") or {})
    if "calls" in runtime:
        runtime["calls"] = dict(list(runtime["calls"].items())[:10])
    out["runtime"] = runtime
    return _round_floats(out)
