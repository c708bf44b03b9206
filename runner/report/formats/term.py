"""Plain text for a terminal: the rich table of :mod:`runner.report.terminal`, printed, never
written beside results.json."""

from __future__ import annotations

from typing import Any

from ..escape import term
from ..terminal import render_terminal
from .base import ReportFormat


def render(results: dict, **_options: Any) -> str:
    """``results`` as the terminal table, 120 columns, no colour codes."""
    return render_terminal(results)


FORMAT = ReportFormat(name="term", file=None, escape=term, render=render)
