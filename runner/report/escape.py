"""Untrusted text made inert for each place perfgate shows it: one function per output context.

Benchmark names (function names plus the PR's ``params`` values), error text, hint and intent
text, environment strings, refs, profile names — every string of a results document — come
from code and text a pull request controls. Wherever such a value is written, it goes through
the function for that context, so it is shown as the same characters and nothing else:

=====================  ===================================================================
:func:`md_text`        inline Markdown text (a paragraph, a list item, a table cell)
:func:`md_code`        an inline code span (a fence longer than any backtick run inside)
:func:`md_cell`        a Markdown fragment placed in a table cell (pipes escaped)
:func:`md_html`        text inside the raw HTML of a Markdown document (``<summary>``)
:func:`md_fence`       a fenced code block (a fence longer than any backtick run inside)
:func:`mermaid_label`  a label of a mermaid chart (an allow-list of characters)
:func:`plain`          one line of plain text (check-run titles, stored headlines)
:func:`term`           text for a rich console (markup escaped, control characters removed)
:func:`safe_link`      a URL rendered as a link: only ``https://`` under an allowed base
=====================  ===================================================================

GitHub adds features to rendered text that the Markdown grammar does not cover: ``@user`` and
``@org/team`` mentions notify, ``#123`` cross-references an issue, bare ``https://`` and
``www.`` text becomes a link (GitHub Flavored Markdown's autolink extension). :func:`neutralize`
breaks each of those with a zero-width space (U+200B) after ``@``/``#`` and inside ``://`` and
``www.``; the text reads the same. Code spans and fenced blocks need no such change (GitHub
neither links nor mentions inside code). HTML pages are escaped by jinja2's autoescape
(markupsafe) instead.

Sources: CommonMark 0.31 (code spans §6.1, fenced code blocks §4.5, backslash escapes §2.4,
HTML blocks §4.6), GitHub Flavored Markdown 0.29 (tables §4.10, autolinks §6.9),
GitHub's docs "Basic writing and formatting syntax" (mentions, references).

Imports nothing heavy (the bot and the Action use it without torch).
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

#: Zero-width space: breaks a mention, reference or autolink without changing the text shown.
ZWSP = "\u200b"

# C0/C1 controls except TAB/LF/CR (handled per context), DEL, and the bidirectional
# overrides/isolates that can make text display in another order than it is stored.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
_LINE_BREAK = re.compile("\r\n|[\r\n\t\x85\u2028\u2029]")
_BACKTICKS = re.compile("`+")

_MENTION = re.compile("@")
_REFERENCE = re.compile(r"#(?=[0-9])")
_SCHEME = re.compile("://")
_WWW = re.compile(r"(?i)(www)\.")

# Inline Markdown: the characters that start an emphasis, code span, link or image (``[``,
# ``]``: without them ``(``/``!`` are plain), strikethrough, math or an escape are
# backslash-escaped; those that start HTML, an entity or a table cell become character
# references (which also hold inside table cells). An underscore between two letters or
# digits can neither open nor close emphasis (CommonMark §6.2) and stays as it is.
_MD_INLINE = str.maketrans({
    "\\": "\\\\", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]", "~": "\\~", "$": "\\$",
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;",
})
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# Block syntax at the start of a line: heading, bullet list, thematic break or setext
# underline (``#``, ``+``, ``-``, ``=``); an ordered list marker (``1.``/``1)`` then a space).
_LINE_START = re.compile(r"^(?:([#+=-])|([0-9]+)([.)])(?=\s|$))")

_MERMAID_KEEP = set(" _-=.,:/+*%")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: Any) -> str:
    """``value`` as text (None is ``""``) that can be encoded: a lone surrogate (JSON's
    ``"\\ud800"`` decodes to one) becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", "" if value is None else str(value))


def encodable(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD and control characters dropped (C0 but
    TAB/LF/CR, DEL, C1, bidirectional overrides: an HTML page or Markdown file viewed with
    ``cat`` or ``less -r`` must not drive the terminal; security review N9) if it is a string (a
    :class:`markupsafe.Markup` stays one), else unchanged: jinja2's ``finalize`` for every
    template."""
    if not isinstance(value, str) or not (_SURROGATE.search(value) or _CONTROL.search(value)):
        return value
    return type(value)(_CONTROL.sub("", _SURROGATE.sub("\ufffd", value)))


def one_line(value: Any) -> str:
    """``value`` on one line: line breaks and tabs become spaces, control characters and
    bidirectional overrides are dropped."""
    return _CONTROL.sub("", _LINE_BREAK.sub(" ", _text(value)))


def neutralize(text: str) -> str:
    """Break GitHub's mentions (``@``), issue references (``#1``) and autolinks (``://``,
    ``www.``) with a zero-width space; nothing else changes."""
    text = _MENTION.sub("@" + ZWSP, text)
    text = _REFERENCE.sub("#" + ZWSP, text)
    text = _SCHEME.sub(":" + ZWSP + "//", text)
    return _WWW.sub(r"\1" + ZWSP + ".", text)


def md_text(value: Any) -> str:
    """Untrusted text as inline Markdown that renders as the same characters: on one line,
    Markdown and HTML syntax escaped, mentions, references and autolinks broken. Contains no
    ``|``, so it is also a valid table cell."""
    text = _UNDERSCORE.sub(r"\\_", neutralize(one_line(value)).translate(_MD_INLINE))
    return _LINE_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), text)


def md_code(value: Any) -> str:
    """Untrusted text as an inline code span: one line, delimited by a backtick run longer than
    any inside it (padded with spaces where the text starts or ends with a backtick or space,
    which CommonMark strips again). ``""`` for empty text. In a table cell use :func:`md_cell`
    on the result."""
    text = one_line(value)
    if not text:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text[0] in "` " or text[-1] in "` ":
        text = f" {text} "
    return f"{fence}{text}{fence}"


def md_cell(fragment: Any) -> str:
    """A Markdown fragment (already escaped for its own context, e.g. :func:`md_code`) made
    safe as one table cell: every ``|`` escaped (GFM keeps ``\\|`` inside code spans of a cell
    and shows ``|``), on one line."""
    return one_line(fragment).replace("|", "\\|")


def md_html(value: Any) -> str:
    """Untrusted text inside raw HTML of a Markdown document (``<summary>``, ``<b>``): HTML
    escaped, on one line (a blank line would end the HTML block and start Markdown), mentions,
    references and autolinks broken."""
    return html.escape(neutralize(one_line(value)), quote=True)


def md_fence(value: Any, info: str = "") -> str:
    """Untrusted text as a fenced code block: the fence is a backtick run longer than any in
    the text (at least three), so no line inside can close it. Line endings become ``\\n``,
    control characters other than tab are dropped. ``info`` is the info string (trusted)."""
    text = _CONTROL.sub("", _text(value).replace("\r\n", "\n").replace("\r", "\n"))
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def mermaid_label(value: Any, limit: int = 40) -> str:
    """Text for a quoted label of a mermaid chart: letters, digits, spaces and ``_-=.,:/+*%``
    kept, anything else (quotes, backticks, brackets, ``#``/``;`` of mermaid's entity syntax,
    control characters) becomes a space; runs of spaces collapse; cut to ``limit``
    characters; ``"?"`` when nothing is left."""
    kept = "".join(ch if ch in _MERMAID_KEEP or unicodedata.category(ch)[0] in "LN" else " "
                   for ch in one_line(value))
    return " ".join(kept.split())[:limit].strip() or "?"


def plain(value: Any, limit: int | None = None) -> str:
    """One line of plain text (a check run's title, a stored headline): line breaks become
    spaces, control characters dropped, cut to ``limit`` characters with ``…``."""
    text = one_line(value).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def term(value: Any, markup: bool = True) -> str:
    """Text for a terminal through rich: control characters (ANSI escape sequences start with
    one) dropped, line breaks kept; rich markup (``[red]``) escaped unless ``markup`` is False
    (for ``console.print(..., markup=False)``)."""
    text = _CONTROL.sub("", _text(value).replace("\r\n", "\n").replace("\r", "\n"))
    if not markup:
        return text
    from rich.markup import escape

    return escape(text)


def safe_link(url: Any, base: str | None) -> str | None:
    """``url`` if it may be rendered as a link target, else None: an ``https://`` URL under
    ``base`` (e.g. ``https://github.com``; its scheme and host must match and the path must
    start with base's path + ``/``), without whitespace, control characters, quotes, angle
    brackets or backslashes. Everything else (``javascript:``, ``data:``, other hosts,
    ``http://``) is None."""
    if not isinstance(url, str) or not base:
        return None
    if any(ch.isspace() or ch in "\"'<>\\`" or unicodedata.category(ch)[0] == "C" for ch in url):
        return None
    try:
        parts, allowed = urlsplit(url), urlsplit(base.rstrip("/"))
    except ValueError:
        return None
    if parts.scheme != "https" or allowed.scheme != "https" or parts.username or parts.password:
        return None
    if parts.netloc.lower() != allowed.netloc.lower() or not parts.path.startswith(allowed.path + "/"):
        return None
    return url
