"""A benchmark call's return value, summarised in the worker for the parent to compare base
against head (:mod:`runner.outputs.verdict` decides; the summary's form and limits are
:mod:`runner.outputs.summary`'s), and the seeding that makes both sides' inputs alike.

What crosses the pipe is a compact JSON summary, never the tensor: one leaf per tensor, number,
text or numpy array in the returned structure (tuples, lists, dicts, named tuples and dataclasses
walked, at most :data:`~runner.outputs.summary.MAX_LEAVES` leaves, depth
:data:`~runner.outputs.summary.MAX_DEPTH`), each with its ``path`` (``[0]['logits']``), ``dtype``,
``shape``, ``device`` and ``n`` (elements), a SHA-256 ``hash`` of its bytes, and:

* ``values``: every element (as floats or ints; NaN and infinities as the strings ``nan``,
  ``inf``, ``-inf``) when ``n <= EXACT_MAX`` (4096): compared element by element;
* otherwise ``samples``: the elements at :data:`~runner.outputs.summary.SAMPLES` indices drawn
  once per ``n`` by a fixed generator (:func:`runner.outputs.summary.sample_indices`, the same on
  both sides, scattered so no stride of a matrix aliases them), and checksums over all elements
  (:func:`_checksums`): ``sum``, ``abs_sum``, ``sq_sum``, ``min``, ``max``, the ``nan``/``posinf``/
  ``neginf`` counts, and ``blocks``: the abs-sum of each of :data:`~runner.outputs.summary.BLOCKS`
  consecutive slices of the flattened tensor.

Why these, for what they must catch (:mod:`runner.outputs.verdict` has the tolerances):

* a **dtype, shape or device** change, and a changed structure (a leaf added or gone), are read
  from the leaves' own fields, named;
* a **lower-precision path** (fp32 computed through fp16/bf16/TF32) moves every element by up to
  half an ulp of the lower type, ~2e-4 relative RMS for fp16: the sampled or exact values see it
  as a norm-wise relative error 4-10x the float32 tolerance, while a sum of rounded elements does
  not (the rounding is unbiased and averages out), so the values are what catch it;
* a **dropped term** or a **skipped part of the work** (half the output computed, a row left
  zero, a stale cached output) moves whole elements: the samples catch a spread-out change, the
  block abs-sums a local one (one row of 1024 is a quarter of a block), the checksums a global
  one, and an integer or boolean output is exact: its hash;
* a **reduction in another order** (a 65,536-element float32 sum chunked otherwise, threaded BLAS,
  atomics, ``index_add_``) moves elements by a few float32 ulps of the summed terms' magnitude:
  within the tolerance, judged against the output's own scale (its RMS) so cancellation in one
  element is not read as a change.

Seeding: :func:`seed_all` sets Python's, NumPy's (when imported) and torch's generators (every
device's) to one seed before the set-up makes the inputs and before each output call, so inputs
drawn without a seed are alike on both sides and randomness inside the call (dropout) too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import sys

from ..outputs.summary import BLOCKS, EXACT_MAX, MAX_DEPTH, MAX_LEAVES, sample_indices


def seed_all(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator (only when NumPy is already imported:
    no import for a benchmark that does not use it) and torch's (CPU and every device)."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def summarize(value) -> dict:
    """The summary of a benchmark call's return value: ``{leaves: [leaf], skipped: [{path,
    type}], truncated}`` (the module docstring has a leaf's fields). ``skipped`` lists what cannot
    be compared (None, a module, a handle, any other object); ``truncated`` is true when leaves
    beyond :data:`MAX_LEAVES` or nesting beyond :data:`MAX_DEPTH` were left out."""
    out = {"leaves": [], "skipped": [], "truncated": False}
    _walk(value, "", 0, out)
    return out


def _walk(value, path: str, depth: int, out: dict) -> None:
    if len(out["leaves"]) + len(out["skipped"]) >= MAX_LEAVES or depth > MAX_DEPTH:
        out["truncated"] = True
        return
    torch = sys.modules.get("torch")
    numpy = sys.modules.get("numpy")
    if torch is not None and isinstance(value, torch.Tensor):
        out["leaves"].append(_tensor_leaf(torch, value, path))
    elif (numpy is not None and torch is not None
          and isinstance(value, (numpy.ndarray, numpy.generic)) and value.dtype.kind in "biufc"):
        leaf = _tensor_leaf(torch, torch.from_numpy(numpy.ascontiguousarray(value)), path)
        out["leaves"].append({**leaf, "device": "numpy"})
    elif isinstance(value, (bool, int, float, complex)):
        out["leaves"].append(_number_leaf(value, path))
    elif isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        out["leaves"].append({"path": path, "dtype": type(value).__name__, "shape": [len(value)],
                              "device": "host", "n": len(value),
                              "hash": hashlib.sha256(data).hexdigest()})
    elif isinstance(value, dict):
        for key in list(value)[:MAX_LEAVES]:
            _walk(value[key], f"{path}[{str(key)[:40]!r}]", depth + 1, out)
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value[:MAX_LEAVES]):
            _walk(item, f"{path}[{i}]", depth + 1, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value)[:MAX_LEAVES]:
            _walk(getattr(value, f.name), f"{path}.{f.name}", depth + 1, out)
    else:
        out["skipped"].append({"path": path, "type": type(value).__name__[:60]})


def _number_leaf(value, path: str) -> dict:
    if isinstance(value, complex):
        return {"path": path, "dtype": "complex", "shape": [2], "device": "host", "n": 2,
                "values": [_float(value.real), _float(value.imag)]}
    kind = type(value).__name__ if type(value) in (bool, int, float) else "float"
    shown = _float(value) if kind == "float" else int(value)
    return {"path": path, "dtype": kind, "shape": [], "device": "host", "n": 1, "values": [shown]}


def _float(x: float):
    """A float as JSON holds it: NaN and infinities as text."""
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _tensor_leaf(torch, t, path: str) -> dict:
    """One tensor's leaf (the module docstring). A sparse, quantized or nested tensor that cannot
    be read as a dense one is still a leaf, with no values (``unreadable``)."""
    leaf = {"path": path, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
            "device": t.device.type, "n": t.numel()}
    try:
        flat = t.detach()
        if flat.is_sparse:
            flat = flat.to_dense()
        if flat.is_complex():
            flat = torch.view_as_real(flat)
        flat = flat.contiguous().reshape(-1)
        leaf["hash"] = hashlib.sha256(_bytes(torch, flat)).hexdigest()
    except (RuntimeError, TypeError, ValueError) as exc:
        leaf["unreadable"] = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return leaf
    floating = flat.is_floating_point()
    n = flat.numel()
    if n <= EXACT_MAX:
        leaf["values"] = _values(flat.cpu(), floating)
        return leaf
    picked = flat[torch.tensor(sample_indices(n), device=flat.device)].cpu()
    leaf["samples"] = _values(picked, floating)
    leaf.update(_checksums(torch, flat, floating))
    return leaf


def _bytes(torch, flat) -> bytes:
    """The tensor's bytes (bool and every dtype read as raw bytes; bfloat16 and float8 too)."""
    raw = flat.cpu()
    if raw.dtype == torch.bool:
        raw = raw.to(torch.uint8)
    return raw.view(torch.uint8).numpy().tobytes() if raw.numel() else b""


def _values(t, floating: bool) -> list:
    if floating:
        return [_float(v) for v in t.double().tolist()]
    return [int(v) for v in t.to(dtype=_wide(t)).tolist()]


def _wide(t):
    torch = sys.modules["torch"]
    return torch.int64 if t.dtype != torch.uint64 else torch.uint64


def _checksums(torch, flat, floating: bool) -> dict:
    """Checksums over every element: ``{sum, abs_sum, sq_sum, min, max, nan, posinf, neginf,
    blocks}``, the sums and min/max over the finite elements, ``blocks`` the abs-sums of the
    :data:`~runner.outputs.summary.BLOCKS` slices :func:`torch.tensor_split` cuts, each summed in
    float32 (pairwise, ~1e-7 relative: far below the 1e-3 they are compared at, and the same code
    on both sides) and added in float64; ``sq_sum`` from the scaled norm (no overflow). For an
    integer or boolean tensor: ``{sum, abs_sum, min, max, blocks}``, exact integers (int64)."""
    if not floating:
        work = flat.to(torch.int64)
        blocks = torch.stack([p.abs().sum() for p in torch.tensor_split(work, BLOCKS)]).tolist()
        return {"sum": int(work.sum()), "abs_sum": sum(blocks), "min": int(work.min()),
                "max": int(work.max()), "blocks": blocks}
    work = flat.float() if flat.element_size() < 4 else flat  # half's sums overflow early
    blocks = _block_sums(torch, work)
    counts, kept = {"nan": 0, "posinf": 0, "neginf": 0}, flat
    if not math.isfinite(sum(blocks)):  # a NaN or an infinity (a NaN poisons every sum it meets)
        finite = torch.isfinite(work)
        counts = {"nan": int(torch.isnan(work).sum()), "posinf": int((work == math.inf).sum()),
                  "neginf": int((work == -math.inf).sum())}
        work = torch.where(finite, work, torch.zeros((), dtype=work.dtype, device=work.device))
        kept = flat[finite]
        blocks = _block_sums(torch, work)
    lo, hi = (float(kept.min()), float(kept.max())) if kept.numel() else (None, None)
    return {"sum": float(work.sum()), "abs_sum": sum(blocks),
            "sq_sum": float(torch.linalg.vector_norm(work).double()) ** 2, "min": lo, "max": hi,
            "blocks": blocks, **counts}


def _block_sums(torch, work) -> list[float]:
    """The abs-sums of the :data:`BLOCKS` slices of ``work``, one device sync for all."""
    sums = [p.sum() for p in torch.tensor_split(work.abs(), BLOCKS)]
    return torch.stack(sums).double().tolist()
