"""Which benchmarks a run measures: ``--filter`` (pure)."""

from __future__ import annotations

import fnmatch
import re


def matches(name: str, pattern: str | None) -> bool:
    """``--filter``: a glob (``*``, ``?``, ``[``) matched against the name, else a substring.

    A glob is matched against the whole name and against the name without its parameters,
    so ``bench_norm*`` selects every ``bench_norm[...]`` case (and ``*.time_mm`` every asv
    ``module.Class.time_mm(...)`` case).
    """
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?"):
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(re.split(r"[\[(]", name, maxsplit=1)[0], pattern)
    return pattern in name
