"""Beyond time: peak memory and torch.compile, compared base vs head over process pairs (pure).

The workers measure both at the end of every process pair (:mod:`runner.worker.measures`), so a
benchmark with ``J`` pairs has ``J`` values per side, each from a fresh process, and pair ``j`` of
base sits beside pair ``j`` of head in time. This module turns them into the ``memory`` and
``compile`` records of results.json (each side's, and the change's) and the memory verdict.

Memory statistics. Memory is far less noisy than time — most allocations repeat byte for byte
in every fresh process — but allocators quantise it (c10's 64-byte alignment, CUDA's 512-byte
blocks and 2/20 MiB segments, pages) and now and then one process differs as a whole (an
autotuner or cuDNN picking another algorithm with another workspace). So:

* paired over processes: pair ``j`` gives ``r_j = head_j / base_j`` (a base of 0 bytes — a call
  that allocated nothing — gives ``head_j + 1``, :func:`memory_ratio`);
* the estimate is the median of the ``r_j`` and its interval the distribution-free one of a median
  (order statistics of the binomial, the sign test inverted; :func:`runner.stats.median_interval`):
  rank-based, so it holds for tied and discrete values — identical ratios in every pair, the
  common case, give an interval of zero width where a mean and a t interval would be undefined —
  and one odd process moves it by one rank, not by its size. Below 6 pairs no 95 % interval of
  a median exists and the interval is the range of the pairs (coverage ``1 − 2^(1−J)``): a change
  must then show in every pair;
* the verdict (:func:`memory_verdict`): ``regression`` when the estimate is at least
  ``1 + memory_threshold``, the interval lies above 1 and the median increase is at least
  :data:`MEMORY_FLOOR_BYTES`; ``improvement`` mirrored; ``unchanged`` when the interval lies inside
  ``±memory_threshold`` or the median change is below the floor; ``inconclusive`` otherwise.

Compile time is a time: the per-pair log-ratios of the cold first call's compile seconds, their
mean and a Student t interval over the pairs (:func:`runner.stats.blocked_estimate`, no floor),
as for a benchmark's time; at least :data:`MIN_COMPILE_PAIRS` pairs are measured when a benchmark
compiles on both sides. Graph breaks and recompilations are facts torch reports: each side's are
those seen in at least half of its processes, matched between the sides by file, function and
reason (not line: an edit above a break moves it), and what head has beyond base is ``added``.
"""

from __future__ import annotations

import math
from typing import Sequence

from .stats import blocked_estimate, median_interval

#: Smallest median change in bytes a memory verdict needs (64 KiB): Python's own allocations in a
#: call vary by a few KiB between processes (measured: 160–2,400 bytes in a torch call), and a
#: change that small is never what an out-of-memory is made of.
MEMORY_FLOOR_BYTES = 64 * 1024

#: Coverage of the memory interval once there are enough pairs for an order-statistic interval.
MEMORY_CI_LEVEL = 0.95

#: Process pairs a benchmark that compiles on both sides is measured in at least, so its compile
#: time is compared with an interval (runner.pipeline.timing.timing adds set-up-only pairs).
MIN_COMPILE_PAIRS = 3

#: Coverage of the compile-time interval.
COMPILE_CI_LEVEL = 0.95

#: Floating-point slack of the threshold comparison (a ratio of exactly 1.05 is beyond 5 %).
_EPS = 1e-9

#: Process pairs whose peak memory is measured at most: memory repeats almost byte for byte
#: (evaluation/RESULTS_measures.md: A/A identical in every pair on CPU; +5 % found 32/32 with 3
#: pairs), so later pairs add cost, not information.
MEMORY_PAIRS = 4

#: What measuring one call's memory costs, in calls of the benchmark. On a CPU tracemalloc and
#: torch's memory profiler trace every allocation: measured 15× a call for pure-Python code (a
#: 0.24 s loop took 3.6 s, a 2 ms one 37 ms); on CUDA it is one call, synchronised.
MEMORY_COST_CALLS = {"cpu": 20.0, "cuda": 2.0}

#: Share of the time a benchmark has left that one side's memory measure may take: above it the
#: pair's memory is not measured, so the timing keeps its budget (a ×100 regression of a 2 ms
#: benchmark is decided in seconds, not after 7 s of tracing, issue 26).
MEMORY_BUDGET_SHARE = 0.1

#: Share of the seconds a benchmark's rounds have taken so far that its memory measures (every
#: pair's, both sides) may take in all: they may at most double the benchmark's time to its verdict. Why: with only
#: :data:`MEMORY_BUDGET_SHARE` of a 900 s budget as the bound, a ×1000 regression of a 2 ms
#: benchmark (2.4 s per call on head) was measured twice at ~36 s a pair on a CPU, and took 135 s
#: to a verdict its rounds had reached in under 20 s (evaluation/sensitivity.py, issue 26).
MEMORY_ROUNDS_SHARE = 1.0


def memory_due(measured_pairs: int, per_call_s: float, seconds_left: float, device: str | None = "cpu",
               rounds_s: float = math.inf, *, spent_s: float = 0.0, sides: int = 1,
               change_seen: bool = False) -> bool:
    """Whether to measure peak memory at the end of this process pair (pure).

    Args:
        measured_pairs: pairs of this benchmark whose memory was asked for so far.
        per_call_s: seconds one call takes (warm; the slower side's).
        seconds_left: seconds the benchmark has left before its deadline (``inf`` for none).
        device: ``cpu`` or ``cuda``/``cuda:N`` (None: ``cpu``), for :data:`MEMORY_COST_CALLS`.
        rounds_s: seconds this benchmark's timed rounds have taken so far, both sides (``inf``:
            no bound from them, as for ``perfgate run``'s single measure).
        spent_s: seconds this benchmark's memory measures have taken so far, all sides.
        sides: how many sides this pair's measure runs on (each costs the expected cost).
        change_seen: the pairs measured so far show a change beyond the memory threshold: until
            :data:`EXACT_PAIRS` pairs are measured the rounds' bound is lifted (the budget's
            share still holds), so a large change is not lost for want of the pair that decides
            it (issue 47).

    Returns:
        True while fewer than :data:`MEMORY_PAIRS` pairs were measured, one side's expected cost
        (:data:`MEMORY_COST_CALLS` × ``per_call_s``) is within :data:`MEMORY_BUDGET_SHARE` of
        ``seconds_left``, and the measures' seconds — ``spent_s`` and this pair's ``sides`` × the
        cost — stay within :data:`MEMORY_ROUNDS_SHARE` of ``rounds_s``. Counted so, over all
        pairs: before, each pair's one-side cost was held to the rounds alone, and an A/A of
        ~1 s per call on a CPU spent 184 s in four pairs' measures beside 54 s of rounds.
    """
    if measured_pairs >= MEMORY_PAIRS:
        return False
    cost = memory_cost(per_call_s, device)
    if cost > MEMORY_BUDGET_SHARE * seconds_left:
        return False
    if change_seen and measured_pairs < EXACT_PAIRS:
        return True
    return spent_s + sides * cost <= MEMORY_ROUNDS_SHARE * rounds_s


def memory_cost(per_call_s: float, device: str | None = "cpu") -> float:
    """Expected seconds one memory measure takes: :data:`MEMORY_COST_CALLS` × ``per_call_s``."""
    kind = "cuda" if str(device or "cpu").startswith("cuda") else "cpu"
    return MEMORY_COST_CALLS[kind] * max(0.0, per_call_s)


def memory_skipped(per_call_s: float, seconds_left: float, device: str | None = "cpu",
                   rounds_s: float = math.inf, *, sides: int = 1) -> str:
    """Why a benchmark has no memory record (a side's ``measure_error``; plain text): the bound of
    :func:`memory_due` that its cost exceeded (``sides`` as there)."""
    cost = memory_cost(per_call_s, device)
    if cost > MEMORY_BUDGET_SHARE * seconds_left or not math.isfinite(rounds_s):
        return (f"memory not measured: measuring one call (~{cost:.3g} s) would take more "
                f"than {MEMORY_BUDGET_SHARE * 100:g} % of the {max(0.0, seconds_left):.3g} s the benchmark had left")
    both = f" on each of {sides} sides, {sides * cost:.3g} s in all," if sides > 1 else ""
    return (f"memory not measured: measuring one call (~{cost:.3g} s){both} would take longer than the "
            f"benchmark's timed rounds ({max(0.0, rounds_s):.3g} s)")


def _median(values: Sequence[float]) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _median_int(values: Sequence[float | None]) -> int | None:
    known = [v for v in values if isinstance(v, (int, float))]
    m = _median(known)
    return None if m is None else int(round(m))


# -- memory ---------------------------------------------------------------------------------------

def memory_ratio(base: int, head: int) -> float:
    """head / base bytes; a base of 0 gives 1 for a head of 0, else ``head + 1`` (finite, and
    large enough for any threshold: a call that allocated nothing now allocates)."""
    if base > 0:
        return head / base
    return 1.0 if head == 0 else float(head + 1)


def memory_side(measured: Sequence[dict | None]) -> dict | None:
    """One side's ``memory`` record: per field the median over its processes, and the values.

    Args:
        measured: per process pair the worker's memory record (``{kind, peak_bytes,
            reserved_bytes?, tensor_bytes?, python_bytes?, rss_bytes}``) or None.

    Returns:
        ``{kind, peak_bytes, reserved_bytes, tensor_bytes, python_bytes, rss_bytes, processes}``
        (bytes; ``processes`` the ``peak_bytes`` of each process in pair order), or None when no
        process measured it.
    """
    known = [m for m in measured if isinstance(m, dict) and isinstance(m.get("peak_bytes"), int)]
    if not known:
        return None
    kinds = [m.get("kind") for m in known]
    kind = max(set(kinds), key=kinds.count)
    same = [m for m in known if m.get("kind") == kind]
    out = {"kind": kind, "peak_bytes": _median_int([m["peak_bytes"] for m in same])}
    for key in ("reserved_bytes", "tensor_bytes", "python_bytes", "rss_bytes"):
        out[key] = _median_int([m.get(key) for m in same])
    out["processes"] = [m["peak_bytes"] for m in same]
    return out


#: Process pairs that decide a memory change whose bytes were the same in every process of each
#: side (:func:`memory_change`'s ``exact``): two show it is exact, more would only repeat it.
EXACT_PAIRS = 2


def memory_verdict(ratio: float, low: float, high: float, delta: float, threshold: float,
                   floor: int = MEMORY_FLOOR_BYTES, pairs: int = 2, min_pairs: int = 2,
                   exact: bool = False) -> str:
    """``regression`` | ``improvement`` | ``unchanged`` | ``inconclusive`` for a memory estimate
    (module docstring). ``ratio``/``low``/``high``: head/base; ``delta``: median bytes head − base;
    fewer than ``min_pairs`` process pairs decide no change (one process pair cannot tell a change
    from a process that differed as a whole) — unless the bytes were ``exact`` (the same in every
    process of each side), where :data:`EXACT_PAIRS` suffice (issue 47: 16.0 → 80.0 MiB, measured
    exactly, was ``inconclusive`` for want of pairs)."""
    upper = 1.0 + threshold
    if abs(delta) < floor:
        return "unchanged"
    if pairs < (min(min_pairs, EXACT_PAIRS) if exact else min_pairs):
        return "inconclusive"
    if ratio >= upper * (1 - _EPS) and low > 1.0 and delta > 0:
        return "regression"
    if ratio <= (1.0 / upper) * (1 + _EPS) and high < 1.0 and delta < 0:
        return "improvement"
    if 1.0 / upper <= low and high <= upper:
        return "unchanged"
    return "inconclusive"


def memory_change(base: Sequence[dict | None], head: Sequence[dict | None], threshold: float,
                  floor: int = MEMORY_FLOOR_BYTES, min_pairs: int = 2) -> dict | None:
    """The ``change.memory`` record: head vs base peak memory over the process pairs.

    Args:
        base, head: per process pair, aligned, the workers' memory records (or None).
        threshold: ``memory_threshold``, a fraction (0.05 = 5 %).
        floor: smallest median change in bytes a verdict needs.
        min_pairs: process pairs a regression or improvement needs (``min_process_pairs``).

    Returns:
        ``{kind, ratio, ci_low, ci_high, ci_level, delta_bytes, base_bytes, head_bytes, pairs,
        threshold, exact, verdict}`` (plus ``reserved_ratio`` on CUDA; ``exact``: at least
        :data:`EXACT_PAIRS` pairs, each side's bytes the same in all of them), or None when no pair
        has both sides measured the same way.
    """
    pairs = [(b, h) for b, h in zip(base, head) if isinstance(b, dict) and isinstance(h, dict)
             and isinstance(b.get("peak_bytes"), int) and isinstance(h.get("peak_bytes"), int)
             and b.get("kind") == h.get("kind")]
    if not pairs:
        return None
    ratios = [memory_ratio(b["peak_bytes"], h["peak_bytes"]) for b, h in pairs]
    deltas = [h["peak_bytes"] - b["peak_bytes"] for b, h in pairs]
    ratio, low, high = median_interval(ratios, MEMORY_CI_LEVEL)
    n = len(ratios)
    delta = _median(deltas)
    exact = n >= EXACT_PAIRS and len({b["peak_bytes"] for b, _ in pairs}) == 1 \
        and len({h["peak_bytes"] for _, h in pairs}) == 1
    out = {"kind": pairs[0][0].get("kind"), "ratio": round(ratio, 6), "ci_low": round(low, 6),
           "ci_high": round(high, 6), "ci_level": MEMORY_CI_LEVEL if n >= 6 else round(1 - 2 * 0.5 ** n, 6),
           "delta_bytes": int(round(delta)), "base_bytes": _median_int([b["peak_bytes"] for b, _ in pairs]),
           "head_bytes": _median_int([h["peak_bytes"] for _, h in pairs]), "pairs": n, "threshold": threshold,
           "exact": exact, "verdict": memory_verdict(ratio, low, high, delta, threshold, floor, n,
                                                     min_pairs, exact)}
    reserved = [memory_ratio(b["reserved_bytes"], h["reserved_bytes"]) for b, h in pairs
                if isinstance(b.get("reserved_bytes"), int) and isinstance(h.get("reserved_bytes"), int)]
    if reserved:
        out["reserved_ratio"] = round(_median(reserved), 6)
    return out


# -- values that are memory (asv's peakmem_* and mem_*) ---------------------------------------------

#: Smallest median change in bytes a memory verdict needs, by the kind of value: an object's deep
#: size (asv's ``mem_*``, ``size``) is exact — the same bytes in every process — so any change
#: beyond the threshold counts; a resident set (``peakmem_*``, ``rss``/``maxrss``) moves by pages
#: between processes, so it keeps :data:`MEMORY_FLOOR_BYTES`.
VALUE_FLOORS = {"size": 0}


def value_records(values: Sequence[float], kind: str) -> list[dict]:
    """A benchmark's reported byte values, one per process, as the memory records
    :func:`memory_side` and :func:`memory_change` read: ``[{kind, peak_bytes}]``."""
    return [{"kind": kind, "peak_bytes": int(round(v))} for v in values]


def value_memory_change(base: Sequence[float], head: Sequence[float], kind: str, threshold: float,
                        min_pairs: int = 2) -> dict | None:
    """The ``change.memory`` record of a benchmark whose own value is bytes, one per process and
    side, aligned by process pair (asv's ``peakmem_*``: ``kind`` ``rss``; ``mem_*``: ``size``):
    :func:`memory_change` with the floor of :data:`VALUE_FLOORS` (``MEMORY_FLOOR_BYTES`` else)."""
    floor = VALUE_FLOORS.get(kind, MEMORY_FLOOR_BYTES)
    return memory_change(value_records(base, kind), value_records(head, kind), threshold, floor, min_pairs)


# -- torch.compile ----------------------------------------------------------------------------------

def _site_key(site: dict, with_line: bool) -> tuple:
    frame = str(site.get("frame") or "")
    path = frame.rsplit(":", 1)[0] if not with_line else frame
    function = str(site.get("function") or "")
    # a resumed function carries the break's line in its name; match it without the line
    function = function.split(" (resumed", 1)[0]
    return path, function, str(site.get("reason") or "")


def consensus_sites(per_process: Sequence[Sequence[dict]]) -> list[dict]:
    """The sites (graph breaks or recompilations) seen in at least half of the processes, each
    with its median ``count`` over all of them (0 where a process did not see it)."""
    n = len(per_process)
    if n == 0:
        return []
    seen: dict[tuple, list[dict]] = {}
    for sites in per_process:
        for site in sites or []:
            seen.setdefault(_site_key(site, True), []).append(site)
    out = []
    for key, found in seen.items():
        if 2 * len(found) < n:
            continue
        counts = [int(s.get("count") or 1) for s in found] + [0] * (n - len(found))
        site = dict(found[0])
        site["count"] = int(round(_median(counts) or 0)) or 1
        out.append(site)
    return sorted(out, key=lambda s: (str(s.get("frame")), str(s.get("reason"))))


def added_sites(base: Sequence[dict], head: Sequence[dict]) -> list[dict]:
    """Head's sites beyond base's, matched by file, function and reason (the line may move);
    each with ``count`` the number added. Where a group grew, the head sites whose line base does
    not have are named first."""
    out = []
    groups: dict[tuple, list[dict]] = {}
    for site in head:
        groups.setdefault(_site_key(site, False), []).append(site)
    for key, head_sites in groups.items():
        base_sites = [s for s in base if _site_key(s, False) == key]
        more = sum(int(s.get("count") or 1) for s in head_sites) - sum(int(s.get("count") or 1) for s in base_sites)
        if more <= 0:
            continue
        base_frames = {s.get("frame") for s in base_sites}
        ranked = sorted(head_sites, key=lambda s: s.get("frame") in base_frames)
        site = dict(ranked[0])
        site["count"] = more
        out.append(site)
    return sorted(out, key=lambda s: (str(s.get("frame")), str(s.get("reason"))))


def compile_side(measured: Sequence[dict | None]) -> dict | None:
    """One side's ``compile`` record from its processes' compile facts (None where nothing compiled).

    Returns:
        ``{processes, graphs, compile_s, recompile_s, graph_breaks, recompiles,
        graph_break_count, recompile_count, compile_s_values}``: medians over the processes; the
        sites those seen in at least half of them (:func:`consensus_sites`).
    """
    known = [m for m in measured if isinstance(m, dict)]
    if not known:
        return None

    def med(key: str, digits: int | None = None):
        m = _median([float(f.get(key) or 0) for f in known])
        return round(m, digits) if digits is not None else int(round(m))

    return {"processes": len(known), "graphs": med("graphs"), "compile_s": med("compile_s", 6),
            "recompile_s": med("recompile_s", 6), "graph_break_count": med("graph_break_count"),
            "recompile_count": med("recompile_count"),
            "graph_breaks": consensus_sites([f.get("graph_breaks") or [] for f in known]),
            "recompiles": consensus_sites([f.get("recompiles") or [] for f in known]),
            "compile_s_values": [round(float(f.get("compile_s") or 0), 6) for f in known]}


def compile_change(base: Sequence[dict | None], head: Sequence[dict | None]) -> dict | None:
    """The ``change.compile`` record: what head's torch.compile does beyond base's.

    Args:
        base, head: per process pair, aligned, the workers' compile facts (or None: nothing compiled).

    Returns:
        None when neither side compiled; else ``{graphs: {base, head}, graph_breaks: {base,
        head, added, removed}, recompiles: {base, head, added, removed}, compile_s: {base, head,
        ratio, ci_low, ci_high, ci_level, pairs}}`` (counts are medians over each side's processes;
        ``added``/``removed`` lists of sites, :func:`added_sites`; the compile-time ratio is None
        with fewer than 2 pairs where both sides compiled).
    """
    b_side, h_side = compile_side(base), compile_side(head)
    if b_side is None and h_side is None:
        return None
    b_side = b_side or {"graphs": 0, "graph_breaks": [], "recompiles": [], "graph_break_count": 0,
                        "recompile_count": 0, "compile_s": 0.0}
    h_side = h_side or {"graphs": 0, "graph_breaks": [], "recompiles": [], "graph_break_count": 0,
                        "recompile_count": 0, "compile_s": 0.0}
    out = {"graphs": {"base": b_side["graphs"], "head": h_side["graphs"]}}
    for key, count in (("graph_breaks", "graph_break_count"), ("recompiles", "recompile_count")):
        out[key] = {"base": b_side[count], "head": h_side[count],
                    "added": added_sites(b_side[key], h_side[key]),
                    "removed": added_sites(h_side[key], b_side[key])}
    times = [(float(b["compile_s"]), float(h["compile_s"])) for b, h in zip(base, head)
             if isinstance(b, dict) and isinstance(h, dict) and (b.get("compile_s") or 0) > 0
             and (h.get("compile_s") or 0) > 0]
    timing = {"base": b_side["compile_s"], "head": h_side["compile_s"], "ratio": None, "ci_low": None,
              "ci_high": None, "ci_level": None, "pairs": len(times)}
    if len(times) >= 2:
        # the floor only keeps identical pairs (an interval of zero width) from dividing by zero
        est = blocked_estimate([(math.log(h / b), 0.0, 1) for b, h in times], COMPILE_CI_LEVEL, 1e-9)
        timing.update(ratio=round(est.ratio, 6), ci_low=round(est.ci_low, 6), ci_high=round(est.ci_high, 6),
                      ci_level=COMPILE_CI_LEVEL)
    out["compile_s"] = timing
    return out
