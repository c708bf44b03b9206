"""Where an optimisation stops paying: a parametrised family's change against its parameter (pure).

Benchmarks of one ``family`` (a ``perf_report`` grid, a ``bench_*`` function's ``params``, a Google
Benchmark family, a script's loop) with ``params`` are read as sweeps: the *axis* is the numeric
parameter with the most distinct values; each combination of the other parameters is one
*series* (``provider=triton``), its points ordered along the axis. Where every series would hold one
point (x values given as tuples: ``M`` and ``N`` move together) the series are taken over the
non-numeric parameters alone.

A series is summarised from its verdicts only — ``improvement`` and ``regression`` after the
run's Benjamini–Hochberg control, which covers every benchmark of the run and so the whole grid —
never from an estimate whose interval did not decide: ``head faster for N ≤ 4096 (−12 … −30 %),
slower for N ≥ 16384 (+8 … +15 %); crossover between N = 4096 and N = 16384`` — the crossover
bracketed between the two measured values where the direction flips. Points left undecided are
named with their verdict (``inconclusive at N = 4; failed at N = 8``).
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from markupsafe import Markup

from ..results import change_of, verdict_of
from .units import is_number

#: Series summarised in a comment at most (the HTML report draws up to :data:`MAX_PLOTS`).
MAX_LINES = 10
MAX_PLOTS = 24

_POWER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*\^\s*(\d+)\s*$")


def numeric(label: Any) -> float | None:
    """A parameter label as a number (``4096``, ``1e-3``, nvbench's ``2^20``), else None."""
    if not isinstance(label, str):
        return None
    power = _POWER.match(label)
    if power:
        return float(power.group(1)) ** int(power.group(2))
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Point:
    """One benchmark of a series: its axis ``label`` and ``value``, ``verdict``, and its change in
    percent of its own measure (``change``, ``low``, ``high``: time for timed benchmarks, the value
    itself for a bigger-is-better one; None without an estimate)."""

    name: str
    label: str
    value: float
    verdict: str | None
    change: float | None
    low: float | None
    high: float | None


@dataclass
class Sweep:
    """One series: ``family``, the fixed parameters (``fixed``), the ``axis`` name, its points in
    axis order, whether the measure is a time (``timed``: faster/slower, else better/worse), and its
    one-line ``summary`` (None when no verdict holds in it)."""

    family: str
    fixed: dict[str, str]
    axis: str
    points: list[Point]
    timed: bool = True
    summary: str | None = None
    crossovers: list[tuple[int, int]] = field(default_factory=list)

    @property
    def title(self) -> str:
        """``family (k=v, …)``."""
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed.items())
        return f"{self.family} ({fixed})" if fixed else self.family


def _change(entry: dict) -> tuple[float | None, float | None, float | None]:
    change = change_of(entry)
    ratio, low, high = change.get("ratio"), change.get("ci_low"), change.get("ci_high")
    if not (is_number(ratio) and ratio > 0):
        return None, None, None
    if entry.get("direction") == "bigger":  # ratio is base/head of the value: the value's change is 1/ratio
        pct = (1.0 / ratio - 1.0) * 100.0
        lo = (1.0 / high - 1.0) * 100.0 if is_number(high) and high > 0 else None
        hi = (1.0 / low - 1.0) * 100.0 if is_number(low) and low > 0 else None
        return pct, lo, hi
    return ((ratio - 1.0) * 100.0, (low - 1.0) * 100.0 if is_number(low) else None,
            (high - 1.0) * 100.0 if is_number(high) else None)


def sweeps(benchmarks: Sequence[dict]) -> list[Sweep]:
    """The sweeps of a result's ``benchmarks`` (see the module docstring), each with its summary."""
    families: dict[str, list[dict]] = {}
    for entry in benchmarks:
        params = entry.get("params")
        if (isinstance(entry.get("family"), str) and isinstance(params, dict) and params
                and change_of(entry)):
            families.setdefault(entry["family"], []).append(entry)
    out: list[Sweep] = []
    for family, entries in families.items():
        keys = list(dict.fromkeys(k for e in entries for k in e["params"]))
        numeric_keys = [k for k in keys if all(numeric(e["params"].get(k)) is not None for e in entries)]
        if not numeric_keys:
            continue
        axis = max(numeric_keys, key=lambda k: (len({e["params"][k] for e in entries}), -keys.index(k)))
        if len({e["params"][axis] for e in entries}) < 2:
            continue
        groups = _series(entries, keys, axis, [k for k in keys if k != axis])
        if all(len(g) < 2 for g in groups.values()):
            groups = _series(entries, keys, axis, [k for k in keys if k not in numeric_keys])
        for fixed, members in groups.items():
            values = [numeric(e["params"][axis]) for e in members]
            if len(members) < 2 or len(set(values)) != len(values):
                continue
            points = []
            for entry in sorted(members, key=lambda e: numeric(e["params"][axis])):
                pct, lo, hi = _change(entry)
                points.append(Point(entry["name"], entry["params"][axis], numeric(entry["params"][axis]),
                                    verdict_of(entry), pct, lo, hi))
            sweep = Sweep(family, dict(fixed), axis, points, timed=all((e.get("unit") or "s") == "s" for e in members))
            summarize(sweep)
            out.append(sweep)
    return out


def _series(entries: list[dict], keys: list[str], axis: str, by: list[str]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for entry in entries:
        fixed = tuple((k, entry["params"].get(k)) for k in by if k in entry["params"])
        groups.setdefault(fixed, []).append(entry)
    return groups


_CLASS = {"improvement": "faster", "regression": "slower", "unchanged": "same"}


def _range(sweep: Sweep, first: int, last: int) -> str:
    axis, points = sweep.axis, sweep.points
    if first == 0 and last == len(points) - 1:
        return f"every {axis}"
    if first == last:
        return f"{axis} = {points[first].label}"
    if first == 0:
        return f"{axis} ≤ {points[last].label}"
    if last == len(points) - 1:
        return f"{axis} ≥ {points[first].label}"
    return f"{points[first].label} ≤ {axis} ≤ {points[last].label}"


def _pcts(points: Sequence[Point]) -> str:
    values = sorted((p.change for p in points if p.change is not None), key=abs)
    if not values:
        return ""
    text = [f"{v:+.0f}".replace("-", "−") if abs(v) >= 1 else f"{v:+.1f}".replace("-", "−") for v in values]
    return f" ({text[0]} %)" if len(text) == 1 or text[0] == text[-1] else f" ({text[0]} … {text[-1]} %)"


def summarize(sweep: Sweep) -> None:
    """Set ``sweep.summary`` and ``sweep.crossovers`` from its decided verdicts (module docstring)."""
    points = sweep.points
    classes = [_CLASS.get(p.verdict or "") for p in points]
    runs: list[tuple[str | None, int, int]] = []
    for i, cls in enumerate(classes):
        if runs and runs[-1][0] == cls:
            runs[-1] = (cls, runs[-1][1], i)
        else:
            runs.append((cls, i, i))
    changed = [r for r in runs if r[0] in ("faster", "slower")]
    if not changed:
        sweep.summary = None
        return
    words = {"faster": "faster", "slower": "slower"} if sweep.timed else {"faster": "better", "slower": "worse"}
    parts = [f"{words[cls]} for {_range(sweep, a, b)}{_pcts(points[a:b + 1])}" for cls, a, b in changed]
    text = "head " + ", ".join(parts)
    sweep.crossovers = [(earlier[2], later[1]) for earlier, later in zip(changed, changed[1:])
                        if earlier[0] != later[0]]
    flips = [f"between {sweep.axis} = {points[a].label} and {sweep.axis} = {points[b].label}"
             for a, b in sweep.crossovers]
    if flips:
        text += "; crossover " + " and ".join(flips)
    undecided: dict[str, list[str]] = {}  # each verdict word the report's tables use
    for p, cls in zip(points, classes):
        if cls is None:
            undecided.setdefault(p.verdict or "not measured", []).append(p.label)
    for verdict, labels in undecided.items():
        text += f"; {verdict} at {sweep.axis} = {', '.join(labels)}"
    sweep.summary = text


def summary_lines(benchmarks: Sequence[dict], limit: int = MAX_LINES) -> tuple[list[tuple[str, str]], int]:
    """``([(series title, summary)], how many more)``: the sweeps that have a summary, those with a
    crossover first, at most ``limit``."""
    found = [s for s in sweeps(benchmarks) if s.summary]
    found.sort(key=lambda s: (not s.crossovers,))
    return [(s.title, s.summary) for s in found[:limit]], max(0, len(found) - limit)


# -- the picture ----------------------------------------------------------------------------------
_COLOURS = {"regression": "#cf222e", "improvement": "#1a7f37", "unchanged": "#57606a", "inconclusive": "#9a6700"}


def sweep_svg(sweep: Sweep, threshold: float, width: int = 560, height: int = 220) -> Markup:
    """Inline SVG of one sweep: the change in percent (y) against the axis (x, the measured values
    evenly spaced), each point with its interval, coloured by verdict; the ±threshold band shaded,
    and each crossover's bracket between its two measured values. Every text in it is a number or a
    label escaped here."""
    pad_l, pad_r, pad_t, pad_b = 48, 12, 26, 34
    points = sweep.points
    extent = [abs(v) for p in points for v in (p.change, p.low, p.high) if is_number(v) and math.isfinite(v)]
    span = max(extent + [threshold * 100 * 1.5 if math.isfinite(threshold) else 0.0, 1.0])
    step = (width - pad_l - pad_r) / max(len(points), 1)

    def x_of(i: int) -> float:
        return pad_l + step * (i + 0.5)

    def y_of(pct: float) -> float:
        pct = max(-span, min(span, pct))
        return pad_t + (span - pct) / (2 * span) * (height - pad_t - pad_b)

    parts = [f'<svg class="sweep" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img">',
             f'<text x="{pad_l}" y="14" class="lbl">{html.escape(sweep.title)}: change, % '
             f'({"time" if sweep.timed else "value"}; band ±{threshold * 100:g} %)</text>']
    for a, b in sweep.crossovers:
        parts.append(f'<rect class="cross" x="{x_of(a):.1f}" y="{pad_t}" width="{x_of(b) - x_of(a):.1f}" '
                     f'height="{height - pad_t - pad_b}"><title>crossover between {html.escape(sweep.axis)} = '
                     f'{html.escape(points[a].label)} and {html.escape(points[b].label)}</title></rect>')
    band = threshold * 100 if math.isfinite(threshold) else 0.0
    parts.append(f'<rect class="band" x="{pad_l}" y="{y_of(band):.1f}" width="{width - pad_l - pad_r}" '
                 f'height="{y_of(-band) - y_of(band):.1f}"/>')
    parts.append(f'<line class="zero" x1="{pad_l}" y1="{y_of(0):.1f}" x2="{width - pad_r}" y2="{y_of(0):.1f}"/>')
    parts.append(f'<text x="4" y="{y_of(span) + 4:.1f}" class="lbl">{span:+.0f} %</text>')
    parts.append(f'<text x="4" y="{y_of(-span):.1f}" class="lbl">{-span:+.0f} %</text>')
    for i, p in enumerate(points):
        x = x_of(i)
        parts.append(f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle" class="lbl">{html.escape(p.label)}</text>')
        if p.change is None:
            continue
        colour = _COLOURS.get(p.verdict or "", "#8c959f")
        if is_number(p.low) and is_number(p.high):
            parts.append(f'<line x1="{x:.1f}" y1="{y_of(p.low):.1f}" x2="{x:.1f}" y2="{y_of(p.high):.1f}" '
                         f'stroke="{colour}" stroke-width="1.5"/>')
        parts.append(f'<circle cx="{x:.1f}" cy="{y_of(p.change):.1f}" r="3.5" fill="{colour}"><title>'
                     f'{html.escape(sweep.axis)} = {html.escape(p.label)}: {p.change:+.1f} % '
                     f'({html.escape(p.verdict or "–")})</title></circle>')
    parts.append(f'<text x="{width - pad_r}" y="{height - 2}" text-anchor="end" class="lbl">{html.escape(sweep.axis)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
