"""The difference between a base and a head trace summary (pure): totals, matched kernels,
operators, and the report's side-by-side rows.

Times are microseconds *per profiled call* when both traces count their calls (``iterations``),
else per trace; ``per_call`` says which.
"""

from __future__ import annotations

from .match import match_kernels

def _scales(base: dict, head: dict) -> tuple[float, float, bool]:
    bi, hi = base.get("iterations"), head.get("iterations")
    if bi and hi:
        return 1.0 / bi, 1.0 / hi, True
    return 1.0, 1.0, False


def _r(x, digits=3):
    return None if x is None else round(float(x), digits)


def _kernel_side(k: dict | None, s: float) -> dict | None:
    if k is None:
        return None
    return {"name": k["name"], "count": _r(k["count"] * s), "total_us": _r(k["total_us"] * s),
            "mean_us": k.get("mean_us"), "cv": k.get("cv"), "registers_per_thread": k.get("registers_per_thread"),
            "shared_memory_bytes": k.get("shared_memory_bytes"), "grid": k.get("grid"), "block": k.get("block"),
            "occupancy": k.get("occupancy"), "est_achieved_occupancy": k.get("est_achieved_occupancy"),
            "waves": k.get("waves"), "streams": k.get("streams"), "dtype": k.get("dtype")}


def _sync_count(summary: dict) -> float:
    return sum(v.get("count", 0) for v in ((summary.get("runtime") or {}).get("sync") or {}).values())


def _sync_us(summary: dict) -> float:
    return sum(v.get("total_us", 0.0) for v in ((summary.get("runtime") or {}).get("sync") or {}).values())


def _memcpy(summary: dict, directions=("HtoD", "DtoH")) -> dict:
    mc = (summary.get("runtime") or {}).get("memcpy") or {}
    out = {"count": 0, "bytes": 0, "total_us": 0.0, "pageable_count": 0}
    for d in directions:
        for key in out:
            out[key] += (mc.get(d) or {}).get(key, 0)
    return out


def _totals(summary: dict, s: float) -> dict:
    rt = summary.get("runtime") or {}
    kt = summary.get("kernel_totals") or {}
    idle = summary.get("gpu_idle_us")
    copies = _memcpy(summary)
    return {
        "span_us": (summary.get("span_us") or 0.0) * s,
        "gpu_busy_us": None if summary.get("gpu_busy_us") is None else summary["gpu_busy_us"] * s,
        "gpu_idle_us": None if idle is None else idle * s,
        "kernel_count": kt.get("count", 0) * s,
        "kernel_us": kt.get("total_us", 0.0) * s,
        "small_kernel_count": kt.get("small_count", 0) * s,
        "launches": (rt.get("launches") or {}).get("count", 0) * s,
        "launch_us": (rt.get("launches") or {}).get("total_us", 0.0) * s,
        "sync_count": _sync_count(summary) * s,
        "sync_us": _sync_us(summary) * s,
        "copy_count": copies["count"] * s,
        "copy_bytes": copies["bytes"] * s,
        "copy_us": copies["total_us"] * s,
        "dtoh_pageable_count": ((rt.get("memcpy") or {}).get("DtoH") or {}).get("pageable_count", 0) * s,
        "multi_stream_overlap_us": (summary.get("multi_stream_overlap_us") or 0.0) * s,
        "operator_count": (summary.get("operator_totals") or {}).get("count", 0) * s,
        "operator_self_us": (summary.get("operator_totals") or {}).get("self_us", 0.0) * s,
        "compile_events": (summary.get("compile_events") or 0) * s,
        "peak_memory_bytes": summary.get("peak_memory_bytes"),
    }


def diff(base_summary: dict, head_summary: dict) -> dict:
    """Differences between two trace summaries, per call where both count their calls.

    Returns:
        ``{per_call, totals: {metric: {base, head, delta}}, kernels: [{name, match (exact|signature|
        family), base: {...}, head: {...}, delta_us, ratio}] (by |delta_us|), unmatched_base,
        unmatched_head: [{name, count, total_us}], operators: [{name, base: {count, self_us},
        head: {...}, delta_self_us}] (by |delta|), new_operators, removed_operators: [{name, count,
        self_us}]}``. Unmatched lists are by time, largest first.
    """
    sb, sh, per_call = _scales(base_summary, head_summary)
    tb, th = _totals(base_summary, sb), _totals(head_summary, sh)
    totals = {}
    for key in tb:
        b, h = tb[key], th[key]
        totals[key] = {"base": _r(b), "head": _r(h), "delta": _r(h - b) if b is not None and h is not None else None}

    pairs, ub, uh = match_kernels(base_summary.get("kernels") or [], head_summary.get("kernels") or [])
    kernels = []
    for b, h, level in pairs:
        bt, ht = b["total_us"] * sb, h["total_us"] * sh
        kernels.append({"name": h["name"], "match": level, "base": _kernel_side(b, sb), "head": _kernel_side(h, sh),
                        "delta_us": _r(ht - bt), "ratio": _r(ht / bt, 4) if bt else None})
    kernels.sort(key=lambda k: -abs(k["delta_us"]))

    def brief(entries, s, key="total_us"):
        return [{"name": e["name"], "count": _r(e["count"] * s), key: _r(e[key] * s)}
                for e in sorted(entries, key=lambda e: -e[key])]

    bops = {o["name"]: o for o in base_summary.get("operators") or []}
    hops = {o["name"]: o for o in head_summary.get("operators") or []}
    operators = []
    for name in bops.keys() & hops.keys():
        b, h = bops[name], hops[name]
        operators.append({"name": name, "base": {"count": _r(b["count"] * sb), "self_us": _r(b["self_us"] * sb)},
                          "head": {"count": _r(h["count"] * sh), "self_us": _r(h["self_us"] * sh)},
                          "delta_self_us": _r(h["self_us"] * sh - b["self_us"] * sb)})
    operators.sort(key=lambda o: -abs(o["delta_self_us"]))
    return {
        "per_call": per_call,
        "totals": totals,
        "kernels": kernels,
        "unmatched_base": brief(ub, sb),
        "unmatched_head": brief(uh, sh),
        "operators": operators,
        "removed_operators": brief([bops[n] for n in bops.keys() - hops.keys()], sb, "self_us"),
        "new_operators": brief([hops[n] for n in hops.keys() - bops.keys()], sh, "self_us"),
    }


def side_by_side(base_summary: dict, head_summary: dict, top: int = 10) -> list[dict]:
    """Rows for the report's "top kernels side by side" table, largest (either side) first.

    Each row ``{name, match, base_count, base_mean_us, base_total_us, head_count, head_mean_us,
    head_total_us, delta_us, base_registers, head_registers, base_occupancy, head_occupancy}``;
    kernels of one side only have None on the other. Operators instead when neither side has kernels.
    """
    d = diff(base_summary, head_summary)
    rows = []
    if d["kernels"] or d["unmatched_base"] or d["unmatched_head"]:
        for k in d["kernels"]:
            rows.append(_row(k["name"], k["match"], k["base"], k["head"]))
        for k in d["unmatched_base"]:
            rows.append(_row(k["name"], "base only", k, None))
        for k in d["unmatched_head"]:
            rows.append(_row(k["name"], "head only", None, k))
    else:
        for o in d["operators"]:
            rows.append(_row(o["name"], "exact", {**o["base"], "total_us": o["base"]["self_us"]},
                             {**o["head"], "total_us": o["head"]["self_us"]}))
        for o in d["removed_operators"]:
            rows.append(_row(o["name"], "base only", {**o, "total_us": o["self_us"]}, None))
        for o in d["new_operators"]:
            rows.append(_row(o["name"], "head only", None, {**o, "total_us": o["self_us"]}))
    rows.sort(key=lambda r: -max(r["base_total_us"] or 0, r["head_total_us"] or 0))
    return rows[:top]


def _row(name, match, b, h) -> dict:
    def get(side, key):
        return None if side is None else side.get(key)

    def mean(side):
        if side is None or not side.get("count"):
            return None
        return side.get("mean_us") if side.get("mean_us") is not None else _r(side["total_us"] / side["count"])

    bt, ht = get(b, "total_us"), get(h, "total_us")
    return {"name": name, "match": match, "base_count": get(b, "count"), "base_mean_us": mean(b), "base_total_us": bt,
            "head_count": get(h, "count"), "head_mean_us": mean(h), "head_total_us": ht,
            "delta_us": _r((ht or 0) - (bt or 0)), "base_registers": get(b, "registers_per_thread"),
            "head_registers": get(h, "registers_per_thread"), "base_occupancy": get(b, "occupancy"),
            "head_occupancy": get(h, "occupancy")}


def profile_for_results(base_summary: dict, head_summary: dict, top: int = 25) -> dict:
    """``benchmark.profile`` for results.json: ``{base, head}`` compacted, plus ``kernels`` rows
    (:func:`side_by_side`, top 10) so a stored result renders the side-by-side table."""
    from .summaries import compact

    return {"base": compact(base_summary, top), "head": compact(head_summary, top),
            "kernels": side_by_side(base_summary, head_summary)}


def unit_words(d: dict) -> str:
    """``per call`` or ``in the trace``: what the diff's times are per."""
    return "per call" if d["per_call"] else "in the trace"
