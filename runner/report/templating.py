"""The jinja2 side of the Markdown and HTML formats: the environment over ``templates/`` with
perfgate's filters, and the context every template is rendered with.

Text comes from the jinja2 templates beside this module; values reach them through the filters
of :mod:`.escape` (Markdown) or autoescaping (HTML), numbers through :mod:`.units`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from . import escape as esc
from .claims import claim_counts
from .measures import memory_cell
from .outputs import verdict_text
from .notes import evidence_rows, hint_label, why_heading, why_missing
from .plots import MAX_DRAWN, mermaid_chart, paired_plot_svg
from .sweeps import sweep_svg
from .units import (fmt_bytes, fmt_change_interval, fmt_interval, fmt_pct, fmt_quantity, fmt_time,
                    short_sha)
from .view import TABLE_NOTE, VERDICT_ICON, change_text, head_time, interval_text, value_text, view

#: Rounds the HTML report's plots draw in all, shared among its benchmarks (a page's size and
#: time bounded whatever the document holds).
PAGE_DRAWN = 6_000


def html_escape(value: Any) -> Markup:
    """HTML-escape a value (markupsafe: safe to use under autoescape, never escaped twice);
    None and jinja2's Undefined (a field an older result lacks) give ""."""
    if value is None or isinstance(value, jinja2.Undefined):
        return Markup("")
    return escape(value)


def error_tail(text: Any, lines: int = 40, chars: int = 4000) -> str:
    """The end of an error text for a comment: its last ``lines`` lines and ``chars``
    characters (an error is told by its last lines; the comment stays within GitHub's limit
    with its structure whole). ``…`` marks a cut."""
    text = "" if text is None else str(text).rstrip()
    kept = "\n".join(text.splitlines()[-lines:])[-chars:]
    return kept if kept == text else "…\n" + kept


def change_filter(ratio: Any, low: Any = None, high: Any = None) -> str:
    """The templates' ``change`` filter: ``ratio | change(ci_low, ci_high)``, in the form its
    interval reads in (:func:`.units.fmt_change_interval`; without one, by the ratio alone)."""
    return fmt_change_interval(ratio, low, high)[0]


def interval_filter(low: Any, high: Any, ratio: Any = None) -> str:
    """The templates' ``interval`` filter: ``ci_low | interval(ci_high, ratio)``, in the form of
    its estimate ``ratio`` (:func:`.units.fmt_interval`)."""
    return fmt_interval(low, high, ratio=ratio)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment over ``runner/templates`` with perfgate's filters.

    ``*.html.j2`` templates are autoescaped (markupsafe). Markdown templates pass every value
    from the document through the filter of its context (:mod:`runner.report.escape`): ``text``
    (inline text), ``code`` (code span), ``cell`` (a fragment in a table cell),
    ``inline_html`` (text in raw HTML such as ``<summary>``), ``fence`` (fenced block).
    """
    env = jinja2.Environment(loader=jinja2.PackageLoader("runner.report", "templates"),
                             autoescape=jinja2.select_autoescape(
                                 enabled_extensions=("html.j2",), default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.ChainableUndefined, finalize=esc.encodable)
    env.filters.update(time=fmt_time, change=change_filter, quantity=fmt_quantity,
                       interval=interval_filter, bytes=fmt_bytes, pct=fmt_pct, sha=short_sha,
                       icon=lambda v: VERDICT_ICON.get(v, ""),
                       e=html_escape, escape=html_escape, error_tail=error_tail,
                       text=esc.md_text, code=esc.md_code, cell=esc.md_cell,
                       inline_html=esc.md_html, fence=esc.md_fence)
    env.globals.update(paired_plot_svg=paired_plot_svg, mermaid_chart=mermaid_chart,
                       head_time=head_time, table_note=TABLE_NOTE, value_text=value_text,
                       change_text=change_text, interval_text=interval_text, sweep_svg=sweep_svg,
                       memory_cell=memory_cell, claim_counts=claim_counts,
                       verdict_text=verdict_text, hint_label=hint_label,
                       evidence_rows=evidence_rows,
                       why_heading=why_heading, why_missing=why_missing)
    return env


def intent_section(results: dict) -> dict:
    """The "Intent vs impact" section (:func:`runner.intent.impact.intent_vs_impact`) of a
    document that records an ``intent``; ``{"applicable": False}`` (nothing shown) for one that
    does not, or whose strategy no measured rule backs."""
    intent = results.get("intent")
    if not intent:
        return {"applicable": False}
    from ..intent.impact import intent_vs_impact

    return intent_vs_impact(intent, results.get("benchmarks", []))


def template_context(results: dict, details_url: str | None, banner: Markup | None) -> dict:
    """What ``report.md.j2`` and ``report.html.j2`` are rendered with: :func:`.view.view` of
    ``results``, its intent section, where the full report lives (``details_url``), the
    ``banner`` markup (None: none) and ``most_drawn``, the rounds each benchmark's plot may draw
    (the page draws at most :data:`PAGE_DRAWN` in all, at least 20 per benchmark)."""
    ctx = view(results)
    ctx["intent_view"] = intent_section(results)
    ctx["details_url"] = details_url
    ctx["banner"] = banner
    ctx["most_drawn"] = min(MAX_DRAWN, max(20, PAGE_DRAWN // max(1, len(ctx["benches"]))))
    return ctx
