"""The hint rules' registry (pure): each rule is one function over a :class:`HintContext`,
registered with ``@rule(kind, priority)``; :func:`runner.profile.hints.hints_for` runs them all and
ranks what they find by the priority of each hint's kind (lower first, among equal confidences).

Adding a hint is one decorated function in :mod:`runner.profile.rules_device` (what the GPU
did) or :mod:`runner.profile.rules_host` (what the host did around it).
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


@dataclass(frozen=True)
class Rule:
    kind: str
    priority: int
    find: Callable[[HintContext], Hints]


#: The registered rules, in registration order.
RULES: list[Rule] = []
#: Rank of every hint kind (lower ranks first among equal confidences): the rules' kinds, the
#: other kinds their rules return (``also``) and the kinds made outside the rules (:func:`rank`).
RANKS: dict[str, int] = {}


def rule(kind: str, priority: int, *, also: dict[str, int] | None = None):
    """Register the decorated ``find(ctx) -> hint | [hint] | None`` as the rule of ``kind``, ranked
    ``priority``; ``also``: other kinds it may return, with their ranks.

    Raises:
        ValueError: a kind or a rank registered twice.
    """
    def register(find: Callable[[HintContext], Hints]) -> Callable[[HintContext], Hints]:
        for name, value in {kind: priority, **(also or {})}.items():
            rank(name, value)
        RULES.append(Rule(kind, priority, find))
        return find
    return register


def rank(kind: str, priority: int) -> None:
    """Rank a hint kind made outside the rules (``throttling``, ``device_change``, ...).

    Raises:
        ValueError: ``kind`` or ``priority`` is taken.
    """
    if kind in RANKS or priority in RANKS.values():
        raise ValueError(f"hint kind {kind!r} or rank {priority} registered twice")
    RANKS[kind] = priority


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
