"""The code map's pass, worker side: which files of the repository one benchmark executes.

A fresh child sets the benchmark up and makes one call (one run, for a benchmark that measures
itself) under a tracer; the answer is the repository-relative paths of the Python files whose
code ran. Selection (:mod:`runner.selection`) reads them; nothing here is timed.

The tracer is coverage.py's (its C tracer; on Python 3.12+ coverage.py may use
``sys.monitoring``): with ``include`` set to the repository, a frame of any other file (torch,
the standard library) costs one cached lookup and is not traced further. Without coverage.py a
``sys.settrace`` tracer of call events does the same job, slower.

What the map cannot see, by construction: code that ran when the benchmark files were imported
into the fork server (module bodies), native code, and files read as data; the selection runs
everything when such things change.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Callable


def trace_files(run: Callable[[], object], root: str) -> tuple[list[str], str]:
    """Run ``run()`` under a tracer and list the Python files under ``root`` that executed.

    Args:
        run: set-up and one call of the benchmark.
        root: the repository's root directory (absolute; symlinks resolved here).

    Returns:
        ``(paths, tool)``: sorted ``/``-separated paths relative to ``root``; ``tool`` names the
        tracer (``coverage.py 7.x`` or ``sys.settrace``).

    Raises:
        Whatever ``run`` raises (the tracer is stopped first).
    """
    real_root = os.path.realpath(root)
    try:
        import coverage
    except ImportError:
        coverage = None
    if not hasattr(coverage, "Coverage"):
        # not installed, or shadowed by a module of the same name on the path (a benchmark
        # folder's own coverage.py): the call-event tracer does the same job
        return _settrace_files(run, real_root), "sys.settrace"
    cov = coverage.Coverage(data_file=None, include=[os.path.join(real_root, "*")], branch=False,
                            config_file=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no data was collected" is an answer here, not a warning
        cov.start()
        try:
            run()
        finally:
            cov.stop()
        measured = cov.get_data().measured_files()
    return _relative(measured, real_root), f"coverage.py {coverage.__version__}"


def _settrace_files(run: Callable[[], object], real_root: str) -> list[str]:
    seen: set[str] = set()
    cache: dict[str, bool] = {}

    def tracer(frame, event, arg):  # call events only: no local tracing
        name = frame.f_code.co_filename
        if name not in cache:
            cache[name] = os.path.realpath(name).startswith(real_root + os.sep)
        if cache[name]:
            seen.add(os.path.realpath(name))
        return None

    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return _relative(seen, real_root)


def _relative(paths, real_root: str) -> list[str]:
    out = set()
    for path in paths:
        real = os.path.realpath(path)
        if real.startswith(real_root + os.sep) and real.endswith(".py"):
            out.add(os.path.relpath(real, real_root).replace(os.sep, "/"))
    return sorted(out)
