"""A Kineto trace's events, sorted by what they are (pure): numbers read leniently, intervals
merged, categories canonical (:data:`runner.profile.names.CATEGORIES`), argument spellings of
every version (:data:`runner.profile.names.ARG_NAMES`). Times in microseconds, as in the trace.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from . import names

#: Device-side work (canonical categories, :data:`runner.profile.names.CATEGORIES`).
GPU_CATS = names.GPU_CATEGORIES


def num(value, default=0.0) -> float:
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


def union_us(intervals, lo: float | None = None, hi: float | None = None) -> float:
    total = 0.0
    for start, end in _merge(intervals):
        if lo is not None:
            start = max(start, lo)
        if hi is not None:
            end = min(end, hi)
        total += max(0.0, end - start)
    return total


def multi_stream_overlap_us(intervals: list[tuple[float, float, Any]]) -> float:
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


def arg(args: dict, key: str, default=None):
    """``args[key]`` under any spelling of :data:`runner.profile.names.ARG_NAMES`."""
    for spelling in names.ARG_NAMES.get(key, (key,)):
        if spelling in args:
            return args[spelling]
    return default


def category(event: dict) -> str | None:
    cat = event.get("cat")
    if not isinstance(cat, str):
        return None
    return names.CATEGORIES.get(cat) or names.CATEGORIES.get(cat.lower())


@dataclass
class TraceEvents:
    """A trace's events by kind (each a list of event dicts, in trace order), and the span
    (``span_lo``..``span_hi``, µs) of its complete events."""

    kernels: list[dict] = field(default_factory=list)
    gpu: list[dict] = field(default_factory=list)
    ops: list[dict] = field(default_factory=list)
    runtime: list[dict] = field(default_factory=list)
    annotations: list[dict] = field(default_factory=list)
    memory: list[dict] = field(default_factory=list)
    syncs: list[dict] = field(default_factory=list)
    span_lo: float = math.inf
    span_hi: float = -math.inf


def sort_events(doc: dict) -> TraceEvents:
    """The events of ``doc["traceEvents"]`` by kind: GPU work (kernels among it), CPU operators,
    runtime/driver calls, user annotations, CUDA synchronisations, memory events."""
    out = TraceEvents()
    for e in (e for e in doc.get("traceEvents", []) if isinstance(e, dict)):
        cat = category(e)
        ph = e.get("ph")
        if ph == "X" and cat != "Trace":
            ts = num(e.get("ts"))
            end = ts + num(e.get("dur"))
            out.span_lo, out.span_hi = min(out.span_lo, ts), max(out.span_hi, end)
        if cat in GPU_CATS and ph == "X":
            out.gpu.append(e)
            if cat == "kernel":
                out.kernels.append(e)
        elif cat == "cpu_op" and ph == "X":
            out.ops.append(e)
        elif cat in ("cuda_runtime", "cuda_driver") and ph == "X":
            out.runtime.append(e)
        elif cat == "user_annotation" and ph == "X":
            out.annotations.append(e)
        elif cat == "cuda_sync":
            out.syncs.append(e)
        elif e.get("name") == "[memory]":
            out.memory.append(e)
    return out
