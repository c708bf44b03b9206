"""Publish a result to the job: step summary, step outputs, and the text of the sticky comment.

The decisions (overall verdict, what fits GitHub's limits, which comment is ours, the lines of
``$GITHUB_OUTPUT``) are pure functions; the two file appends at the end are the only I/O.
Talking to GitHub is ``github_gateway.py``'s job.

Limits (GITHUB.md): a comment body ≤ 65,536 characters (422 otherwise); ``$GITHUB_STEP_SUMMARY``
≤ 1 MiB per step (the step fails otherwise: we trim instead, never fail for size).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from runner import results as results_mod
from runner.report import COMMENT_LIMIT, MARKER, SUMMARY_LIMIT
from runner.report.render import is_sticky
from runner.report.view import VERDICT_RANK

#: ``render(max_chars) -> markdown``: runner.report.render bound to a result and a details URL.
Renderer = Callable[[int], str]

#: Room kept for the notes the action adds around the report (fork note, run link).
NOTE_RESERVE = 2_000


def overall_verdict(summary: Mapping[str, int]) -> str:
    """One word for the whole run: the most severe verdict present, in report order
    (regression, failed, improvement, inconclusive, new, removed, unchanged); ``none`` for
    a run without benchmarks."""
    present = [v for v, n in summary.items() if n and v in VERDICT_RANK]
    return min(present, key=VERDICT_RANK.__getitem__) if present else "none"


def step_outputs(results: Mapping[str, Any], results_path: Path, out_dir: Path) -> dict[str, str]:
    """The action's outputs (action.yml): ``results``, ``report``, ``out-dir``, ``regressions``,
    ``improvements``, ``verdict``."""
    summary = results.get("summary", {})
    return {
        "results": str(results_path),
        "report": str(out_dir / "report.md"),
        "out-dir": str(out_dir),
        "regressions": str(int(summary.get("regression", 0))),
        "improvements": str(int(summary.get("improvement", 0))),
        "verdict": overall_verdict(summary),
    }


def output_file_text(outputs: Mapping[str, str], delimiter: str | None = None) -> str:
    """``$GITHUB_OUTPUT`` lines in the multi-line form ``name<<DELIM`` … ``DELIM`` (safe for any value)."""
    delimiter = delimiter or f"ghadelimiter_{uuid.uuid4()}"
    parts = []
    for name, value in outputs.items():
        if delimiter in value:
            raise ValueError(f"output {name} contains the delimiter")
        parts.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(parts)


def truncate(text: str, limit: int, link: str | None, *, unit: str = "chars") -> str:
    """``text`` cut to ``limit`` characters (``unit="chars"``) or UTF-8 bytes (``"bytes"``),
    ending with a line that links ``link`` for the rest. Unchanged when it fits."""
    size = (lambda s: len(s.encode("utf-8"))) if unit == "bytes" else len
    if size(text) <= limit:
        return text
    tail = f"\n\n… cut to fit GitHub's limit; the full report: {link or 'see the run artifacts'}\n"
    room = limit - size(tail)
    head = text[:room]
    while size(head) > room:  # multi-byte characters: shrink until the bytes fit
        head = head[: max(0, len(head) - max(1, (size(head) - room) // 4))]
    return head + tail


def fit_comment(render: Renderer, link: str | None, limit: int = COMMENT_LIMIT) -> str:
    """The comment body: the report trimmed by the renderer to ``limit`` characters, starting
    with the sticky marker, cut hard as a last resort."""
    body = render(limit - 200)
    if not body.lstrip().startswith(MARKER):
        body = f"{MARKER}\n{body}"
    return truncate(body, limit, link)


def fit_summary(render: Renderer, link: str | None, notes: str = "", limit: int = SUMMARY_LIMIT) -> str:
    """The step summary in ≤ ``limit`` UTF-8 bytes: ``notes`` first, then the report trimmed
    by the renderer (asked again with fewer characters when non-ASCII text overflows bytes)."""
    room = limit - len(notes.encode("utf-8")) - NOTE_RESERVE
    chars = room
    text = render(chars)
    for _ in range(4):
        size = len(text.encode("utf-8"))
        if size <= room:
            break
        chars = int(chars * room / size * 0.95)
        text = render(chars)
    return truncate(notes + text, limit, link, unit="bytes")


def find_sticky(comments: Iterable[Mapping[str, Any]], author: str) -> Mapping[str, Any] | None:
    """The oldest comment that is ours: :func:`runner.report.render.is_sticky` of ``author``.

    Args:
        comments: ``{id, body, login}`` mappings in creation order.
    Returns:
        The comment, or None when there is none yet (create one).
    """
    for comment in comments:
        if is_sticky(comment.get("body"), comment.get("login"), author):
            return comment
    return None


def write_summary(path: Path | None, text: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` (absent outside Actions: nothing to do)."""
    if path is not None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")


def write_outputs(path: Path | None, outputs: Mapping[str, str]) -> None:
    """Append the outputs to ``$GITHUB_OUTPUT`` (absent outside Actions: nothing to do)."""
    if path is not None:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(output_file_text(outputs))


def annotation(kind: str, message: str, title: str | None = None) -> str:
    """A workflow command line (``::error::…``, ``::warning::…``, ``::notice::…``) with the
    message escaped as the runner expects (``%``, CR, LF), so it stays one annotation."""
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    props = f" title={title.replace('%', '%25').replace(',', '%2C').replace(':', '%3A')}" if title else ""
    return f"::{kind}{props}::{escaped}"


#: The top-level fields :func:`with_run_metadata` sets (``base``/``head`` for their ``ref``).
RUN_FIELDS = ("run_id", "run_url", "pull_request", "base", "head")


def with_run_metadata(results: dict, *, run_id: str | None, run_url: str | None, pr_number: int | None,
                      pr_url: str | None, base_label: str | None = None, head_label: str | None = None) -> dict:
    """``results`` plus the optional top-level fields the App looks for: ``run_id`` (the App's
    id of this run), ``run_url`` (the workflow run page), ``pull_request`` ``{number, url}``
    (or None); ``base.ref``/``head.ref`` become branch names when known (compare saw SHAs)."""
    doc = results_mod.with_run(results, run_id=run_id, run_url=run_url,
                               pull_request={"number": pr_number, "url": pr_url} if pr_number else None)
    for side, label in (("base", base_label), ("head", head_label)):
        if label and isinstance(doc.get(side), dict):
            doc[side] = {**doc[side], "ref": label}
    return doc
