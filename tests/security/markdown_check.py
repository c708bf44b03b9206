"""What a Markdown text (a PR comment, a check-run summary, a job summary) does once GitHub
renders it: its block structure, and everything live in it.

Parsed with markdown-it-py (CommonMark + GFM tables + strikethrough, as GitHub renders), raw
HTML with the standard library's ``html.parser``. GitHub's own additions to rendered text
(mentions, ``#123`` references, bare-URL and e-mail autolinks) are looked for in every text
node that is not code, the way GitHub's filters skip ``code``/``pre``.

:func:`inspect` returns an :class:`Inspection`: ``problems`` (every live mention, image,
link or reference not explicitly allowed, every HTML tag other than perfgate's own, unbalanced
``<details>``, an unclosed fence, a table row with more or fewer cells than its header, a
mermaid label outside quotes) and ``skeleton`` (the block structure, which must not depend on
the text of untrusted values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

#: perfgate's own raw HTML in Markdown documents.
ALLOWED_TAGS = frozenset({"details", "summary", "b", "sub"})

_MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
_EMAIL = re.compile(r"[\w.+-]@[A-Za-z0-9-]")
_URL = re.compile(r"(?i)\b(?:https?|ftp)://[^\s<>]*|\bwww\.[^\s<>]*")
_REFERENCE = re.compile(r"(?<![\w&])#[0-9]")
_MERMAID_AXIS = re.compile(r'^\s*x-axis \[(?:"[^"`\n\[\]]*"(?:, )?)*\]\s*$')

_PARSER = MarkdownIt("commonmark").enable("table").enable("strikethrough")


@dataclass
class Inspection:
    problems: list[str] = field(default_factory=list)
    skeleton: list[tuple] = field(default_factory=list)


@dataclass
class _Allowed:
    links: tuple[str, ...]
    mentions: frozenset[str]
    references: frozenset[str]


class _HTML(HTMLParser):
    def __init__(self, report: "_Walker"):
        super().__init__(convert_charrefs=True)
        self.report = report

    def handle_starttag(self, tag, attrs):
        self.report.tag(tag, attrs, opening=True)

    def handle_startendtag(self, tag, attrs):
        self.report.tag(tag, attrs, opening=True)
        self.report.tag(tag, attrs, opening=False)

    def handle_endtag(self, tag):
        self.report.tag(tag, [], opening=False)

    def handle_data(self, data):
        self.report.text(data, "html")

    def handle_comment(self, data):
        if data.strip() != "perfgate" and not _REPLY_MARK.fullmatch(data.strip()):
            self.report.problems.append(f"HTML comment {data!r}")


#: The hidden mark of a reply (``bot.app.job.effects.post_reply``): a digest and a step number only.
_REPLY_MARK = re.compile(r"perfgate-reply [0-9a-f]{20}/[0-9]+")


class _Walker:
    def __init__(self, allowed: _Allowed):
        self.allowed = allowed
        self.problems: list[str] = []
        self.skeleton: list[tuple] = []
        self.depth = 0

    def tag(self, tag: str, attrs, opening: bool) -> None:
        if tag not in ALLOWED_TAGS or attrs:
            self.problems.append(f"HTML tag <{'' if opening else '/'}{tag}> {attrs or ''}")
        self.skeleton.append(("tag", tag, opening))
        if tag == "details":
            self.depth += 1 if opening else -1
            if self.depth < 0:
                self.problems.append("</details> closes an element it did not open")
                self.depth = 0

    def text(self, text: str, where: str) -> None:
        for m in _MENTION.finditer(text):
            name = re.match(r"@([\w/-]+)", text[m.start():]).group(1)
            if name not in self.allowed.mentions:
                self.problems.append(f"live mention {text[m.start():m.start() + 30]!r} in {where}")
        for m in _EMAIL.finditer(text):
            self.problems.append(f"e-mail autolink {text[max(0, m.start() - 10):m.end() + 10]!r} in {where}")
        for m in _URL.finditer(text):
            if not m.group(0).startswith(self.allowed.links) or not self.allowed.links:
                self.problems.append(f"bare URL {m.group(0)[:60]!r} in {where}")
        for m in _REFERENCE.finditer(text):
            ref = re.match(r"#[0-9]+", text[m.start():]).group(0)
            if ref not in self.allowed.references:
                self.problems.append(f"reference {ref!r} in {where}")

    def link(self, href: str) -> None:
        if not self.allowed.links or not href.startswith(self.allowed.links):
            self.problems.append(f"link to {href[:80]!r}")


def _pipes(line: str) -> int:
    """Cell separators of a GFM table row: ``|`` not preceded by a backslash (cmark-gfm)."""
    return sum(1 for i, ch in enumerate(line) if ch == "|" and (i == 0 or line[i - 1] != "\\"))


def inspect(markdown: str, *, links: tuple[str, ...] = (), mentions: frozenset[str] = frozenset(),
            references: frozenset[str] = frozenset()) -> Inspection:
    """Parse ``markdown`` and report what it does when rendered.

    Args:
        links: URL prefixes of links perfgate itself writes (details page, history pages).
        mentions: logins perfgate mentions on purpose (``@maintainer`` in a refusal).
        references: ``#N`` perfgate writes on purpose.
    """
    walker = _Walker(_Allowed(tuple(links), frozenset(mentions), frozenset(references)))
    lines = markdown.split("\n")
    tokens = _PARSER.parse(markdown)
    for token in tokens:
        if token.type == "inline":
            _inline(token.children or [], walker)
            continue
        if token.type in ("html_block",):
            _HTML(walker).feed(token.content)
            continue
        if token.type == "fence":
            walker.skeleton.append(("fence", token.info.strip()))
            if token.info.strip() not in ("", "mermaid"):
                walker.problems.append(f"fence with info {token.info!r}")
            if token.info.strip() == "mermaid":
                axis = [ln for ln in token.content.splitlines() if ln.strip().startswith("x-axis")]
                if len(axis) != 1 or not _MERMAID_AXIS.match(axis[0]):
                    walker.problems.append(f"mermaid x-axis {axis!r}")
            end = token.map[1] - 1 if token.map else -1
            closing = lines[end].strip() if 0 <= end < len(lines) else ""
            if not (closing and set(closing) == {token.markup[0]} and len(closing) >= len(token.markup)
                    and end > token.map[0]):
                walker.problems.append("fence not closed")
            continue
        if token.type == "table_open" and token.map:
            rows = [ln for ln in lines[token.map[0]:token.map[1]] if ln.strip()]
            header = _pipes(rows[0])
            for row in rows[2:]:
                if _pipes(row) != header:
                    walker.problems.append(f"table row with {_pipes(row)} separators, header {header}: {row[:80]!r}")
        if token.type == "code_block":
            walker.problems.append("indented code block")
        if token.nesting != 0 or token.type in ("hr",):
            walker.skeleton.append((token.type, token.tag))
    if walker.depth != 0:
        walker.problems.append(f"{walker.depth} <details> left open")
    return Inspection(walker.problems, walker.skeleton)


def _inline(children, walker: _Walker) -> None:
    in_link = 0
    for child in children:
        if child.type == "text" and not in_link:
            walker.text(child.content, "text")
        elif child.type == "link_open":
            walker.link(child.attrGet("href") or "")
            in_link += 1
        elif child.type == "link_close":
            in_link -= 1
        elif child.type == "image":
            walker.problems.append(f"image {child.attrGet('src')!r}")
        elif child.type == "html_inline":
            _HTML(walker).feed(child.content)
