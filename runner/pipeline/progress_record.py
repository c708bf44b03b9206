"""The compare's progress record (shell): ``OUT/logs/progress.json`` says what the compare runs now,
its phase, side and benchmark (:func:`runner.sandbox.limits.progress_record` words it), so that a
sandbox's limit that ends the compare names the benchmark (:func:`runner.sandbox.limits.limit_hit`;
the Action reads the record after the kill, :func:`runner.sandbox.confine.read_progress`).

Written before each request to a worker whose phase, side or benchmark differs from the last
(a few bytes; the worker is idle then, between its timed samples), whole: a new file renamed over
the old one. A write that fails is let go: the record is a courtesy to the error, never a reason
for a compare to fail.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..sandbox.limits import PROGRESS_FILE, limit_failure, progress_record


class ProgressRecord:
    """The record of one compare, at ``path`` (default ``OUT/logs/progress.json``)."""

    def __init__(self, out: Path, path: Path | None = None):
        self.path = path or out / PROGRESS_FILE
        self.last: str | None = None
        #: the benchmark each side works on: set by its ``setup`` and ``trace`` requests
        self.benchmarks: dict[str | None, str | None] = {}

    def note(self, cmd: str | None, side: str | None = None, name: str | None = None) -> None:
        """Record the request ``cmd`` to ``side``'s worker (or a step: ``install``, ``finish``)
        about the benchmark ``name`` (None: the side's last)."""
        self.benchmarks[side] = name or self.benchmarks.get(side)
        text = progress_record(cmd, side, self.benchmarks[side])
        if text is None or text == self.last:
            return
        self.last = text
        fresh = self.path.with_name(f".{self.path.name}.new")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh.write_text(text + "\n", encoding="utf-8")
            os.replace(fresh, self.path)
        except OSError:
            pass

    def finish(self, entries: list[dict]) -> None:
        """The compare's last record: the benchmark whose error is a sandbox limit's (its side and
        name, as while it was measured: the limit was reached then), else the end's phase."""
        failed = limit_failure(entries)
        if failed is None:
            self.note("finish")
        else:
            self.note("measure", *failed)
