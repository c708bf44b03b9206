"""Base's output against head's: does the head still compute the same thing? (pure)

Input: the summaries of one benchmark's output calls (:mod:`runner.worker.outputs` writes them,
:mod:`runner.outputs.summary` checks their form), per process pair: base's two calls (the same
seed, one after the other) and head's one. Output: results.json's ``benchmarks[].output``
(:func:`output_record`): ``verdict`` ``same`` | ``changed`` | ``not_compared``, the figures
(``max_abs_diff``, ``max_rel_diff``, ``share_changed``), what changed (``notes``: dtype, shape,
device, structure, values), ``skipped_leaves`` (None, handles, objects: not comparable) and
``nondeterminism`` (the largest spread between two base calls).

Tolerances. Integers, booleans and text are exact (their SHA-256). Floating point is judged
norm-wise on the values compared (every element up to 4096, else 1024 sampled ones): the error
``||head - base|| / ||base||`` against :func:`tolerance` ``= C * eps(dtype) * (1 + 20 / sqrt(m))``
over ``m`` compared elements, ``C = 420`` for float32/float64 (5e-5 for float32 at large ``m``)
and ``2`` for the 16-bit and 8-bit types — of the precision base's values carry
(:func:`carried_precision`: a float32 output of bfloat16 work is judged as bfloat16). Why the
output's own scale and not each element's:
reordering a reduction moves an element by a few ulps of the *summed terms*, and where the terms
cancel (a sum of zero-mean values) that is a large error relative to the element, never relative
to the output's RMS. Measured (``evaluation/RESULTS_outputs.md``): a 65,536-element float32 sum in
7 other orders over 200 seeds differs by at most 4e-4 absolute, 7.6e-5 relative to the sum
(torch.testing's defaults flag 9-18 of 200 per order); the scalar tolerance is 1.05e-3. A float32
result computed through float16 moves each element by up to half a float16 ulp, norm-wise about
2e-4, through bfloat16 about 2e-3: 3.5-5x and 30x or more the large-``m`` tolerance, measured
(a scalar sum of rounded terms is not caught: the rounding averages out; its elements are).
Beside the values, a large
tensor's checksums (sum, abs-sum, sum of squares, the 256 blocks' abs-sums, the NaN and infinity
counts) catch a dropped term or a skipped part the samples miss, at the scalar tolerance.

Nondeterminism first: the two base calls compared by the same rules give each leaf's spread; the
tolerance is widened to :data:`SPREAD_FACTOR` times it (never narrowed), the spread is reported,
and a leaf that moves more than :data:`MAX_SPREAD` between two calls (state carried from call to
call, randomness the seed does not reach) or an integer leaf that moves at all is not compared,
with the reason.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

#: An output's verdicts (results.json's ``benchmarks[].output.verdict``).
OUTPUT_VERDICTS = ("same", "changed", "not_compared")
#: The machine epsilon by dtype name (as the worker writes it); Python floats are read as
#: float32's (a ``loss.item()`` carries float32's precision).
EPS = {"float64": 2.22e-16, "double": 2.22e-16, "float32": 1.19e-7, "float": 1.19e-7,
       "complex64": 1.19e-7, "complex128": 2.22e-16, "complex": 1.19e-7, "float16": 9.77e-4,
       "half": 9.77e-4, "bfloat16": 7.81e-3, "complex32": 9.77e-4, "float8_e4m3fn": 0.125,
       "float8_e4m3fnuz": 0.125, "float8_e5m2": 0.25, "float8_e5m2fnuz": 0.25}
#: Multiples of eps the norm-wise tolerance allows: 32- and 64-bit, and the narrower types (2:
#: torch.testing's own rtol for bfloat16, 1.6e-2, is 2 eps; here norm-wise, so more lenient).
WIDE_C, NARROW_C = 420.0, 2.0
#: The tolerance is widened to this many times the spread seen between two base calls.
SPREAD_FACTOR = 4.0
#: A leaf that moves more than this (relative) between two base calls is not compared.
MAX_SPREAD = 0.01
#: Output calls are asked for only while this many calls' time is left before the deadline.
DUE_CALLS = 6
#: A call slower than this (seconds) gets its output compared in its first :data:`SLOW_PAIRS`
#: process pairs only: three more calls a pair would cost a slow benchmark a third of its rounds.
SLOW_CALL_S, SLOW_PAIRS = 0.05, 3


def tolerance(dtype: str, m: int) -> float:
    """The norm-wise relative tolerance for ``m`` compared elements of ``dtype`` (the module
    docstring): 1.05e-3 for one float32 element, 6.6e-5 for 4096."""
    eps = EPS.get(dtype, EPS["float32"])
    c = WIDE_C if eps < 1e-6 else NARROW_C
    return c * eps * (1.0 + 20.0 / math.sqrt(max(m, 1)))


def carried_precision(dtype: str, values: list) -> str:
    """The dtype whose precision base's ``values`` carry: ``dtype``, or a narrower float type
    (bfloat16, float16, float32) every one of them is exact in — a float32 output of bfloat16
    work (``model(x).float()`` under autocast), a float64 one of float32 work — whose reordered
    reductions move it by the narrower type's ulps. Values that are all whole numbers (counts)
    keep ``dtype``'s tolerance: they are exact in every type."""
    finite = [v for v in values if not isinstance(v, str)]
    if dtype not in ("float32", "float64") or all(float(v).is_integer() for v in finite):
        return dtype
    for name, fits in (("bfloat16", _fits_bfloat16), ("float16", _fits_float16),
                       ("float32", _fits_float32)):
        if EPS[name] > EPS[dtype] and all(fits(v) for v in finite):
            return name
    return dtype


def _fits_float32(v: float) -> bool:
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0] == v
    except OverflowError:
        return False


def _fits_bfloat16(v: float) -> bool:
    return _fits_float32(v) and struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF == 0


def _fits_float16(v: float) -> bool:
    try:
        return struct.unpack("<e", struct.pack("<e", v))[0] == v
    except OverflowError:
        return False


def output_due(per_call_s: float | None, left_s: float, pairs_done: int = 0) -> bool:
    """Whether a process pair's output calls are due: they fit the ``left_s`` seconds left (three
    calls, with room), and the benchmark is fast or ``pairs_done`` (pairs whose outputs were
    asked for) is below :data:`SLOW_PAIRS`."""
    per_call = per_call_s or 0.0
    return left_s > DUE_CALLS * per_call and (per_call <= SLOW_CALL_S or pairs_done < SLOW_PAIRS)


def is_float(dtype: str) -> bool:
    return dtype in EPS


@dataclass
class LeafDiff:
    """One leaf compared: ``status`` ``same`` | ``changed`` | ``skipped``; ``notes`` say what
    changed; ``compared`` elements, of which ``differing``; ``err`` the norm-wise relative error
    (floats) and ``tol`` the tolerance it was held to, ``spread`` what two base calls differed by
    (the same measure)."""

    path: str
    status: str = "same"
    notes: list = field(default_factory=list)
    compared: int = 0
    differing: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    err: float = 0.0
    tol: float | None = None
    spread: float | None = None


def _num(v) -> float:
    return float(v)  # "nan", "inf", "-inf" too


def _pairs(b: dict, h: dict, key: str) -> list[tuple]:
    return list(zip(b.get(key) or [], h.get(key) or []))


def _values_of(b: dict, h: dict) -> tuple[list[tuple], bool]:
    """The element pairs compared and whether they are every element (else a sample)."""
    if b.get("values") is not None and h.get("values") is not None:
        return _pairs(b, h, "values"), True
    return _pairs(b, h, "samples"), False


def _scale(b: dict, pairs: list[tuple]) -> float:
    """The output's RMS: from base's sum of squares when sampled, else from its values."""
    finite = [x for _, x in pairs if not isinstance(x, str)]
    if b.get("sq_sum") is not None and b.get("n"):
        bad = sum(b.get(k) or 0 for k in ("nan", "posinf", "neginf"))
        return math.sqrt(max(float(b["sq_sum"]), 0.0) / max(b["n"] - bad, 1))
    return math.sqrt(sum(x * x for x in finite) / len(finite)) if finite else 0.0


def compare_leaf(b: dict, h: dict, spread: float = 0.0) -> LeafDiff:
    """Head's leaf ``h`` against base's ``b`` (same path), the float tolerance widened by the
    base calls' ``spread`` (:data:`SPREAD_FACTOR`); the module docstring has the rules."""
    d = LeafDiff(b["path"])
    for key in ("dtype", "shape", "device"):
        if b.get(key) != h.get(key):
            d.status = "changed"
            d.notes.append(f"{key} {_shown(b.get(key))} → {_shown(h.get(key))}")
    if b.get("unreadable") or h.get("unreadable"):
        if d.status == "same":
            why = b.get("unreadable") or h.get("unreadable")
            d.status, d.notes = "skipped", [f"unreadable: {why}"]
        return d
    if d.status == "changed" and b.get("n") != h.get("n"):
        return d
    if b.get("hash") is not None and b.get("hash") == h.get("hash"):
        d.compared = len(_values_of(b, h)[0]) or 1
        return d
    if is_float(b.get("dtype")) and is_float(h.get("dtype")):
        _compare_floats(d, b, h, spread)
    else:
        _compare_exact(d, b, h)
    return d


def _shown(v) -> str:
    return "×".join(map(str, v)) if isinstance(v, list) else str(v)


def _compare_exact(d: LeafDiff, b: dict, h: dict) -> None:
    """Integers, booleans, text: any difference is a change (hash, else values)."""
    pairs, _ = _values_of(b, h)
    diffs = [abs(_num(x) - _num(y)) for x, y in pairs if x != y]
    d.compared, d.differing = len(pairs), len(diffs)
    d.max_abs = max(diffs, default=0.0)
    d.max_rel = max((abs(_num(y) - _num(x)) / abs(_num(x)) for x, y in pairs
                     if x != y and _num(x) != 0), default=0.0)
    if b.get("hash") != h.get("hash") or diffs:
        d.status = "changed"
        if diffs:
            d.notes.append(f"{len(diffs)} of {len(pairs)} elements differ")
        elif b.get("dtype") == h.get("dtype"):
            d.notes.append("its bytes differ" + (" outside the sampled elements" if pairs else ""))


def _compare_floats(d: LeafDiff, b: dict, h: dict, spread: float) -> None:
    pairs, every = _values_of(b, h)
    m = len(pairs)
    carried = carried_precision(b["dtype"], [x for x, _ in pairs])
    tol = d.tol = max(tolerance(carried, m), SPREAD_FACTOR * spread)
    scale = _scale(b, pairs)
    sq_err = sq_ref = 0.0
    for x, y in pairs:
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                d.differing += 1
                d.max_abs = d.max_rel = math.inf
            continue
        diff = abs(y - x)
        sq_err, sq_ref = sq_err + diff * diff, sq_ref + x * x
        d.max_abs = max(d.max_abs, diff)
        if x != 0:
            d.max_rel = max(d.max_rel, diff / abs(x))
        if diff > tol * max(scale, abs(x)):
            d.differing += 1
    d.compared = m
    d.err = math.sqrt(sq_err / sq_ref) if sq_ref > 0 else (0.0 if sq_err == 0 else math.inf)
    if d.differing and math.isinf(d.max_abs):
        d.status = "changed"
        d.notes.append(f"NaN or infinity where base has {'none' if every else 'other values'}")
    if d.err > tol:
        d.status = "changed"
        of = f", {carried}'s that base's values carry" if carried != b["dtype"] else ""
        d.notes.append(f"values differ by {d.err:.2g} of their norm (tolerance {tol:.2g}{of}), "
                       f"{d.differing} of {m} {'elements' if every else 'sampled elements'}")
    if not every:
        _compare_checksums(d, b, h, max(tolerance(carried, 1), SPREAD_FACTOR * spread))


def _compare_checksums(d: LeafDiff, b: dict, h: dict, tol: float) -> None:
    """A sampled tensor's checksums: non-finite counts exact, sums and block abs-sums within
    ``tol`` of base's abs-sum (sum of squares: twice ``tol`` of base's)."""
    for key in ("nan", "posinf", "neginf"):
        if (b.get(key) or 0) != (h.get(key) or 0):
            d.status = "changed"
            d.notes.append(f"{key} count {b.get(key) or 0} → {h.get(key) or 0}")
    total = abs(float(b.get("abs_sum") or 0.0))
    for key, allowed in (("sum", tol * total), ("abs_sum", tol * total),
                         ("sq_sum", 2 * tol * abs(float(b.get("sq_sum") or 0.0)))):
        if b.get(key) is None or h.get(key) is None:
            continue
        if abs(float(h[key]) - float(b[key])) > allowed:
            d.status = "changed"
            d.notes.append(f"{key} {float(b[key]):.6g} → {float(h[key]):.6g}")
    blocks = _pairs(b, h, "blocks")
    moved = [i for i, (x, y) in enumerate(blocks)
             if abs(y - x) > tol * max(abs(x), total / max(len(blocks), 1))]
    if moved:
        d.status = "changed"
        d.notes.append(f"{len(moved)} of {len(blocks)} slices of the flattened output moved "
                       f"(first: slice {moved[0]})")


def leaf_spread(first: dict, second: dict) -> float:
    """What two base calls' leaves differ by: 0 when alike; for floats the larger of the
    norm-wise error and the checksums' relative moves; for other types 1 when they differ."""
    if first.get("hash") is not None and first.get("hash") == second.get("hash"):
        return 0.0
    if first.get("hash") is None and first.get("values") == second.get("values"):
        return 0.0  # a number: its value is its whole
    if not is_float(first.get("dtype")) or first.get("n") != second.get("n"):
        return 1.0
    d = compare_leaf(first, second)
    total = abs(float(first.get("abs_sum") or 0.0))
    moves = [abs(float(second[k]) - float(first[k])) / total for k in ("sum", "abs_sum")
             if total and first.get(k) is not None and second.get(k) is not None]
    return max([d.err, *moves])


@dataclass
class PairComparison:
    """One process pair's outputs compared: ``verdict``, the leaves (:class:`LeafDiff`), what
    changed (``notes``), ``skipped`` leaves (not comparable), ``spread`` (the largest between two
    base calls; None without a second call), ``varying`` (leaves too unsteady to compare)."""

    verdict: str
    diffs: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    skipped: int = 0
    spread: float | None = None
    varying: int = 0
    reason: str | None = None


def compare_pair(base_calls: list[dict], head_calls: list[dict]) -> PairComparison:
    """Head's first call against base's first, in one process pair; base's second call (head's
    too, when sent) first gives each leaf's spread (the module docstring)."""
    b0, h0 = base_calls[0], head_calls[0]
    spreads: dict[str, float] = {}
    for calls in (base_calls, head_calls):
        if len(calls) > 1:
            again = {leaf["path"]: leaf for leaf in calls[1]["leaves"]}
            for leaf in calls[0]["leaves"]:
                if leaf["path"] in again:
                    spreads[leaf["path"]] = max(spreads.get(leaf["path"], 0.0),
                                                leaf_spread(leaf, again[leaf["path"]]))
    out = PairComparison("same", skipped=max(len(b0["skipped"]), len(h0["skipped"])),
                         spread=max(spreads.values(), default=0.0) if len(base_calls) > 1 else None)
    bmap = {leaf["path"]: leaf for leaf in b0["leaves"]}
    hmap = {leaf["path"]: leaf for leaf in h0["leaves"]}
    for path in [p for p in bmap if p not in hmap] + [p for p in hmap if p not in bmap]:
        out.notes.append(f"{path or 'the output'}: only on {'base' if path in bmap else 'head'}")
    for path in (p for p in bmap if p in hmap):
        spread = spreads.get(path, 0.0)
        if spread > MAX_SPREAD or (spread and not is_float(bmap[path].get("dtype"))):
            out.skipped, out.varying = out.skipped + 1, out.varying + 1
            out.notes.append(f"{path or 'the output'}: not compared, it differs between two base "
                             f"calls by {spread:.2g} (state carried between calls, or randomness "
                             "the seed does not reach)")
            continue
        d = compare_leaf(bmap[path], hmap[path], spread)
        out.diffs.append(d)
        out.skipped += d.status == "skipped"
        out.notes += [f"{path or 'the output'}: {note}" for note in d.notes
                      if d.status == "changed"]
    if b0.get("truncated") or h0.get("truncated"):
        out.notes.append("the output has more leaves or nesting than compared")
    compared = [d for d in out.diffs if d.status != "skipped"]
    if any(d.status == "changed" for d in compared) or set(bmap) != set(hmap):
        out.verdict = "changed"
    elif not compared:
        out.verdict = "not_compared"
        out.reason = ("nothing comparable returned (None or objects)" if not out.varying else
                      "every comparable part of the output varies between two base calls")
    return out


def output_record(pairs: list) -> dict:
    """results.json's ``benchmarks[].output`` over a benchmark's process pairs, each either
    ``(base_calls, head_calls)`` (summaries) or the text of why its outputs could not be had:
    ``changed`` when any pair's head changed the result (the figures are the worst such pair's),
    else ``same`` when any pair compared, else ``not_compared`` with the ``reason``.

    Returns: ``{verdict, max_abs_diff, max_rel_diff, share_changed, reason, notes,
    skipped_leaves, nondeterminism: {spread (at most 1: moved entirely), varying_leaves} | None,
    pairs, changed_pairs}``:
    diffs absolute in the output's units, relative and share as fractions (None where no element
    was compared, or a NaN met a number)."""
    compared = [compare_pair(*p) for p in pairs if not isinstance(p, str)]
    failures = [p for p in pairs if isinstance(p, str)]
    changed = [c for c in compared if c.verdict == "changed"]
    same = [c for c in compared if c.verdict == "same"]
    worst = max(changed, key=_share) if changed else (max(same, key=_worst_err) if same else None)
    spreads = [c.spread for c in compared if c.spread is not None]
    record = {"verdict": "changed" if changed else "same" if same else "not_compared",
              "max_abs_diff": None, "max_rel_diff": None, "share_changed": None,
              "reason": None, "notes": [],
              "skipped_leaves": max((c.skipped for c in compared), default=0),
              "nondeterminism": ({"spread": _round(min(max(spreads), 1.0)),
                                  "varying_leaves": max(c.varying for c in compared)}
                                 if spreads else None),
              "pairs": len(compared), "changed_pairs": len(changed)}
    if worst is not None:
        leaves = [d for d in worst.diffs if d.status != "skipped"]
        for key, attr in (("max_abs_diff", "max_abs"), ("max_rel_diff", "max_rel")):
            value = max((getattr(d, attr) for d in leaves), default=0.0)
            record[key] = _round(value) if math.isfinite(value) else None
        record["share_changed"] = _round(_share(worst))
        record["notes"] = [_storable(n) for n in worst.notes[:10]]
    elif compared:
        record["reason"] = compared[0].reason
        record["notes"] = [_storable(n) for n in compared[0].notes[:10]]
    else:
        record["reason"] = (_storable(failures[0]) if failures else
                            "no output call was made (the budget, or the benchmark failed)")
    return record


def _storable(text: str) -> str:
    """``text`` cut to 300 characters, with no NUL or lone surrogate (paths and errors come from
    the PR's code; results.json refuses both, :func:`runner.results.text_problem`)."""
    return text[:300].encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")


def _share(c: PairComparison) -> float:
    total = sum(d.compared for d in c.diffs if d.status != "skipped")
    return sum(d.differing for d in c.diffs if d.status != "skipped") / total if total else 0.0


def _worst_err(c: PairComparison) -> float:
    return max((d.err for d in c.diffs), default=0.0)


def _round(x: float) -> float:
    return float(f"{x:.6g}")
