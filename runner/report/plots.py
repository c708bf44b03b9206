"""Pictures of a result, inline and offline: the paired-sample SVG and the mermaid bar chart."""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

from markupsafe import Markup

from ..results import change_of
from . import escape as esc
from .units import fmt_time, is_number


#: The most rounds drawn per panel: beyond a few hundred the dots only overlap, and a page's
#: size and time stay bounded whatever the document holds.
MAX_DRAWN = 300
#: The panels' margin (SVG user units).
_PAD = 36


def paired_plot_svg(base: list[float], head: list[float], threshold: float, width: int = 560,
                    height: int = 220, pairs: list[dict] | None = None, most: int = MAX_DRAWN) -> Markup:
    """Inline SVG of one benchmark's paired samples: :func:`_samples_panel`, then
    :func:`_change_panel` where some rounds are paired.

    Args:
        base, head: seconds per call, paired by index (unpaired tails are drawn unjoined).
        threshold: practical threshold (fraction) drawn as the band.
        pairs: ``change.pairs`` (``{start, rounds, ratio, used}``), shaded in the right panel.
        most: the most rounds drawn per panel (evenly spaced: :func:`drawn`).

    Returns: the ``<svg>`` element as :class:`markupsafe.Markup` (every text in it a number
    formatted here, escaped), "" without samples. Values that are not finite and positive are
    drawn at the bottom, outside the scale and the ratios.
    """
    if not base and not head:
        return Markup("")
    parts = [f'<svg class="paired" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img">']
    parts += _samples_panel(base, head, width, height, most)
    if min(len(base), len(head)):
        parts += _change_panel(base, head, threshold, pairs, width, height, most)
    rounds = max(len(base), len(head))
    if rounds > most:
        parts.append(f'<text x="{width - 10}" y="{height - 8}" text-anchor="end" class="lbl">'
                     f'{most} of {rounds} rounds drawn</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _samples_panel(base: list[float], head: list[float], width: int, height: int,
                   most: int) -> list[str]:
    """The left panel's elements: every base and head sample (at most ``most`` of each, the scale
    from all of them) as a dot in seconds per call on a log scale, each pair joined by a line, so
    drift and outliers show."""
    pad, mid = _PAD, width // 2
    values = [v for v in base + head if _positive(v)]
    lo, hi = (min(values), max(values)) if values else (1.0, 1.0)
    if hi <= lo:
        lo, hi = lo * 0.95, hi * 1.05 + 1e-12

    def y_time(v: float) -> float:
        t = (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) if _positive(v) else 0.0
        return height - pad - t * (height - 2 * pad)

    xb, xh = pad + 30, mid - 40
    parts = [f'<text x="{xb}" y="{height - 8}" text-anchor="middle" class="lbl">base</text>',
             f'<text x="{xh}" y="{height - 8}" text-anchor="middle" class="lbl">head</text>',
             f'<text x="4" y="{pad - 12}" class="lbl">{html.escape(fmt_time(hi))}</text>',
             f'<text x="4" y="{height - pad + 14}" class="lbl">{html.escape(fmt_time(lo))}</text>']
    for i in drawn(min(len(base), len(head)), most):
        parts.append(f'<line class="pair" x1="{xb}" y1="{y_time(base[i]):.1f}" x2="{xh}" '
                     f'y2="{y_time(head[i]):.1f}"/>')
    for cls, x, series in (("b", xb, base), ("h", xh, head)):
        for i in drawn(len(series), most):
            v = series[i]
            jitter = ((i * 7919) % 17 - 8) * 0.8
            parts.append(f'<circle class="{cls}" cx="{x + jitter:.1f}" cy="{y_time(v):.1f}" r="2.5">'
                         f'<title>{cls == "b" and "base" or "head"} round {i + 1}: '
                         f'{html.escape(fmt_time(v))}</title></circle>')
    return parts


def _change_panel(base: list[float], head: list[float], threshold: float, pairs: Any,
                  width: int, height: int, most: int) -> list[str]:
    """The right panel's elements: the process pairs' stripes (:func:`_pair_stripes`, under the
    rest), the ±threshold band, and the change head/base of each paired round in percent as a
    dot naming its round and pair."""
    pad, mid = _PAD, width // 2
    n = min(len(base), len(head))
    ratios = [(head[i] / base[i] - 1.0) * 100 for i in range(n)
              if _positive(base[i]) and _positive(head[i])]
    ratios = [r for r in ratios if math.isfinite(r)]
    span = max([abs(r) for r in ratios]
               + [threshold * 100 * 1.5 if math.isfinite(threshold) else 0.0, 1.0])
    x0, x1 = mid + pad, width - 10

    def y_pct(p: float) -> float:
        return pad + (span - p) / (2 * span) * (height - 2 * pad)

    band_top, band_bottom = y_pct(threshold * 100), y_pct(-threshold * 100)
    step = (x1 - x0) / max(n, 1)
    pair_of, parts = _pair_stripes(pairs, n, x0, step, height)
    parts += [f'<rect class="band" x="{x0}" y="{band_top:.1f}" width="{x1 - x0}" '
              f'height="{band_bottom - band_top:.1f}"/>',
              f'<line class="zero" x1="{x0}" y1="{y_pct(0):.1f}" x2="{x1}" y2="{y_pct(0):.1f}"/>',
              f'<text x="{x0}" y="{pad - 12}" class="lbl">change per round, % '
              f'(band: ±{threshold * 100:g} %)</text>',
              f'<text x="{x1}" y="{y_pct(span) + 10:.1f}" text-anchor="end" class="lbl">'
              f'{span:+.1f} %</text>',
              f'<text x="{x1}" y="{y_pct(-span) - 2:.1f}" text-anchor="end" class="lbl">'
              f'{-span:+.1f} %</text>']
    for i in drawn(len(ratios), most):
        r = ratios[i]
        where = f", pair {pair_of[i]}" if i in pair_of else ""
        parts.append(f'<circle class="r" cx="{x0 + step * (i + 0.5):.1f}" cy="{y_pct(r):.1f}" '
                     f'r="2.5"><title>round {i + 1}{where}: {r:+.2f} %</title></circle>')
    return parts


def _pair_stripes(pairs: Any, n: int, x0: float, step: float,
                  height: int) -> tuple[dict[int, int], list[str]]:
    """``({round index: process pair number from 1}, stripes)``: each process pair's rounds shaded
    in turn, titled with the pair and its own change, so a pair that disagrees with the others
    shows (``n`` paired rounds, ``step`` units wide from ``x0``)."""
    pair_of, stripes = {}, []
    for k, p in enumerate(_valid_pairs(pairs, n)):
        for i in range(p["start"], min(n, p["start"] + p["rounds"])):
            pair_of[i] = k + 1
        own = f"{(p['ratio'] - 1) * 100:+.2f} %" if _positive(p.get("ratio")) else "–"
        cut = "" if p.get("used", True) else " (cut short: not in the estimate)"
        stripes.append(f'<rect class="pp{k % 2}" x="{x0 + step * p["start"]:.1f}" y="{_PAD}" '
                       f'width="{step * min(p["rounds"], n - p["start"]):.1f}" '
                       f'height="{height - 2 * _PAD}">'
                       f'<title>process pair {k + 1}: rounds {p["start"] + 1}–'
                       f'{p["start"] + p["rounds"]}, its own change {own}{cut}</title></rect>')
    return pair_of, stripes


def drawn(count: int, most: int = MAX_DRAWN) -> Sequence[int]:
    """Indices of the rounds to draw out of ``count``: all of them, or ``most`` evenly spaced
    ones (the first and the last included)."""
    if count <= most:
        return range(count)
    return sorted({round(k * (count - 1) / (most - 1)) for k in range(most)})


def _valid_pairs(pairs: Any, rounds: int) -> list[dict]:
    """The well-formed entries of ``change.pairs`` within ``rounds`` (stored data: checked)."""
    if not isinstance(pairs, list):
        return []
    return [p for p in pairs if isinstance(p, dict) and isinstance(p.get("start"), int)
            and isinstance(p.get("rounds"), int) and 0 <= p["start"] < rounds and p["rounds"] > 0]


def _positive(v: Any) -> bool:
    """A finite number > 0 (a sample that can be drawn on the log scale)."""
    return is_number(v) and math.isfinite(v) and v > 0



def mermaid_chart(benchmarks: list[dict], limit: int = 30) -> str:
    """A mermaid ``xychart-beta`` bar chart of the % change per benchmark ("" if nothing to draw).

    GitHub renders mermaid code blocks in comments and job summaries. At most ``limit`` bars,
    the largest changes first; labels through :func:`runner.report.escape.mermaid_label`.
    """
    ratios = [(b["name"], change_of(b).get("ratio")) for b in benchmarks]
    rows = [(name, (ratio - 1.0) * 100.0) for name, ratio in ratios if is_number(ratio) and math.isfinite(ratio)]
    rows = [(name, pct) for name, pct in rows if math.isfinite(pct)]
    if not rows:
        return ""
    rows.sort(key=lambda r: -abs(r[1]))
    rows = rows[:limit]
    span = max(5.0, math.ceil(max(abs(r[1]) for r in rows) / 5.0) * 5.0)
    labels = ", ".join(f'"{esc.mermaid_label(name)}"' for name, _ in rows)
    values = ", ".join(f"{pct:.2f}" for _, pct in rows)
    return ("```mermaid\nxychart-beta\n"
            '    title "Change in time per call, head vs base (%; > 0 is slower)"\n'
            f"    x-axis [{labels}]\n"
            f'    y-axis "% change" {-span:g} --> {span:g}\n'
            f"    bar [{values}]\n```")


