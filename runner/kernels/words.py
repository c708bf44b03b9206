"""The static pass's section (:func:`runner.kernels.analysis.analyse`) as terminal lines (pure):
per kernel, per specialisation and arch, base against head."""

from __future__ import annotations


def _side(row: dict | None) -> str:
    if row is None:
        return "-"
    if "error" in row:
        return f"{row['stage']} failed: {row['error'].strip().splitlines()[-1][:160]}"
    o = row.get("occupancy") or {}
    occ = (f", {o['blocks']} blocks/SM ({o['occupancy']:.0%}, {o['limited_by']})" if o else "")
    return (f"{row['registers']} regs, stack {row['stack']} B, local {row['local']} B, "
            f"shared {row['shared_static']}+{row['shared_dynamic']} B, "
            f"{row['instructions']} SASS ({row['local_stores']} STL/{row['local_loads']} LDL)"
            f"{occ}, cubin {row['sha256'][:12]}")


def _loaded(rows: list[dict]) -> list[str]:
    """A line per side whose kernel came from its source reduced to its Triton code, and why."""
    out = []
    for side in ("base", "head"):
        why = next((r[side].get("import_error", "") for r in rows
                    if (r[side] or {}).get("loaded") == "source"), None)
        if why is not None:
            out.append(f"  {side}: loaded from its source reduced to its Triton code (triton "
                       f"imports, @triton.jit functions, tl.constexpr globals): its module did "
                       f"not import: {why.strip().splitlines()[-1][:200] if why else '?'}")
    return out


def lines(section: dict) -> list[str]:
    """What ``perfgate kernels`` prints."""
    if not section["ran"]:
        return [f"static analysis not run: {section['why_not']}"]
    jobs = section["jobs"]
    out = [f"Triton {section['triton']}, {', '.join(section['archs'])}: "
           f"{len(section['kernels'])} kernel(s) changed, {section['unchanged']} unchanged; "
           f"{jobs['compiled']} compiled, {jobs['cached']} cached, {jobs['failed']} failed, "
           f"{jobs['skipped']} skipped in {section['seconds']} s"
           + ("; no @triton.jit kernel in either revision" if not section["kernels"]
              and not section["unchanged"] else "")]
    for side, c in (section.get("capture") or {}).items():
        status = "stopped (time)" if c["exit"] is None else f"exit {c['exit']}"
        out.append(f"  {side}: {c['launches']} launch(es) captured from `{c['command']}` "
                   f"({status})")
    for path, error in section["errors"].items():
        out.append(f"  not read: {path}: {error}")
    for k in section["kernels"]:
        detail = ", ".join(k.get("why") or [])
        if k["status"] != "changed":
            detail = k["status"] + (f": {detail}" if detail else "")
        out.append(f"{k['path']}:{k['line']} {k['name']}: changed: {str(k['changed']).lower()}"
                   + (f" ({detail})" if detail else ""))
        if k["helper_of"]:
            out.append(f"  a helper: compiled inside {', '.join(k['helper_of'])}")
        if k.get("configs_note"):
            out.append(f"  {k['configs_note']}")
        for r in k["rows"]:
            guessed = f"; guessed: {', '.join(r['guessed'])}" if r["guessed"] else ""
            same = " (the same machine code)" if r["identical"] else ""
            worse = f"  WORSE: {', '.join(r['worse'])}" if r["worse"] else ""
            worse += f" ({r['withheld']})" if r.get("withheld") else ""
            out.append(f"  {r['arch']} [{r['spec']}] by {r['how']}{guessed}{same}{worse}")
            out.append(f"    base: {_side(r['base'])}")
            out.append(f"    head: {_side(r['head'])}")
        out += _loaded(k["rows"])
    for f in section["findings"]:
        out.append(f"finding: {f['summary']}")
    cuda = (section.get("cuda_sources") or {}).get("changed") or []
    if cuda:
        out.append(f"not analysed: {len(cuda)} changed CUDA C++ source(s) ({', '.join(cuda[:5])}"
                   f"{', ...' if len(cuda) > 5 else ''}): {section['cuda_sources']['why_not']}")
    return out
