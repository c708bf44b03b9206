"""A report format that exists only in the tests: the verdicts as a JSON summary.

It is everything a new format needs — this module and one line in
``runner.report.formats.REGISTRY`` (the test adds that line): its name, the file it is written
to beside results.json, its escaping context (a JSON string literal, ASCII only: quotes,
backslashes, control and non-ASCII characters escaped) and its render."""

from __future__ import annotations

import json
from typing import Any

from runner.report.formats.base import ReportFormat
from runner.results import change_of, verdict_of


def escape(value: Any) -> str:
    """An untrusted value as a JSON string literal (None is ``""``)."""
    return json.dumps("" if value is None else str(value))


def render(results: dict, **_options: Any) -> str:
    """``{"head": sha, "summary": {verdict: n}, "benchmarks": [{"name", "verdict", "ratio"}]}``,
    every string written as :func:`escape` writes it."""
    benches = [{"name": b.get("name"), "verdict": verdict_of(b), "ratio": change_of(b).get("ratio")}
               for b in results.get("benchmarks", [])]
    summary = {"head": (results.get("head") or {}).get("sha"), "summary": results.get("summary"),
               "benchmarks": benches}
    return json.dumps(summary, indent=1) + "\n"


FORMAT = ReportFormat(name="toy", file="summary.json", escape=escape, render=render)
