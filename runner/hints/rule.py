"""The hint rules' registry (pure): each rule is one function over a :class:`HintContext`,
registered with ``@rule(kind)``; :func:`runner.hints.evidence.hints_for` runs them all and ranks
what they find by where :data:`RANKING` lists each hint's kind (earlier first, among equal
confidences).

Adding a hint is one decorated function in :mod:`runner.hints.device` (what the GPU
did) or :mod:`runner.hints.host` (what the host did around it), and its kind's place in
:data:`RANKING`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

#: What a rule returns: one hint, several, or None.
Hints = Union[dict, list, None]


@dataclass(frozen=True)
class HintContext:
    """What every rule reads. ``base``/``head``: the two summaries
    (:func:`runner.profile.summaries.summarize` or ``compact``); ``d``: their
    :func:`runner.profile.diff.diff`, noise already dropped; ``sign``: +1 head slower, -1 faster;
    ``unit``: "per call" or "per trace" (:func:`runner.profile.diff.unit_words`); ``telemetry``:
    ``environment.telemetry`` or None; ``gpu``: either side ran kernels; ``observed``: the change
    a hint's contribution is measured against, µs (at least 2 % of base's span, at least 1 µs)."""

    base: dict
    head: dict
    d: dict
    sign: int
    unit: str
    telemetry: dict | None
    gpu: bool
    observed: float


#: Every hint kind, first to last among equal confidences: the rules' kinds, the other kinds a rule
#: returns (``memory_contention``'s rule also ``kernel_time``, ``new_operators``' also
#: ``operator_time``) and the kinds :mod:`runner.hints.evidence` makes itself (``device_change``,
#: ``throttling``, ``graph_break``, ``compile_time``, ``unexplained``). A kind it does not list
#: ranks last.
RANKING = ("register_pressure", "sync_overhead", "memory_contention", "device_change", "throttling",
           "launch_overhead", "host_device_copy", "gpu_idle", "new_kernels", "precision_change",
           "graph_break", "recompilation", "compile_time", "kernel_time", "memory_growth",
           "new_operators", "operator_time", "unexplained")


@dataclass(frozen=True)
class Rule:
    kind: str
    find: Callable[[HintContext], Hints]


#: The registered rules, in registration order.
RULES: list[Rule] = []


def rule(kind: str):
    """Register the decorated ``find(ctx) -> hint | [hint] | None`` as the rule of ``kind``; its
    hints rank where :data:`RANKING` lists their kinds.

    Raises:
        ValueError: ``kind`` is not in :data:`RANKING`, or has a rule already.
    """
    def register(find: Callable[[HintContext], Hints]) -> Callable[[HintContext], Hints]:
        if kind not in RANKING:
            raise ValueError(f"hint kind {kind!r} is not ranked: list it in RANKING where it ranks")
        if any(r.kind == kind for r in RULES):
            raise ValueError(f"hint kind {kind!r} registered twice")
        RULES.append(Rule(kind, find))
        return find
    return register


def place(kind: str) -> int:
    """Where :data:`RANKING` lists ``kind`` (0 first); a kind it does not list comes last."""
    return RANKING.index(kind) if kind in RANKING else len(RANKING)


def make_hint(kind: str, confidence: float, summary: str, evidence: dict, contrib_us: float | None = None) -> dict:
    """``{kind, confidence (0..1, two decimals), summary, evidence, _contrib}``; ``_contrib``: the
    µs per call (or trace) this cause explains, signed like the change, None when not in time."""
    return {"kind": kind, "confidence": round(max(0.0, min(1.0, confidence)), 2), "summary": summary,
            "evidence": evidence, "_contrib": contrib_us}


def found(ctx: HintContext) -> list[dict]:
    """Every registered rule's hints for ``ctx``, in registration order."""
    out: list[dict] = []
    for r in RULES:
        hints = r.find(ctx)
        out += hints if isinstance(hints, list) else [hints] if hints else []
    return out
