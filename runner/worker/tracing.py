"""The code map's pass, worker side: which files of the repository one benchmark executes.

A fresh child sets the benchmark up and makes one call (one run, for a benchmark that measures
itself) under a tracer; the answer is the repository-relative paths of the Python files whose
code ran. Selection (:mod:`runner.selection`) reads them; nothing here is timed.

The tracer is the standard library's C profiler (``cProfile``, i.e. ``_lsprof``): it sees every
Python function call — a module body run by a lazy import, a generator resumed — as one C-level
profile event and keeps one entry per code object, whose file is all the map needs. It replaced
coverage.py (issue 32): coverage.py traces every *line* of the repository's files, and a call
that runs much of the repository's Python paid ×1.85–×2.54 for that in the replay
(``evaluation/selection.py``); the profiler's events are per call, not per line (measured beside
it on the same benchmarks: ×0.3–×1.7 on warm calls of ≥ 0.4 ms, against ×1.1–×3.6 for
coverage.py; on calls of tens of microseconds both pay a fixed cost per new code object).
Threads started during the call get a profiler of their own (``threading.setprofile``; on
Python 3.12+ the main profiler is process-wide and sees them itself); threads already running are
not seen before 3.12. Where the profiler cannot be enabled (another profiling tool holds
the hook, as Python 3.12+ refuses two), a ``sys.settrace`` tracer of call events does the same
job, slower.

What the map cannot see, by construction: code that ran when the benchmark files were imported
into the fork server (module bodies), native code, and files read as data; the selection runs
everything when such things change.
"""

from __future__ import annotations

import cProfile
import os
import sys
import threading
from typing import Callable, Iterable

#: The ``tool`` a map names for each tracer (``results.json: code_map.tool``).
PROFILER = "cProfile"
SETTRACE = "sys.settrace"
#: No entries for built-in (C) functions and no caller/callee records: the map needs the Python
#: code objects' files only, and on linear_operator's sub-millisecond calls these two cut the
#: traced call from ×1.58–1.68 to ×1.34–1.39 a plain one (medians of 7, 2026-12-02).
PROFILER_OPTIONS = {"builtins": False, "subcalls": False}


def trace_files(run: Callable[[], object], root: str) -> tuple[list[str], str]:
    """Run ``run()`` under a tracer and list the Python files under ``root`` that executed.

    Args:
        run: set-up and one call of the benchmark.
        root: the repository's root directory (absolute; symlinks resolved here).

    Returns:
        ``(paths, tool)``: sorted ``/``-separated paths relative to ``root``; ``tool`` names the
        tracer (``PROFILER`` or ``SETTRACE``).

    Raises:
        Whatever ``run`` raises (the tracer is stopped first).
    """
    real_root = os.path.realpath(root)
    main = cProfile.Profile(**PROFILER_OPTIONS)
    try:
        main.enable()
    except ValueError:  # Python 3.12+: another profiler holds the hook
        return _settrace_files(run, real_root), SETTRACE
    profiles = [main]

    def start_in_thread(frame, event, arg) -> None:
        # the first profile event of a thread started during the call: a C profiler of its own
        # takes over the thread's hook from here (this function is not called again there)
        profiler = cProfile.Profile(**PROFILER_OPTIONS)
        try:
            profiler.enable()
        except ValueError:  # Python 3.12+: the profiler is process-wide (sys.monitoring), and
            return          # the main one already sees this thread
        profiles.append(profiler)

    threading.setprofile(start_in_thread)
    try:
        run()
    finally:
        main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
    files = (entry.code.co_filename for profiler in profiles for entry in profiler.getstats()
             if not isinstance(entry.code, str))  # a str would be a built-in (C) function
    return _relative(files, real_root), PROFILER


def _settrace_files(run: Callable[[], object], real_root: str) -> list[str]:
    seen: set[str] = set()

    def tracer(frame, event, arg):  # call events only: no local tracing
        seen.add(frame.f_code.co_filename)
        return None

    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return _relative(seen, real_root)


def _relative(paths: Iterable[str], real_root: str) -> list[str]:
    out = set()
    for path in set(paths):
        real = os.path.realpath(path)
        if real.startswith(real_root + os.sep) and real.endswith(".py"):
            out.add(os.path.relpath(real, real_root).replace(os.sep, "/"))
    return sorted(out)
