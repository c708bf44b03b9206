"""Root-cause hints: :func:`hints_for` turns (timing change, profile diff of
:func:`runner.profile.diff.diff`, telemetry) into ranked hints, each
``{kind, confidence (0..1), summary (one sentence with numbers), evidence {...}}``
(STRATEGIES.md, "Root causes"). Both are pure functions over plain data.

Rules of evidence:
- no hints at all for an ``unchanged`` (or failed/new/removed) benchmark;
- a hint explains the measured direction: for a regression only what got more expensive in
  head, for an improvement only what got cheaper;
- when the verdict is a regression or an improvement and no rule fires, a single
  ``unexplained`` hint says so ("no profile difference explains this");
- ``inconclusive`` benchmarks get the hints of the sign of their ratio at half confidence;
- when base and head ran on different GPUs (``device.label`` of the summaries), the
  ``device_change`` hint leads and every other hint keeps half its confidence (``evidence.
  device_changed``): its difference may be the device's, not the code's.

Times are microseconds *per profiled call* when both traces count their calls
(``iterations``), else per trace; the evidence says which (``per_call``).
"""

from __future__ import annotations

from ..report.units import fmt_share, fmt_us
from . import device, host  # noqa: F401 - registers the rules
from ..profile.diff import diff, unit_words
from .rule import HintContext, found, make_hint, place
from ..results import CHANGED, HINTED, VERDICTS

#: Verdicts that get no hints at all.
NO_HINT_VERDICTS = tuple(v for v in VERDICTS if v not in HINTED)

#: Relative change below which a trace-only comparison counts as unchanged (fraction).
TRACE_NOISE = 0.03

MIN_CONFIDENCE = 0.2
MAX_HINTS = 6

#: Confidence factor of every other hint when base and head ran on different GPUs.
DEVICE_CHANGE_FACTOR = 0.5



def _direction(change: dict | None, d: dict) -> tuple[int, float]:
    """(+1 slower, -1 faster, 0 none) and a confidence factor."""
    if change:
        verdict = change.get("verdict")
        ratio = change.get("ratio")
        if verdict == "regression":
            return 1, 1.0
        if verdict == "improvement":
            return -1, 1.0
        if ratio is not None and ratio != 1.0:
            return (1 if ratio > 1 else -1), 0.5
        return 0, 0.0
    t = d["totals"]
    for key in ("span_us", "gpu_busy_us", "operator_self_us"):
        b, h = t[key]["base"], t[key]["head"]
        if b and h and abs(h / b - 1) >= TRACE_NOISE:
            return (1 if h > b else -1), 0.8
    return 0, 0.0


def _throttling(telemetry: dict | None) -> dict | None:
    if not telemetry or not telemetry.get("available"):
        return None
    flags = telemetry.get("flags") or {}
    if not flags.get("throttled") and not flags.get("clocks_differ"):
        return None
    sides = telemetry.get("sides") or {}
    parts, ev = [], {"flags": flags}
    clocks = {s: (v.get("sm_clock_mhz") or {}).get("median") for s, v in sides.items()}
    if flags.get("clocks_differ") and clocks.get("base") and clocks.get("head"):
        parts.append(f"median SM clock base {clocks['base']:.0f} MHz vs head {clocks['head']:.0f} MHz "
                     f"({clocks['head'] / clocks['base'] - 1:+.0%})")
    for side in flags.get("throttled_sides") or []:
        reasons = (sides.get(side) or {}).get("throttle_reasons") or {}
        named = ", ".join(f"{k} in {fmt_share(v)} of samples" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
        parts.append(f"{side} throttled ({named or 'reason not reported'})")
    ev["sm_clock_mhz_median"] = clocks
    head_reasons = set(((sides.get("head") or {}).get("throttle_reasons") or {}))
    if (flags.get("throttled_sides") or []) == ["head"] and head_reasons <= {"sw_power_cap"}:
        # only head hit the power cap: the change draws more power, and under GPU Boost that is
        # a lower clock — a real cost of the change on this GPU, not the environment (review #11)
        text = ("Head ran power-capped (sw_power_cap) and base did not" + (
            f": median SM clock {clocks['head']:.0f} MHz vs base {clocks['base']:.0f} MHz"
            if clocks.get("base") and clocks.get("head") else "")
            + ": the change draws more power, and at this GPU's power limit that costs "
            "clock speed.")
        return make_hint("throttling", 0.6, text, ev, None)
    text = "The GPU ran at different speeds for the two sides (the environment, not the code): " + "; ".join(parts) + "."
    return make_hint("throttling", 0.85 if flags.get("clocks_differ") else 0.7, text, ev, None)


def _gpu_label(summary: dict) -> str | None:
    """The GPU a summary was recorded on (``device.label``: named, or "GPU, no name in trace, 304
    CUs"); None on CPU. Summaries stored before ``device`` existed give ``device_name``."""
    device = summary.get("device")
    if isinstance(device, dict):
        return device.get("label") if device.get("kind") == "gpu" else None
    return summary.get("device_name")


def _device_change(base: dict, head: dict) -> dict | None:
    b, h = _gpu_label(base), _gpu_label(head)
    if not b or not h or b == h:
        return None
    text = f"The two traces come from different GPUs ({b} vs {h}): kernel choices and times are not comparable."
    ev = {"device_name": {"base": b, "head": h},
          "vendor": {side: (s.get("device") or {}).get("vendor") for side, s in (("base", base), ("head", head))}}
    return make_hint("device_change", 0.9, text, ev, None)


def _finish(hints: list[dict], factor: float) -> list[dict]:
    out = []
    for h in hints:
        h = dict(h)
        h.pop("_contrib", None)
        h["confidence"] = round(h["confidence"] * factor, 2)
        if h["confidence"] >= MIN_CONFIDENCE * factor:
            out.append(h)
    out.sort(key=lambda h: (-h["confidence"], place(h["kind"])))
    return out[:MAX_HINTS]


def hints_for(change: dict | None, base_summary: dict | None, head_summary: dict | None,
              telemetry: dict | None = None, noise: dict | None = None) -> list[dict]:
    """Ranked root-cause hints for one benchmark (pure).

    Args:
        change: ``{ratio, ci_low, ci_high, p_value, verdict}`` of the timing pass, or None to
            infer the direction from the traces' own times (``perfgate trace-diff``).
        base_summary, head_summary: :func:`runner.profile.summaries.summarize` (or :func:`runner.profile.summaries.compact`)
            outputs; None when a side was not profiled.
        telemetry: ``environment.telemetry``
        (:func:`runner.pipeline.machine.telemetry.summarize_samples`), or None. noise:
        :func:`runner.profile.noise.pass_spread` of repeated profile passes; operators and
            kernels whose change is within it cannot be cited (None: a single pass, no filter).

    Returns:
        hints ``{kind, confidence, summary, evidence}``, most likely first (at most six); ``[]``
        for unchanged/failed/new/removed benchmarks, for traces that show no change, and when a
        side has no profile and telemetry explains nothing; ``[unexplained]`` when the verdict
        is a change and no rule finds its cause.
    """
    if change and change.get("verdict") in NO_HINT_VERDICTS:
        return []
    throttle = _throttling(telemetry)
    if base_summary is None or head_summary is None:
        return _finish([throttle], 1.0) if throttle and change else []
    d = diff(base_summary, head_summary)
    if noise:
        from ..profile.noise import drop_within_noise

        d = drop_within_noise(d, noise)
    sign, factor = _direction(change, d)
    if sign == 0:
        return _finish([throttle], 1.0) if throttle and change else []
    kept = _explaining(base_summary, head_summary, d, sign, telemetry)
    moved = _device_change(base_summary, head_summary)
    if moved:
        # on another GPU every other difference may be the device's, not the code's
        for h in kept:
            h["confidence"] *= DEVICE_CHANGE_FACTOR
            h["evidence"]["device_changed"] = True
    hints = _finish(kept + [extra for extra in (throttle, moved) if extra], factor)
    if not hints and change and change.get("verdict") in CHANGED:
        hints = [_unexplained(change, d)]
    return hints


def _explaining(base_summary: dict, head_summary: dict, d: dict, sign: int,
                telemetry: dict | None) -> list[dict]:
    """The rules' hints (:func:`runner.hints.rule.found`) that explain the direction
    ``sign`` (+1 slower, -1 faster): one whose contribution (µs) points the other way is dropped,
    the others' confidence is weighed by the share of the observed change they explain
    (``evidence.explains_us``, ``evidence.share_of_change``)."""
    t = d["totals"]
    gpu = bool(base_summary.get("kernels") or head_summary.get("kernels"))
    observed = max(abs(t["span_us"]["delta"] or 0), 0.02 * (t["span_us"]["base"] or 0), 1.0)
    kept: list[dict] = []
    for h in found(HintContext(base_summary, head_summary, d, sign, unit_words(d), telemetry, gpu,
                               observed)):
        contrib = h["_contrib"]
        if contrib is not None:
            if contrib * sign <= 0:
                continue
            share = min(1.0, abs(contrib) / observed)
            h["confidence"] *= 0.5 + 0.5 * share
            h["evidence"]["explains_us"] = round(contrib, 3)
            h["evidence"]["share_of_change"] = round(share, 3)
        h["evidence"]["per_call"] = d["per_call"]
        kept.append(h)
    return kept


def _unexplained(change: dict, d: dict) -> dict:
    """The ``unexplained`` hint of a changed benchmark whose profiles show no difference."""
    ratio = change.get("ratio")
    t = d["totals"]
    text = ("No profile difference explains this: kernels, launches, synchronisations, copies and "
            "memory are the same within noise on both sides (profiled span "
            f"{fmt_us(t['span_us']['base'])} → {fmt_us(t['span_us']['head'])} {unit_words(d)}"
            + (f"; measured ratio {ratio:.3f}" if ratio is not None else "") + ").")
    return {"kind": "unexplained", "confidence": 0.5, "summary": text,
            "evidence": {"span_us": t["span_us"], "gpu_busy_us": t["gpu_busy_us"],
                         "operator_self_us": t["operator_self_us"], "per_call": d["per_call"]}}


def compile_hint(change: dict | None) -> dict | None:
    """The hint of what head's torch.compile does beyond base's (graph breaks and recompilations
    torch reported, the first call's compile time), from a benchmark's ``change`` with its
    ``compile`` record (:func:`runner.measures.compile_change`); None when they show no difference.

    Kind ``graph_break`` when head adds or removes a graph break, else ``recompilation``, else
    ``compile_time``. Confidence: these are torch's own reports, so 0.9 when the time per call
    moved the way they point (more breaks or recompiles, slower), 0.5 otherwise (a fact beside an
    unchanged or opposite time).
    """
    from ..report.measures import compile_sentence

    text = compile_sentence(change)
    if text is None:
        return None
    c = change["compile"]
    breaks, recompiles = c.get("graph_breaks") or {}, c.get("recompiles") or {}
    if breaks.get("added") or breaks.get("removed"):
        kind, more = "graph_break", bool(breaks.get("added"))
    elif recompiles.get("added") or recompiles.get("removed"):
        kind, more = "recompilation", bool(recompiles.get("added"))
    else:
        kind, more = "compile_time", ((c.get("compile_s") or {}).get("ratio") or 1.0) > 1.0
    verdict = change.get("verdict")
    agrees = (verdict == "regression" and more) or (verdict == "improvement" and not more)
    evidence = {"graphs": c.get("graphs"), "graph_breaks": {k: breaks.get(k) for k in ("base", "head")},
                "recompiles": {k: recompiles.get(k) for k in ("base", "head")},
                "compile_s": c.get("compile_s")}
    return {"kind": kind, "confidence": 0.9 if agrees else 0.5, "summary": text[0].upper() + text[1:] + ".",
            "evidence": evidence}


def with_compile_hint(hints: list[dict], change: dict | None) -> list[dict]:
    """``hints`` with the :func:`compile_hint` first where there is one (the profile's own
    ``recompilation`` hint, compile events counted in a trace, then says less and is dropped)."""
    hint = compile_hint(change)
    if hint is None:
        return list(hints or [])
    return [hint] + [h for h in hints or [] if h.get("kind") != "recompilation"]
