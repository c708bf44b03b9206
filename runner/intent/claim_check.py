"""A pull request's claims checked against what was measured: the interval, never the point.

Input: the ``claims`` of a results.json (:mod:`.claims`: ``{quote, metric, direction, ratio |
ratio_low + ratio_high, bound, scope, vs, source}``, ratios head/base in the metric's own sense)
and its ``benchmarks`` and ``environment``. Each claim gets one judgement (issue 50):

* ``holds``: the measured interval reaches the claimed size, within the claim's own precision;
* ``partly``: the change is decided in the claimed direction, but the interval excludes the
  claimed size (a "100x" that measured 1.5x, or a "10 %" that measured 3x);
* ``not_shown``: the interval includes no change;
* ``contradicted``: the interval excludes the claimed direction (a "faster" that is slower);
* ``untestable``: compared with another implementation, not base; a metric perfgate does not
  measure (compile time, accuracy-like "other"); memory where no memory was compared; a GPU
  claim on a CPU run (or the reverse): "untestable here"; no benchmark measured.

Comparison is in the time sense (head/base seconds; below 1 is faster): a throughput claim r is
a time claim 1/r for the same work; a memory claim is held against ``change.memory``. The
claim's precision is that of its coarsest number — half a unit of its last digit ("2x": 1.5x to
2.5x), at least :data:`MIN_SLACK` (5 %) — and widens the claimed range before it meets the
interval; an ``up_to`` claim holds wherever the change is decided in its direction (it names the
best case), an ``at_least`` claim only where the interval reaches its size.

A claim is matched to the benchmarks it names (a benchmark whose name contains a word of the
quote or of its scope: ``bbox_to_mask``, ``fp16``, a table row's ``case``), else to every
measured benchmark; when several are matched, the claim holds (or partly holds) where any of them
shows it, else is contradicted where any of them is decided the other way, else is not shown;
the others are listed with theirs.

Pure: plain data in, plain data out.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping

from ..results import change_of, output_changed

HOLDS, PARTLY, NOT_SHOWN, CONTRADICTED, UNTESTABLE = (
    "holds", "partly", "not_shown", "contradicted", "untestable")
#: The claim's judgement is the first of its benchmarks' in this order: a size shown anywhere,
#: else a direction contradicted anywhere, else not shown.
ORDER = (HOLDS, PARTLY, CONTRADICTED, NOT_SHOWN)
#: The least relative slack a claimed size is given (a measured 1.9x meets a "2x" anyway).
MIN_SLACK = 0.05
#: The most: a one-digit "2x" is 1.5x-2.5x, never wider than x/÷1.5.
MAX_SLACK = 0.5
TIME_METRICS = ("time", "latency")
GPU_WORDS = re.compile(r"gpu|cuda|nvidia|rocm|amd|[ahlvbt]\d{2,3}\b|rtx|gh200|mi\d{3}|"
                       r"hopper|ampere|blackwell|ada|tpu|xpu|mps", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.(\d+))?)")
_STOP = frozenset("this that with from into over than faster slower speed speedup time times "
                  "memory before after about roughly function kernel reduce reduces "
                  "reduction improve improves improvement optimize optimized optimise".split())


#: How a measured interval reads: ``(point, low, high)`` of head/base and the claim's metric ->
#: words (:func:`measured_text`; the report passes its own, the one form of its tables).
Words = Callable[[tuple[float, float, float], str], str]


def check_claims(claims: Iterable[Mapping[str, Any]] | None, benchmarks: Iterable[Mapping],
                 environment: Mapping | None = None, words: Words | None = None) -> list[dict]:
    """Judge every claim of a results.json.

    Args:
        claims: results.json ``claims`` (untrusted: odd entries are skipped).
        benchmarks: results.json ``benchmarks`` (``name``, ``change`` with ``ratio``,
            ``ci_low``, ``ci_high``, ``verdict``, ``memory``).
        environment: results.json ``environment`` (``device``: ``cpu``/``cuda``/...).
        words: how a measured interval reads in ``why`` and ``measured`` (None:
            :func:`measured_text`).

    Returns:
        one dict per claim, in order: ``{"quote", "source", "metric", "claimed": str,
        "verdict": one of HOLDS..UNTESTABLE, "why": str, "benchmarks": [{"name", "verdict",
        "measured"}]}`` (``benchmarks``: the matched ones, best-supported first).
    """
    benches = [b for b in benchmarks if isinstance(b, Mapping)]
    device = str((environment or {}).get("device") or "")
    out = []
    for claim in claims or []:
        if isinstance(claim, Mapping) and isinstance(claim.get("quote"), str):
            out.append(check_claim(claim, benches, device, words or measured_text))
    return out


def check_claim(claim: Mapping[str, Any], benchmarks: list[Mapping], device: str = "",
                words: Words | None = None) -> dict:
    """One claim's judgement (see :func:`check_claims`)."""
    metric = str(claim.get("metric") or "other")
    result = {"quote": claim["quote"][:200], "source": str(claim.get("source") or ""),
              "metric": metric, "claimed": claimed_text(claim), "benchmarks": []}
    why = _untestable(claim, metric, device)
    span = claimed_span(claim)
    if why is None and span is None:
        why = "it gives no size against base"
    if why is not None:
        return {**result, "verdict": UNTESTABLE, "why": why}
    measured = []
    for bench in _matched(claim, benchmarks):
        interval = _interval(bench, metric)
        if interval is not None:
            verdict = judge(span, interval, claim.get("bound"))
            measured.append({"name": str(bench.get("name", "?")), "verdict": verdict,
                             "measured": (words or measured_text)(interval, metric),
                             "beyond": verdict == PARTLY and _beyond(span, interval),
                             "output_changed": output_changed(bench)})
    if not measured:
        what = "memory" if metric == "memory" else "time"
        return {**result, "verdict": UNTESTABLE, "why": f"no benchmark measured its {what}"}
    measured.sort(key=lambda m: ORDER.index(m["verdict"]))
    best = measured[0]
    why = f"{best['name']} measured {best['measured']}"
    if best["verdict"] == PARTLY:
        why = ("more than claimed: " if best["beyond"] else "less than claimed: ") + why
    against = [m for m in measured[1:] if m["verdict"] == CONTRADICTED]
    if best["verdict"] != CONTRADICTED and against:
        why += f"; contradicted on {', '.join(m['name'] for m in against[:3])}"
    changed = [m["name"] for m in measured if m["output_changed"]]
    if changed:   # a speed-up that changes the answer is no speed-up (runner.outputs.verdict)
        why += f"; head changes the result of {', '.join(changed[:3])}"
    return {**result, "verdict": best["verdict"], "why": why, "benchmarks": measured}


def judge(span: tuple[float, float], interval: tuple[float, float, float],
          bound: Any = None) -> str:
    """The judgement of one claimed span against one measured interval.

    Args:
        span: ``(low, high)``, the claimed head/base ratio in the measured sense, widened by
            the claim's precision.
        interval: ``(point, ci_low, ci_high)`` measured, same sense.
        bound: ``"up_to"``, ``"at_least"`` or None.

    Returns:
        one of ``HOLDS``, ``PARTLY``, ``NOT_SHOWN``, ``CONTRADICTED``.
    """
    low, high = span
    _, ci_low, ci_high = interval
    if high > 1.0 and low < 1.0:               # a claim of "about the same"
        return HOLDS if ci_low >= low and ci_high <= high else NOT_SHOWN
    if low >= 1.0:                             # the claim says "more": mirror it to "less"
        low, high, ci_low, ci_high = 1 / high, 1 / low, 1 / ci_high, 1 / ci_low
    if ci_low > 1.0:
        return CONTRADICTED
    if ci_high >= 1.0:
        return NOT_SHOWN
    if bound == "up_to":
        return HOLDS
    if bound == "at_least":
        return HOLDS if ci_low <= high else PARTLY
    return HOLDS if ci_low <= high and ci_high >= low else PARTLY


def _beyond(span: tuple[float, float], interval: tuple[float, float, float]) -> bool:
    """Whether a ``PARTLY`` interval lies beyond the claimed size (more than claimed) rather
    than short of it."""
    low, high = span
    _, ci_low, ci_high = interval
    if low >= 1.0:
        low, ci_high = 1 / high, 1 / ci_low
    return ci_high < low


def claimed_span(claim: Mapping[str, Any]) -> tuple[float, float] | None:
    """The claimed head/base ratio in the measured sense (time for throughput), widened by the
    claim's precision: ``(low, high)``, or None when the claim gives no usable ratio."""
    low, high = _ratios(claim)
    if low is None:
        return None
    if claim.get("metric") == "throughput":
        low, high = 1 / high, 1 / low
    slack = 1.0 + precision_of(str(claim.get("quote") or ""))
    return low / slack, high * slack


def precision_of(quote: str) -> float:
    """The relative precision of the quote's coarsest number: half a unit of its last digit
    over its value ("2x": 0.25; "93.8 ms": 0.0005), clamped to [MIN_SLACK, MAX_SLACK]."""
    worst = 0.0
    for match in _NUMBER.finditer(quote):
        value = float(match.group(1))
        if value > 0:
            decimals = len(match.group(2) or "")
            worst = max(worst, 0.5 * 10 ** -decimals / value)
    return min(MAX_SLACK, max(MIN_SLACK, worst))


def claimed_text(claim: Mapping[str, Any]) -> str:
    """What the claim says, in words: ``"100-200× faster"``, ``"1.1× the throughput"``,
    ``"up to 6.4× less memory"``, ``"no size"``."""
    low, high = _ratios(claim)
    metric = str(claim.get("metric") or "")
    if low is None:
        return "no size"
    bound = {"up_to": "up to ", "at_least": "at least "}.get(claim.get("bound"), "")
    less, more = {"throughput": ("less throughput", "the throughput"),
                  "memory": ("less memory", "more memory")}.get(
        metric, ("faster", "slower") if metric in TIME_METRICS
        else (f"less {metric.replace('_', ' ')}", f"more {metric.replace('_', ' ')}"))
    if high <= 1.0:   # head below base: say the factor the other way round
        low, high, word = 1 / high, 1 / low, less
    else:
        word = more
    size = f"{_g(low)}×" if _g(low) == _g(high) else f"{_g(low)}-{_g(high)}×"
    return f"{bound}{size} {word}"


def measured_text(interval: tuple[float, float, float], metric: str) -> str:
    """``"5.52× slower [5.31×, 5.74×]"``: the measured change in words, in its own sense; an
    interval that includes no change in percent (``"+0.0 % [-49.0 %, +96.0 %]"``)."""
    point, ci_low, ci_high = interval
    if ci_low <= 1.0 <= ci_high:
        return f"{_pct(point)} [{_pct(ci_low)}, {_pct(ci_high)}]"
    noun = ("smaller", "larger") if metric == "memory" else ("faster", "slower")
    if point <= 1.0:
        return f"{_x(1 / point)} {noun[0]} [{_x(1 / ci_high)}, {_x(1 / ci_low)}]"
    return f"{_x(point)} {noun[1]} [{_x(ci_low)}, {_x(ci_high)}]"


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %"


def _ratios(claim: Mapping[str, Any]) -> tuple[float | None, float | None]:
    ratio = _positive(claim.get("ratio"))
    if ratio is not None:
        return ratio, ratio
    low, high = _positive(claim.get("ratio_low")), _positive(claim.get("ratio_high"))
    if low is None or high is None:
        return None, None
    return min(low, high), max(low, high)


def _untestable(claim: Mapping[str, Any], metric: str, device: str) -> str | None:
    vs = claim.get("vs")
    if vs not in (None, "", "base"):
        return f"compared with {str(vs)[:40]}, not with base"
    if metric not in (*TIME_METRICS, "throughput", "memory"):
        return f"perfgate does not measure {metric.replace('_', ' ')}"
    named = claim_device(claim)
    if device == "cpu" and named and GPU_WORDS.search(named):
        return f"about {named[:40]}; this run measured on CPU: untestable here"
    if device and device != "cpu" and named.lower() == "cpu":
        return "about the CPU; this run measured on the GPU: untestable here"
    return None


def claim_device(claim: Mapping[str, Any]) -> str:
    """The device a claim is about: of the devices its scope names, the one its quote names
    nearest to the claim's own figure (a sentence may name two: "~34% on CUDA (CPU 7022 ->
    5845 ms)"); all of them, joined, when the quote places none; ``""`` when the scope names
    none."""
    scope = claim.get("scope") if isinstance(claim.get("scope"), Mapping) else {}
    devices = [str(d) for d in scope.get("device") or [] if isinstance(d, str)]
    if len(devices) < 2:
        return devices[0] if devices else ""
    quote = str(claim.get("quote") or "")
    at = _figure_at(quote, *_ratios(claim))
    places = [(abs(m.start() - at), d) for d in devices
              for m in re.finditer(re.escape(d), quote)]
    return min(places)[1] if at is not None and places else " and ".join(devices)


def _figure_at(quote: str, low: float | None, high: float | None) -> int | None:
    """Where in ``quote`` the number stands that gives the claimed ratio (as a factor, a
    percentage either way, or the second of a before/after pair), None if none does."""
    if low is None:
        return None
    numbers = [(m.start(), float(m.group(1))) for m in _NUMBER.finditer(quote)]

    def near(r: float) -> bool:
        return low / 1.02 <= r <= high * 1.02

    for i, (at, n) in enumerate(numbers):
        if n > 0 and any(near(r) for r in (n, 1 / n, 1 - n / 100, 1 / (1 + n / 100))):
            return at
        if n > 0 and i and numbers[i - 1][1] > 0 and near(n / numbers[i - 1][1]):
            return numbers[i - 1][0]
    return None


def _matched(claim: Mapping[str, Any], benchmarks: list[Mapping]) -> list[Mapping]:
    """The benchmarks the claim names (a word of its quote or scope in the benchmark's name),
    else all of them."""
    scope = claim.get("scope") if isinstance(claim.get("scope"), Mapping) else {}
    words = {w.lower() for w in _WORD.findall(str(claim.get("quote") or ""))} - _STOP
    for values in scope.values():
        for value in values if isinstance(values, list) else [values]:
            words |= {w.lower() for w in _WORD.findall(str(value))} - _STOP
    named = [b for b in benchmarks if any(w in str(b.get("name", "")).lower() for w in words)]
    return named or benchmarks


def _interval(bench: Mapping, metric: str) -> tuple[float, float, float] | None:
    change = change_of(bench)
    if metric == "memory" and bench.get("measure") != "memory":
        change = change.get("memory") or {}
    values = [_positive(change.get(k)) for k in ("ratio", "ci_low", "ci_high")]
    if None in values:
        return None
    point, low, high = values
    return point, min(low, high), max(low, high)


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _g(value: float) -> str:
    return f"{value:.3g}"


def _x(value: float) -> str:
    """A measured factor: ``"5.52×"``, ``"123×"``."""
    return f"{value:.2f}×" if value < 10 else f"{value:.3g}×"
