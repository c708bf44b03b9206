"""Plain text for a terminal: the rich table of :mod:`runner.report.terminal`, printed, never
written beside results.json."""

from __future__ import annotations

from typing import Any

from ..escape import term
from ..terminal import render_terminal
from .base import ReportFormat


def render(results: dict, width: int | None = None, **_options: Any) -> str:
    """``results`` as the terminal table, no colour codes, ``width`` columns: None, as wide as
    ``perfgate compare`` prints (rich's rule: the terminal's width, else ``COLUMNS``, else 80 as
    in a CI log; it was 120 whatever the terminal, so a piped table overflowed 80 columns)."""
    if width is None:
        from rich.console import Console

        width = Console().width
    return render_terminal(results, width)


FORMAT = ReportFormat(name="term", file=None, escape=term, render=render)
