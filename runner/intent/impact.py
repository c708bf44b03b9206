"""Intent vs impact: what a change meant to optimise next to what was measured.

Pure functions over plain data: the intent dict (``precise.name_strategy``) and the
``benchmarks`` list
of a results.json (schema_version 1). Nothing here reads files or imports torch.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..results import CHANGED, VERDICTS, change_of, verdict_of
from .precise import MIN_PRECISION
from .rules import STRATEGIES

#: Evidence items quoted, and the length a quoted item is cut to (it comes from a results.json,
#: which may be a pull request's artifact).
MAX_QUOTED = 3
QUOTE_WIDTH = 160

#: strategy id -> hint kinds (DESIGN.md / STRATEGIES.md "Root causes") that are known ways for
#: that strategy to go wrong. Sources: the three recurring root causes of the study behind
#: perfgate (fusion -> register pressure, sync removal that moves syncs into small kernels ->
#: sync overhead, concurrency -> memory contention) and the "other impacts" list.
STRATEGY_RISKS: dict[str, list[str]] = {
    "algorithm_replacement": ["new_kernels", "memory_growth"],
    "redundancy_elimination": ["memory_growth"],
    "copy_avoidance": ["memory_contention", "new_kernels"],
    "precision_specialization": ["precision_change", "new_kernels"],
    "layout_fast_path": ["new_kernels", "host_device_copy"],
    "math_simplification": ["precision_change"],
    "kernel_fusion": ["register_pressure", "recompilation", "memory_growth"],
    "vectorization": ["register_pressure"],
    "memory_coalescing": ["memory_contention"],
    "tiling_shared_memory": ["register_pressure"],
    "launch_config_tuning": ["register_pressure", "launch_overhead"],
    "occupancy_control": ["register_pressure"],
    "warp_level_reduction": ["sync_overhead", "launch_overhead"],
    "atomic_contention_avoidance": ["memory_contention", "launch_overhead"],
    "autotuning": ["recompilation", "gpu_idle"],
    "vendor_library_dispatch": ["new_kernels", "memory_growth", "launch_overhead"],
    "host_sync_elimination": ["sync_overhead", "host_device_copy", "gpu_idle"],
    "stream_concurrency": ["memory_contention", "sync_overhead", "memory_growth"],
    "launch_overhead_reduction": ["launch_overhead", "memory_growth", "recompilation"],
    "allocator_reuse": ["memory_growth", "sync_overhead"],
    "transfer_reduction": ["host_device_copy", "sync_overhead"],
    "build_configuration": ["register_pressure", "new_kernels"],
}

#: Verdicts that say the benchmark measured a decided or undecided change (not a failure).
_MEASURED = ("improvement", "regression", "unchanged", "inconclusive")


def intent_vs_impact(intent: Mapping[str, Any] | None, benchmarks: Iterable[Mapping[str, Any]]) -> dict:
    """What the "Intent vs impact" report section shows.

    Args:
        intent: ``{"strategy", "confidence", "signals", "precision": {"right", "fired"}}`` as
            :func:`.precise.name_strategy` returns it (the ``intent`` of a results.json). A
            strategy without ``precision`` (an older perfgate's learned guess) is not shown.
        benchmarks: results.json ``benchmarks``; each may carry ``change.verdict``,
            ``hints`` ``[{kind, confidence, summary, evidence}]`` and ``profile``.

    Returns:
        ``{"applicable": False}`` when no strategy was named on measured evidence; else
        ``{"applicable": True, "strategy", "level", "what", "confidence", "precision": {"right",
        "fired"}, "signals", "counts": {verdict: n} (non-zero only, report order), "outcome":
        one of helped/neutral/regressed/mixed or None, "risks": [{"kind", "strategies",
        "status", "benchmarks", "summary"}], "other_hints": [{"kind", "benchmarks"}],
        "headline": str}``. A risk (``STRATEGY_RISKS``) is ``"confirmed"`` (a hint of that kind
        on a benchmark that got worse, its first ``summary`` quoted), ``"harmless"`` (hints of
        that kind only on benchmarks that got better: the cause in its harmless direction,
        never a confirmation), ``"not_seen"`` (profiles were taken and no hint of that kind
        appeared) or ``"unchecked"`` (no benchmark has a profile).
    """
    intent = intent if isinstance(intent, Mapping) else {}
    strategy = intent.get("strategy")
    precision = intent.get("precision")
    named = isinstance(strategy, str) and strategy in STRATEGIES
    if not (named and isinstance(precision, Mapping)):
        return {"applicable": False}
    right, fired = _count(precision.get("right")), _count(precision.get("fired"))
    if not fired or right > fired or right < MIN_PRECISION * fired:
        return {"applicable": False}
    benches = list(benchmarks)
    counts = {v: 0 for v in VERDICTS}
    for bench in benches:
        verdict = verdict_of(bench)
        if verdict in counts:
            counts[verdict] += 1
    counts = {k: v for k, v in counts.items() if v}

    risks, other = _risks(strategy, benches)
    level, what = STRATEGIES[strategy]
    view = {
        "applicable": True,
        "strategy": strategy,
        "level": level,
        "what": what,
        "confidence": _number(intent.get("confidence")),
        "precision": {"right": right, "fired": fired},
        "signals": _quotes(intent.get("signals")),
        "counts": counts,
        "outcome": outcome_of(counts),
        "risks": risks,
        "other_hints": other,
    }
    view["headline"] = _headline(view)
    return view


def _risks(strategy: str, benches: list[Mapping[str, Any]]) -> tuple[list[dict], list[dict]]:
    """The strategy's known risks with their status, and the other hints' kinds.

    Returns:
        ``(risks, other_hints)`` as :func:`intent_vs_impact` describes them.
    """
    by_kind: dict[str, list[tuple[str, dict]]] = {}
    harmless: dict[str, list[tuple[str, dict]]] = {}  # hints of a benchmark that got better
    for bench in benches:
        for hint in bench.get("hints") or []:
            kind = hint.get("kind")
            if kind:
                into = by_kind if _harmful(bench) else harmless
                into.setdefault(kind, []).append((str(bench.get("name", "?")), hint))
    profiled = any(bench.get("profile") for bench in benches) or bool(by_kind) or bool(harmless)

    risks: list[dict] = []
    for kind in STRATEGY_RISKS.get(strategy, []):
        hits = sorted(by_kind.get(kind, []), key=lambda h: -_number(h[1].get("confidence")))
        if hits:
            status = "confirmed"
        elif harmless.get(kind):
            status, hits = "harmless", harmless[kind]
        else:
            status = "not_seen" if profiled else "unchecked"
        risks.append({"kind": kind, "strategies": [strategy], "status": status,
                      "benchmarks": _unique(n for n, _ in hits),
                      "summary": str(hits[0][1].get("summary") or "") if hits else ""})
    risk_kinds = {r["kind"] for r in risks}
    every_hint = {kind: by_kind.get(kind, []) + harmless.get(kind, [])
                  for kind in {*by_kind, *harmless}}
    other = [{"kind": kind, "benchmarks": _unique(n for n, _ in hits)}
             for kind, hits in sorted(every_hint.items()) if kind not in risk_kinds]
    return risks, other


def _count(value: Any) -> int:
    """A count from untrusted data: a non-negative int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _harmful(bench: Mapping) -> bool:
    """Whether ``bench``'s hints speak of harm: its change is a regression, or, undecided, its
    estimate is slower. A hint explains the change it sits on, so on an improvement it names the
    cause in its harmless direction — "peak memory fell 91 %", "5,644 fewer operator calls" —
    which once "confirmed" the risk of that kind (issue 47)."""
    change = change_of(bench)
    if change.get("verdict") in ("regression", "improvement"):
        return change.get("verdict") == "regression"
    ratio = change.get("ratio")
    return isinstance(ratio, (int, float)) and ratio > 1.0


def _number(value: Any) -> float:
    """A probability from untrusted data: a finite number clamped to [0, 1], else 0.0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, number)) if number == number else 0.0


def _listed(items: Any) -> list:
    """``items`` when it is a list (stored data may be any JSON), else ``[]``."""
    return items if isinstance(items, list) else []


def _quotes(items: Any) -> list[str]:
    """Up to ``MAX_QUOTED`` evidence strings, each cut to ``QUOTE_WIDTH`` characters."""
    if not isinstance(items, (list, tuple)):
        return []
    return [str(item)[:QUOTE_WIDTH] for item in items[:MAX_QUOTED]]


def _headline(view: dict) -> str:
    measured = ", ".join(f"{n} {_plural(kind, n)}" for kind, n in view["counts"].items()) or "no benchmarks"
    parts = [f"{view['strategy']} → measured {measured}"]
    confirmed = [r for r in view["risks"] if r["status"] == "confirmed"]
    for risk in confirmed:
        parts.append(f"risk {risk['kind']} confirmed on {_names(risk['benchmarks'])}")
    for risk in view["risks"]:
        if risk["status"] == "harmless":
            parts.append(f"{risk['kind']} seen only in its harmless direction on "
                         f"{_names(risk['benchmarks'])}")
    if not confirmed and view["risks"]:
        kinds = ", ".join(r["kind"] for r in view["risks"])
        if all(r["status"] == "unchecked" for r in view["risks"]):
            parts.append(f"known risks ({kinds}) not checked: no profile")
        else:
            parts.append(f"no sign of its known risks ({kinds})")
    return "; ".join(parts)


def _plural(verdict: str, n: int) -> str:
    if n == 1 or verdict not in CHANGED:
        return verdict
    return verdict + "s"


def _names(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _unique(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name not in out:
            out.append(name)
    return out


def outcome_of(verdicts: Mapping[str, int] | Iterable[str] | str | None) -> str | None:
    """The outcome of one result (one PR run) from its verdicts.

    Args:
        verdicts: a verdict summary ``{verdict: count}`` (results.json ``summary``), a list
            of verdict strings (one per benchmark), or one verdict string.

    Returns:
        ``"helped"``: at least one ``improvement`` and no ``regression``;
        ``"regressed"``: at least one ``regression`` and no ``improvement``;
        ``"mixed"``: both; ``"neutral"``: neither, and at least one benchmark was measured
        (``unchanged`` or ``inconclusive`` - no difference was shown);
        None: nothing was measured (no verdicts, or only ``failed``/``new``/``removed``).
    """
    counts = _as_counts(verdicts)
    improved, regressed = counts.get("improvement", 0) > 0, counts.get("regression", 0) > 0
    if improved and regressed:
        return "mixed"
    if improved:
        return "helped"
    if regressed:
        return "regressed"
    if any(counts.get(v, 0) > 0 for v in _MEASURED):
        return "neutral"
    return None


def _as_counts(verdicts) -> dict[str, int]:
    if verdicts is None:
        return {}
    if isinstance(verdicts, str):
        return {verdicts: 1}
    if isinstance(verdicts, Mapping):
        return {str(k): int(v or 0) for k, v in verdicts.items()}
    counts: dict[str, int] = {}
    for verdict in verdicts:
        counts[str(verdict)] = counts.get(str(verdict), 0) + 1
    return counts
