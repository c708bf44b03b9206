"""Render a results.json document in any registered format (:mod:`.formats`: Markdown, HTML, the
terminal's text) and write the reports beside it; the sticky comment's marker and GitHub's size
limits.

Everything here reads the results document alone, so a stored result re-renders after an
upgrade (``perfgate report``) and the App uses it without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from markupsafe import Markup

from .formats import get, names, written

MARKER = "<!-- perfgate -->"


def written_by(login: str | None, author: str | None, account_type: str | None = None) -> bool:
    """Whether a comment by ``login`` (None: no user) is ``author``'s; with no ``author`` login
    known (None: an App that has not learnt its bot's), any bot account's (``account_type``
    "Bot")."""
    return login is not None and (login == author or (author is None and account_type == "Bot"))


def is_sticky(body: str | None, login: str | None, author: str | None,
              account_type: str | None = None) -> bool:
    """Whether a PR comment is perfgate's sticky one: its body starts with :data:`MARKER` (blanks
    before it aside) and :func:`written_by` says it is ``author``'s. The App's gateway and the
    Action's standalone comment look it up with this."""
    return (body or "").lstrip().startswith(MARKER) and written_by(login, author, account_type)

#: GitHub rejects comment bodies over 65,536 characters (GITHUB.md).
COMMENT_LIMIT = 65_536
#: ``$GITHUB_STEP_SUMMARY`` holds at most 1 MiB per step.
SUMMARY_LIMIT = 1_048_576


def render(results: dict, fmt: str = "md", *, max_chars: int | None = None, details_url: str | None = None,
           banner: Markup | None = None) -> str:
    """Render ``results`` in the registered format ``fmt``: ``md`` (starts with the ``<!--
    perfgate -->`` marker), ``html`` (self-contained page) or ``term`` (plain text table).

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
    try:
        chosen = get(fmt)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r} ({', '.join(names())})") from None
    return chosen.render(results, max_chars=max_chars, details_url=details_url, banner=banner)


def write_reports(results: dict, folder: Path, formats: Iterable[str] | None = None) -> None:
    """The file of each registered format that has one (:func:`.formats.written`: ``report.md``,
    ``report.html``), or of the named ``formats`` only, rendered from ``results`` into
    ``folder``, beside its ``results.json``: what ``perfgate compare`` writes, ``perfgate run``
    and ``bisect`` (Markdown only) and the Action's publish step (from the document it validated).
    ``report.md`` is the comment's form within :data:`COMMENT_LIMIT` (a 1,000-benchmark suite
    wrote 256,920 characters, which no comment takes; issue 47); ``report.html`` has everything.

    Raises:
        ValueError: a named format that is unknown or has no file.
    """
    chosen = written() if formats is None else tuple(get(name) for name in formats)
    for fmt in chosen:
        if fmt.file is None:
            raise ValueError(f"the {fmt.name} format is printed, not written")
        text = render(results, fmt.name, max_chars=COMMENT_LIMIT)  # md only reads max_chars
        (folder / fmt.file).write_text(text, "utf-8")
