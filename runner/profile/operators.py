"""A trace's CPU operators (pure): self time from the call nesting, work (flops, bytes) for the
roofline, and the per-name summary. Times in microseconds.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from .events import arg, num

#: Operator ``Input type`` strings to precision names.
INPUT_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                 "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
                 "c10::Float8_e5m2fnuz": "fp8", "c10::Float4_e2m1fn_x2": "fp4", "signed char": "int8"}
_DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
                "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
                "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float4_e2m1fn_x2": 1}


def _tensor_bytes(dims, dtype) -> int:
    if not isinstance(dims, list) or not dims or dtype not in _DTYPE_BYTES:
        return 0
    n = 1
    for d in dims:
        if not isinstance(d, (int, float)):
            return 0
        n *= int(d)
    return n * _DTYPE_BYTES[dtype]


def op_work(op: dict) -> tuple[float | None, float | None]:
    """(flops, bytes) of an operator call: ``flops`` arg where torch wrote it, else a GEMM estimate;
    bytes are the input tensors (plus the GEMM output), an estimate of the traffic."""
    args = op.get("args") or {}
    dims = arg(args, "Input Dims") or []
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
    return (num(flops, None) if flops is not None else None), (float(nbytes) if nbytes else None)


def operator_self_times(ops: list[dict]) -> dict[int, float]:
    """Self time (µs) per operator event index: its duration minus its direct children's."""
    by_thread: dict[tuple, list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        by_thread[(op.get("pid"), op.get("tid"))].append(i)
    self_us = {}
    for idxs in by_thread.values():
        idxs.sort(key=lambda i: (num(ops[i].get("ts")), -num(ops[i].get("dur"))))
        stack: list[tuple[int, float]] = []
        for i in idxs:
            start = num(ops[i].get("ts"))
            dur = num(ops[i].get("dur"))
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                parent = stack[-1][0]
                self_us[parent] = self_us[parent] - dur
            self_us[i] = dur
            stack.append((i, start + dur))
    return {i: max(0.0, v) for i, v in self_us.items()}


def summarize_operators(ops: list[dict], kernels: list[dict]) -> tuple[list[dict], dict, dict[int, float]]:
    """``(operators, ops_by_ext, self_us)``: one entry per operator name ``{name, count, total_us,
    self_us, mean_us, input_types, dtype, [flops]}`` by self time, largest first; the work of each
    operator that launched kernels by its External id ``{work: (flops, bytes), kernels, dtype}``;
    the self time (µs) per operator event index."""
    self_us = operator_self_times(ops)
    kernels_per_ext = Counter(arg(k.get("args") or {}, "External id") for k in kernels)
    ops_by_ext = {}
    op_groups: dict[str, dict] = {}
    for i, op in enumerate(ops):
        args = op.get("args") or {}
        name = op.get("name", "?")
        g = op_groups.setdefault(name, {"name": name, "count": 0, "total_us": 0.0, "self_us": 0.0,
                                        "types": Counter(), "flops": 0.0})
        g["count"] += 1
        g["total_us"] += num(op.get("dur"))
        g["self_us"] += self_us.get(i, 0.0)
        types = [t for t in (args.get("Input type") or []) if t]
        if types:
            g["types"][",".join(types)] += 1
        work = op_work(op)
        if work[0]:
            g["flops"] += work[0]
        ext = arg(args, "External id")
        if ext is not None and kernels_per_ext.get(ext):
            dtype = next((INPUT_DTYPES[t] for t in types if t in INPUT_DTYPES), None)
            ops_by_ext[ext] = {"work": work, "kernels": kernels_per_ext[ext], "dtype": dtype}
    operators = []
    for g in op_groups.values():
        common = g["types"].most_common(1)[0][0] if g["types"] else ""
        dtypes = [INPUT_DTYPES[t] for t in common.split(",") if t in INPUT_DTYPES]
        entry = {"name": g["name"], "count": g["count"], "total_us": round(g["total_us"], 3),
                 "self_us": round(g["self_us"], 3), "mean_us": round(g["total_us"] / g["count"], 3),
                 "input_types": common or None, "dtype": dtypes[0] if dtypes else None}
        if g["flops"]:
            entry["flops"] = g["flops"]
        operators.append(entry)
    operators.sort(key=lambda o: -o["self_us"])
    return operators, ops_by_ext, self_us
