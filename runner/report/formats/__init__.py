"""Report formats: one module each, registered in :data:`REGISTRY` (see :mod:`.base`).

Adding a format is its module (a :class:`runner.report.formats.base.ReportFormat` with its name,
its file, its escaping context and its ``render``) and one line in :data:`REGISTRY`: ``perfgate
report --format`` accepts its name, :func:`runner.report.render.render` renders it, and when it
has a file, :func:`runner.report.render.write_reports` writes it beside ``results.json`` wherever
the reports are written (``perfgate compare``, the Action's publish step).
"""

from __future__ import annotations

from . import html, md, term
from .base import ReportFormat

#: The formats, in the order ``perfgate report --format`` lists them and reports are written.
REGISTRY: tuple[ReportFormat, ...] = (
    md.FORMAT,
    html.FORMAT,
    term.FORMAT,
)


def names() -> tuple[str, ...]:
    """The registered formats' names (the values ``--format`` accepts)."""
    return tuple(f.name for f in REGISTRY)


def get(name: str) -> ReportFormat:
    """The format called ``name``.

    Raises:
        KeyError: no such format (naming the ones there are).
    """
    for registered in REGISTRY:
        if registered.name == name:
            return registered
    raise KeyError(f"no report format {name!r} (there are: {', '.join(names())})")


def written() -> tuple[ReportFormat, ...]:
    """The registered formats that have a file, in the registry's order: the reports written
    beside ``results.json`` (``report.md``, ``report.html``)."""
    return tuple(f for f in REGISTRY if f.file is not None)


__all__ = ["REGISTRY", "ReportFormat", "get", "names", "written"]
