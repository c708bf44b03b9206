"""Unified diffs as changed lines, each with a mask of code vs comment vs string literal.

The classifier weighs a signal by where it stands: in code on an added line it counts fully,
inside a comment or a string literal less (``classifier.py``). This module only says where
things stand; it knows nothing of strategies.

A mask is a string as long as the line: ``c`` code, ``m`` comment (and Python triple-quoted
strings, which are docstrings or prose), ``s`` string literal.
Comment and triple-quote / block-comment state carries from line to line within one hunk
and one side (old: context + removed lines, new: context + added lines); a hunk header resets
it, since what precedes a hunk is not in the diff.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

C_LIKE = {".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".metal",
          ".java", ".js", ".ts", ".go", ".rs", ".mm", ".m", ".cl", ".hip", ".glsl", ".swift", ".kt"}
PROSE = {".md", ".rst", ".txt", ".adoc", ".html", ".ipynb"}

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_HUNK_START = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
#: Changed lines of an excerpt (``excerpt``): the size of the corpus's diff excerpts
#: (evaluation/README_intent.md), so the classifier reads at run time what it was trained on.
EXCERPT_LINES = 60
EXCERPT_CHARS = 200
#: Tests, benchmarks, examples, docs and prose files: they say less about what a change does.
AUXILIARY = re.compile(r"(?:^|/)(?:tests?|testing|benchmarks?|bench|docs?|examples?|tutorials?)(?:/|_)"
                       r"|(?:^|/)test_[^/]*$|_test\.\w+$|(?:^|/)conftest\.py$|\.(?:md|rst|txt|adoc|ipynb)$", re.IGNORECASE)
#: Source files of a library (C/C++/CUDA/HIP/Metal and the like, Python, Triton); the rest of a
#: change that is not auxiliary is build files, configuration and scripts.
SOURCE_SUFFIXES = frozenset(C_LIKE | {".py", ".pyx", ".pxd", ".pyi", ".triton", ".ptx", ".comp", ".wgsl", ".sycl"})


@dataclass(frozen=True)
class DiffLine:
    """One added (``+``) or removed (``-``) line of a diff, without its prefix."""

    side: str      # "+" or "-"
    path: str      # the file it belongs to ("" when the diff names none)
    text: str
    mask: str      # per character: "c" code, "m" comment, "s" string literal


def language(path: str) -> str:
    """``"c"``, ``"hash"`` (Python, shell, CMake, YAML...) or ``"prose"`` by file name."""
    name = path.rsplit("/", 1)[-1]
    if name in ("CMakeLists.txt", "Makefile", "Dockerfile", "BUILD", "WORKSPACE"):
        return "hash"
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    if suffix in C_LIKE:
        return "c"
    if suffix in PROSE:
        return "prose"
    return "hash"


def mask_c(line: str, in_block: bool) -> tuple[str, bool]:
    """Mask of one C/C++/CUDA line; ``in_block``: inside ``/* */`` at its start. Returns (mask, in_block at end)."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if in_block:
            end = line.find("*/", i)
            stop = n if end < 0 else end + 2
            out.append("m" * (stop - i))
            i = stop
            in_block = end < 0
            continue
        ch = line[i]
        if line.startswith("//", i):
            out.append("m" * (n - i))
            break
        if line.startswith("/*", i):
            in_block = True
            out.append("mm")
            i += 2
            continue
        if ch in "\"'":
            j = _string_end(line, i + 1, ch)
            out.append("s" * (j - i))
            i = j
            continue
        out.append("c")
        i += 1
    return "".join(out)[:n], in_block


def mask_hash(line: str, open_quote: str | None) -> tuple[str, str | None]:
    """Mask of one ``#``-comment line (Python, shell, CMake...); ``open_quote``: an unclosed ``'''``/``\"\"\"``."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if open_quote:
            end = line.find(open_quote, i)
            stop = n if end < 0 else end + 3
            out.append("m" * (stop - i))      # docstrings are prose: weighed as comments
            i = stop
            open_quote = open_quote if end < 0 else None
            continue
        ch = line[i]
        if ch == "#":
            out.append("m" * (n - i))
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            open_quote = line[i:i + 3]
            out.append("mmm")
            i += 3
            continue
        if ch in "\"'":
            j = _string_end(line, i + 1, ch)
            out.append("s" * (j - i))
            i = j
            continue
        out.append("c")
        i += 1
    return "".join(out)[:n], open_quote


def _string_end(line: str, i: int, quote: str) -> int:
    """Index just past the closing ``quote`` from ``i`` (or the end of the line)."""
    n = len(line)
    while i < n:
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == quote:
            return i + 1
        i += 1
    return n


def parse(diff: str) -> tuple[list[DiffLine], list[str]]:
    """Changed lines and changed file paths of a unified diff (``git diff`` or ``diff -u``).

    Hunk bodies are delimited by the line counts in their ``@@ -a,b +c,d @@`` headers, so a
    removed line whose text starts with ``--`` is not taken for a file header.

    Args:
        diff: the diff text; a text that is not a diff yields no lines.

    Returns:
        ``(lines, paths)``: added/removed lines in diff order; file paths (new name, or
        old name for a deletion) in diff order without repeats.
    """
    lines: list[DiffLine] = []
    paths: list[str] = []
    path = ""
    lang = "hash"
    state: dict = {"+": None, "-": None}
    old_left = new_left = 0
    old_name = ""
    if not any(_HUNK.match(raw) for raw in diff.splitlines()):
        # No hunk header: a hand-written snippet of "+"/"-" lines; take them as they are.
        return _bare_lines(diff), paths
    for raw in diff.splitlines():
        if old_left > 0 or new_left > 0:
            tag = raw[:1] or " "
            if tag == "\\":       # "\ No newline at end of file"
                continue
            if tag not in "+- ":
                old_left = new_left = 0     # a truncated hunk: fall through to headers
            else:
                old_left -= tag in "- "
                new_left -= tag in "+ "
                text = raw[1:]
                for side in ((tag,) if tag in "+-" else ("+", "-")):
                    mask, state[side] = _mask(lang, text, state[side])
                    if tag == side:
                        lines.append(DiffLine(side, path, text, mask))
                continue
        hunk = _HUNK.match(raw)
        if hunk:
            old_left = int(hunk.group(1) or 1)
            new_left = int(hunk.group(2) or 1)
            state = {"+": None, "-": None}
            continue
        header = _file_header(raw)
        if header is None:
            continue
        kind, name = header
        if kind == "old":
            old_name = name
            continue
        path = old_name if kind == "new" and name == "/dev/null" else name
        lang = language(path)
        _remember(paths, path)
    return lines, paths


def _file_header(raw: str) -> tuple[str, str] | None:
    """``("git" | "old" | "new", path)`` of a ``diff --git`` / ``---`` / ``+++`` line, else None.

    ``a/`` and ``b/`` prefixes are dropped; ``/dev/null`` is kept as it is."""
    if raw.startswith("diff --git "):
        match = re.match(r"diff --git a/(.*?) b/(.*)$", raw)
        return "git", match.group(2) if match else ""
    if raw.startswith("--- ") or raw.startswith("+++ "):
        name = raw[4:].split("\t")[0].strip()
        name = name[2:] if name[:2] in ("a/", "b/") else name
        return ("old" if raw.startswith("--- ") else "new"), name
    return None


def _bare_lines(diff: str) -> list[DiffLine]:
    lines = []
    state: dict = {"+": None, "-": None}
    for raw in diff.splitlines():
        if raw[:1] in ("+", "-") and not raw.startswith(("+++ ", "--- ")):
            mask, state[raw[0]] = _mask("hash", raw[1:], state[raw[0]])
            lines.append(DiffLine(raw[0], "", raw[1:], mask))
    return lines


def _mask(lang: str, text: str, state):
    if lang == "prose":
        return "m" * len(text), None
    if lang == "c":
        return mask_c(text, bool(state))
    return mask_hash(text, state)


def _remember(paths: list[str], path: str) -> None:
    if path and path not in paths:
        paths.append(path)


def file_rank(path: str) -> int:
    """0 for library source code, 1 for other files of the library (build files, configuration,
    scripts), 2 for tests, benchmarks, examples, docs and prose (``AUXILIARY``)."""
    name = path.rsplit("/", 1)[-1]
    if AUXILIARY.search(path) and name != "CMakeLists.txt":
        return 2
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    return 0 if suffix in SOURCE_SUFFIXES and name not in ("setup.py", "conftest.py") else 1


def excerpt(diff: str, max_lines: int = EXCERPT_LINES, max_chars: int = EXCERPT_CHARS,
            keep=lambda line: True) -> str:
    """The mechanical excerpt of a unified diff that the intent classifier reads.

    Library source files first, then the library's other files, then tests, benchmarks,
    examples and docs (``file_rank``; diff order within a rank). Whole hunks in that order until
    ``max_lines`` changed lines (a first hunk longer than that is cut), context lines dropped
    and each hunk header rewritten to the lines it keeps, each line cut at ``max_chars``
    characters. ``keep(line)`` may drop further lines (the corpus harvester drops lines with an
    e-mail address). Pure. A text without a ``diff --git`` header (a hand-written snippet, a
    ``diff -u`` of two files) is returned as it is.
    """
    if "diff --git " not in (diff or ""):
        return diff or ""
    files: list[tuple[str, str, list[tuple[str, list[str]]]]] = []
    for part in re.split(r"(?m)^(?=diff --git )", diff or ""):
        if not part.startswith("diff --git "):
            continue
        lines = part.splitlines()
        header, hunks = lines[0], []
        match = re.match(r"diff --git a/(.*?) b/(.*)$", header)
        path = match.group(2) if match else header.split(" b/", 1)[-1]
        for line in lines[1:]:
            start = _HUNK_START.match(line)
            if start:
                hunks.append((f"{start.group(1)} {start.group(2)}", []))
            elif hunks and line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) and keep(line):
                hunks[-1][1].append(line[:max_chars])
        files.append((path, header, [h for h in hunks if h[1]]))
    out: list[str] = []
    changed = 0
    for path, header, hunks in sorted(files, key=lambda f: file_rank(f[0])):
        for i, (starts, body) in enumerate(hunks):
            if changed and changed + len(body) > max_lines:
                return "\n".join(out)
            body = body[:max_lines]
            if i == 0:
                out.append(header)
            old, new = starts.split()
            removed = sum(line.startswith("-") for line in body)
            out.append(f"@@ -{old},{removed} +{new},{len(body) - removed} @@")
            out.extend(body)
            changed += len(body)
            if changed >= max_lines:
                return "\n".join(out)
    return "\n".join(out)


def location(mask: str, start: int, end: int) -> str:
    """``"code"`` when any character of ``[start, end)`` is code, else ``"string"`` or ``"comment"``."""
    part = mask[start:end]
    if "c" in part:
        return "code"
    if "s" in part:
        return "string"
    return "comment"
