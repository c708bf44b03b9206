"""Hypothesis strategies for untrusted input: text built from the syntax of every context
perfgate writes into (Markdown, HTML, mermaid, rich markup, terminals, JSON, shell words)
mixed with arbitrary Unicode; arbitrary JSON values; results documents with untrusted text in
every shown field."""

from __future__ import annotations

from hypothesis import strategies as st

from testkit import documents

#: Pieces of syntax that mean something somewhere perfgate writes text.
FRAGMENTS = [
    "@octo/security-team", "@a", " @x-y/z_1 ", "![x](https://attacker.example/x.png)", "[l](javascript:alert(1))",
    "[r]: https://attacker.example", "<https://attacker.example>", "https://attacker.example/p?q=1", "HTTP://A.EXAMPLE",
    "www.attacker.example", "x@attacker.example", "mailto:a@b.example", "#1", "octo/demo#12", "GH-3", "</details>",
    "<details>", "<summary>", "</summary>", "<b>", "</b>", "<sub>", "<!--", "-->", "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>", "<svg onload=alert(1)>", "<a href=//x>", "```", "````", "~~~", "`", "``", "|", "||",
    "\\", "\\|", "\\\\|", "\n", "\r\n", "\r", "\n\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\t", "    ",
    "\n# h\n", "\n- ", "\n1. ", "\n> ", "\n---\n", "\n===\n", "*", "**", "_", "__", "~~", "$", "$$", "^", ":+1:",
    "&", "&amp;", "&#64;", "&lt;", "&#x60;", "\"", "'", "(", ")", "[", "]", "{", "}", "{{ 7*7 }}", "{% if %}",
    "%s", "%(x)s", "[/]", "[red]", "[bold red]", "[link=https://a.example]x[/link]", "\x1b[31m", "\x1b]8;;http://a\x07",
    "\x00", "\x7f", "\u202e", "\u2066", "\ufeff", "\u200b", "\ud800", "\U0001f600", "é", "ℌ", "\u0301",
    "%0A", "%25", "::error::", "--title", "-O3", "--upload-pack=touch /tmp/x", "x;rm -rf /", "$(id)",
    "mermaid", "\"]\n    bar [1", "#35;", "%%{init: {}}%%", "click A callback",
]

#: Text a pull request could put into any string field.
untrusted_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=8).map("".join)

#: Numbers JSON can carry (Python's json module also reads NaN and Infinity).
json_numbers = st.one_of(st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
                         st.floats(allow_nan=True, allow_infinity=True))

#: Any JSON value, with untrusted text for strings and keys.
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), json_numbers, untrusted_text),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(untrusted_text, children, max_size=4)),
    max_leaves=12)


@st.composite
def fuzzed_documents(draw):
    """``(document, placeholders)``: the full document (testkit/documents.py) with
    untrusted text in a drawn subset of its shown strings (keys included), and the same
    document with harmless stand-ins in those places (same emptiness, equal where the texts are
    equal): a rendering of the first must have the structure of a rendering of the second."""
    doc = documents.full_document()
    plain = documents.full_document()
    paths = documents.string_paths(doc)
    chosen = draw(st.sets(st.sampled_from(paths), min_size=1))
    values = sorted((p for p in chosen if p[0] != "key"), key=len)
    keys = sorted((p for p in chosen if p[0] == "key"), key=len, reverse=True)
    stand_ins: dict[str, str] = {}  # equal texts get equal stand-ins (names and kinds group)
    for path in values:
        text = draw(untrusted_text)
        limit = documents.limit_for(path)
        text = text[:limit] if limit else text
        documents.set_text(doc, path, text)
        documents.set_text(plain, path, stand_ins.setdefault(text, f"x{len(stand_ins)}") if text else "")
    for i, path in enumerate(keys):
        documents.set_text(doc, path, draw(untrusted_text.filter(lambda t: not t.startswith("k_"))))
        documents.set_text(plain, path, f"k_{i}")
    return doc, plain


@st.composite
def mutated_documents(draw):
    """The full document with one drawn field (every field equally likely) replaced by an
    arbitrary JSON value, removed, or given an arbitrary sibling: often invalid, sometimes
    valid in a way the readers did not expect."""
    doc = documents.full_document()
    places: list[tuple] = []

    def walk(value, path):
        places.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, path + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, path + (i,))

    walk(doc, ())
    # every field equally likely, whatever the length of the lists it sits in
    shapes: dict[tuple, list[tuple]] = {}
    for place in places[1:]:
        shapes.setdefault(tuple("*" if isinstance(p, int) else p for p in place), []).append(place)
    path = draw(st.sampled_from(shapes[draw(st.sampled_from(sorted(shapes, key=repr)))]))
    target = doc
    for p in path[:-1]:
        target = target[p]
    how = draw(st.sampled_from(["replace", "add", "remove"]))
    if how == "remove":  # an older (or newer) writer may lack an optional field
        del target[path[-1]]
    elif how == "add" and isinstance(target, dict):
        target[draw(untrusted_text)] = draw(json_values)
    else:
        target[path[-1]] = draw(json_values)
    return doc
