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


#: From this factor on, either way, a change reads as a factor (``2.5× slower``), below it as a
#: percentage (``+30.2 %``): a percentage hides a large factor (``+95092.3 %``), a factor a small
#: change (``1.03×``). The one rule of every report, for the estimate and both ends of its
#: interval together (:func:`ratio_form`; issue 47: rows read ``2.38× slower [+58.5, +256.5] %``).
FACTOR_FROM = 2.0


def _ratio(x: Any) -> bool:
    """A finite number > 0 (a ratio that can be read)."""
    return is_number(x) and math.isfinite(x) and x > 0


def ratio_form(ratio: float | None, low: float | None = None, high: float | None = None) -> str:
    """How a head/base ``ratio`` and its interval ``low``–``high`` read, one form for all three
    (pure): ``"percent"`` where each of them lies within :data:`FACTOR_FROM` times slower or
    faster, ``"factor"`` where any lies there or beyond (a wide interval of a noisy benchmark
    read ``[-100.0, +17092674468.9] %``, now ``[> 1,000,000× faster, > 1,000,000× slower]``)."""
    values = [x for x in (ratio, low, high) if is_number(x) and math.isfinite(x)]
    if not values or any(x <= 0 for x in values):
        return "percent"
    far = any(x >= FACTOR_FROM or x <= 1.0 / FACTOR_FROM for x in values)
    return "factor" if far and _ratio(ratio) else "percent"


def _times(x: float, more: str, less: str) -> str:
    """One ratio as a factor with its direction: ``2.5× slower``, ``4× faster``, ``1×``."""
    if x == 1.0:
        return "1×"
    return f"{fmt_factor(x)}× {more}" if x > 1.0 else f"{fmt_factor(1.0 / x)}× {less}"


def fmt_change_interval(ratio: float | None, low: float | None, high: float | None,
                        more: str = "slower", less: str = "faster") -> tuple[str, str]:
    """A head/base ratio and its interval, both in the form of :func:`ratio_form` (pure):
    ``("+30.2 %", "[+28.0, +32.3] %")``, ``("2.5× slower", "[1.52×, 3.1×] slower")``,
    ``("1,000× faster", "[909×, 1,111×] faster")``, an interval across no change ``("2.5×
    slower", "[1.11× faster, 7× slower]")``. ``–`` for a ratio that cannot be read, "" for a
    missing interval; ``more``/``less`` name a factor's direction (``larger``/``smaller`` for
    memory, :func:`fmt_growth`)."""
    has_interval = all(is_number(x) and math.isfinite(x) for x in (low, high))
    form = ratio_form(ratio, low if has_interval else None, high if has_interval else None)
    if not _ratio(ratio):
        change = "–"
    elif form == "factor":
        change = _times(ratio, more, less)
    else:
        pct = (ratio - 1.0) * 100.0
        change = f"{pct:+.1f} %" if abs(pct) >= 0.1 else f"{pct:+.2f} %"
    if not has_interval:
        return change, ""
    if form == "percent":
        return change, f"[{(low - 1) * 100:+.1f}, {(high - 1) * 100:+.1f}] %"
    if low >= 1.0:
        return change, f"[{fmt_factor(low)}×, {fmt_factor(high)}×] {more}"
    if high <= 1.0:
        return change, f"[{fmt_factor(1.0 / high)}×, {fmt_factor(1.0 / low)}×] {less}"
    return change, f"[{_times(low, more, less)}, {_times(high, more, less)}]"


def bare_interval(change: str, interval: str) -> str:
    """``interval`` without the word ``change`` ends with, for a phrase that says it once:
    "10.9× faster [4.4×, 26.9×]", not "... [4.4×, 26.9×] faster" (pure)."""
    word = change.rsplit(" ", 1)[-1]
    return (interval[: -len(word) - 1] if word.isalpha() and interval.endswith(" " + word)
            else interval)


def fmt_change(ratio: float | None, more: str = "slower", less: str = "faster") -> str:
    """A head/base ratio alone, in the form of :func:`ratio_form`: 1.302 → ``+30.2 %``, 951.9 →
    ``952× slower``, 0.001 → ``1000× faster``; ``–`` for None and a ratio that is not finite.
    Where its interval is shown too, :func:`fmt_change_interval` (one form for both)."""
    return fmt_change_interval(ratio, None, None, more, less)[0]


def fmt_growth(ratio: float | None, low: float | None = None, high: float | None = None) -> str:
    """A head/base ratio of memory: 1.5 → ``+50.0 %``, 3.0 → ``3× larger``, 0.25 → ``4×
    smaller``, in the form its interval ``low``–``high`` (when given) reads in
    (:func:`ratio_form`)."""
    return fmt_change_interval(ratio, low, high, "larger", "smaller")[0]


#: A factor beyond this reads as "> 1,000,000×": the end of an interval over a few noisy process
#: pairs ("32,027,975,341× faster" in the demo on a loaded machine) says only that it is unbounded.
FACTOR_SHOWN = 1e6


def fmt_factor(x: float) -> str:
    """A factor's number (the ``×`` and its direction are the caller's): ``2.38``, ``22,299``,
    ``> 1,000,000`` beyond :data:`FACTOR_SHOWN`."""
    if x > FACTOR_SHOWN:
        return f"> {FACTOR_SHOWN:,.0f}"
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def fmt_interval(low: float | None, high: float | None, more: str = "slower", less: str = "faster",
                 ratio: float | None = None) -> str:
    """A ratio interval in the form of :func:`ratio_form` for its estimate ``ratio`` (None: the
    interval's geometric middle): ``[+28.0, +32.3] %``, ``[40.7×, 22,300×] slower``,
    ``[900×, 1,100×] faster``; "" without both ends."""
    if ratio is None and _ratio(low) and _ratio(high):
        ratio = math.sqrt(low * high)
    return fmt_change_interval(ratio, low, high, more, less)[1]


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


def fmt_value_change(ratio: float | None, unit: str | None = None, low: float | None = None,
                     high: float | None = None) -> tuple[str, str]:
    """The change of a bigger-is-better value and its interval from ``change.ratio``,
    ``ci_low``, ``ci_high`` (base/head of the value, > 1 is worse), in the form of
    :func:`ratio_form` over the value's own head/base: ``("+25.0 % tokens/s", "[+20.0, +30.1]
    %")``, ``("2.5× higher tokens/s", "[2.1×, 3×] higher")``; ``–`` for None."""
    flip = lambda x: 1.0 / x if _ratio(x) else None  # noqa: E731
    change, interval = fmt_change_interval(flip(ratio), flip(high), flip(low), "higher", "lower")
    return (change + (f" {unit}" if unit and change != "–" else "")), interval
