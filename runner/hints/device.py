"""Hint rules about what the GPU did (pure): registers and occupancy, contention between
streams, launches, idle time, new kernels, precision. Each is one function registered with
:func:`runner.hints.rule.rule`; :mod:`runner.hints.evidence` has the rules of evidence.

What a trace cannot show, no rule claims (GPU review 2026-12-06, #18): Kineto does not export
CUPTI's local memory per thread, so no trace shows a spill (registers up, occupancy down and time
up is a correlation, said as one: :data:`CORRELATION_CONFIDENCE`; the compiler's own numbers,
where the static pass has them, are joined by :func:`runner.kernels.table.attach`); and no trace
shows DRAM throughput, so contention is called one for memory bandwidth only where the
overlapping streams' roofline bytes come near the GPU's peak bandwidth
(:data:`NEAR_PEAK_BANDWIDTH`), else one for the SMs and caches.
"""

from __future__ import annotations

from ..report.units import fmt_share, fmt_signed_us, fmt_us
from ..profile.diff import _scales
from .rule import HintContext, Hints, make_hint, rule
from ..profile.match import display_name

#: Registers up, occupancy down and time up in a trace: a correlation, not a seen cause (with and
#: without the two sides' occupancy); the compiler's numbers raise it where they agree.
CORRELATION_CONFIDENCE, CORRELATION_CONFIDENCE_NO_OCCUPANCY = 0.65, 0.5
#: The share of the GPU's peak bandwidth that the overlapping streams' roofline bytes must reach
#: for contention to be called one for memory bandwidth.
NEAR_PEAK_BANDWIDTH = 0.7


def _more_registers(d: dict, sign: int, unit: str) -> dict | None:
    """A matched kernel that got slower with more registers per thread and lower occupancy (a
    correlation: the trace shows neither spills nor that the occupancy is what cost the time)."""
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
        moved = "fell" if sign > 0 else "rose"
        text = (f"Kernel {display_name(k['name'])} now uses {h['registers_per_thread']} "
                f"registers per thread (base {b['registers_per_thread']}) and its theoretical "
                f"occupancy {moved} from {fmt_share(ob)} to {fmt_share(oh)}{waves}, while it takes "
                f"{fmt_signed_us(k['delta_us'])} {unit} ({fmt_us(b['total_us'])} → "
                f"{fmt_us(h['total_us'])}): the trace shows these together, not that one caused "
                f"the other, nor whether it spills.")
        ev = {"kernel": k["name"], "match": k["match"], "registers_per_thread": {"base": b["registers_per_thread"], "head": h["registers_per_thread"]},
              "occupancy": {"base": ob, "head": oh}, "waves": {"base": b.get("waves"), "head": h.get("waves")},
              "total_us": {"base": b["total_us"], "head": h["total_us"]}, "count": {"base": b["count"], "head": h["count"]}}
        conf = (CORRELATION_CONFIDENCE if ob is not None and oh is not None
                else CORRELATION_CONFIDENCE_NO_OCCUPANCY)
        return make_hint("register_pressure", conf, text, ev, k["delta_us"])

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
    text = (f"The new (fused) kernel {display_name(fused['name'])} uses "
            f"{fused['registers_per_thread']} registers per thread (the {len(removed)} kernel(s) "
            f"it replaces used at most {max_regs}), theoretical occupancy {fmt_share(ob)} → "
            f"{fmt_share(oh)}{waves}, and takes {fmt_us(fused_us)} {unit} vs "
            f"{fmt_us(replaced_us)} for the kernels it replaced: the trace shows these together, "
            f"not that the registers cost the time, nor whether it spills.")
    ev = {"kernel": fused["name"], "replaced": [k["name"] for k in removed],
          "registers_per_thread": {"base_max": max_regs, "head": fused["registers_per_thread"]},
          "occupancy": {"base_min": ob, "head": oh}, "waves": {"base": bw, "head": hw},
          "total_us": {"base": round(replaced_us, 3), "head": round(fused_us, 3)},
          "kernel_count": t["kernel_count"]}
    conf = (CORRELATION_CONFIDENCE if ob is not None and oh is not None
            else CORRELATION_CONFIDENCE_NO_OCCUPANCY)
    return make_hint("register_pressure", conf, text, ev, fused_us - replaced_us)


@rule("register_pressure")
def register_pressure(ctx: HintContext) -> Hints:
    """A kernel with more registers and less occupancy that takes longer: a matched kernel, else
    a new (fused) kernel against the kernels it replaced."""
    return (_more_registers(ctx.d, ctx.sign, ctx.unit)
            or _fusion_register_pressure(ctx.base, ctx.head, ctx.d, ctx.sign, ctx.unit))


@rule("memory_contention")
def memory_contention(ctx: HintContext) -> Hints:
    """The same kernels, the same launches, slower while GPU work on other streams overlaps
    more: contention between streams (the kind's name is kept; its words say for what). NVML's
    memory utilisation is no evidence here: it is a duty cycle (the share of time
    memory was read or written), not bandwidth, and a window of 1/6-1 s that mixes both sides
    (GPU review 2026-12-06, #10)."""
    d, sign, unit = ctx.d, ctx.sign, ctx.unit
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
    cv = {"base": top["base"].get("cv"), "head": top["head"].get("cv")}
    ev = {"kernels": [{"name": k["name"], "mean_us": {"base": k["base"]["mean_us"], "head": k["head"]["mean_us"]},
                       "delta_us": k["delta_us"]} for k in slowed[:5]],
          "multi_stream_overlap_us": t["multi_stream_overlap_us"], "duration_cv": cv}
    slower = "slower" if sign > 0 else "faster"
    text_kernels = (f"{display_name(top['name'])} {fmt_us(top['base']['mean_us'])} → {fmt_us(top['head']['mean_us'])} per launch"
                    + (f" and {len(slowed) - 1} more" if len(slowed) > 1 else ""))
    if overlap:
        why = (f"GPU work on different streams now overlaps for {fmt_us(oh)} {unit} "
               f"(base {fmt_us(ob)})")
        side = ctx.head if sign > 0 else ctx.base
        ev["bandwidth"] = bandwidth = streams_bandwidth(side)
        what, conf = _contended(bandwidth)
        text = (f"The same kernels with the same launch configuration ran {slower} "
                f"({text_kernels}) while {why}: {what}.")
        if sign < 0:
            text = (f"The same kernels with the same launch configuration ran faster "
                    f"({text_kernels}) with less overlap between streams ({fmt_us(ob)} → "
                    f"{fmt_us(oh)} {unit}): less competition ({what}).")
        return [make_hint("memory_contention", conf, text, ev, contrib)]
    text = (f"The same kernels with the same launch configuration ran {slower} ({text_kernels}, "
            f"{fmt_signed_us(contrib)} {unit}); the trace shows no new overlap or register change to explain it "
            f"(check clocks, other processes on the GPU, or input data).")
    return [make_hint("kernel_time", 0.45, text, ev, contrib)]


def streams_bandwidth(summary: dict) -> dict | None:
    """What the streams of one trace draw from memory when they run at once: per stream, the
    roofline bytes of its kernels (their operators' tensors) over those kernels' time, summed
    over the streams (each stream's rate while it runs, so their sum while they overlap), against
    the GPU's peak (``{bytes_per_s, peak_bytes_per_s, share, streams}``); None without two
    streams with bytes or without a known peak."""
    peak = (((summary.get("device") or {}).get("peaks")) or {}).get("bandwidth_bytes_per_s")
    per_stream: dict = {}
    for k in summary.get("kernels") or []:
        if not k.get("bytes") or not k.get("total_us") or len(k.get("streams") or []) != 1:
            continue
        b, t = per_stream.get(str(k["streams"][0]), (0.0, 0.0))
        per_stream[str(k["streams"][0])] = (b + k["bytes"], t + k["total_us"])
    if not peak or len(per_stream) < 2:
        return None
    rate = sum(b / (t * 1e-6) for b, t in per_stream.values())
    return {"bytes_per_s": round(rate), "peak_bytes_per_s": peak, "share": round(rate / peak, 3),
            "streams": len(per_stream)}


def _contended(bandwidth: dict | None) -> tuple[str, float]:
    """What overlapping streams compete for, in words, and the confidence of the hint: the
    overlap and the same kernels slower show the contention; the roofline bytes near the peak
    add that it is for memory bandwidth."""
    if bandwidth is None:
        return ("they compete for the GPU (its SMs, caches or memory bandwidth: the trace does "
                "not show which)"), 0.8
    figures = (f"the overlapping streams' roofline bytes come to "
               f"{bandwidth['bytes_per_s'] / 1e9:.0f} GB/s, {bandwidth['share']:.0%} of the GPU's "
               f"{bandwidth['peak_bytes_per_s'] / 1e9:.0f} GB/s")
    if bandwidth["share"] >= NEAR_PEAK_BANDWIDTH:
        return f"they compete for memory bandwidth ({figures})", 0.85
    return f"they compete for the SMs and caches, not memory bandwidth ({figures})", 0.8


@rule("kernel_time")
def kernel_runs(ctx: HintContext) -> Hints:
    """The same kernel launched more (or fewer) times per call, its time with it: "runs 1 → 2
    times per call, +400 µs". Without this rule a change that doubles a call's GPU work was
    explained by nothing — or, before perfgate's own wait was left out of the trace, by
    ``sync_overhead`` (GPU review 2026-12-06, #2, demo D3)."""
    d, sign, unit = ctx.d, ctx.sign, ctx.unit
    ran = [k for k in d["kernels"] if (k["head"]["count"] - k["base"]["count"]) * sign >= 1
           and k["delta_us"] * sign >= max(1.0, 0.1 * ctx.observed)]
    if not ran:
        return None
    # launches that ran beside other work on another stream add nothing to the call's span
    overlap = d["totals"]["multi_stream_overlap_us"]
    beside = max(0.0, ((overlap["head"] or 0.0) - (overlap["base"] or 0.0)) * sign)
    contrib = sum(k["delta_us"] for k in ran)
    contrib = sign * max(0.0, abs(contrib) - beside)
    if abs(contrib) < max(1.0, 0.1 * ctx.observed):
        return None
    top = max(ran, key=lambda k: abs(k["delta_us"]))
    more = f" and {len(ran) - 1} more kernel(s)" if len(ran) > 1 else ""
    text = (f"{display_name(top['name'])} runs {top['base']['count']:g} → "
            f"{top['head']['count']:g} times {unit}{more} ({fmt_signed_us(contrib)} {unit} of GPU "
            f"time): head does {'more' if sign > 0 else 'less'} of the same GPU work.")
    ev = {"kernels": [{"name": k["name"],
                       "count": {"base": k["base"]["count"], "head": k["head"]["count"]},
                       "delta_us": k["delta_us"]} for k in ran[:5]]}
    return make_hint("kernel_time", 0.6, text, ev, contrib)


@rule("launch_overhead")
def launch_overhead(ctx: HintContext) -> Hints:
    d, sign, unit, gpu = ctx.d, ctx.sign, ctx.unit, ctx.gpu
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
        return make_hint("launch_overhead", 0.7, text, ev, contrib if contrib * sign > 0 else sign * abs(delta) * 2.0)
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
    return make_hint("launch_overhead", 0.6, text, ev, contrib if contrib * sign > 0 else sign * abs(delta))


@rule("gpu_idle")
def gpu_idle(ctx: HintContext) -> Hints:
    d, sign, unit = ctx.d, ctx.sign, ctx.unit
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
    return make_hint("gpu_idle", 0.55, text, ev, hi - bi)


@rule("new_kernels")
def new_kernels(ctx: HintContext) -> Hints:
    d, sign, unit = ctx.d, ctx.sign, ctx.unit
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
    return make_hint("new_kernels", 0.6, text, ev, net)


@rule("precision_change")
def precision_change(ctx: HintContext) -> Hints:
    base, head = ctx.base, ctx.head
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
    return make_hint("precision_change", 0.5, text, ev, None)
