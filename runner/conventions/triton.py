"""The Triton convention: ``triton.testing`` benchmark scripts run as they are.

The scripts GPU kernel repositories keep (Liger-Kernel's ``benchmark/scripts/benchmark_*.py``,
sglang's ``sgl-kernel/benchmark/bench_*.py``, vLLM's and flash-attention's newer ones):

* ``@triton.testing.perf_report(triton.testing.Benchmark(x_names=…, x_vals=…, line_arg="provider",
  line_vals=…, line_names=…, plot_name=…))`` grids: one case per (x value, line) of each grid,
  named as the grid's printed table names it, ``plot_name[N=4096,provider=Triton]``;
* ``triton.testing.do_bench(fn, …)`` / ``do_bench_cudagraph(fn, …)`` called anywhere — inside a grid
  function, or in ``main()`` over a loop: the callable is captured and timed by perfgate's sampler
  in the paired workers, as ``do_bench`` times it (``cold_cache``: the L2 flushed before every call,
  unless the configuration sets ``cold_cache = false``; ``do_bench_cudagraph``'s calls warm);
  ``warmup``, ``rep``, ``quantiles`` and ``return_mode`` belong to perfgate's sampler and are
  ignored; ``grad_to_none`` is honoured (those tensors' ``.grad`` is reset before
  every timed call, as ``do_bench`` does); ``do_bench_cudagraph`` callables are replayed as a CUDA
  graph on a CUDA device.

How: :mod:`runner.conventions.capture` runs each script as ``__main__`` with ``triton.testing``'s
``do_bench``, ``do_bench_cudagraph`` and ``Mark.run`` replaced. Where Triton is installed its module
is patched; where it is not (a CPU machine) a stand-in ``triton`` package holding only
``triton.testing`` (``Benchmark``, ``perf_report``, ``Mark``, ``do_bench``, ``do_bench_cudagraph``)
is installed in the worker, so the same scripts run with CPU callables. Scripts are the
``bench*.py`` / ``benchmark*.py`` files of the benchmark directory that mention ``do_bench`` or
``perf_report``; one that makes no call perfgate can capture is listed as skipped, with the reason.
"""

from __future__ import annotations

import functools
import importlib.machinery
import re
import sys
import time
import types
from typing import Any, Callable

from . import capture
from .labels import benchmarks_of, grid_points
from .replay import Measured

#: A script that uses triton.testing's timing (its text).
USES = re.compile(r"\b(?:do_bench(?:_cudagraph)?|perf_report)\b")

#: ``Mark.run``'s own keywords (the rest go to the grid's function, as Triton passes them).
_RUN_KEYWORDS = ("show_plots", "print_data", "save_path", "return_df", "diff_col", "save_precision")


def nominal(quantiles: Any = None, return_mode: str = "mean") -> Any:
    """What ``do_bench`` returns while a script is listed or run up to its case: the nominal time
    (:data:`runner.conventions.capture.NOMINAL_MS`) in the shape the caller asked for (one value per
    quantile, a single value for one, a list for ``return_mode="all"``)."""
    if quantiles:
        values = [capture.NOMINAL_MS] * len(quantiles)
        return values if len(values) > 1 else values[0]
    return [capture.NOMINAL_MS] if return_mode == "all" else capture.NOMINAL_MS


def grads_reset(fn: Callable[[], Any], grad_to_none: Any) -> Callable[[], Any]:
    """``fn`` with the ``.grad`` of the ``grad_to_none`` tensors set to None before each call (as
    ``do_bench`` does, so backward passes do not accumulate); ``fn`` itself without any."""
    tensors = list(grad_to_none or [])
    if not tensors:
        return fn

    def call() -> Any:
        for tensor in tensors:
            tensor.grad = None
        return fn()

    return call


def _captured(original: Callable | None, graph: bool) -> Callable:
    """A ``do_bench`` that hands its callable to the active recorder, else calls ``original``."""

    def do_bench(fn, *args, **kwargs):
        recorder = capture.ACTIVE
        if recorder is None or not recorder.from_suite(sys._getframe(1)):
            # only the keywords the caller gave: Triton 2.1's do_bench_cudagraph takes no
            # quantiles nor return_mode (GPU review #25)
            return original(fn, *args, **kwargs)
        recorder.measuring_call(None, {}, grads_reset(fn, kwargs.get("grad_to_none")), graph=graph)
        return nominal(kwargs.get("quantiles"), kwargs.get("return_mode", "mean"))

    do_bench.__perfgate__ = True
    do_bench.__wrapped__ = original
    return do_bench


def _captured_run(original: Callable | None) -> Callable:
    """A ``Mark.run`` that lists (or finds a point of) its grid under the active recorder."""

    def run(self, *args, **kwargs):
        recorder = capture.ACTIVE
        if recorder is None:
            return original(self, *args, **kwargs)
        recorder.grid(self, {k: v for k, v in kwargs.items() if k not in _RUN_KEYWORDS})
        return None

    run.__perfgate__ = True
    return run


# -- the stand-in, where Triton is not installed ---------------------------------------------------
def _stand_in_do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", **_):
    """A plain-timer ``do_bench`` (ms per call): what a script gets from the stand-in outside perfgate's capture."""
    call = grads_reset(fn, grad_to_none)
    call()
    times = []
    end = time.perf_counter() + rep * 1e-3
    while not times or time.perf_counter() < end:
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    if quantiles:
        values = [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
        return values if len(values) > 1 else values[0]
    return times if return_mode == "all" else sum(times) / len(times)


class Benchmark:
    """The stand-in ``triton.testing.Benchmark``: holds a grid's description, as Triton's does."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None, xlabel="",
                 ylabel="", x_log=False, y_log=False, styles=None, **extra):
        self.x_names, self.x_vals, self.line_arg = list(x_names), list(x_vals), line_arg
        self.line_vals, self.line_names, self.plot_name = list(line_vals), list(line_names), plot_name
        self.args, self.xlabel, self.ylabel = dict(args or {}), xlabel, ylabel
        self.x_log, self.y_log, self.styles = x_log, y_log, styles
        self.__dict__.update(extra)


class Mark:
    """The stand-in ``triton.testing.Mark``: a function and its grids; ``run`` prints each grid's
    table (outside perfgate's capture)."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        for bench in benchmarks_of(self):
            rows = []
            for labels, call_kwargs in grid_points(bench):
                rows.append((labels, self.fn(**call_kwargs, **bench.args, **kwargs)))
            if print_data:
                print(f"{bench.plot_name}:")
                for labels, value in rows:
                    print("  " + " ".join(f"{k}={v}" for k, v in labels.items()) + f"  {value}")


def perf_report(benchmarks):
    """The stand-in ``triton.testing.perf_report``: ``@perf_report(Benchmark(...))`` makes a :class:`Mark`."""
    return lambda fn: Mark(fn, benchmarks)


STAND_IN_VERSION = "0+perfgate.stand-in"


def install_stand_in() -> types.ModuleType:
    """Put a stand-in ``triton`` package with only ``triton.testing`` into ``sys.modules`` (see the
    module docstring) and return its ``testing`` module."""
    top = types.ModuleType("triton", "perfgate's stand-in for Triton (not installed here): triton.testing only")
    top.__path__ = []
    top.__spec__ = importlib.machinery.ModuleSpec("triton", None, is_package=True)
    top.__version__ = STAND_IN_VERSION
    testing = types.ModuleType("triton.testing", "perfgate's stand-in for triton.testing")
    testing.__spec__ = importlib.machinery.ModuleSpec("triton.testing", None)
    testing.Benchmark, testing.Mark, testing.perf_report = Benchmark, Mark, perf_report
    testing.do_bench = _stand_in_do_bench
    testing.do_bench_cudagraph = functools.partial(_stand_in_do_bench)
    top.testing = testing
    sys.modules["triton"], sys.modules["triton.testing"] = top, testing
    return testing


def install() -> types.ModuleType:
    """Make ``triton.testing`` capture (idempotent): patch the real module where Triton imports
    and a GPU can run it, else install the stand-in; returns the module."""
    testing = sys.modules.get("triton.testing")
    if testing is None:
        testing = _real_testing() or install_stand_in()
    elif not _gpu():  # real Triton imported already (by the benchmark's library), no GPU to run
        for name in ("do_bench", "do_bench_cudagraph"):
            if not getattr(getattr(testing, name, None), "__perfgate__", False):
                setattr(testing, name, _stand_in_do_bench)
    for name, graph in (("do_bench", False), ("do_bench_cudagraph", True)):
        current = getattr(testing, name, None)
        if current is not None and not getattr(current, "__perfgate__", False):
            setattr(testing, name, _captured(current, graph))
    mark = getattr(testing, "Mark", None)
    if mark is not None and not getattr(mark.run, "__perfgate__", False):
        mark.run = _captured_run(mark.run)
    return testing


def _gpu() -> bool:
    """Whether torch (imported by the worker before this) sees a GPU that Triton could run on."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    return cuda is not None and bool(cuda.is_available())


def _real_testing() -> types.ModuleType | None:
    """The real ``triton.testing`` where Triton is installed and torch sees a GPU, else None.
    Real Triton on a machine without a GPU cannot run ``do_bench`` ("0 active drivers"), and
    is not imported there to find out: its C extension cannot be imported twice in a process,
    so a probe that failed could not be undone (the worker imports torch before this)."""
    if not _gpu():
        return None
    try:
        import triton.testing as testing
    except Exception:  # noqa: BLE001 - not installed, or broken: the stand-in
        return None
    return testing


class TritonConvention(capture.ScriptConvention):
    """``triton.testing`` scripts (see the module docstring)."""

    name = "triton"
    looked_for = "bench*.py / benchmark*.py scripts that call triton.testing.do_bench or use perf_report"
    uses = USES

    def install(self) -> None:
        """:func:`install`."""
        install()

    def cold_cache(self, measured: Measured) -> bool | None:
        """``do_bench`` zeroes a 256 MB buffer before every call (a cold L2, and the launch hidden
        behind the flush: the call's device time), ``do_bench_cudagraph`` flushes nothing: a case
        whose callables were all handed to ``do_bench`` is timed with ``cold_cache`` unless the
        configuration says otherwise (GPU review #6)."""
        return True if measured.graphs and not any(measured.graphs) else None


CONVENTION = TritonConvention()
