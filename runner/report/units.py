"""Units in words: the one home of every time, ratio, percentage and size formatter.

Times in results.json are seconds per call, trace times microseconds, ratios head/base (> 1 is
slower), fractions 0–1. Every report, hint, table and page formats them through this module.
Pure; imports nothing beyond the standard library.
"""

from __future__ import annotations

import math
from typing import Any


def is_number(x: Any) -> bool:
    """True for an int/float (not bool); jinja2's Undefined and None are not numbers."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)



def fmt_time(seconds: float | None) -> str:
    """Seconds as a short human time with 3 significant digits: ``1.23 ms``, ``456 ns``."""
    if not is_number(seconds) or math.isnan(seconds):
        return "–"
    magnitude = abs(float(f"{seconds:.3g}"))  # 0.99996 ms is "1 ms", not "1e+03 µs"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if magnitude >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{seconds:.3g} s"  # pragma: no cover


def fmt_change(ratio: float | None, more: str = "slower", less: str = "faster") -> str:
    """A head/base ratio as a signed percentage of time: 1.302 → ``+30.2 %``; from twice as slow
    or fast on as a factor, which a percentage hides (951.9 → ``952× slower``, not
    ``+95092.3 %``; 0.001 → ``1000× faster``); ``–`` for None and for a ratio that is not finite.
    ``more``/``less`` name the factor's direction (``larger``/``smaller`` for memory, :func:`fmt_growth`)."""
    if not is_number(ratio) or not math.isfinite(ratio) or ratio <= 0:
        return "–"
    if ratio >= 2.0:
        return f"{_factor(ratio)}× {more}"
    if ratio <= 0.5:
        return f"{_factor(1.0 / ratio)}× {less}"
    pct = (ratio - 1.0) * 100.0
    return f"{pct:+.1f} %" if abs(pct) >= 0.1 else f"{pct:+.2f} %"


def fmt_growth(ratio: float | None) -> str:
    """A head/base ratio of memory: 1.5 → ``+50.0 %``, 3.0 → ``3× larger``, 0.25 → ``4× smaller``."""
    return fmt_change(ratio, "larger", "smaller")


def _factor(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def fmt_interval(low: float | None, high: float | None, more: str = "slower", less: str = "faster") -> str:
    """A ratio interval as percentages, ``[+28.0, +32.3] %``; as factors when it lies wholly at
    twice as slow or fast or beyond (``[40.7×, 22,300×] slower``, ``[900×, 1,100×] faster``);
    ``more``/``less`` name the factor's direction as in :func:`fmt_change`."""
    if not (is_number(low) and is_number(high)) or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    if low >= 2.0:
        return f"[{_factor(low)}×, {_factor(high)}×] {more}"
    if 0 < high <= 0.5:
        return f"[{_factor(1.0 / high)}×, {_factor(1.0 / low)}×] {less}"
    return f"[{(low - 1) * 100:+.1f}, {(high - 1) * 100:+.1f}] %"


def fmt_bytes(n: int | None) -> str:
    """Bytes with binary prefixes: ``12.0 MiB``."""
    if not is_number(n):
        return "–"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def fmt_pct(fraction: float | None) -> str:
    """A fraction as a percentage: 0.02 → ``2 %``."""
    if not is_number(fraction):
        return "–"
    return f"{fraction * 100:g} %"



def fmt_us(us: float | None) -> str:
    """Microseconds as a short time with two or one decimals: ``1.23 s``, ``4.56 ms``, ``7.8 µs``
    (trace and hint figures); ``–`` for None."""
    if not is_number(us):
        return "–"
    x = float(us)
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f} s"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.2f} ms"
    return f"{x:.1f} µs"


def fmt_signed_us(us: float) -> str:
    """:func:`fmt_us` with an explicit sign: ``+12.0 µs``, ``−3.40 ms``."""
    return ("+" if us >= 0 else "−") + fmt_us(abs(us))


def fmt_share(fraction: float | None) -> str:
    """A fraction as a whole percentage: 0.253 → ``25 %``; ``?`` for None."""
    return "?" if fraction is None else f"{100 * fraction:.0f} %"


def short_sha(sha: Any) -> str:
    """The first 12 characters of a SHA ("" for None); escape the result for its context."""
    return (sha if isinstance(sha, str) else "")[:12]




def plural(count: int, noun: str) -> str:
    """``"1 benchmark"``, ``"3 benchmarks"`` (English ``-s`` plural)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def fmt_quantity(value: float | None, unit: str | None) -> str:
    """A value in its own unit: seconds as :func:`fmt_time`, anything else with its unit, 3
    significant digits below 1000 and whole numbers from there (``12.2 MB``, ``5,120 tokens/s``),
    bytes (``B``) as :func:`fmt_bytes`; ``–`` for None."""
    if not is_number(value) or math.isnan(value):
        return "–"
    if not unit or unit == "s":
        return fmt_time(value)
    if unit == "B":
        return fmt_bytes(value)
    text = f"{value:.3g}" if abs(value) < 1e3 else f"{value:,.0f}"
    return f"{text} {unit}"


def fmt_value_change(ratio: float | None, unit: str | None = None) -> str:
    """The change of a bigger-is-better value from ``change.ratio`` (base/head of the value, > 1 is
    worse): ``+25.0 % tokens/s``; ``–`` for None."""
    if not is_number(ratio) or not math.isfinite(ratio) or ratio <= 0:
        return "–"
    pct = (1.0 / ratio - 1.0) * 100.0
    return f"{pct:+.1f} %" + (f" {unit}" if unit else "")
