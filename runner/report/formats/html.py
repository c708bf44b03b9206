"""HTML: ``report.html`` and the App's run page, one self-contained page
(``templates/report.html.j2``, autoescaped)."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from ..escape import encodable
from ..templating import environment, html_escape, template_context
from .base import ReportFormat


def render(results: dict, *, details_url: str | None = None, banner: Markup | None = None,
           **_options: Any) -> str:
    """``results`` as an HTML page.

    Args:
        details_url: where the full report lives (the run page or the workflow run).
        banner: markup the caller rendered (and escaped) itself, shown above the report in the
            page's ``banner`` block (the App's run page puts the run's facts there).
    """
    ctx = template_context(results, details_url, banner)
    return environment().get_template("report.html.j2").render(**ctx, detail=True, row_limit=None)


def escape(value: Any) -> Markup:
    """An untrusted value as the page shows it: control characters and lone surrogates dropped
    (the templates' ``finalize``, :func:`runner.report.escape.encodable`), then HTML-escaped
    (their autoescape)."""
    return html_escape(encodable(value))


FORMAT = ReportFormat(name="html", file="report.html", escape=escape, render=render)
