"""Peak memory and the compilers in words: the memory column, its verdict, the sentence that says
what head's torch.compile does beyond base's, and the Triton compiler's static pass (registers,
spills, occupancy: :func:`kernels_view`) (pure; plain text, escaped where it is shown).

Reads the ``memory`` and ``compile`` records :mod:`runner.measures` puts in results.json and its
``kernels`` section (:mod:`runner.kernels`); a result without them (an older one) renders as
before.
"""

from __future__ import annotations

from ..measures import MEMORY_FLOOR_BYTES, VALUE_FLOORS
from ..results import CHANGED, change_of
from .units import (fmt_bytes, fmt_change_interval, fmt_growth, fmt_time, is_number,
                    plural)

#: What a side's ``peak_bytes`` is, by ``memory.kind``.
MEMORY_KINDS = {"cuda": "peak allocated on the GPU (torch.cuda.max_memory_allocated) during one call",
                "cpu": "allocated by one call at its peak: torch's CPU tensors plus Python's objects (tracemalloc)"}

#: Graph-break or recompilation sites named in one sentence.
SITES_NAMED = 3


def memory_of(bench: dict) -> tuple[dict, dict, dict]:
    """``(change.memory, base.memory, head.memory)`` of a benchmark, ``{}`` for each it lacks."""
    change = change_of(bench).get("memory")
    base = (bench.get("base") or {}).get("memory")
    head = (bench.get("head") or {}).get("memory")
    return (change if isinstance(change, dict) else {}, base if isinstance(base, dict) else {},
            head if isinstance(head, dict) else {})


def has_memory(benches: list[dict]) -> bool:
    """Whether any benchmark has a memory measurement (the reports show the column then)."""
    return any(any(memory_of(b)) for b in benches)


def memory_verdict(bench: dict) -> str | None:
    """The benchmark's memory verdict (``regression``, ``improvement``, ``unchanged``,
    ``inconclusive``), None where memory was not compared."""
    verdict = memory_of(bench)[0].get("verdict")
    return verdict if isinstance(verdict, str) else None


def memory_cell(bench: dict) -> str:
    """The memory column: ``2.0 MiB → 6.0 MiB (3× larger)`` with the verdict when it is one
    (``, regression``), one side's peak alone where only one was measured, "" where none was."""
    change, base, head = memory_of(bench)
    if change:
        b, h = change.get("base_bytes"), change.get("head_bytes")
        growth = fmt_growth(change.get("ratio"), change.get("ci_low"), change.get("ci_high"))
        text = f"{fmt_bytes(b)} → {fmt_bytes(h)} ({growth})"
        if change.get("verdict") in CHANGED:
            text += f", {change['verdict']}"
        return text
    one = head or base
    if is_number(one.get("peak_bytes")):
        return fmt_bytes(one.get("peak_bytes"))
    sides = [bench.get(name) or {} for name in ("head", "base")]
    return "not measured" if any(str(s.get("measure_error") or "").startswith("memory not measured") for s in sides) else ""


def memory_note(bench: dict) -> str | None:
    """One sentence beside a memory regression or improvement: what was measured, over how many
    process pairs, and the interval (None otherwise)."""
    change, _, _ = memory_of(bench)
    verdict = change.get("verdict")
    what = MEMORY_KINDS.get(change.get("kind"), "peak memory")
    ratio, threshold, delta = (change.get("ratio"), change.get("threshold"),
                               change.get("delta_bytes"))
    if (verdict == "unchanged" and is_number(ratio) and is_number(threshold) and is_number(delta)
            and abs(ratio - 1.0) > threshold
            and abs(delta) < (floor := VALUE_FLOORS.get(change.get("kind"), MEMORY_FLOOR_BYTES))):
        # beyond the threshold but within the floor of page noise: no verdict, and a word why
        return (f"{what} {fmt_bytes(change.get('base_bytes'))} → "
                f"{fmt_bytes(change.get('head_bytes'))} "
                f"({fmt_growth(ratio, change.get('ci_low'), change.get('ci_high'))}): beyond "
                f"±{threshold * 100:g} %, but {fmt_bytes(abs(delta))} is under the "
                f"{fmt_bytes(floor)} a memory verdict needs (what page-granular noise allows)")
    if verdict not in CHANGED:
        return None
    pairs = change.get("pairs")
    low, high = change.get("ci_low"), change.get("ci_high")
    growth, interval = fmt_change_interval(ratio, low, high, "larger", "smaller")
    text = (f"memory {verdict}: {what}, {fmt_bytes(change.get('base_bytes'))} → {fmt_bytes(change.get('head_bytes'))} "
            f"({growth}, beyond ±{(change.get('threshold') or 0) * 100:g} %)")
    if is_number(pairs):
        text += f" in {plural(int(pairs), 'process pair')}"
        if is_number(low) and is_number(high):
            text += ", the same in each" if low == high else f", interval {interval}"
    reserved = change.get("reserved_ratio")
    if is_number(reserved):
        text += f"; reserved {fmt_growth(reserved)}"
    return text


# -- torch.compile ---------------------------------------------------------------------------------

def _site(site: dict, recompile: bool = False) -> str:
    frame = str(site.get("frame") or "?")
    function = site.get("function")
    where = f"{function} at {frame}" if recompile and function else (f"{frame} in {function}" if function else frame)
    reason = str(site.get("reason") or "").split(" — ", 1)[0]
    return f"{where} ({reason})" if reason else where


def _sites(sites: list[dict], recompile: bool = False) -> str:
    named = "; ".join(_site(s, recompile) for s in sites[:SITES_NAMED])
    more = len(sites) - SITES_NAMED
    return named + (f"; and {more} more" if more > 0 else "")


def _count(sites: list[dict]) -> int:
    return sum(int(s.get("count") or 1) for s in sites)


def _listed(breaks: list[dict], recompiles: list[dict]) -> str:
    """``1 graph break at … and 3 recompiles of …`` ("" for neither)."""
    said = []
    if breaks:
        said.append(f"{plural(_count(breaks), 'graph break')} at {_sites(breaks)}")
    if recompiles:
        said.append(f"{plural(_count(recompiles), 'recompile')} of {_sites(recompiles, True)}")
    return " and ".join(said)


def compile_sentence(change: dict | None) -> str | None:
    """What head's torch.compile does beyond base's, from a benchmark's ``change`` (its
    ``compile`` record, and its time ratio when the time changed), e.g. ``head adds 1 graph
    break at model.py:42 in f (Unsupported Tensor.item() call …) and 3 recompiles of f at
    model.py:10 (tensor 'x' size mismatch at index 0 …); compiling the first call takes +38.0 %
    (…); a call is +12.0 %``. None when the compile facts show no difference."""
    if not isinstance(change, dict) or not isinstance(change.get("compile"), dict):
        return None
    c = change["compile"]
    breaks, recompiles = c.get("graph_breaks") or {}, c.get("recompiles") or {}
    parts = []
    adds = _listed(breaks.get("added") or [], recompiles.get("added") or [])
    if adds:
        parts.append("head adds " + adds)
    removes = _listed(breaks.get("removed") or [], recompiles.get("removed") or [])
    if removes:
        parts.append(("it" if adds else "head") + " removes " + removes)
    timing = c.get("compile_s") or {}
    low, high = timing.get("ci_low"), timing.get("ci_high")
    if is_number(low) and is_number(high) and (low > 1.0 or high < 1.0):
        takes, interval = fmt_change_interval(timing.get("ratio"), low, high, "longer", "shorter")
        parts.append(f"compiling the first call takes {takes} "
                     f"({fmt_time(timing.get('base'))} → {fmt_time(timing.get('head'))}, "
                     f"{interval} "
                     f"over {plural(int(timing.get('pairs') or 0), 'process pair')})")
    if not parts:
        return None
    if change.get("verdict") in CHANGED and is_number(change.get("ratio")):
        call = fmt_change_interval(change["ratio"], change.get("ci_low"), change.get("ci_high"))[0]
        parts.append(f"a call is {call}")
    return "; ".join(parts)


def kernels_view(section: dict | None) -> dict | None:
    """The static pass (results.json ``kernels``, runner.kernels): a sentence of what it did and
    its findings' sentences; None without the section."""
    if not isinstance(section, dict):
        return None
    if not section.get("ran"):
        return {"note": f"Static analysis not run: {section.get('why_not')}.", "findings": []}
    kernels, archs = section.get("kernels") or [], ", ".join(section.get("archs") or [])
    found = [f["summary"] for f in section.get("findings") or []]
    skipped = (section.get("jobs") or {}).get("skipped") or 0
    note = (f"{len(kernels)} Triton kernel(s) changed, compiled for {archs} on both sides "
            f"({section.get('unchanged', 0)} untouched"
            + (f"; {skipped} compile(s) skipped: the static pass's time was spent" if skipped
               else "") + "); "
            + (f"{len(found)} got worse on head:" if found else "none got worse on head."))
    cuda = (section.get("cuda_sources") or {}).get("changed") or []
    if cuda:
        note += (f" {len(cuda)} changed CUDA C++ source(s) not analysed: "
                 f"{section['cuda_sources'].get('why_not')}.")
    return {"note": note, "findings": found}
