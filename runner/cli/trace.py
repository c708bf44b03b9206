"""``perfgate trace-summary`` and ``perfgate trace-diff``: the profile analysis on any Kineto
trace, as rich tables or JSON (the imperative shell of :mod:`runner.profile`)."""

from __future__ import annotations

import json

from ..report.escape import term
from ..report.units import fmt_signed_us, fmt_us
from ..profile import names
from ..profile.diff import diff, side_by_side, unit_words
from ..hints.evidence import hints_for
from ..profile.match import display_name
from ..profile.kineto import load_trace
from ..profile.summaries import _round_floats, compact, summarize


def _cut(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def header_line(summary: dict, title: str = "trace") -> str:
    """The one-line header of a summary: device (or "GPU, no name in trace, N CUs"), span,
    calls, GPU busy/idle, peak memory."""
    device = summary.get("device") or {}
    head = [f"[bold]{term(title)}[/bold]", f"device: {term(device.get('label') or summary.get('device_name') or 'CPU only')}",
            f"span {fmt_us(summary['span_us'])}"]
    if summary.get("iterations"):
        head.append(f"{summary['iterations']} calls")
    if summary.get("gpu_idle_us") is not None:
        idle_share = summary["gpu_idle_us"] / summary["span_us"] if summary["span_us"] else 0
        head.append(f"GPU busy {fmt_us(summary['gpu_busy_us'])}, idle {fmt_us(summary['gpu_idle_us'])} ({idle_share:.0%})")
    elif summary.get("gpu_busy_us") is None:
        head.append("no GPU activity recorded")
    if summary.get("peak_memory_bytes") is not None:
        head.append(f"peak memory {summary['peak_memory_bytes'] / 2**20:.1f} MiB")
    return " · ".join(head)


def render_summary(summary: dict, console, title: str = "trace", top: int = 15) -> None:
    """Print a summary as rich tables on ``console`` (a ``rich.console.Console``)."""
    from rich.table import Table

    rt = summary["runtime"]
    device = summary.get("device") or {}
    console.print(header_line(summary, title))
    for r in summary.get("repaired") or []:
        console.print(f"read after repairing a known torch export bug ({r['issue']}): {term(r['what'])}")
    if device.get("peaks"):
        console.print(f"roofline peaks: {term(device['peaks']['model'])} ({term(device['peaks']['source'])}; "
                      f"matched by {term(device['peaks']['method'])})")
    elif device.get("peaks_note"):
        console.print(f"roofline: {term(device['peaks_note'])}")
    if summary["kernels"]:
        t = Table(title="kernels (by total time)")
        for col in ("kernel", "count", "total", "mean", "regs/thread", "smem B", "grid", "block", "occupancy", "waves"):
            t.add_column(col, justify="left" if col == "kernel" else "right")
        for k in summary["kernels"][:top]:
            occ = f"{k['occupancy']:.0%}" if k.get("occupancy") is not None else "-"
            if k.get("est_achieved_occupancy") is not None:
                occ += f" (est. {k['est_achieved_occupancy']:.0%})"
            t.add_row(term(_cut(k["name"])), str(k["count"]), fmt_us(k["total_us"]), fmt_us(k["mean_us"]),
                      str(k.get("registers_per_thread") if k.get("registers_per_thread") is not None else "-"),
                      str(k.get("shared_memory_bytes") if k.get("shared_memory_bytes") is not None else "-"),
                      "x".join(map(str, k.get("grid") or [])) or "-", "x".join(map(str, k.get("block") or [])) or "-",
                      occ, str(k.get("waves") or "-"))
        console.print(t)
        comm = summary.get("communication") or {}
        if comm.get("count"):
            console.print(f"collective communication: {comm['count']} kernels, {fmt_us(comm['total_us'])} "
                          f"on stream(s) {', '.join(map(str, comm['streams'])) or '-'}")
    if device.get("kind") == "gpu" or summary["kernels"]:
        t = Table(title=f"{names.RUNTIME_TITLES.get(rt.get('api'), 'GPU')} runtime")
        for col in ("call", "count", "total"):
            t.add_column(col, justify="left" if col == "call" else "right")
        t.add_row("kernel launches", str(rt["launches"]["count"]), fmt_us(rt["launches"]["total_us"]))
        if rt.get("graph_launches"):
            t.add_row("  of which graph launches", str(rt["graph_launches"]),
                      fmt_us(rt["calls_by_kind"]["graph_launch"]["total_us"]))
        for api, v in rt["sync"].items():
            t.add_row(term(api), str(v["count"]), fmt_us(v["total_us"]))
        for direction, v in rt["memcpy"].items():
            t.add_row(term(f"memcpy {direction} ({v['bytes']} B)"), str(v["count"]), fmt_us(v["total_us"]))
        if rt["memset"]["count"]:
            t.add_row(f"memset ({rt['memset']['bytes']} B)", str(rt["memset"]["count"]), fmt_us(rt["memset"]["total_us"]))
        alloc = (rt.get("calls_by_kind") or {}).get("alloc") or {}
        if alloc.get("count"):
            t.add_row("allocation and free", str(alloc["count"]), fmt_us(alloc["total_us"]))
        console.print(t)
    if summary["operators"]:
        t = Table(title="operators (by self time)")
        for col in ("operator", "count", "self", "total", "mean"):
            t.add_column(col, justify="left" if col == "operator" else "right")
        for o in summary["operators"][:top]:
            t.add_row(term(_cut(o["name"])), str(o["count"]), fmt_us(o["self_us"]), fmt_us(o["total_us"]),
                      fmt_us(o["mean_us"]))
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


def main_trace_diff(args) -> int:
    """``perfgate trace-diff BASE HEAD [--json]``: print ``{base, head, hints, diff}``; exit 0.

    Raises:
        UserError: a trace cannot be read (exit 2, one line).
    """
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

    console = Console()
    console.print(f"[bold]base[/bold] {term(args.base_trace)}\n[bold]head[/bold] {term(args.head_trace)}")
    if hints:
        for h in hints:
            console.print(f"• [bold]{term(h['kind'])}[/bold] ({h['confidence']:.0%}): {term(h['summary'])}")
    else:
        console.print("no hints: the traces show no change in time beyond noise")
    rows = side_by_side(base, head, top=15)
    if rows:
        t = Table(title=f"top kernels / operators ({unit_words(d)})")
        for col in ("name", "match", "base", "head", "Δ"):
            t.add_column(col, justify="left" if col in ("name", "match") else "right")
        for r in rows:
            t.add_row(term(display_name(r["name"], 70)), r["match"],
                      "-" if r["base_total_us"] is None else f"{r['base_count']:g} × → {fmt_us(r['base_total_us'])}",
                      "-" if r["head_total_us"] is None else f"{r['head_count']:g} × → {fmt_us(r['head_total_us'])}",
                      fmt_signed_us(r["delta_us"]))
        console.print(t)
    if d["unmatched_base"] or d["unmatched_head"]:
        console.print(f"unmatched kernels: {len(d['unmatched_base'])} only in base, {len(d['unmatched_head'])} only in head")
    return 0
