"""The summary of a benchmark call's return value as it crosses the pipe: its limits, the indices
sampled from a large tensor, and the ``output`` request and its reply, read as untrusted input.

A leaf (standard library only). The worker writes summaries (:mod:`runner.worker.outputs`, which
explains each field and why); the parent reads the reply with :meth:`OutputReply.from_json`, which
checks every field's type and size and raises :class:`runner.protocol.ProtocolError` naming the
field, as every reply of :mod:`runner.protocol` is checked (the worker runs the PR's code); then
:mod:`runner.outputs.verdict` compares base's with head's. Kept beside, not inside,
:mod:`runner.protocol`: the summary's form is one concept with its limits and sampling, which both
ends share.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..protocol import ProtocolError

#: A tensor of at most this many elements sends every value; a larger one samples.
EXACT_MAX = 4096
#: Elements sampled from a larger tensor (at fixed indices, :func:`sample_indices`).
SAMPLES = 1024
#: Consecutive slices of a larger tensor whose abs-sums are sent (a local change shows in one).
BLOCKS = 256
#: Leaves (and skipped values) of one summary at most, and the nesting walked at most.
MAX_LEAVES, MAX_DEPTH = 64, 16
#: Calls summarised in one ``output`` request at most (base: two, for its run-to-run spread).
MAX_CALLS = 4
#: The seed of the set-up (the inputs) and, plus the process pair's index, of the output calls.
SETUP_SEED, OUTPUT_SEED = 20261207, 1234

_FLOAT_WORDS = ("nan", "inf", "-inf")
_CHECKSUMS = ("sum", "abs_sum", "sq_sum", "min", "max")
_COUNTS = ("n", "nan", "posinf", "neginf")


def sample_indices(n: int) -> list[int]:
    """The :data:`SAMPLES` indices (sorted, distinct) sampled from a flattened tensor of ``n``
    elements: drawn by a generator seeded with ``n`` alone, so both sides sample the same ones
    for the same shape, scattered so that no stride (a column of a matrix) aliases them."""
    return sorted(random.Random(n).sample(range(n), min(SAMPLES, n)))


@dataclass(frozen=True)
class OutputRequest:
    """``output``: ``calls`` untimed calls of the benchmark set up, each after seeding every
    generator with ``seed`` (:func:`runner.worker.outputs.seed_all`), each call's return value
    summarised."""

    seed: int = OUTPUT_SEED
    calls: int = 1

    def to_json(self) -> dict:
        return {"cmd": "output", "seed": self.seed, "calls": self.calls}

    @classmethod
    def from_json(cls, data: dict) -> "OutputRequest":
        calls = max(1, min(MAX_CALLS, int(data.get("calls", 1))))
        return cls(int(data.get("seed", OUTPUT_SEED)), calls)


@dataclass(frozen=True)
class OutputReply:
    """The reply to ``output``: ``summaries``, one per call, each ``{leaves, skipped,
    truncated}``."""

    summaries: tuple = ()

    def to_json(self) -> dict:
        return {"ok": True, "summaries": list(self.summaries)}

    @classmethod
    def from_json(cls, data: dict) -> "OutputReply":
        summaries = data.get("summaries")
        if not isinstance(summaries, list) or not 1 <= len(summaries) <= MAX_CALLS:
            raise ProtocolError(f"summaries: not a list of 1 to {MAX_CALLS} summaries")
        return cls(tuple(check_summary(s) for s in summaries))


def check_summary(summary) -> dict:
    """``summary`` when it has the form the worker writes (:mod:`runner.worker.outputs`).

    Raises:
        ProtocolError: a field of the wrong type or size, named.
    """
    if not isinstance(summary, dict):
        raise ProtocolError("summaries: a summary that is not an object")
    leaves, skipped = summary.get("leaves"), summary.get("skipped")
    if not isinstance(leaves, list) or not isinstance(skipped, list) \
            or len(leaves) + len(skipped) > MAX_LEAVES:
        raise ProtocolError(f"leaves, skipped: not lists of at most {MAX_LEAVES} in all")
    for item in skipped:
        if not isinstance(item, dict) or not _short(item.get("path"), 2000) \
                or not _short(item.get("type"), 200):
            raise ProtocolError("skipped: an item without a path and a type")
    for leaf in leaves:
        _check_leaf(leaf)
    return {"leaves": leaves, "skipped": skipped, "truncated": summary.get("truncated") is True}


def _short(text, limit: int) -> bool:
    return isinstance(text, str) and len(text) <= limit


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_leaf(leaf) -> None:
    if not isinstance(leaf, dict):
        raise ProtocolError("leaves: a leaf that is not an object")
    path = str(leaf.get("path"))[:40]
    for key, limit in (("path", 2000), ("dtype", 60), ("device", 60)):
        if not _short(leaf.get(key), limit):
            raise ProtocolError(f"leaves {path!r}: {key} not text")
    shape = leaf.get("shape")
    if not isinstance(shape, list) or len(shape) > 64 or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ProtocolError(f"leaves {path!r}: shape not a list of sizes")
    for key in _COUNTS:
        v = leaf.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ProtocolError(f"leaves {path!r}: {key} not a count")
    for key in ("hash", "unreadable"):
        if leaf.get(key) is not None and not _short(leaf.get(key), 200):
            raise ProtocolError(f"leaves {path!r}: {key} not text")
    for key, limit in (("values", EXACT_MAX), ("samples", SAMPLES), ("blocks", BLOCKS)):
        values = leaf.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) > limit or not all(
                _number(v) or v in _FLOAT_WORDS for v in values):
            raise ProtocolError(f"leaves {path!r}: {key} not a list of at most {limit} numbers")
    for key in _CHECKSUMS:
        if leaf.get(key) is not None and not _number(leaf.get(key)):
            raise ProtocolError(f"leaves {path!r}: {key} not a number")
