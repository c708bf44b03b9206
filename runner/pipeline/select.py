"""Which benchmarks a run measures: ``--filter`` (pure; the rule lives with the selection's,
:func:`runner.selection.matches`)."""

from __future__ import annotations

from ..selection import matches

__all__ = ["matches"]
