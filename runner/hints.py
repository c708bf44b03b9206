"""Profile diff and root-cause hints; ``perfgate trace-diff``.

:func:`diff` pairs the kernels (and operators) of a base and a head trace summary
(:func:`runner.trace.summarize`), robustly for templated and fused names, and :func:`hints_for`
turns (timing change, summary diff, telemetry) into ranked hints, each
``{kind, confidence (0..1), summary (one sentence with numbers), evidence {...}}``
(STRATEGIES.md, "Root causes"). Both are pure functions over plain data.

Rules of evidence:
- no hints at all for an ``unchanged`` (or failed/new/removed) benchmark;
- a hint explains the measured direction: for a regression only what got more expensive in
  head, for an improvement only what got cheaper;
- when the verdict is a regression or an improvement and no rule fires, a single
  ``unexplained`` hint says so ("no profile difference explains this");
- ``inconclusive`` benchmarks get the hints of the sign of their ratio at half confidence;
- when base and head ran on different GPUs (``device.label`` of the summaries), the
  ``device_change`` hint leads and every other hint keeps half its confidence (``evidence.
  device_changed``): its difference may be the device's, not the code's.

Times are microseconds *per profiled call* when both traces count their calls
(``iterations``), else per trace; the evidence says which (``per_call``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

#: Order of kinds when confidences tie (the three recurring root causes first).
PRIORITY = ("register_pressure", "sync_overhead", "memory_contention", "device_change", "throttling", "launch_overhead",
            "host_device_copy", "gpu_idle", "new_kernels", "precision_change", "recompilation",
            "kernel_time", "memory_growth", "new_operators", "operator_time", "unexplained")

#: Verdicts that get no hints at all.
NO_HINT_VERDICTS = ("unchanged", "failed", "new", "removed")

#: Relative change below which a trace-only comparison counts as unchanged (fraction).
TRACE_NOISE = 0.03

MIN_CONFIDENCE = 0.2
MAX_HINTS = 6

#: Confidence factor of every other hint when base and head ran on different GPUs.
DEVICE_CHANGE_FACTOR = 0.5

# ---------------------------------------------------------------------------------------------
# kernel name normalisation and matching

_ANON = re.compile(r"\(anonymous namespace\)")
_LAMBDA_NUM = re.compile(r"#\d+")
_TRITON_SUFFIX = re.compile(r"^(triton_\w+?)_\d+$")
_DIGITS = re.compile(r"\d+")


def _strip_args(name: str) -> str:
    """Drop the parameter list: everything from the first ``(`` outside template brackets."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def kernel_key(name: str, level: str) -> str | None:
    """The matching key of a kernel name at ``level``.

    Levels: ``exact`` (the name); ``signature`` (no ``void``, no parameter list, lambda and
    anonymous-namespace numbering dropped, Triton's trailing ``_N`` index dropped); ``family``
    (the qualified function name without template arguments, digits as ``#``: tile sizes and
    vector widths may differ). Triton kernels have no family key (their fused op list is their
    identity). Returns None when the level does not apply.
    """
    if level == "exact":
        return name
    core = _ANON.sub("anon", name.strip())
    if core.startswith("void "):
        core = core[5:]
    core = _LAMBDA_NUM.sub("#", _strip_args(core)).replace(" ", "")
    m = _TRITON_SUFFIX.match(core)
    if m:
        return m.group(1) if level == "signature" else None
    if level == "signature":
        return core
    return _DIGITS.sub("#", _strip_templates(core)) or None


LEVELS = ("exact", "signature", "family")


def match_kernels(base: list[dict], head: list[dict]):
    """Pair kernels one to one: exact name, then signature, then family; larger first.

    Returns:
        ``(pairs, unmatched_base, unmatched_head)`` with pairs ``(base_kernel, head_kernel, level)``.
    """
    ub = {k["name"]: k for k in base}
    uh = {k["name"]: k for k in head}
    pairs = []
    for level in LEVELS:
        gb, gh = defaultdict(list), defaultdict(list)
        for name, k in ub.items():
            key = kernel_key(name, level)
            if key is not None:
                gb[key].append(k)
        for name, k in uh.items():
            key = kernel_key(name, level)
            if key is not None:
                gh[key].append(k)
        for key in gb.keys() & gh.keys():
            bs = sorted(gb[key], key=lambda k: -k["total_us"])
            hs = sorted(gh[key], key=lambda k: -k["total_us"])
            for b, h in zip(bs, hs):
                pairs.append((b, h, level))
                del ub[b["name"]]
                del uh[h["name"]]
    return pairs, list(ub.values()), list(uh.values())


# ---------------------------------------------------------------------------------------------
# diff


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
    from .trace import compact

    return {"base": compact(base_summary, top), "head": compact(head_summary, top),
            "kernels": side_by_side(base_summary, head_summary)}


# ---------------------------------------------------------------------------------------------
# hints


def _hint(kind: str, confidence: float, summary: str, evidence: dict, contrib_us: float | None = None) -> dict:
    return {"kind": kind, "confidence": round(max(0.0, min(1.0, confidence)), 2), "summary": summary,
            "evidence": evidence, "_contrib": contrib_us}


def _us(x: float) -> str:
    x = float(x)
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f} s"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.2f} ms"
    return f"{x:.1f} µs"


def _signed_us(x: float) -> str:
    return ("+" if x >= 0 else "−") + _us(abs(x))


def _pct(x) -> str:
    return "?" if x is None else f"{100 * x:.0f} %"


def _short(name: str, width: int = 60) -> str:
    """A kernel name for a sentence: without ``void`` and parameter list, cut to ``width``."""
    core = kernel_key(name, "signature") or name
    return core if len(core) <= width else core[: width - 1] + "…"


def _unit(d: dict) -> str:
    return "per call" if d["per_call"] else "in the trace"


def _direction(change: dict | None, d: dict) -> tuple[int, float]:
    """(+1 slower, -1 faster, 0 none) and a confidence factor."""
    if change:
        verdict = change.get("verdict")
        ratio = change.get("ratio")
        if verdict == "regression":
            return 1, 1.0
        if verdict == "improvement":
            return -1, 1.0
        if ratio is not None and ratio != 1.0:
            return (1 if ratio > 1 else -1), 0.5
        return 0, 0.0
    t = d["totals"]
    for key in ("span_us", "gpu_busy_us", "operator_self_us"):
        b, h = t[key]["base"], t[key]["head"]
        if b and h and abs(h / b - 1) >= TRACE_NOISE:
            return (1 if h > b else -1), 0.8
    return 0, 0.0


def _register_pressure(d: dict, sign: int, unit: str) -> dict | None:
    best = None
    for k in d["kernels"]:
        b, h = k["base"], k["head"]
        rb, rh = b.get("registers_per_thread"), h.get("registers_per_thread")
        if rb is None or rh is None or (rh - rb) * sign < max(8, 0.1 * rb):
            continue
        if k["delta_us"] * sign <= 0:
            continue
        ob = b.get("occupancy") if b.get("occupancy") is not None else b.get("est_achieved_occupancy")
        oh = h.get("occupancy") if h.get("occupancy") is not None else h.get("est_achieved_occupancy")
        if ob is not None and oh is not None and (ob - oh) * sign <= 0:
            continue
        if best is None or abs(k["delta_us"]) > abs(best[0]["delta_us"]):
            best = (k, ob, oh)
    if best:
        k, ob, oh = best
        b, h = k["base"], k["head"]
        waves = ""
        if b.get("waves") and h.get("waves") and b["waves"] != h["waves"]:
            waves = f" and it needs {h['waves']} wave{'s' if h['waves'] > 1 else ''} instead of {b['waves']}"
        if sign > 0:
            text = (f"Kernel {_short(k['name'])} now uses {h['registers_per_thread']} registers per thread "
                    f"(base {b['registers_per_thread']}), so occupancy fell from {_pct(ob)} to {_pct(oh)}{waves}; "
                    f"it takes {_signed_us(k['delta_us'])} {unit} ({_us(b['total_us'])} → {_us(h['total_us'])}).")
        else:
            text = (f"Kernel {_short(k['name'])} now uses {h['registers_per_thread']} registers per thread "
                    f"(base {b['registers_per_thread']}), so occupancy rose from {_pct(ob)} to {_pct(oh)}{waves}; "
                    f"it takes {_signed_us(k['delta_us'])} {unit} ({_us(b['total_us'])} → {_us(h['total_us'])}).")
        ev = {"kernel": k["name"], "match": k["match"], "registers_per_thread": {"base": b["registers_per_thread"], "head": h["registers_per_thread"]},
              "occupancy": {"base": ob, "head": oh}, "waves": {"base": b.get("waves"), "head": h.get("waves")},
              "total_us": {"base": b["total_us"], "head": h["total_us"]}, "count": {"base": b["count"], "head": h["count"]}}
        conf = 0.85 if ob is not None and oh is not None else 0.6
        return _hint("register_pressure", conf, text, ev, k["delta_us"])

    return None


def _fusion_register_pressure(base: dict, head: dict, d: dict, sign: int, unit: str) -> dict | None:
    """A new (fused) head kernel with more registers and lower occupancy than the kernels it replaced."""
    if sign <= 0 or not d["unmatched_head"] or not d["unmatched_base"]:
        return None
    t = d["totals"]
    if t["kernel_count"]["delta"] is None or t["kernel_count"]["delta"] >= 0:
        return None
    sb, sh, _ = _scales(base, head)
    full_b = {k["name"]: k for k in base.get("kernels") or []}
    full_h = {k["name"]: k for k in head.get("kernels") or []}
    removed = [full_b[k["name"]] for k in d["unmatched_base"] if k["name"] in full_b]
    added = [full_h[k["name"]] for k in d["unmatched_head"] if k["name"] in full_h]
    removed = [k for k in removed if k.get("registers_per_thread") is not None]
    added = [k for k in added if k.get("registers_per_thread") is not None]
    if not removed or not added:
        return None
    fused = max(added, key=lambda k: k["total_us"])
    max_regs = max(k["registers_per_thread"] for k in removed)
    if fused["registers_per_thread"] < max_regs + max(8, 0.1 * max_regs):
        return None
    occs = [k.get("occupancy") for k in removed if k.get("occupancy") is not None]
    ob = min(occs) if occs else None
    oh = fused.get("occupancy")
    if ob is not None and oh is not None and oh >= ob:
        return None
    replaced_us = sum(k["total_us"] for k in removed) * sb
    fused_us = fused["total_us"] * sh
    if fused_us <= replaced_us:
        return None
    bw = max((k.get("waves") or 0) for k in removed) or None
    hw = fused.get("waves")
    waves = f" and needs {hw} waves instead of {bw}" if bw and hw and hw != bw else ""
    text = (f"Fusion raised register pressure: the new kernel {_short(fused['name'])} uses "
            f"{fused['registers_per_thread']} registers per thread (the {len(removed)} kernel(s) it replaces used at most "
            f"{max_regs}), theoretical occupancy {_pct(ob)} → {_pct(oh)}{waves}; it takes {_us(fused_us)} {unit} "
            f"vs {_us(replaced_us)} for the kernels it replaced.")
    ev = {"kernel": fused["name"], "replaced": [k["name"] for k in removed],
          "registers_per_thread": {"base_max": max_regs, "head": fused["registers_per_thread"]},
          "occupancy": {"base_min": ob, "head": oh}, "waves": {"base": bw, "head": hw},
          "total_us": {"base": round(replaced_us, 3), "head": round(fused_us, 3)},
          "kernel_count": t["kernel_count"]}
    conf = 0.85 if ob is not None and oh is not None else 0.6
    return _hint("register_pressure", conf, text, ev, fused_us - replaced_us)


def _sync_overhead(base: dict, head: dict, d: dict, sign: int, unit: str) -> dict | None:
    t = d["totals"]
    dc, dt = t["sync_count"]["delta"], t["sync_us"]["delta"]
    dd = t["dtoh_pageable_count"]["delta"]
    sb, sh, _ = _scales(base, head)
    per_api = {}
    for api in set((base.get("runtime") or {}).get("sync", {})) | set((head.get("runtime") or {}).get("sync", {})):
        b = ((base.get("runtime") or {}).get("sync") or {}).get(api) or {"count": 0, "total_us": 0}
        h = ((head.get("runtime") or {}).get("sync") or {}).get(api) or {"count": 0, "total_us": 0}
        if b["count"] or h["count"]:
            per_api[api] = {"base": {"count": _r(b["count"] * sb), "total_us": _r(b["total_us"] * sb)},
                            "head": {"count": _r(h["count"] * sh), "total_us": _r(h["total_us"] * sh)}}
    ev = {"sync": per_api, "sync_count": t["sync_count"], "sync_us": t["sync_us"],
          "dtoh_pageable_copies": t["dtoh_pageable_count"], "small_kernels": t["small_kernel_count"],
          "gpu_idle_us": t["gpu_idle_us"]}
    base_count = t["sync_count"]["base"] or 0
    count_moved = (dc * sign >= 1 and (base_count == 0 or abs(dc) / base_count >= 0.2)) or dd * sign >= 1
    if count_moved:
        changed = sorted(per_api.items(), key=lambda kv: -abs(kv[1]["head"]["count"] - kv[1]["base"]["count"]))
        api, v = changed[0] if changed else ("cudaMemcpy DtoH", None)
        what = (f"{api} {v['base']['count']:g} → {v['head']['count']:g}" if v else "")
        more = "more" if sign > 0 else "fewer"
        items = f"; device-to-host copies to pageable memory (the .item() pattern) {t['dtoh_pageable_count']['base']:g} → {t['dtoh_pageable_count']['head']:g}" if dd else ""
        text = (f"Head makes {abs(dc):g} {more} host synchronisations {unit} ({what}{items}); "
                f"time in synchronising calls {_us(t['sync_us']['base'])} → {_us(t['sync_us']['head'])}.")
        contrib = dt if dt * sign > 0 else sign * max(abs(dc), abs(dd)) * 2.0
        return _hint("sync_overhead", 0.85, text, ev, contrib)
    b_sync = t["sync_us"]["base"] or 0
    if dt * sign > max(10.0, 0.2 * b_sync):
        text = (f"The host waits {_signed_us(dt)} {unit} longer in synchronising calls with the same number of them "
                f"({t['sync_count']['head']:g}); the waits are for GPU work, so the kernels' own changes may be the cause.")
        return _hint("sync_overhead", 0.35, text, ev, dt)
    return None


def _memory_contention(base, head, d: dict, sign: int, unit: str, telemetry: dict | None) -> list[dict]:
    t = d["totals"]
    slowed = []
    for k in d["kernels"]:
        b, h = k["base"], k["head"]
        same = (b.get("registers_per_thread") == h.get("registers_per_thread") and b.get("grid") == h.get("grid")
                and b.get("block") == h.get("block") and b["count"] == h["count"])
        if not same or not b.get("mean_us") or not h.get("mean_us"):
            continue
        rel = h["mean_us"] / b["mean_us"] - 1
        if rel * sign >= 0.15 and k["delta_us"] * sign >= 1.0:
            slowed.append(k)
    if not slowed:
        return []
    contrib = sum(k["delta_us"] for k in slowed)
    top = max(slowed, key=lambda k: abs(k["delta_us"]))
    ob, oh = t["multi_stream_overlap_us"]["base"] or 0.0, t["multi_stream_overlap_us"]["head"] or 0.0
    busy_h = t["gpu_busy_us"]["head"] or 0.0
    overlap = (oh - ob) * sign > max(1.0, 0.2 * ob) or (sign > 0 and busy_h and oh / busy_h >= 0.1)
    mem_util = None
    sides = (telemetry or {}).get("sides") or {}
    if sides.get("head"):
        mem_util = (sides["head"].get("memory_utilization_pct") or {}).get("median")
    saturated = mem_util is not None and mem_util >= 80 and sign > 0
    cv = {"base": top["base"].get("cv"), "head": top["head"].get("cv")}
    ev = {"kernels": [{"name": k["name"], "mean_us": {"base": k["base"]["mean_us"], "head": k["head"]["mean_us"]},
                       "delta_us": k["delta_us"]} for k in slowed[:5]],
          "multi_stream_overlap_us": t["multi_stream_overlap_us"], "duration_cv": cv,
          "memory_utilization_pct": mem_util}
    slower = "slower" if sign > 0 else "faster"
    text_kernels = (f"{_short(top['name'])} {_us(top['base']['mean_us'])} → {_us(top['head']['mean_us'])} per launch"
                    + (f" and {len(slowed) - 1} more" if len(slowed) > 1 else ""))
    if overlap or saturated:
        why = []
        if overlap:
            why.append(f"GPU work on different streams now overlaps for {_us(oh)} {unit} (base {_us(ob)})")
        if saturated:
            why.append(f"memory utilisation during head was {mem_util:.0f} %")
        text = (f"The same kernels with the same launch configuration ran {slower} ({text_kernels}) while "
                + " and ".join(why) + ": they compete for memory bandwidth.")
        if sign < 0:
            text = (f"The same kernels with the same launch configuration ran faster ({text_kernels}) with less "
                    f"overlap between streams ({_us(ob)} → {_us(oh)} {unit}): less competition for memory bandwidth.")
        return [_hint("memory_contention", 0.9 if overlap and saturated else 0.8, text, ev, contrib)]
    text = (f"The same kernels with the same launch configuration ran {slower} ({text_kernels}, "
            f"{_signed_us(contrib)} {unit}); the trace shows no new overlap or register change to explain it "
            f"(check clocks, other processes on the GPU, or input data).")
    return [_hint("kernel_time", 0.45, text, ev, contrib)]


def _launch_overhead(d: dict, sign: int, unit: str, gpu: bool) -> dict | None:
    t = d["totals"]
    if gpu:
        b, h = t["launches"]["base"], t["launches"]["head"]
        delta = h - b
        if delta * sign < max(2, 0.2 * b):
            return None
        contrib = t["launch_us"]["delta"] + sign * max(0.0, (t["small_kernel_count"]["delta"] or 0) * sign) * 2.0
        more = "more" if sign > 0 else "fewer"
        text = (f"Head launches {abs(delta):g} {more} kernels {unit} ({b:g} → {h:g}; kernels under 10 µs "
                f"{t['small_kernel_count']['base']:g} → {t['small_kernel_count']['head']:g}); launch calls take "
                f"{_us(t['launch_us']['base'])} → {_us(t['launch_us']['head'])}.")
        ev = {"launches": t["launches"], "launch_us": t["launch_us"], "small_kernels": t["small_kernel_count"],
              "kernel_us": t["kernel_us"]}
        return _hint("launch_overhead", 0.7, text, ev, contrib if contrib * sign > 0 else sign * abs(delta) * 2.0)
    b, h = t["operator_count"]["base"], t["operator_count"]["head"]
    delta = h - b
    if delta * sign < max(5, 0.2 * b):
        return None
    grew = [o for o in d["operators"] if (o["head"]["count"] - o["base"]["count"]) * sign > 0]
    contrib = sum(o["delta_self_us"] for o in grew) + sum(
        o["self_us"] * (1 if sign > 0 else -1) for o in (d["new_operators"] if sign > 0 else d["removed_operators"]))
    top = sorted(grew, key=lambda o: -abs(o["head"]["count"] - o["base"]["count"]))[:3]
    names = ", ".join(f"{o['name']} {o['base']['count']:g} → {o['head']['count']:g}" for o in top)
    more = "more" if sign > 0 else "fewer"
    text = (f"Head dispatches {abs(delta):g} {more} operator calls {unit} ({b:g} → {h:g}"
            + (f"; {names}" if names else "") + "): per-call dispatch overhead adds up.")
    ev = {"operator_count": t["operator_count"], "operators": top, "operator_self_us": t["operator_self_us"]}
    return _hint("launch_overhead", 0.6, text, ev, contrib if contrib * sign > 0 else sign * abs(delta))


def _host_device_copy(base, head, d: dict, sign: int, unit: str) -> dict | None:
    t = d["totals"]
    dc, db, dt = t["copy_count"]["delta"], t["copy_bytes"]["delta"], t["copy_us"]["delta"]
    bb = t["copy_bytes"]["base"] or 0
    if not (dc * sign >= 1 or (db * sign > max(65536, 0.1 * bb))):
        return None
    if dt * sign <= 0:
        return None
    sb, sh, _ = _scales(base, head)
    per_dir = {}
    for direction in ("HtoD", "DtoH"):
        b = _memcpy(base, (direction,))
        h = _memcpy(head, (direction,))
        if b["count"] or h["count"]:
            per_dir[direction] = {"base": {"count": _r(b["count"] * sb), "bytes": _r(b["bytes"] * sb), "total_us": _r(b["total_us"] * sb)},
                                  "head": {"count": _r(h["count"] * sh), "bytes": _r(h["bytes"] * sh), "total_us": _r(h["total_us"] * sh)}}
    parts = [f"{k} {v['base']['count']:g} → {v['head']['count']:g} ({v['base']['bytes'] / 1e6:.2f} → {v['head']['bytes'] / 1e6:.2f} MB)"
             for k, v in per_dir.items()]
    more = "more" if sign > 0 else "less"
    text = (f"Head copies {more} between host and device {unit}: " + "; ".join(parts)
            + f"; copy time {_us(t['copy_us']['base'])} → {_us(t['copy_us']['head'])}.")
    return _hint("host_device_copy", 0.7, text, {"memcpy": per_dir, "copy_us": t["copy_us"]}, dt)


def _gpu_idle(d: dict, sign: int, unit: str) -> dict | None:
    t = d["totals"]
    bi, hi = t["gpu_idle_us"]["base"], t["gpu_idle_us"]["head"]
    bs, hs = t["span_us"]["base"], t["span_us"]["head"]
    if bi is None or hi is None or not bs or not hs:
        return None
    share_b, share_h = bi / bs, hi / hs
    if (share_h - share_b) * sign < 0.10 or (hi - bi) * sign <= 0:
        return None
    verb = "rose" if sign > 0 else "fell"
    text = (f"The GPU's idle share {verb} from {_pct(share_b)} to {_pct(share_h)} of the profiled time "
            f"({_signed_us(hi - bi)} {unit}): the GPU {'waits' if sign > 0 else 'waits less'} for the host "
            f"(Python, dispatch, synchronisation).")
    ev = {"gpu_idle_us": t["gpu_idle_us"], "gpu_busy_us": t["gpu_busy_us"], "span_us": t["span_us"],
          "idle_share": {"base": round(share_b, 4), "head": round(share_h, 4)}}
    return _hint("gpu_idle", 0.55, text, ev, hi - bi)


def _memory_growth(d: dict, sign: int) -> dict | None:
    p = d["totals"]["peak_memory_bytes"]
    b, h = p["base"], p["head"]
    if not b or h is None:
        return None
    delta = h - b
    if delta * sign <= 0 or abs(delta) < max(2**20, 0.1 * b):
        return None
    text = (f"Peak memory {'grew' if delta > 0 else 'fell'} from {b / 2**20:.1f} MiB to {h / 2**20:.1f} MiB "
            f"({delta / b:+.0%}): more allocation and memory traffic {'per call' if delta > 0 else 'saved'}.")
    return _hint("memory_growth", 0.4, text, {"peak_memory_bytes": p}, None)


def _new_kernels(d: dict, sign: int, unit: str) -> dict | None:
    added = sum(k["total_us"] for k in d["unmatched_head"])
    removed = sum(k["total_us"] for k in d["unmatched_base"])
    net = added - removed
    busy = max(d["totals"]["gpu_busy_us"]["base"] or 0, d["totals"]["gpu_busy_us"]["head"] or 0)
    if net * sign <= 0 or abs(net) < max(1.0, 0.05 * busy):
        return None
    parts = []
    if d["unmatched_head"]:
        names = ", ".join(f"{_short(k['name'], 50)} {_us(k['total_us'])}" for k in d["unmatched_head"][:3])
        parts.append(f"runs {len(d['unmatched_head'])} kernel(s) base did not ({names})")
    if d["unmatched_base"]:
        names = ", ".join(f"{_short(k['name'], 50)} {_us(k['total_us'])}" for k in d["unmatched_base"][:3])
        parts.append(f"no longer runs {len(d['unmatched_base'])} ({names})")
    text = f"Head " + " and ".join(parts) + f": {_signed_us(net)} of kernel time {unit}."
    ev = {"new": d["unmatched_head"][:10], "removed": d["unmatched_base"][:10], "net_us": round(net, 3)}
    return _hint("new_kernels", 0.6, text, ev, net)


def _precision_change(base: dict, head: dict) -> dict | None:
    pb, ph = base.get("precision_us") or {}, head.get("precision_us") or {}
    tb, th = sum(pb.values()), sum(ph.values())
    if not tb or not th:
        return None
    share_b = {k: v / tb for k, v in pb.items()}
    share_h = {k: v / th for k, v in ph.items()}
    top_b, top_h = max(share_b, key=share_b.get), max(share_h, key=share_h.get)
    appeared = [k for k in share_h if share_h[k] >= 0.1 and share_b.get(k, 0) < 0.01]
    vanished = [k for k in share_b if share_b[k] >= 0.1 and share_h.get(k, 0) < 0.01]
    if top_b == top_h and not appeared and not vanished:
        return None
    moved = sorted(set(share_b) | set(share_h), key=lambda k: (-abs(share_h.get(k, 0) - share_b.get(k, 0)), k))[:3]
    parts = ", ".join(f"{k} {_pct(share_b.get(k, 0))} → {_pct(share_h.get(k, 0))}" for k in moved)
    text = f"The precision of the work changed; share of kernel time by precision, base → head: {parts}."
    ev = {"share": {"base": {k: round(v, 3) for k, v in share_b.items()}, "head": {k: round(v, 3) for k, v in share_h.items()}}}
    return _hint("precision_change", 0.5, text, ev, None)


def _recompilation(d: dict, sign: int, unit: str) -> dict | None:
    c = d["totals"]["compile_events"]
    if c["delta"] is None or c["delta"] * sign < 1:
        return None
    text = f"torch.compile compiled {'more' if sign > 0 else 'less'} during the profile ({c['base']:g} → {c['head']:g} compile events {unit}): recompilations or graph breaks."
    return _hint("recompilation", 0.6, text, {"compile_events": c}, None)


def _operators(d: dict, sign: int, unit: str, observed: float, gpu: bool) -> list[dict]:
    out = []
    added = sum(o["self_us"] for o in d["new_operators"])
    removed = sum(o["self_us"] for o in d["removed_operators"])
    net = added - removed
    if net * sign > 0 and abs(net) >= max(1.0, 0.1 * observed):
        parts = []
        if d["new_operators"]:
            parts.append("calls " + ", ".join(f"{o['name']} ({_us(o['self_us'])})" for o in d["new_operators"][:3])
                         + " that base did not")
        if d["removed_operators"]:
            parts.append("no longer calls " + ", ".join(f"{o['name']} ({_us(o['self_us'])})" for o in d["removed_operators"][:3]))
        text = "Head " + " and ".join(parts) + f": {_signed_us(net)} of operator self time {unit}."
        ev = {"new": d["new_operators"][:10], "removed": d["removed_operators"][:10], "net_us": round(net, 3)}
        out.append(_hint("new_operators", 0.45 if gpu else 0.6, text, ev, net))
    grew = [o for o in d["operators"] if o["delta_self_us"] * sign > 0
            and abs(o["delta_self_us"]) >= max(1.0, 0.1 * (o["base"]["self_us"] or 0), 0.1 * observed)]
    if grew:
        top = grew[:3]
        o = top[0]
        verb = "grew" if sign > 0 else "shrank"
        text = (f"Operator {o['name']} self time {verb} from {_us(o['base']['self_us'])} to {_us(o['head']['self_us'])} {unit}"
                f" ({o['base']['count']:g} → {o['head']['count']:g} calls)"
                + (f"; also " + ", ".join(f"{x['name']} {_signed_us(x['delta_self_us'])}" for x in top[1:]) if len(top) > 1 else "")
                + ".")
        out.append(_hint("operator_time", 0.35 if gpu else 0.55, text, {"operators": top},
                         sum(x["delta_self_us"] for x in top)))
    return out


def _throttling(telemetry: dict | None) -> dict | None:
    if not telemetry or not telemetry.get("available"):
        return None
    flags = telemetry.get("flags") or {}
    if not flags.get("throttled") and not flags.get("clocks_differ"):
        return None
    sides = telemetry.get("sides") or {}
    parts, ev = [], {"flags": flags}
    clocks = {s: (v.get("sm_clock_mhz") or {}).get("median") for s, v in sides.items()}
    if flags.get("clocks_differ") and clocks.get("base") and clocks.get("head"):
        parts.append(f"median SM clock base {clocks['base']:.0f} MHz vs head {clocks['head']:.0f} MHz "
                     f"({clocks['head'] / clocks['base'] - 1:+.0%})")
    for side in flags.get("throttled_sides") or []:
        reasons = (sides.get(side) or {}).get("throttle_reasons") or {}
        named = ", ".join(f"{k} in {_pct(v)} of samples" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
        parts.append(f"{side} throttled ({named or 'reason not reported'})")
    ev["sm_clock_mhz_median"] = clocks
    text = "The GPU ran at different speeds for the two sides (the environment, not the code): " + "; ".join(parts) + "."
    return _hint("throttling", 0.85 if flags.get("clocks_differ") else 0.7, text, ev, None)


def _gpu_label(summary: dict) -> str | None:
    """The GPU a summary was recorded on (``device.label``: named, or "GPU, no name in trace, 304
    CUs"); None on CPU. Summaries stored before ``device`` existed give ``device_name``."""
    device = summary.get("device")
    if isinstance(device, dict):
        return device.get("label") if device.get("kind") == "gpu" else None
    return summary.get("device_name")


def _device_change(base: dict, head: dict) -> dict | None:
    b, h = _gpu_label(base), _gpu_label(head)
    if not b or not h or b == h:
        return None
    text = f"The two traces come from different GPUs ({b} vs {h}): kernel choices and times are not comparable."
    ev = {"device_name": {"base": b, "head": h},
          "vendor": {side: (s.get("device") or {}).get("vendor") for side, s in (("base", base), ("head", head))}}
    return _hint("device_change", 0.9, text, ev, None)


def _finish(hints: list[dict], factor: float) -> list[dict]:
    out = []
    for h in hints:
        h = dict(h)
        h.pop("_contrib", None)
        h["confidence"] = round(h["confidence"] * factor, 2)
        if h["confidence"] >= MIN_CONFIDENCE * factor:
            out.append(h)
    out.sort(key=lambda h: (-h["confidence"], PRIORITY.index(h["kind"]) if h["kind"] in PRIORITY else len(PRIORITY)))
    return out[:MAX_HINTS]


def hints_for(change: dict | None, base_summary: dict | None, head_summary: dict | None,
              telemetry: dict | None = None, noise: dict | None = None) -> list[dict]:
    """Ranked root-cause hints for one benchmark (pure).

    Args:
        change: ``{ratio, ci_low, ci_high, p_value, verdict}`` of the timing pass, or None to
            infer the direction from the traces' own times (``perfgate trace-diff``).
        base_summary, head_summary: :func:`runner.trace.summarize` (or :func:`runner.trace.compact`)
            outputs; None when a side was not profiled.
        telemetry: ``environment.telemetry`` (:func:`runner.telemetry.summarize_samples`), or None.
        noise: :func:`runner.profile_noise.pass_spread` of repeated profile passes; operators and
            kernels whose change is within it cannot be cited (None: a single pass, no filter).

    Returns:
        hints ``{kind, confidence, summary, evidence}``, most likely first (at most six); ``[]``
        for unchanged/failed/new/removed benchmarks, for traces that show no change, and when a
        side has no profile and telemetry explains nothing; ``[unexplained]`` when the verdict
        is a change and no rule finds its cause.
    """
    if change and change.get("verdict") in NO_HINT_VERDICTS:
        return []
    throttle = _throttling(telemetry)
    if base_summary is None or head_summary is None:
        if throttle and change:
            return _finish([throttle], 1.0)
        return []
    d = diff(base_summary, head_summary)
    if noise:
        from .profile_noise import drop_within_noise

        d = drop_within_noise(d, noise)
    sign, factor = _direction(change, d)
    if sign == 0:
        return _finish([throttle], 1.0) if throttle and change else []
    unit = _unit(d)
    t = d["totals"]
    gpu = bool(base_summary.get("kernels") or head_summary.get("kernels"))
    observed = max(abs(t["span_us"]["delta"] or 0), 0.02 * (t["span_us"]["base"] or 0), 1.0)
    found: list[dict] = []
    rp = _register_pressure(d, sign, unit) or _fusion_register_pressure(base_summary, head_summary, d, sign, unit)
    candidates = [rp, _sync_overhead(base_summary, head_summary, d, sign, unit),
                  *_memory_contention(base_summary, head_summary, d, sign, unit, telemetry),
                  _launch_overhead(d, sign, unit, gpu), _host_device_copy(base_summary, head_summary, d, sign, unit),
                  _gpu_idle(d, sign, unit), _new_kernels(d, sign, unit), _precision_change(base_summary, head_summary),
                  _recompilation(d, sign, unit), _memory_growth(d, sign), *_operators(d, sign, unit, observed, gpu)]
    for h in candidates:
        if h is None:
            continue
        contrib = h["_contrib"]
        if contrib is not None:
            if contrib * sign <= 0:
                continue
            share = min(1.0, abs(contrib) / observed)
            h["confidence"] *= 0.5 + 0.5 * share
            h["evidence"]["explains_us"] = round(contrib, 3)
            h["evidence"]["share_of_change"] = round(share, 3)
        h["evidence"]["per_call"] = d["per_call"]
        found.append(h)
    moved = _device_change(base_summary, head_summary)
    if moved:
        # on another GPU every other difference may be the device's, not the code's
        for h in found:
            h["confidence"] *= DEVICE_CHANGE_FACTOR
            h["evidence"]["device_changed"] = True
    for extra in (throttle, moved):
        if extra:
            found.append(extra)
    hints = _finish(found, factor)
    if not hints and change and change.get("verdict") in ("regression", "improvement"):
        ratio = change.get("ratio")
        text = ("No profile difference explains this: kernels, launches, synchronisations, copies and memory "
                f"are the same within noise on both sides (profiled span {_us(t['span_us']['base'])} → "
                f"{_us(t['span_us']['head'])} {unit}"
                + (f"; measured ratio {ratio:.3f}" if ratio is not None else "") + ").")
        hints = [{"kind": "unexplained", "confidence": 0.5, "summary": text,
                  "evidence": {"span_us": t["span_us"], "gpu_busy_us": t["gpu_busy_us"],
                               "operator_self_us": t["operator_self_us"], "per_call": d["per_call"]}}]
    return hints


# ---------------------------------------------------------------------------------------------
# CLI (imperative shell)


def main_trace_diff(args) -> int:
    """``perfgate trace-diff BASE HEAD [--json]``: print ``{base, head, hints, diff}``; exit 0.

    Raises:
        UserError: a trace cannot be read (exit 2, one line).
    """
    from .trace import _round_floats, compact, load_trace, summarize

    base = summarize(load_trace(args.base_trace))
    head = summarize(load_trace(args.head_trace))
    hints = hints_for(None, base, head)
    d = diff(base, head)
    if getattr(args, "json", False):
        out = {"base": compact(base), "head": compact(head), "hints": hints,
               "diff": {**d, "kernels": d["kernels"][:25], "operators": d["operators"][:25]}}
        print(json.dumps(_round_floats(out), indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    from .escape import term

    console = Console()
    console.print(f"[bold]base[/bold] {term(args.base_trace)}\n[bold]head[/bold] {term(args.head_trace)}")
    if hints:
        for h in hints:
            console.print(f"• [bold]{term(h['kind'])}[/bold] ({h['confidence']:.0%}): {term(h['summary'])}")
    else:
        console.print("no hints: the traces show no change in time beyond noise")
    rows = side_by_side(base, head, top=15)
    if rows:
        t = Table(title=f"top kernels / operators ({_unit(d)})")
        for col in ("name", "match", "base", "head", "Δ"):
            t.add_column(col, justify="left" if col in ("name", "match") else "right")
        for r in rows:
            t.add_row(term(_short(r["name"], 70)), r["match"],
                      "-" if r["base_total_us"] is None else f"{r['base_count']:g} × → {_us(r['base_total_us'])}",
                      "-" if r["head_total_us"] is None else f"{r['head_count']:g} × → {_us(r['head_total_us'])}",
                      _signed_us(r["delta_us"]))
        console.print(t)
    if d["unmatched_base"] or d["unmatched_head"]:
        console.print(f"unmatched kernels: {len(d['unmatched_base'])} only in base, {len(d['unmatched_head'])} only in head")
    return 0


__all__ = ["diff", "hints_for", "kernel_key", "match_kernels", "main_trace_diff", "profile_for_results",
           "side_by_side"]
