"""The hand check's rows of issue 49 as a Markdown table: base → head per case, kernel,
specialisation and architecture (evaluation/static_kernels_hand.py writes the rows)."""

from __future__ import annotations


def _cell(side: dict, key: str) -> str:
    if not side:
        return "—"
    if "error" in side:
        return "✗"
    return str(side.get(key))


def compare(b: dict, h: dict) -> str:
    """What the two sides' machine code says: identical cubin, same SASS, or different."""
    if not b or not h:
        return "head only" if h else "base only"
    if "error" in b or "error" in h:
        return "; ".join(f"{n} does not compile: {s['error'][:160]}"
                         for n, s in (("base", b), ("head", h)) if "error" in s)
    if b["cubin_sha256"] == h["cubin_sha256"]:
        return "identical cubin"
    return "same SASS, cubin differs" if b["sass_sha256"] == h["sass_sha256"] else "code differs"


def agrees(*sides: dict) -> str:
    """cuobjdump's REG/STACK against ptxas's own log, on the sides that compiled."""
    done = [s for s in sides if s and "error" not in s]
    if not done:
        return "—"
    ok = all(s["regs"] == s["ptxas_regs"] and s["stack"] == s["ptxas_stack"] for s in done)
    return "yes" if ok else "NO"


def markdown(rows: list[dict]) -> str:
    """base → head per case, kernel, config and arch."""
    keyed: dict[tuple, dict] = {}
    for r in rows:
        keyed.setdefault((r["case"], r["kernel"], r["config"], r["arch"]), {})[r["side"]] = r
    lines = ["| case | kernel | config | arch | regs b→h | stack b→h | spill st/ld b→h "
             "| dyn. shared b→h | cuobjdump = ptxas | machine code | compile s b, h |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (case, kernel, config, arch), sides in keyed.items():
        b, h = sides.get("base", {}), sides.get("head", {})

        def pair(key):
            return f"{_cell(b, key)}→{_cell(h, key)}"

        spills = (f"{_cell(b, 'spill_stores')}/{_cell(b, 'spill_loads')}→"
                  f"{_cell(h, 'spill_stores')}/{_cell(h, 'spill_loads')}")
        lines.append(f"| {case} | `{kernel}` | {config} | {arch} | {pair('regs')} "
                     f"| {pair('stack')} | {spills} | {pair('meta_shared')} | {agrees(b, h)} "
                     f"| {compare(b, h)} "
                     f"| {b.get('seconds', '—')}, {h.get('seconds', '—')} |")
    return "\n".join(lines) + "\n"


def timing(rows: list[dict]) -> str:
    """Compile seconds per kernel, specialisation and arch (one cold ``triton.compile``: front end,
    LLVM, ptxas; cuobjdump not counted), over every row that compiled, and per arch."""
    import statistics

    def line(label: str, values: list[float]) -> str:
        values = sorted(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        over = sum(v > 2.0 for v in values)
        return (f"| {label} | {len(values)} | {statistics.median(values):.2f} | {p90:.2f} "
                f"| {values[-1]:.2f} | {over} |")

    done = [r for r in rows if "error" not in r]
    out = ["| compiles | n | median s | p90 s | max s | over 2 s |", "|---|---|---|---|---|---|",
           line("all", [r["seconds"] for r in done])]
    for arch in sorted({r["arch"] for r in done}):
        out.append(line(arch, [r["seconds"] for r in done if r["arch"] == arch]))
    failed = [r for r in rows if "error" in r]
    out.append(f"\n{len(failed)} compiles failed (the side's compiler message is in the table).")
    return "\n".join(out) + "\n"


#: Per SM, from the CUDA C Programming Guide's table of compute capabilities (8.0 and 9.0): 64K
#: 32-bit registers in 4 sub-partitions, at most 64 resident warps and 32 blocks, shared memory
#: 164 KB (8.0) / 228 KB (9.0) with 1 KB reserved per block; registers are allocated per warp in
#: units of 256.
SM = {"sm_80": {"shared": 167936}, "sm_90": {"shared": 233472}}


def occupancy(row: dict) -> tuple[int, str]:
    """Resident blocks per SM of one compiled kernel and what limits them (the occupancy
    calculator's rules, registers allocated per sub-partition)."""
    warps = row["num_warps"]
    per_warp = -(-row["regs"] * 32 // 256) * 256
    by_regs = 4 * (16384 // per_warp) // warps
    by_warps = 64 // warps
    smem = row["meta_shared"] + row["shared_static"] + 1024
    by_smem = SM[row["arch"]]["shared"] // (-(-smem // 128) * 128)
    limits = {"registers": by_regs, "warps": by_warps, "shared memory": by_smem, "blocks": 32}
    blocks = min(limits.values())
    return blocks, "/".join(k for k, v in limits.items() if v == blocks)
