"""Render a results.json document: markdown (PR comment, job summary), HTML, terminal.

Everything here reads the results document alone, so a stored result re-renders after an
upgrade (``perfgate report``) and the bot can use it without torch. Text comes from jinja2
templates in ``runner/templates``; this module holds the formatting filters, the paired-sample
plot (inline SVG, no network) and the size trimming for GitHub's limits.
"""

from __future__ import annotations

import html
import math
import re
from functools import lru_cache
from typing import Any, Callable

import jinja2
from markupsafe import Markup, escape

from . import doctor
from . import escape as esc
from .intent import intent_vs_impact

MARKER = "<!-- perfgate -->"

#: GitHub rejects comment bodies over 65,536 characters (GITHUB.md).
COMMENT_LIMIT = 65_536
#: ``$GITHUB_STEP_SUMMARY`` holds at most 1 MiB per step.
SUMMARY_LIMIT = 1_048_576

VERDICT_ICON = {"regression": "🔴", "improvement": "🟢", "unchanged": "⚪", "inconclusive": "🟡",
                "failed": "❌", "new": "🆕", "removed": "➖"}
VERDICT_ORDER = {v: i for i, v in enumerate(["regression", "failed", "improvement", "inconclusive", "new",
                                             "removed", "unchanged"])}


# -- formatting (jinja2 filters) -------------------------------------------------------------
def _number(x: Any) -> bool:
    """True for an int/float (not bool); jinja2's Undefined and None are not numbers."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt_time(seconds: float | None) -> str:
    """Seconds as a short human time with 3 significant digits: ``1.23 ms``, ``456 ns``."""
    if not _number(seconds) or math.isnan(seconds):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{seconds:.3g} s"  # pragma: no cover


def fmt_change(ratio: float | None) -> str:
    """A head/base ratio as a signed percentage of time: 1.302 → ``+30.2 %``."""
    if not _number(ratio):
        return "–"
    pct = (ratio - 1.0) * 100.0
    return f"{pct:+.1f} %" if abs(pct) >= 0.1 else f"{pct:+.2f} %"


def fmt_interval(low: float | None, high: float | None) -> str:
    """A ratio interval as percentages: ``[+28.0, +32.3] %``."""
    if not (_number(low) and _number(high)):
        return ""
    return f"[{(low - 1) * 100:+.1f}, {(high - 1) * 100:+.1f}] %"


def fmt_bytes(n: int | None) -> str:
    """Bytes with binary prefixes: ``12.0 MiB``."""
    if not _number(n):
        return "–"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def fmt_pct(fraction: float | None) -> str:
    """A fraction as a percentage: 0.02 → ``2 %``."""
    if not _number(fraction):
        return "–"
    return f"{fraction * 100:g} %"


def html_escape(value: Any) -> Markup:
    """HTML-escape a value (markupsafe: safe to use under autoescape, never escaped twice);
    None and jinja2's Undefined (a field an older result lacks) give ""."""
    if value is None or isinstance(value, jinja2.Undefined):
        return Markup("")
    return escape(value)


def short_sha(sha: Any) -> str:
    """The first 12 characters of a SHA ("" for None); escape the result for its context."""
    return (sha if isinstance(sha, str) else "")[:12]


def error_tail(text: Any, lines: int = 40, chars: int = 4000) -> str:
    """The end of an error text for a comment: its last ``lines`` lines and ``chars``
    characters (an error is told by its last lines; the comment stays within GitHub's limit
    with its structure whole). ``…`` marks a cut."""
    text = "" if text is None else str(text).rstrip()
    kept = "\n".join(text.splitlines()[-lines:])[-chars:]
    return kept if kept == text else "…\n" + kept


# -- the paired-sample plot ------------------------------------------------------------------
def paired_plot_svg(base: list[float], head: list[float], threshold: float, width: int = 560,
                    height: int = 220, pairs: list[dict] | None = None) -> Markup:
    """Inline SVG of one benchmark's paired samples.

    Left panel: every base sample and every head sample as a dot (seconds per call, log scale)
    with each pair joined by a line, so drift and outliers show. Right panel: the per-round
    change head/base in percent, with the ±threshold band shaded.

    Args:
        base, head: seconds per call, paired by index (unpaired tails are drawn unjoined).
        threshold: practical threshold (fraction) drawn as the band.
        pairs: ``change.pairs`` (``{start, rounds, ratio, used}``): the right panel shades each
            process pair's rounds in turn and names the pair and its own change, so a pair that
            disagrees with the others shows.

    Returns:
        the ``<svg>`` element as :class:`markupsafe.Markup` (every text in it is a number
        formatted here, escaped), "" without samples. Values that are not finite and
        positive are drawn at the bottom and left out of the scale and the ratios.
    """
    if not base and not head:
        return Markup("")
    pad, mid = 36, width // 2
    values = [v for v in base + head if _positive(v)]
    lo, hi = (min(values), max(values)) if values else (1.0, 1.0)
    if hi <= lo:
        lo, hi = lo * 0.95, hi * 1.05 + 1e-12

    def y_time(v: float) -> float:
        t = (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) if _positive(v) else 0.0
        return height - pad - t * (height - 2 * pad)

    parts = [f'<svg class="paired" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img">']
    xb, xh = pad + 30, mid - 40
    parts.append(f'<text x="{xb}" y="{height - 8}" text-anchor="middle" class="lbl">base</text>')
    parts.append(f'<text x="{xh}" y="{height - 8}" text-anchor="middle" class="lbl">head</text>')
    parts.append(f'<text x="4" y="{pad - 12}" class="lbl">{html.escape(fmt_time(hi))}</text>')
    parts.append(f'<text x="4" y="{height - pad + 14}" class="lbl">{html.escape(fmt_time(lo))}</text>')
    n = min(len(base), len(head))
    for i in range(n):
        parts.append(f'<line class="pair" x1="{xb}" y1="{y_time(base[i]):.1f}" x2="{xh}" y2="{y_time(head[i]):.1f}"/>')
    for cls, x, series in (("b", xb, base), ("h", xh, head)):
        for i, v in enumerate(series):
            jitter = ((i * 7919) % 17 - 8) * 0.8
            parts.append(f'<circle class="{cls}" cx="{x + jitter:.1f}" cy="{y_time(v):.1f}" r="2.5">'
                         f'<title>{cls == "b" and "base" or "head"} round {i + 1}: {html.escape(fmt_time(v))}</title></circle>')
    if n:
        ratios = [(head[i] / base[i] - 1.0) * 100 for i in range(n) if _positive(base[i]) and _positive(head[i])]
        ratios = [r for r in ratios if math.isfinite(r)]
        span = max([abs(r) for r in ratios] + [threshold * 100 * 1.5 if math.isfinite(threshold) else 0.0, 1.0])
        x0, x1 = mid + pad, width - 10

        def y_pct(p: float) -> float:
            return pad + (span - p) / (2 * span) * (height - 2 * pad)

        stripes_at = len(parts)  # the process pairs' stripes go under the band and the dots
        band_top, band_bottom = y_pct(threshold * 100), y_pct(-threshold * 100)
        parts.append(f'<rect class="band" x="{x0}" y="{band_top:.1f}" width="{x1 - x0}" height="{band_bottom - band_top:.1f}"/>')
        parts.append(f'<line class="zero" x1="{x0}" y1="{y_pct(0):.1f}" x2="{x1}" y2="{y_pct(0):.1f}"/>')
        parts.append(f'<text x="{x0}" y="{pad - 12}" class="lbl">change per round, % (band: ±{threshold * 100:g} %)</text>')
        parts.append(f'<text x="{x1}" y="{y_pct(span) + 10:.1f}" text-anchor="end" class="lbl">{span:+.1f} %</text>')
        parts.append(f'<text x="{x1}" y="{y_pct(-span) - 2:.1f}" text-anchor="end" class="lbl">{-span:+.1f} %</text>')
        step = (x1 - x0) / max(n, 1)
        pair_of, stripes = {}, []
        for k, p in enumerate(_valid_pairs(pairs, n)):
            for i in range(p["start"], min(n, p["start"] + p["rounds"])):
                pair_of[i] = k + 1
            own = f"{(p['ratio'] - 1) * 100:+.2f} %" if _positive(p.get("ratio")) else "–"
            stripes.append(f'<rect class="pp{k % 2}" x="{x0 + step * p["start"]:.1f}" y="{pad}" '
                         f'width="{step * min(p["rounds"], n - p["start"]):.1f}" height="{height - 2 * pad}">'
                         f'<title>process pair {k + 1}: rounds {p["start"] + 1}–{p["start"] + p["rounds"]}, '
                         f'its own change {own}{"" if p.get("used", True) else " (cut short: not in the estimate)"}'
                         f'</title></rect>')
        parts[stripes_at:stripes_at] = stripes
        for i, r in enumerate(ratios):
            where = f", pair {pair_of[i]}" if i in pair_of else ""
            parts.append(f'<circle class="r" cx="{x0 + step * (i + 0.5):.1f}" cy="{y_pct(r):.1f}" r="2.5">'
                         f'<title>round {i + 1}{where}: {r:+.2f} %</title></circle>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _valid_pairs(pairs: Any, rounds: int) -> list[dict]:
    """The well-formed entries of ``change.pairs`` within ``rounds`` (stored data: checked)."""
    if not isinstance(pairs, list):
        return []
    return [p for p in pairs if isinstance(p, dict) and isinstance(p.get("start"), int)
            and isinstance(p.get("rounds"), int) and 0 <= p["start"] < rounds and p["rounds"] > 0]


def _positive(v: Any) -> bool:
    """A finite number > 0 (a sample that can be drawn on the log scale)."""
    return _number(v) and math.isfinite(v) and v > 0


def head_time(bench: dict) -> float | None:
    """The head column of the tables: base's median times the estimated change where the
    benchmark was compared, so that base, head and change are one estimate (head's own median
    of all samples can disagree with the paired estimate over process pairs, and did by 11 %
    beside an identical median); head's own median otherwise (``new``, a single run)."""
    base = (bench.get("base") or {}).get("median")
    ratio = (bench.get("change") or {}).get("ratio")
    if _positive(base) and _positive(ratio):
        return base * ratio
    return (bench.get("head") or {}).get("median")


def conditions_line(environment: dict | None) -> str | None:
    """One sentence on what both workers ran under (plain text; escape for where it is shown):
    the CPU plan's note and the allocator, from ``environment.worker``; None for older results."""
    worker = (environment or {}).get("worker")
    if not isinstance(worker, dict) or not isinstance(worker.get("note"), str):
        return None
    line = f"Both sides ran {worker['note']}"
    if isinstance(worker.get("allocator"), str):
        line += f"; allocator {worker['allocator']}"
    if isinstance(worker.get("timer"), str):
        line += f"; {worker['timer']}"
    return line + "."


TABLE_NOTE = ("base is the median of base's samples; head is base × the change, the paired estimate over "
              "fresh process pairs, so the three columns agree (head's own median is in the HTML report)")


# -- mermaid ---------------------------------------------------------------------------------
def mermaid_chart(benchmarks: list[dict], limit: int = 30) -> str:
    """A mermaid ``xychart-beta`` bar chart of the % change per benchmark ("" if nothing to draw).

    GitHub renders mermaid code blocks in comments and job summaries. At most ``limit`` bars,
    the largest changes first; labels through :func:`runner.escape.mermaid_label`.
    """
    ratios = [(b["name"], (b.get("change") or {}).get("ratio")) for b in benchmarks]
    rows = [(name, (ratio - 1.0) * 100.0) for name, ratio in ratios if _number(ratio) and math.isfinite(ratio)]
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


# -- rendering -------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment over ``runner/templates`` with perfgate's filters.

    ``*.html.j2`` templates are autoescaped (markupsafe). Markdown templates pass every value
    from the document through the filter of its context (:mod:`runner.escape`): ``text``
    (inline text), ``code`` (code span), ``cell`` (a fragment in a table cell),
    ``inline_html`` (text in raw HTML such as ``<summary>``), ``fence`` (fenced block).
    """
    env = jinja2.Environment(loader=jinja2.PackageLoader("runner", "templates"),
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                                                 default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.ChainableUndefined, finalize=esc.encodable)
    env.filters.update(time=fmt_time, change=fmt_change, interval=fmt_interval, bytes=fmt_bytes,
                       pct=fmt_pct, sha=short_sha, icon=lambda v: VERDICT_ICON.get(v, ""),
                       e=html_escape, escape=html_escape, error_tail=error_tail,
                       text=esc.md_text, code=esc.md_code, cell=esc.md_cell, inline_html=esc.md_html,
                       fence=esc.md_fence)
    env.globals.update(paired_plot_svg=paired_plot_svg, mermaid_chart=mermaid_chart, head_time=head_time,
                       table_note=TABLE_NOTE)
    return env


def view(results: dict) -> dict:
    """The template context: the document plus derived, ordered views of it (pure)."""
    benches = sorted(results.get("benchmarks", []),
                     key=lambda b: (VERDICT_ORDER.get((b.get("change") or {}).get("verdict"), 99), b["name"]))
    changed = [b for b in benches if (b.get("change") or {}).get("verdict") in ("regression", "improvement")]
    failed = [b for b in benches if (b.get("change") or {}).get("verdict") == "failed"]
    summary = results.get("summary", {})
    parts = []
    for key in ("regression", "improvement", "inconclusive", "failed", "unchanged", "new", "removed"):
        n = summary.get(key) or 0
        if n:
            plural = "s" if n != 1 and key in ("regression", "improvement") else ""
            parts.append(f"{n} {key}{plural}")
    intent_view = intent_vs_impact(results.get("intent") or {}, results.get("benchmarks", []))
    settings = results.get("settings", {})
    env = results.get("environment", {})
    return {"r": results, "benches": benches, "changed": changed, "failed": failed,
            "headline": ", ".join(parts) or "no benchmarks", "settings": settings,
            "env": env, "intent_view": intent_view, "doctor_warning": doctor.failed_line(env.get("doctor")),
            "doctor_line": doctor.counts_line(env.get("doctor")),
            "ci_pct": f"{settings.get('ci_level', 0.95) * 100:.3g} %", "policy_note": policy_note(settings),
            "conditions": conditions_line(env)}


def policy_note(settings: dict) -> str | None:
    """One sentence when the head revision changed perfgate's configuration (pure): which known
    keys (the head's own key names are not echoed: they are the PR's text) and that the base's
    settings were used. None when it changed nothing."""
    from dataclasses import fields

    from .config import Config

    changed = settings.get("config_changed_by_head")
    if not isinstance(changed, list) or not changed:
        return None
    names = {f.name for f in fields(Config)}
    known = sorted({k for k in changed if isinstance(k, str) and k in names})
    others = len(changed) - len(known)
    what = ", ".join(known) + (f" and {others} other key(s)" if known and others else "")
    what = what or "its configuration"
    source = "the --config file" if settings.get("config_source") == "file" else "the base revision"
    return (f"This pull request changes perfgate's settings ({what}); it was measured with the settings of "
            f"{source}, not its own.")


def render(results: dict, fmt: str = "md", *, max_chars: int | None = None, details_url: str | None = None) -> str:
    """Render ``results`` as ``md`` (starts with the ``<!-- perfgate -->`` marker), ``html``
    (self-contained page) or ``term`` (plain text table).

    Args:
        max_chars: markdown only: trim to fit (details first, then table rows), linking
            ``details_url`` for the rest; GitHub's limits are :data:`COMMENT_LIMIT` and
            :data:`SUMMARY_LIMIT`.
        details_url: where the full report lives (the run page or the workflow run).

    Raises:
        ValueError: an unknown format.
    """
    if fmt == "term":
        return render_terminal(results)
    if fmt not in ("md", "html"):
        raise ValueError(f"unknown format {fmt!r} (md, html, term)")
    ctx = view(results)
    ctx["details_url"] = details_url
    template = environment().get_template(f"report.{fmt}.j2")
    if fmt == "html" or max_chars is None:
        return template.render(**ctx, detail=True, row_limit=None)
    text = template.render(**ctx, detail=True, row_limit=None)
    if len(text) <= max_chars:
        return text
    text = template.render(**ctx, detail=False, row_limit=None)
    rows = len(ctx["benches"])
    while len(text) > max_chars and rows > 5:
        rows = rows // 2
        text = template.render(**ctx, detail=False, row_limit=rows)
    if len(text) > max_chars:
        tail = f"\n\n… trimmed to fit; full report: {details_url or 'see the run artifacts'}\n"
        text = cut_markdown(text, max_chars - len(tail)) + tail
    return text


_FENCE = re.compile(r"^(`{3,})")


def cut_markdown(text: str, limit: int, size: Callable[[str], int] = len) -> str:
    """The longest prefix of ``text`` that ends at a line break outside every fenced code block
    and ``<details>`` element, of ``size`` at most ``limit`` (``size``: ``len`` for
    characters, or UTF-8 bytes). A cut there leaves the document's structure whole.

    Reads the structure perfgate's templates write: fences open at the start of a line (the
    escaped text inside is never a closing fence), ``<details>``/``</details>`` tags appear
    only outside fences (escaped text never contains them). "" when not even the first line
    fits.
    """
    fence, depth, pos, total, best = 0, 0, 0, 0, 0
    for line in re.findall(r"[^\n]*\n|[^\n]+\Z", text):
        pos += len(line)
        total += size(line)
        stripped = line.strip()
        if fence:
            if set(stripped) == {"`"} and len(stripped) >= fence:
                fence = 0
        elif (m := _FENCE.match(line)) is not None:
            fence = len(m.group(1))
        else:
            depth += line.count("<details") - line.count("</details>")
        if total > limit:
            break
        if not fence and depth <= 0:
            best = pos
    return text[:best]


def render_terminal(results: dict, width: int = 120) -> str:
    """The results as a rich table rendered to plain text (no colour codes)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    print_table(results, console)
    return buf.getvalue()


def print_table(results: dict, console) -> None:
    """Print the verdict table (benchmark, base, head, change with CI, verdict) on a rich console."""
    from rich.table import Table

    warning = doctor.failed_line((results.get("environment") or {}).get("doctor"))
    if results.get("base") is None:
        print_run_table(results, console)
        if warning:
            console.print(f"warning: {warning}", markup=False, highlight=False)
        return
    ctx = view(results)
    base, head = results.get("base") or {}, results.get("head") or {}
    title = f"perfgate: {ctx['headline']}"
    t = esc.term
    caption = (f"base {t(base.get('ref'))} ({t(short_sha(base.get('sha')))}) → head {t(head.get('ref'))} "
               f"({t(short_sha(head.get('sha')))}); change = head/base − 1, {ctx['ci_pct']} CI; threshold "
               f"±{fmt_pct(ctx['settings'].get('threshold'))}; {TABLE_NOTE}")
    if ctx["conditions"]:
        caption += f"\n{t(ctx['conditions'])}"
    table = Table(title=title, caption=caption)
    table.add_column("benchmark", overflow="fold")
    table.add_column("base", justify="right")
    table.add_column("head", justify="right")
    table.add_column("change", justify="right")
    table.add_column("CI", justify="right")
    table.add_column("verdict")
    styles = {"regression": "bold red", "improvement": "bold green", "failed": "red", "inconclusive": "yellow"}
    for b in ctx["benches"]:
        ch = b.get("change") or {}
        v = ch.get("verdict", "")
        table.add_row(t(b["name"]), fmt_time((b.get("base") or {}).get("median")),
                      fmt_time(head_time(b)), fmt_change(ch.get("ratio")),
                      fmt_interval(ch.get("ci_low"), ch.get("ci_high")), f"[{styles.get(v, '')}]{v}[/]" if v in styles else v)
    console.print(table)
    if warning:
        console.print(f"warning: {warning}", markup=False, highlight=False)
    for b in ctx["failed"]:
        for side in ("base", "head"):
            err = (b.get(side) or {}).get("error")
            if err:
                console.print(f"[red]{t(b['name'])} failed on {side}:[/]")
                console.print("  " + "\n  ".join(t(err, markup=False).splitlines()[-4:]), markup=False, highlight=False)
    for b in ctx["changed"]:
        for h in (b.get("hints") or [])[:3]:
            console.print(f"  {t(b['name'])}: \\[{t(h['kind'])}] {t(h['summary'])}", highlight=False)


def print_run_table(results: dict, console) -> None:
    """The table of a single-revision ``perfgate run``: median, its interval, samples, errors."""
    from rich.table import Table

    t = esc.term
    head = results.get("head") or {}
    level = (results.get("settings") or {}).get("ci_level", 0.95)
    table = Table(title=f"perfgate run: {len(results.get('benchmarks', []))} benchmarks at {t(head.get('ref'))} "
                        f"({t(short_sha(head.get('sha')))})",
                  caption=f"median time per call with its {level * 100:g} % confidence interval")
    for col, justify in (("benchmark", "left"), ("median", "right"), ("CI", "right"), ("samples", "right"),
                         ("error", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for b in sorted(results.get("benchmarks", []), key=lambda b: b["name"]):
        side = b.get("head") or {}
        ci = f"[{fmt_time(side.get('ci_low'))}, {fmt_time(side.get('ci_high'))}]" if side.get("ci_low") else ""
        err = (side.get("error") or "").strip().splitlines()
        table.add_row(t(b["name"]), fmt_time(side.get("median")), t(ci), str(len(side.get("samples") or [])),
                      t(err[-1]) if err else "")
    console.print(table)
