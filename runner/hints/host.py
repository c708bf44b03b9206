"""Hint rules about what the host did around the GPU (pure): synchronisations, copies between
host and device, memory growth, recompilations, operators. Each is one function registered with
:func:`runner.hints.rule.rule`; :mod:`runner.hints.evidence` has the rules of evidence.
"""

from __future__ import annotations

from ..report.units import fmt_bytes, fmt_growth, fmt_signed_us, fmt_us
from ..profile.diff import _memcpy, _r, _scales
from .rule import HintContext, Hints, make_hint, rule


@rule("sync_overhead")
def sync_overhead(ctx: HintContext) -> Hints:
    base, head, d, sign, unit = ctx.base, ctx.head, ctx.d, ctx.sign, ctx.unit
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
        return make_hint("sync_overhead", 0.85, text, ev, contrib)
    b_sync = t["sync_us"]["base"] or 0
    if dt * sign > max(10.0, 0.2 * b_sync):
        text = (f"The host waits {fmt_signed_us(dt)} {unit} longer in synchronising calls with the same number of them "
                f"({t['sync_count']['head']:g}); the waits are for GPU work, so the kernels' own changes may be the cause.")
        return make_hint("sync_overhead", 0.35, text, ev, dt)
    return None


@rule("host_device_copy")
def host_device_copy(ctx: HintContext) -> Hints:
    base, head, d, sign, unit = ctx.base, ctx.head, ctx.d, ctx.sign, ctx.unit
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
    return make_hint("host_device_copy", 0.7, text, {"memcpy": per_dir, "copy_us": t["copy_us"]}, dt)


@rule("recompilation")
def recompilation(ctx: HintContext) -> Hints:
    d, sign, unit = ctx.d, ctx.sign, ctx.unit
    c = d["totals"]["compile_events"]
    if c["delta"] is None or c["delta"] * sign < 1:
        return None
    text = f"torch.compile compiled {'more' if sign > 0 else 'less'} during the profile ({c['base']:g} → {c['head']:g} compile events {unit}): recompilations or graph breaks."
    return make_hint("recompilation", 0.6, text, {"compile_events": c}, None)


@rule("memory_growth")
def memory_growth(ctx: HintContext) -> Hints:
    d, sign = ctx.d, ctx.sign
    p = d["totals"]["peak_memory_bytes"]
    b, h = p["base"], p["head"]
    if not b or h is None:
        return None
    delta = h - b
    if delta * sign <= 0 or abs(delta) < max(2**20, 0.1 * b):
        return None
    text = (f"Peak memory {'grew' if delta > 0 else 'fell'} from {fmt_bytes(b)} to {fmt_bytes(h)} "
            f"({fmt_growth(h / b)}): more allocation and memory traffic "
            f"{'per call' if delta > 0 else 'saved'}.")
    return make_hint("memory_growth", 0.4, text, {"peak_memory_bytes": p}, None)


@rule("new_operators")
def operators(ctx: HintContext) -> Hints:
    d, sign, unit, observed, gpu = ctx.d, ctx.sign, ctx.unit, ctx.observed, ctx.gpu
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
        out.append(make_hint("new_operators", 0.45 if gpu else 0.6, text, ev, net))
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
        out.append(make_hint("operator_time", 0.35 if gpu else 0.55, text, {"operators": top},
                         sum(x["delta_self_us"] for x in top)))
    return out
