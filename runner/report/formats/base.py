"""What a report format is: the record :data:`runner.report.formats.REGISTRY` holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class ReportFormat:
    """One way to show a results document.

    Attributes:
        name: the ``--format`` value of ``perfgate report`` and the registry's key (``"md"``).
        file: the file :func:`runner.report.render.write_reports` writes beside
            ``results.json`` (``"report.md"``); None for a format that is only printed
            (``"term"``).
        escape: its escaping context: an untrusted value of the document (any value; None is
            ``""``) -> text that shows the same characters and is inert in this format (no
            markup, link, mention or terminal control sequence of the value's own).
        render: ``render(results, **options) -> str``, the document in this format. The options
            are :func:`runner.report.render.render`'s (``max_chars``, ``details_url``,
            ``banner``); a format ignores those it has no use for.
    """

    name: str
    file: str | None
    escape: Callable[[Any], str]
    render: Callable[..., str]
