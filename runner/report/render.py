"""Render a results.json document: Markdown (PR comment, job summary) and HTML.

Everything here reads the results document alone, so a stored result re-renders after an
upgrade (``perfgate report``) and the App uses it without torch. Text comes from the jinja2
templates beside this module; values reach them through the filters of :mod:`.escape` (Markdown)
or autoescaping (HTML), numbers through :mod:`.units`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import jinja2
from markupsafe import Markup, escape

from . import escape as esc
from .measures import memory_cell
from .plots import MAX_DRAWN, mermaid_chart, paired_plot_svg
from .terminal import render_terminal
from .units import fmt_bytes, fmt_change, fmt_interval, fmt_pct, fmt_quantity, fmt_time, short_sha
from .sweeps import sweep_svg
from .view import TABLE_NOTE, VERDICT_ICON, change_text, head_time, interval_text, value_text, view

MARKER = "<!-- perfgate -->"


def written_by(login: str | None, author: str | None, account_type: str | None = None) -> bool:
    """Whether a comment by ``login`` (None: no user) is ``author``'s; with no ``author`` login
    known (None: an App that has not learnt its bot's), any bot account's (``account_type`` "Bot")."""
    return login is not None and (login == author or (author is None and account_type == "Bot"))


def is_sticky(body: str | None, login: str | None, author: str | None, account_type: str | None = None) -> bool:
    """Whether a PR comment is perfgate's sticky one: its body starts with :data:`MARKER` (blanks
    before it aside) and :func:`written_by` says it is ``author``'s. The App's gateway and the
    Action's standalone comment look it up with this."""
    return (body or "").lstrip().startswith(MARKER) and written_by(login, author, account_type)

#: GitHub rejects comment bodies over 65,536 characters (GITHUB.md).
COMMENT_LIMIT = 65_536
#: ``$GITHUB_STEP_SUMMARY`` holds at most 1 MiB per step.
SUMMARY_LIMIT = 1_048_576
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



@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The jinja2 environment over ``runner/templates`` with perfgate's filters.

    ``*.html.j2`` templates are autoescaped (markupsafe). Markdown templates pass every value
    from the document through the filter of its context (:mod:`runner.report.escape`): ``text``
    (inline text), ``code`` (code span), ``cell`` (a fragment in a table cell),
    ``inline_html`` (text in raw HTML such as ``<summary>``), ``fence`` (fenced block).
    """
    env = jinja2.Environment(loader=jinja2.PackageLoader("runner.report", "templates"),
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                                                 default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.ChainableUndefined, finalize=esc.encodable)
    env.filters.update(time=fmt_time, change=fmt_change, quantity=fmt_quantity, interval=fmt_interval, bytes=fmt_bytes,
                       pct=fmt_pct, sha=short_sha, icon=lambda v: VERDICT_ICON.get(v, ""),
                       e=html_escape, escape=html_escape, error_tail=error_tail,
                       text=esc.md_text, code=esc.md_code, cell=esc.md_cell, inline_html=esc.md_html,
                       fence=esc.md_fence)
    env.globals.update(paired_plot_svg=paired_plot_svg, mermaid_chart=mermaid_chart, head_time=head_time,
                       table_note=TABLE_NOTE, value_text=value_text, change_text=change_text,
                       interval_text=interval_text, sweep_svg=sweep_svg, memory_cell=memory_cell)
    return env



def render(results: dict, fmt: str = "md", *, max_chars: int | None = None, details_url: str | None = None,
           banner: Markup | None = None) -> str:
    """Render ``results`` as ``md`` (starts with the ``<!-- perfgate -->`` marker), ``html``
    (self-contained page) or ``term`` (plain text table).

    Args:
        max_chars: markdown only: trim to fit (details first, then table rows), linking
            ``details_url`` for the rest; GitHub's limits are :data:`COMMENT_LIMIT` and
            :data:`SUMMARY_LIMIT`.
        details_url: where the full report lives (the run page or the workflow run).
        banner: html only: markup the caller rendered (and escaped) itself, shown above the
            report in the page's ``banner`` block (the App's run page puts the run's facts there).

    Raises:
        ValueError: an unknown format.
    """
    if fmt == "term":
        return render_terminal(results)
    if fmt not in ("md", "html"):
        raise ValueError(f"unknown format {fmt!r} (md, html, term)")
    ctx = view(results)
    ctx["details_url"] = details_url
    ctx["banner"] = banner if fmt == "html" else None
    # the HTML page draws at most PAGE_DRAWN rounds in all (at least 20 per benchmark)
    ctx["most_drawn"] = min(MAX_DRAWN, max(20, PAGE_DRAWN // max(1, len(ctx["benches"]))))
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


def write_reports(results: dict, folder: Path, formats: Iterable[str] = ("md", "html")) -> None:
    """``report.md`` and ``report.html`` (each of ``formats``) of ``results`` in ``folder``, beside
    its ``results.json``: what ``perfgate compare`` writes, ``perfgate run`` and ``bisect``
    (Markdown only) and the Action's publish step (from the document it validated)."""
    for fmt in formats:
        (folder / f"report.{fmt}").write_text(render(results, fmt), "utf-8")



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


