"""What an HTML page (perfgate's report, the App's pages) does in a browser: its element
structure, and anything active in it (scripts, event handlers, links off the page)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


#: Attributes the browser shows as text and never navigates to or evaluates (HTML Living Standard).
TEXT_ATTRIBUTES = frozenset({"title", "alt", "aria-label", "aria-description", "placeholder"})


@dataclass
class HTMLInspection:
    problems: list[str] = field(default_factory=list)
    skeleton: list[tuple] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self, links: tuple[str, ...]):
        super().__init__(convert_charrefs=True)
        self.links = links
        self.out = HTMLInspection()

    def handle_starttag(self, tag, attrs):
        self.out.skeleton.append((tag, tuple(sorted(name for name, _ in attrs))))
        if tag in ("script", "iframe", "object", "embed", "img", "link", "base", "form", "meta") and not (
                tag == "meta" and dict(attrs).keys() <= {"charset", "http-equiv", "content", "name"}):
            self.out.problems.append(f"<{tag}> {attrs}")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.out.problems.append(f"event handler {name}={value[:40]!r} on <{tag}>")
            if name in ("href", "src", "xlink:href", "action", "formaction") and not (
                    value.startswith("#") or value.startswith(self.links) and self.links):
                self.out.problems.append(f"{name}={value[:60]!r} on <{tag}>")
            # text attributes are shown, never navigated: a kernel named "[l](javascript:alert(1))"
            # may be a <code> tag's title, escaped; any other attribute (a URL, a style's url(), a
            # data-* value a script could read as one) may not hold the scheme
            if "javascript:" in value.lower().replace(" ", "") and name not in TEXT_ATTRIBUTES:
                self.out.problems.append(f"javascript: in {name} of <{tag}>")

    def handle_endtag(self, tag):
        self.out.skeleton.append(("/" + tag,))


def inspect_html(page: str, *, links: tuple[str, ...] = ()) -> HTMLInspection:
    """Elements (tag and attribute names, in order) and problems of ``page``; ``links``:
    allowed URL prefixes of ``href``/``src`` besides ``#fragment``s."""
    parser = _Parser(tuple(links))
    parser.feed(page)
    parser.close()
    return parser.out
