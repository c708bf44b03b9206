"""Markdown: the PR comment, the job summary and ``report.md`` (``templates/report.md.j2``,
which starts with the ``<!-- perfgate -->`` marker), trimmed to a size when asked."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..escape import md_text
from ..templating import environment, template_context
from .base import ReportFormat


def render(results: dict, *, max_chars: int | None = None, details_url: str | None = None,
           **_options: Any) -> str:
    """``results`` as Markdown.

    Args:
        max_chars: trim to at most this many characters: the details first, then the table's
            rows, then a cut at a line outside every block (:func:`cut_markdown`), linking
            ``details_url`` for the rest; None: the whole report. GitHub's limits are
            :data:`runner.report.render.COMMENT_LIMIT` and ``SUMMARY_LIMIT``.
        details_url: where the full report lives (the run page or the workflow run).
    """
    ctx = template_context(results, details_url, None)
    template = environment().get_template("report.md.j2")
    text = template.render(**ctx, detail=True, row_limit=None)
    if max_chars is None or len(text) <= max_chars:
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
    escaped text inside is never a closing fence), a ``<details>`` element opens at the start
    of a line and its ``</details>`` stands on a line of its own, outside fences (untrusted text
    can hold the tag only inside a code span, where it is text). "" when not even the first
    line fits.
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
            # the templates' own tags: an element opens at the start of a line and closes on a
            # line of its own; a tag inside a code span (a benchmark's name) is text
            depth += stripped.startswith("<details") - (stripped == "</details>")
        if total > limit:
            break
        if not fence and depth <= 0:
            best = pos
    return text[:best]


FORMAT = ReportFormat(name="md", file="report.md", escape=md_text, render=render)
