"""Root-cause hints: :func:`hints_for` turns (timing change, profile diff of
:func:`runner.profile.diff.diff`, telemetry) into ranked hints, each
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

from ..report.units import fmt_share, fmt_signed_us, fmt_us
from .diff import _memcpy, _r, _scales, diff, unit_words
from .match import display_name
from ..results import CHANGED, HINTED, VERDICTS

PRIORITY = ("register_pressure", "sync_overhead", "memory_contention", "device_change", "throttling", "launch_overhead",
            "host_device_copy", "gpu_idle", "new_kernels", "precision_change", "graph_break", "recompilation",
            "compile_time", "kernel_time", "memory_growth", "new_operators", "operator_time", "unexplained")

#: Verdicts that get no hints at all.
NO_HINT_VERDICTS = tuple(v for v in VERDICTS if v not in HINTED)

#: Relative change below which a trace-only comparison counts as unchanged (fraction).
TRACE_NOISE = 0.03

MIN_CONFIDENCE = 0.2
MAX_HINTS = 6

#: Confidence factor of every other hint when base and head ran on different GPUs.
DEVICE_CHANGE_FACTOR = 0.5

def _hint(kind: str, confidence: float, summary: str, evidence: dict, contrib_us: float | None = None) -> dict:
    return {"kind": kind, "confidence": round(max(0.0, min(1.0, confidence)), 2), "summary": summary,
            "evidence": evidence, "_contrib": contrib_us}


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
            text = (f"Kernel {display_name(k['name'])} now uses {h['registers_per_thread']} registers per thread "
                    f"(base {b['registers_per_thread']}), so occupancy fell from {fmt_share(ob)} to {fmt_share(oh)}{waves}; "
                    f"it takes {fmt_signed_us(k['delta_us'])} {unit} ({fmt_us(b['total_us'])} → {fmt_us(h['total_us'])}).")
        else:
            text = (f"Kernel {display_name(k['name'])} now uses {h['registers_per_thread']} registers per thread "
                    f"(base {b['registers_per_thread']}), so occupancy rose from {fmt_share(ob)} to {fmt_share(oh)}{waves}; "
                    f"it takes {fmt_signed_us(k['delta_us'])} {unit} ({fmt_us(b['total_us'])} → {fmt_us(h['total_us'])}).")
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
    text = (f"Fusion raised register pressure: the new kernel {display_name(fused['name'])} uses "
            f"{fused['registers_per_thread']} registers per thread (the {len(removed)} kernel(s) it replaces used at most "
            f"{max_regs}), theoretical occupancy {fmt_share(ob)} → {fmt_share(oh)}{waves}; it takes {fmt_us(fused_us)} {unit} "
            f"vs {fmt_us(replaced_us)} for the kernels it replaced.")
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
                f"time in synchronising calls {fmt_us(t['sync_us']['base'])} → {fmt_us(t['sync_us']['head'])}.")
        contrib = dt if dt * sign > 0 else sign * max(abs(dc), abs(dd)) * 2.0
        return _hint("sync_overhead", 0.85, text, ev, contrib)
    b_sync = t["sync_us"]["base"] or 0
    if dt * sign > max(10.0, 0.2 * b_sync):
        text = (f"The host waits {fmt_signed_us(dt)} {unit} longer in synchronising calls with the same number of them "
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
    text_kernels = (f"{display_name(top['name'])} {fmt_us(top['base']['mean_us'])} → {fmt_us(top['head']['mean_us'])} per launch"
                    + (f" and {len(slowed) - 1} more" if len(slowed) > 1 else ""))
    if overlap or saturated:
        why = []
        if overlap:
            why.append(f"GPU work on different streams now overlaps for {fmt_us(oh)} {unit} (base {fmt_us(ob)})")
        if saturated:
            why.append(f"memory utilisation during head was {mem_util:.0f} %")
        text = (f"The same kernels with the same launch configuration ran {slower} ({text_kernels}) while "
                + " and ".join(why) + ": they compete for memory bandwidth.")
        if sign < 0:
            text = (f"The same kernels with the same launch configuration ran faster ({text_kernels}) with less "
                    f"overlap between streams ({fmt_us(ob)} → {fmt_us(oh)} {unit}): less competition for memory bandwidth.")
        return [_hint("memory_contention", 0.9 if overlap and saturated else 0.8, text, ev, contrib)]
    text = (f"The same kernels with the same launch configuration ran {slower} ({text_kernels}, "
            f"{fmt_signed_us(contrib)} {unit}); the trace shows no new overlap or register change to explain it "
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
                f"{fmt_us(t['launch_us']['base'])} → {fmt_us(t['launch_us']['head'])}.")
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
            + f"; copy time {fmt_us(t['copy_us']['base'])} → {fmt_us(t['copy_us']['head'])}.")
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
    text = (f"The GPU's idle share {verb} from {fmt_share(share_b)} to {fmt_share(share_h)} of the profiled time "
            f"({fmt_signed_us(hi - bi)} {unit}): the GPU {'waits' if sign > 0 else 'waits less'} for the host "
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
        names = ", ".join(f"{display_name(k['name'], 50)} {fmt_us(k['total_us'])}" for k in d["unmatched_head"][:3])
        parts.append(f"runs {len(d['unmatched_head'])} kernel(s) base did not ({names})")
    if d["unmatched_base"]:
        names = ", ".join(f"{display_name(k['name'], 50)} {fmt_us(k['total_us'])}" for k in d["unmatched_base"][:3])
        parts.append(f"no longer runs {len(d['unmatched_base'])} ({names})")
    text = f"Head " + " and ".join(parts) + f": {fmt_signed_us(net)} of kernel time {unit}."
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
    parts = ", ".join(f"{k} {fmt_share(share_b.get(k, 0))} → {fmt_share(share_h.get(k, 0))}" for k in moved)
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
            parts.append("calls " + ", ".join(f"{o['name']} ({fmt_us(o['self_us'])})" for o in d["new_operators"][:3])
                         + " that base did not")
        if d["removed_operators"]:
            parts.append("no longer calls " + ", ".join(f"{o['name']} ({fmt_us(o['self_us'])})" for o in d["removed_operators"][:3]))
        text = "Head " + " and ".join(parts) + f": {fmt_signed_us(net)} of operator self time {unit}."
        ev = {"new": d["new_operators"][:10], "removed": d["removed_operators"][:10], "net_us": round(net, 3)}
        out.append(_hint("new_operators", 0.45 if gpu else 0.6, text, ev, net))
    grew = [o for o in d["operators"] if o["delta_self_us"] * sign > 0
            and abs(o["delta_self_us"]) >= max(1.0, 0.1 * (o["base"]["self_us"] or 0), 0.1 * observed)]
    if grew:
        top = grew[:3]
        o = top[0]
        verb = "grew" if sign > 0 else "shrank"
        text = (f"Operator {o['name']} self time {verb} from {fmt_us(o['base']['self_us'])} to {fmt_us(o['head']['self_us'])} {unit}"
                f" ({o['base']['count']:g} → {o['head']['count']:g} calls)"
                + (f"; also " + ", ".join(f"{x['name']} {fmt_signed_us(x['delta_self_us'])}" for x in top[1:]) if len(top) > 1 else "")
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
        named = ", ".join(f"{k} in {fmt_share(v)} of samples" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
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
        base_summary, head_summary: :func:`runner.profile.summaries.summarize` (or :func:`runner.profile.summaries.compact`)
            outputs; None when a side was not profiled.
        telemetry: ``environment.telemetry`` (:func:`runner.pipeline.telemetry.summarize_samples`), or None.
        noise: :func:`runner.profile.noise.pass_spread` of repeated profile passes; operators and
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
        from .noise import drop_within_noise

        d = drop_within_noise(d, noise)
    sign, factor = _direction(change, d)
    if sign == 0:
        return _finish([throttle], 1.0) if throttle and change else []
    unit = unit_words(d)
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
    if not hints and change and change.get("verdict") in CHANGED:
        ratio = change.get("ratio")
        text = ("No profile difference explains this: kernels, launches, synchronisations, copies and memory "
                f"are the same within noise on both sides (profiled span {fmt_us(t['span_us']['base'])} → "
                f"{fmt_us(t['span_us']['head'])} {unit}"
                + (f"; measured ratio {ratio:.3f}" if ratio is not None else "") + ").")
        hints = [{"kind": "unexplained", "confidence": 0.5, "summary": text,
                  "evidence": {"span_us": t["span_us"], "gpu_busy_us": t["gpu_busy_us"],
                               "operator_self_us": t["operator_self_us"], "per_call": d["per_call"]}}]
    return hints


def compile_hint(change: dict | None) -> dict | None:
    """The hint of what head's torch.compile does beyond base's (graph breaks and recompilations
    torch reported, the first call's compile time), from a benchmark's ``change`` with its
    ``compile`` record (:func:`runner.measures.compile_change`); None when they show no difference.

    Kind ``graph_break`` when head adds or removes a graph break, else ``recompilation``, else
    ``compile_time``. Confidence: these are torch's own reports, so 0.9 when the time per call
    moved the way they point (more breaks or recompiles, slower), 0.5 otherwise (a fact beside an
    unchanged or opposite time).
    """
    from ..report.measures import compile_sentence

    text = compile_sentence(change)
    if text is None:
        return None
    c = change["compile"]
    breaks, recompiles = c.get("graph_breaks") or {}, c.get("recompiles") or {}
    if breaks.get("added") or breaks.get("removed"):
        kind, more = "graph_break", bool(breaks.get("added"))
    elif recompiles.get("added") or recompiles.get("removed"):
        kind, more = "recompilation", bool(recompiles.get("added"))
    else:
        kind, more = "compile_time", ((c.get("compile_s") or {}).get("ratio") or 1.0) > 1.0
    verdict = change.get("verdict")
    agrees = (verdict == "regression" and more) or (verdict == "improvement" and not more)
    evidence = {"graphs": c.get("graphs"), "graph_breaks": {k: breaks.get(k) for k in ("base", "head")},
                "recompiles": {k: recompiles.get(k) for k in ("base", "head")},
                "compile_s": c.get("compile_s")}
    return {"kind": kind, "confidence": 0.9 if agrees else 0.5, "summary": text[0].upper() + text[1:] + ".",
            "evidence": evidence}


def with_compile_hint(hints: list[dict], change: dict | None) -> list[dict]:
    """``hints`` with the :func:`compile_hint` first where there is one (the profile's own
    ``recompilation`` hint, compile events counted in a trace, then says less and is dropped)."""
    hint = compile_hint(change)
    if hint is None:
        return list(hints or [])
    return [hint] + [h for h in hints or [] if h.get("kind") != "recompilation"]
