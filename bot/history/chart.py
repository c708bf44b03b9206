"""Geometry of the benchmark history chart (server-side SVG; no JavaScript, no network).

:func:`bench_chart` turns a benchmark's series, PR points and fingerprint changes into plain
shapes in SVG user units; ``templates/_chart.svg.html`` draws them. The x axis is the order
of events in time (every main and PR point gets one equal slot; runs are irregular in time
and evenly spaced slots keep dense weeks readable); the y axis is the series' measure — time per
call, peak memory or compile time — linear, in the unit that suits the data (s, ms, µs, ns; B,
KiB, MiB, GiB).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from runner.report.units import fmt_bytes, fmt_change, fmt_growth, fmt_time

from .points import iso
from .series import Point, Series

WIDTH, HEIGHT = 960, 360
MARGIN = {"left": 78, "right": 24, "top": 24, "bottom": 46}
#: Series colours (Okabe-Ito, colour-blind safe), cycled per fingerprint.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTE_UNITS = (("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0), ("B", 1.0))

#: Per measure of a series (bot.history.points.MEASURES): the y axis's words, its units (largest
#: first), how a value and a change read.
MEASURE_AXES = {
    "time": ("time per call", _UNITS, fmt_time, fmt_change),
    "memory": ("peak memory", _BYTE_UNITS, fmt_bytes, fmt_growth),
    "compile": ("compile time of the first call", _UNITS, fmt_time, fmt_change),
}


def unit_for(max_value: float, units: Sequence[tuple[str, float]] = _UNITS) -> tuple[str, float]:
    """The largest of ``units`` (seconds by default, largest first) in which ``max_value`` is at
    least 1, e.g. ``("ms", 1e-3)``."""
    for unit, scale in units:
        if max_value >= scale:
            return unit, scale
    return units[-1]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]`` (steps of 1, 2, 2.5 or 5 × 10^k)."""
    if not (high > low):
        return [low]
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10)),
               key=lambda st: abs((high - low) / st - (count - 1)))
    start = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _title(p: Point, measure: str = "time") -> str:
    _, _, fmt_value, fmt_ratio = MEASURE_AXES.get(measure, MEASURE_AXES["time"])
    ci = ""
    if p.ci_low is not None and p.ci_high is not None:
        ci = f" (95 % CI {fmt_value(p.ci_low)} – {fmt_value(p.ci_high)})"
    what = f"PR #{p.pr_number}" if p.pr_number else ("commit" if p.kind == "main" else "compare head")
    extra = f" · {fmt_ratio(p.ratio)} vs base ({p.verdict})" if p.ratio is not None else ""
    return f"{what} {(p.sha or '?')[:12]} · {iso(p.time)} · {fmt_value(p.value)}{ci}{extra}"


def bench_chart(series: Sequence[Series], side_points: Sequence[Point],
                fingerprint_changes: Sequence[dict], measure: str = "time") -> dict:
    """Shapes of one benchmark's chart of ``measure`` (``time``, ``memory`` in bytes, ``compile``:
    :data:`MEASURE_AXES`).

    Returns ``{width, height, plot: {x, y, w, h}, measure, axis, unit, y_ticks: [{y, label}],
    x_labels: [{x, label}], series: [{label, color, median: "x,y x,y", band: "x,y ...",
    points: [{x, y, title}]}], change_points: [{x, y1, y2, cls, title, label}],
    pr_points: [{x, y, title, url, cls}], fingerprint_changes: [{x, title}], empty}``;
    ``empty`` is True when there is nothing to draw.
    """
    plot = {"x": MARGIN["left"], "y": MARGIN["top"], "w": WIDTH - MARGIN["left"] - MARGIN["right"],
            "h": HEIGHT - MARGIN["top"] - MARGIN["bottom"]}
    events = _events(series, side_points)
    axis, units, _, _ = MEASURE_AXES.get(measure, MEASURE_AXES["time"])
    chart = {"width": WIDTH, "height": HEIGHT, "plot": plot, "series": [], "change_points": [],
             "pr_points": [], "fingerprint_changes": [], "y_ticks": [], "x_labels": [],
             "unit": units[-1][0], "measure": measure, "axis": axis, "empty": not events}
    if not events:
        return chart
    slot = plot["w"] / len(events)
    x_of = {(e[2], e[3]): plot["x"] + (i + 0.5) * slot for i, e in enumerate(events)}
    lo, hi = _value_range(series, side_points)
    unit, scale = unit_for(hi, units)
    y_of = _y_axis(plot, lo, hi)
    chart.update(unit=unit, y_ticks=_y_ticks(lo, hi, scale, y_of),
                 x_labels=_x_labels(events, plot, slot))
    for si, s in enumerate(series):
        chart["series"].append(_series_shape(si, s, x_of, y_of, measure))
        chart["change_points"] += _change_point_marks(si, s, x_of, plot, measure)
    chart["pr_points"] = [{"x": round(x_of[(-1, pi)], 2), "y": round(y_of(p.value), 2),
                           "title": _title(p, measure), "url": p.pr_url,
                           "cls": p.verdict or "unknown"} for pi, p in enumerate(side_points)]
    chart["fingerprint_changes"] = _fingerprint_marks(series, events, fingerprint_changes, plot,
                                                      slot)
    return chart


def _events(series: Sequence[Series], side_points: Sequence[Point]) -> list[tuple]:
    """Every point as ``(time, 0 for a series' point | 1 for a side point, series index (-1 for
    side points), point index)``, in time order: one x slot each."""
    events = [(p.time, 0, si, pi) for si, s in enumerate(series) for pi, p in enumerate(s.points)]
    events += [(p.time, 1, -1, pi) for pi, p in enumerate(side_points)]
    events.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
    return events


def _value_range(series: Sequence[Series], side_points: Sequence[Point]) -> tuple[float, float]:
    """``(lo, hi)`` of the y axis: every value and interval end, padded by 8 % (never below 0)."""
    values = [v for s in series for p in s.points for v in (p.value, p.ci_low, p.ci_high)
              if v is not None]
    values += [p.value for p in side_points]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.1 or 1e-9
    return max(lo - pad, 0.0), hi + pad


def _y_axis(plot: dict, lo: float, hi: float) -> Callable[[float], float]:
    """A value's y in the plot (``lo`` at its bottom, ``hi`` at its top)."""

    def y_of(v: float) -> float:
        return plot["y"] + plot["h"] * (1 - (v - lo) / (hi - lo))

    return y_of


def _y_ticks(lo: float, hi: float, scale: float, y_of: Callable[[float], float]) -> list[dict]:
    """``[{y, label}]``: round values of the unit ``scale`` within ``[lo, hi]``."""
    return [{"y": round(y_of(t * scale), 2), "label": f"{t:g}"}
            for t in nice_ticks(lo / scale, hi / scale) if lo <= t * scale <= hi]


def _x_labels(events: list[tuple], plot: dict, slot: float) -> list[dict]:
    """``[{x, label}]``: the date of every n-th event, about eight; with the hour when the chart
    spans less than three days."""
    every = max(1, len(events) // 8)
    span = events[-1][0] - events[0][0]
    stamp = "%b %d %H:%M" if span.total_seconds() < 3 * 86400 else "%Y-%m-%d"
    return [{"x": round(plot["x"] + (i + 0.5) * slot, 2), "label": e[0].strftime(stamp)}
            for i, e in enumerate(events) if i % every == 0]


def _series_shape(si: int, s: Series, x_of: dict, y_of: Callable[[float], float],
                  measure: str) -> dict:
    """One series' line of medians, its interval band (upper ends, then lower ends back) and its
    points, coloured by its index ``si``."""
    xs = [x_of[(si, pi)] for pi in range(len(s.points))]
    median = " ".join(f"{x:.2f},{y_of(p.value):.2f}" for x, p in zip(xs, s.points))
    upper = [f"{x:.2f},{y_of(p.ci_high if p.ci_high is not None else p.value):.2f}"
             for x, p in zip(xs, s.points)]
    lower = [f"{x:.2f},{y_of(p.ci_low if p.ci_low is not None else p.value):.2f}"
             for x, p in zip(xs, s.points)]
    return {
        "label": f"{s.fingerprint.get('label', '')}",
        "key": s.fingerprint.get("key"),
        "color": PALETTE[si % len(PALETTE)],
        "median": median,
        "band": " ".join(upper + lower[::-1]),
        "points": [{"x": round(x, 2), "y": round(y_of(p.value), 2), "title": _title(p, measure)}
                   for x, p in zip(xs, s.points)],
    }


def _change_point_marks(si: int, s: Series, x_of: dict, plot: dict, measure: str) -> list[dict]:
    """A vertical mark between the two points of each change point of the series ``si``."""
    _, _, fmt_value, fmt_ratio = MEASURE_AXES.get(measure, MEASURE_AXES["time"])
    marks = []
    for c in s.change_points:
        x = (x_of[(si, c.index - 1)] + x_of[(si, c.index)]) / 2
        prs = ", ".join(f"#{p['number']}" for p in c.prs)
        title = (f"change point {c.commit_range}: {fmt_value(c.before)} → {fmt_value(c.after)} "
                 f"({fmt_ratio(c.ratio)}, p = {c.p_value:.3g})" + (f" · PRs {prs}" if prs else ""))
        marks.append({"x": round(x, 2), "y1": plot["y"], "y2": plot["y"] + plot["h"],
                      "cls": "regression" if c.ratio > 1 else "improvement",
                      "title": title, "label": fmt_ratio(c.ratio)})
    return marks


def _fingerprint_marks(series: Sequence[Series], events: list[tuple],
                       fingerprint_changes: Sequence[dict], plot: dict, slot: float) -> list[dict]:
    """A mark where each environment change's new series starts (at its first point's slot);
    none for a change whose series is not drawn."""
    first_index: dict = {}
    for i, e in enumerate(events):
        if e[1] == 0:
            first_index.setdefault(series[e[2]].fingerprint.get("key"), i)
    labels = {s.fingerprint.get("key"): s.fingerprint.get("label") for s in series}
    marks = []
    for change in fingerprint_changes:
        i = first_index.get(change["fingerprint"])
        if i is None:
            continue
        was = labels.get(change.get("previous"), "another environment")
        marks.append({
            "x": round(plot["x"] + i * slot, 2),
            "title": f"environment changed at {(change.get('sha') or '?')[:12]}: now "
                     f"{labels.get(change['fingerprint'])} (was {was}); a new series starts here"})
    return marks
