"""Kineto (torch.profiler) trace files: load, summarise, compact; ``perfgate trace-summary``.

The summary is computed from the trace file itself, so perfgate's own traces, stored traces
and third-party traces of any torch version seen in ../shared/fixtures all work. Field names
are those Kineto writes: events with ``cat`` in ``kernel``, ``gpu_memcpy``, ``gpu_memset``,
``cuda_runtime``, ``cuda_driver``, ``cuda_sync``, ``cpu_op`` (older traces: ``Operator``),
``user_annotation``, ``cpu_instant_event`` (``[memory]``); kernel ``args`` carry
``registers per thread``, ``shared memory``, ``grid``, ``block``, ``stream``, ``correlation``
and ``est. achieved occupancy %`` (older: ``theoretical occupancy %``); the top level carries
``deviceProperties``.

Units: times in microseconds (``*_us``, as in the trace), sizes in bytes (``*_bytes``),
occupancy as a fraction 0..1. Pure except :func:`load_trace` and :func:`main_trace_summary`.
This module never imports torch.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from . import roofline
from .errors import UserError

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
OPERATOR_CATS = ("cpu_op", "Operator", "operator")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime", "runtime")

#: CUDA runtime/driver calls that launch GPU work (kernels or graphs).
LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
               "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice", "cudaGraphLaunch")

#: Synchronising calls always reported (count 0 when absent), then any other seen in the trace.
SYNC_APIS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent")
OTHER_SYNC_APIS = ("cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuStreamWaitEvent")

#: A kernel shorter than this is "small" (STRATEGIES.md, sync_overhead: under ~10 µs).
SMALL_KERNEL_US = 10.0

#: Annotations that mark one profiled call (perfgate's own) or one step (third-party traces).
CALL_ANNOTATION = "perfgate::call"
_STEP_RE = re.compile(r"^ProfilerStep#\d+$")

_MEMCPY_RE = re.compile(r"Memcpy\s+(\w+)(?:\s*\(([^)]*)\))?")
_COMPILE_RE = re.compile(r"compile_inner|_compile\.compile|compile_fx|Compiled?Function.*compile|dynamo.*compile",
                         re.IGNORECASE)

#: Precision tokens in kernel names, first match wins (most specific first).
_KERNEL_DTYPES = (
    ("fp8", re.compile(r"fp8|e4m3|e5m2", re.I)),
    ("int8", re.compile(r"int8|imma|(?<![a-z])[si]8(?![0-9])", re.I)),
    ("bf16", re.compile(r"bf16|bfloat16|BFloat16", re.I)),
    ("fp16", re.compile(r"(?<!b)f16|fp16|half|hgemm|c10::Half|(?<![a-z])h\d{4,5}gemm", re.I)),
    ("tf32", re.compile(r"tf32|tensorop_s1688gemm", re.I)),
    ("fp64", re.compile(r"double|dgemm|f64", re.I)),
    ("fp32", re.compile(r"(?<![a-z])float(?![0-9])|f32|fp32|sgemm", re.I)),
)
#: Operator ``Input type`` strings to precision names.
_INPUT_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                 "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "signed char": "int8"}
_DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
                "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}


# ---------------------------------------------------------------------------------------------
# loading (I/O)


def load_trace(path: str | Path) -> dict:
    """Read a Kineto/Chrome trace (``.json`` or ``.json.gz``).

    Returns:
        the trace document: a dict with ``traceEvents`` (a bare event list is wrapped).

    Raises:
        UserError: the file is missing or unreadable, not (gzipped) JSON, or not a trace.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path} is not a JSON trace (.json or .json.gz): {str(exc).splitlines()[0][:120]}") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise UserError(f"{path} is JSON but not a Kineto/Chrome trace (no 'traceEvents' list)")
    return doc


# ---------------------------------------------------------------------------------------------
# summarising (pure)


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
    """Precision named by a kernel's name (``fp16``, ``bf16``, ``fp32``, ``tf32``, ``int8``, ...), or None."""
    for dtype, pattern in _KERNEL_DTYPES:
        if pattern.search(name):
            return dtype
    return None


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
    dims = args.get("Input Dims") or []
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


def _device_props(doc: dict, device) -> dict | None:
    props = doc.get("deviceProperties") or []
    if not isinstance(props, list) or not props:
        return None
    for p in props:
        if isinstance(p, dict) and device is not None and p.get("id") == device:
            return p
    return props[0] if isinstance(props[0], dict) else None


def _summarize_kernels(kernels: list[dict], props: dict | None, ops_by_ext: dict, device_name) -> list[dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for k in kernels:
        groups[k.get("name", "?")].append(k)
    peaks = roofline.peaks_for(device_name)
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
        est = args0.get("est. achieved occupancy %", args0.get("theoretical occupancy %"))
        threads = roofline.grid_blocks(block) if block else None
        blocks = roofline.grid_blocks(grid) if grid else None
        occ = roofline.theoretical_occupancy(int(regs) if regs is not None else None, threads,
                                             int(smem) if smem is not None else None, props)
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
            "dtype": kernel_dtype(name),
        }
        flops = nbytes = 0.0
        for e in evs:
            op = ops_by_ext.get((e.get("args") or {}).get("External id"))
            if op is not None:
                f, b = op["work"]
                flops += (f or 0.0) / op["kernels"]
                nbytes += (b or 0.0) / op["kernels"]
        if flops and nbytes:
            entry["flops"] = flops
            entry["bytes"] = nbytes
            pos = roofline.position(flops, nbytes, total, peaks, tensor_cores=entry["dtype"] in ("fp16", "bf16", "tf32", "fp8", "int8"))
            if pos:
                entry["roofline"] = pos
        out.append(entry)
    out.sort(key=lambda k: -k["total_us"])
    return out


def summarize(trace_or_path) -> dict:
    """Summarise one Kineto trace.

    Args:
        trace_or_path: a document from :func:`load_trace`, or a path to one.

    Returns:
        ``{device_name, device_properties, iterations, kernels: [{name, count, total_us, mean_us,
        min_us, max_us, cv, registers_per_thread, shared_memory_bytes, grid, block, blocks,
        threads_per_block, occupancy (theoretical, recomputed, fraction), est_achieved_occupancy
        (the trace's calculator estimate, fraction), occupancy_limiter, active_blocks_per_sm,
        waves, streams, dtype, [flops, bytes, roofline]}], kernel_totals: {count, total_us,
        small_count, small_us}, runtime: {launches: {count, total_us}, graph_launches,
        sync: {API: {count, total_us}}, cuda_sync: {kind: count}, memcpy: {HtoD|DtoH|DtoD|...:
        {count, bytes, total_us, pageable_count}}, memset: {count, bytes, total_us},
        launch_delay_mean_us, calls: {API: {count, total_us}}}, gpu_busy_us, gpu_idle_us,
        multi_stream_overlap_us, streams, span_us, operators: [{name, count, total_us, self_us,
        mean_us, input_types, dtype, [flops]}], operator_totals: {count, self_us},
        compile_events, peak_memory_bytes, peak_memory_by_device_bytes, precision_us}``.
        ``gpu_idle_us`` is None on a trace without GPU activity. ``iterations`` counts
        ``perfgate::call`` (else ``ProfilerStep#N``) annotations, None when there are none.

    Raises:
        UserError: from :func:`load_trace` when given a path.
    """
    doc = trace_or_path if isinstance(trace_or_path, dict) else load_trace(trace_or_path)
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    kernels, gpu, ops, runtime, annotations, memory, syncs = [], [], [], [], [], [], []
    span_lo, span_hi = math.inf, -math.inf
    for e in events:
        cat = e.get("cat")
        ph = e.get("ph")
        if ph == "X" and cat != "Trace":
            ts = _num(e.get("ts"))
            end = ts + _num(e.get("dur"))
            span_lo, span_hi = min(span_lo, ts), max(span_hi, end)
        if cat in GPU_CATS and ph == "X":
            gpu.append(e)
            if cat == "kernel":
                kernels.append(e)
        elif cat in OPERATOR_CATS and ph == "X":
            ops.append(e)
        elif cat in RUNTIME_CATS and ph == "X":
            runtime.append(e)
        elif cat == "user_annotation" and ph == "X":
            annotations.append(e)
        elif cat == "cuda_sync":
            syncs.append(e)
        elif e.get("name") == "[memory]":
            memory.append(e)

    # the device of the kernels decides which deviceProperties entry applies
    devices = Counter((k.get("args") or {}).get("device") for k in kernels)
    device = devices.most_common(1)[0][0] if devices else None
    props = _device_props(doc, device)
    device_name = (props or {}).get("name") if (kernels or gpu) else None

    # operators: inclusive and self time, work for the roofline
    self_us = _operator_self_times(ops)
    kernels_per_ext = Counter((k.get("args") or {}).get("External id") for k in kernels)
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
        ext = args.get("External id")
        if ext is not None and kernels_per_ext.get(ext):
            ops_by_ext[ext] = {"work": work, "kernels": kernels_per_ext[ext]}
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
    busy = _union_us(gpu_iv, lo, hi) if gpu_iv else 0.0

    # runtime: launches, synchronisations, copies
    calls_by_api: dict[str, dict] = {}
    for r in runtime:
        c = calls_by_api.setdefault(r.get("name", "?"), {"count": 0, "total_us": 0.0})
        c["count"] += 1
        c["total_us"] += _num(r.get("dur"))
    launch = {"count": 0, "total_us": 0.0}
    for api in LAUNCH_APIS:
        if api in calls_by_api:
            launch["count"] += calls_by_api[api]["count"]
            launch["total_us"] += calls_by_api[api]["total_us"]
    sync = {api: dict(calls_by_api.get(api, {"count": 0, "total_us": 0.0})) for api in SYNC_APIS}
    sync.update({api: dict(calls_by_api[api]) for api in OTHER_SYNC_APIS if api in calls_by_api})
    memcpy: dict[str, dict] = {}
    memset = {"count": 0, "bytes": 0, "total_us": 0.0}
    for e in gpu:
        args = e.get("args") or {}
        if e.get("cat") == "gpu_memcpy":
            m = _MEMCPY_RE.search(e.get("name", ""))
            direction = m.group(1) if m else "other"
            c = memcpy.setdefault(direction, {"count": 0, "bytes": 0, "total_us": 0.0, "pageable_count": 0})
            c["count"] += 1
            c["bytes"] += int(_num(args.get("bytes")))
            c["total_us"] += _num(e.get("dur"))
            if m and m.group(2) and "Pageable" in m.group(2):
                c["pageable_count"] += 1
        elif e.get("cat") == "gpu_memset":
            memset["count"] += 1
            memset["bytes"] += int(_num(args.get("bytes")))
            memset["total_us"] += _num(e.get("dur"))
    launch_by_corr = {(r.get("args") or {}).get("correlation"): r for r in runtime
                      if r.get("name") in LAUNCH_APIS}
    delays = []
    for k in kernels:
        r = launch_by_corr.get((k.get("args") or {}).get("correlation"))
        if r is not None:
            delays.append(_num(k.get("ts")) - _num(r.get("ts")) - _num(r.get("dur")))
    k_durs = [_num(k.get("dur")) for k in kernels]
    precision: Counter = Counter()
    for k in kernels:
        dt = kernel_dtype(k.get("name", ""))
        if dt:
            precision[dt] += _num(k.get("dur"))
    if not kernels:
        for o in operators:
            if o["dtype"]:
                precision[o["dtype"]] += o["self_us"]

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

    return {
        "device_name": device_name,
        "device_properties": ({k: props[k] for k in ("numSms", "regsPerMultiprocessor", "maxThreadsPerMultiprocessor",
                                                      "sharedMemPerMultiprocessor", "computeMajor", "computeMinor",
                                                      "warpSize") if k in props} if props and kernels else None),
        "iterations": iterations,
        "kernels": _summarize_kernels(kernels, props, ops_by_ext, device_name),
        "kernel_totals": {"count": len(kernels), "total_us": round(sum(k_durs), 3),
                          "small_count": sum(1 for d in k_durs if d < SMALL_KERNEL_US),
                          "small_us": round(sum(d for d in k_durs if d < SMALL_KERNEL_US), 3)},
        "runtime": {
            "launches": {"count": launch["count"], "total_us": round(launch["total_us"], 3)},
            "graph_launches": calls_by_api.get("cudaGraphLaunch", {}).get("count", 0),
            "sync": {k: {"count": v["count"], "total_us": round(v["total_us"], 3)} for k, v in sync.items()},
            "cuda_sync": dict(Counter((s.get("args") or {}).get("cuda_sync_kind") or s.get("name") for s in syncs)),
            "memcpy": {k: {**v, "total_us": round(v["total_us"], 3)} for k, v in sorted(memcpy.items())},
            "memset": {**memset, "total_us": round(memset["total_us"], 3)},
            "launch_delay_mean_us": round(sum(delays) / len(delays), 3) if delays else None,
            "calls": {k: {"count": v["count"], "total_us": round(v["total_us"], 3)}
                      for k, v in sorted(calls_by_api.items(), key=lambda kv: -kv[1]["total_us"])},
        },
        "gpu_busy_us": round(busy, 3),
        "gpu_idle_us": round(span - busy, 3) if gpu else None,
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


# ---------------------------------------------------------------------------------------------
# CLI (imperative shell)


def _fmt_us(us) -> str:
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def render_summary(summary: dict, console, title: str = "trace", top: int = 15) -> None:
    """Print a summary as rich tables on ``console`` (a ``rich.console.Console``)."""
    from rich.table import Table

    from .escape import term

    rt = summary["runtime"]
    head = [f"[bold]{term(title)}[/bold]", f"device: {term(summary.get('device_name') or 'CPU only')}",
            f"span {_fmt_us(summary['span_us'])}"]
    if summary.get("iterations"):
        head.append(f"{summary['iterations']} calls")
    if summary.get("gpu_idle_us") is not None:
        idle_share = summary["gpu_idle_us"] / summary["span_us"] if summary["span_us"] else 0
        head.append(f"GPU busy {_fmt_us(summary['gpu_busy_us'])}, idle {_fmt_us(summary['gpu_idle_us'])} ({idle_share:.0%})")
    if summary.get("peak_memory_bytes") is not None:
        head.append(f"peak memory {summary['peak_memory_bytes'] / 2**20:.1f} MiB")
    console.print(" · ".join(head))
    if summary["kernels"]:
        t = Table(title="kernels (by total time)")
        for col in ("kernel", "count", "total", "mean", "regs/thread", "smem B", "grid", "block", "occupancy", "waves"):
            t.add_column(col, justify="left" if col == "kernel" else "right")
        for k in summary["kernels"][:top]:
            occ = f"{k['occupancy']:.0%}" if k.get("occupancy") is not None else "-"
            if k.get("est_achieved_occupancy") is not None:
                occ += f" (est. {k['est_achieved_occupancy']:.0%})"
            t.add_row(term(_short(k["name"])), str(k["count"]), _fmt_us(k["total_us"]), _fmt_us(k["mean_us"]),
                      str(k.get("registers_per_thread") if k.get("registers_per_thread") is not None else "-"),
                      str(k.get("shared_memory_bytes") if k.get("shared_memory_bytes") is not None else "-"),
                      "x".join(map(str, k.get("grid") or [])) or "-", "x".join(map(str, k.get("block") or [])) or "-",
                      occ, str(k.get("waves") or "-"))
        console.print(t)
        t = Table(title="CUDA runtime")
        for col in ("call", "count", "total"):
            t.add_column(col, justify="left" if col == "call" else "right")
        t.add_row("kernel launches", str(rt["launches"]["count"]), _fmt_us(rt["launches"]["total_us"]))
        for api, v in rt["sync"].items():
            t.add_row(term(api), str(v["count"]), _fmt_us(v["total_us"]))
        for direction, v in rt["memcpy"].items():
            t.add_row(term(f"memcpy {direction} ({v['bytes']} B)"), str(v["count"]), _fmt_us(v["total_us"]))
        console.print(t)
    if summary["operators"]:
        t = Table(title="operators (by self time)")
        for col in ("operator", "count", "self", "total", "mean"):
            t.add_column(col, justify="left" if col == "operator" else "right")
        for o in summary["operators"][:top]:
            t.add_row(term(_short(o["name"])), str(o["count"]), _fmt_us(o["self_us"]), _fmt_us(o["total_us"]), _fmt_us(o["mean_us"]))
        console.print(t)


def main_trace_summary(args) -> int:
    """``perfgate trace-summary TRACE [--json]``: print the summary (JSON or tables); exit 0.

    Raises:
        UserError: the trace cannot be read (exit 2, one line).
    """
    summary = summarize(load_trace(args.trace))
    if getattr(args, "json", False):
        print(json.dumps(_round_floats(summary), indent=1))
        return 0
    from rich.console import Console

    render_summary(summary, Console(), title=str(args.trace))
    return 0
