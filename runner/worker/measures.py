"""Beyond time, inside a worker child: the peak memory of one call, and what ``torch.compile`` did.

Both are read at the end of a process pair's timing (the ``measure`` request of
:mod:`runner.worker.serve`), in the same fresh process the samples came from, so nothing here
perturbs a timed sample and no allocator history from another benchmark or pair is inherited.

Memory, one call after warm-up and timing (:func:`measure_memory`):

* A device with memory of its own (:mod:`runner.devices`; CUDA: ``torch.cuda.max_memory_allocated``
  and ``max_memory_reserved`` of the call, after ``reset_peak_memory_stats``): absolute peaks (the
  benchmark's inputs, weights and the call's temporaries: what has to fit on the device).
  perfgate's own L2-flush buffer (``cold_cache``) is released first and the cache emptied, so the
  reserved peak is the benchmark's segments, not the timing's pool.
* CPU: what the call allocates at its peak over the level before it, from two sources torch and
  Python keep themselves: torch's CPU tensor allocations (the profiler's memory events,
  ``torch.autograd.profiler.profile(profile_memory=True)``: every allocation and free of c10's CPU
  allocator with its size; the peak of their running sum) and Python's own allocations, numpy's
  arrays included (``tracemalloc``'s peak). Their sum is ``peak_bytes`` (an upper bound of the
  joint peak: the two peaks may fall at different moments). Both count allocations, not pages, so
  glibc's retained free blocks (which make the resident set of a second call read 0) do not hide
  them.
* Everywhere (Linux): the resident set's growth during the same call (``VmHWM`` after the call,
  reset through ``/proc/self/clear_refs`` before it, minus ``VmRSS`` before), what the operating
  system saw — recorded, never the verdict's measure (page-granular, and freed heap blocks glibc
  keeps make it depend on what the allocator held before the call; on a CPU it holds
  tracemalloc's own bookkeeping too).

torch.compile (:class:`CompileWatch`), from torch's own reports: the graph breaks and
recompilations it logs (``torch._logging`` artifacts ``graph_breaks`` and ``recompiles``, each
with its user frame and reason, or its guard failures), the graphs it counted
(``torch._dynamo.utils.counters``), and the compile time of each frame it compiled
(``torch._dynamo.utils.get_compilation_metrics``: ``entire_frame_compile_time_s``). Each worker
child gets an empty torch.compile cache of its own (:mod:`runner.worker.caches`), so a first call
compiles cold in every process and no process — of either side — reads what another compiled.

Imports torch only when it is already imported (the worker's server imports it).
"""

from __future__ import annotations

import gc
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable, TypeVar

from .. import devices
from ..conventions.process_memory import reset_high_water_mark, status_kib as _status_kib

#: Longest text kept of a graph break's reason or a guard failure (characters).
REASON_CHARS = 300

#: Longest frame (``path:line``) and function name kept (characters): they come from the code
#: under test, and results.json bounds its strings.
FRAME_CHARS = 500

#: Graph-break and recompilation sites reported per process at most (the most frequent first).
MAX_SITES = 100

T = TypeVar("T")  # what a measured call returns


# -- memory ------------------------------------------------------------------------------------

def _tracemalloc_peak(call: Callable[[], None]) -> int:
    """Bytes Python allocated at the peak of ``call`` over what it held before (``tracemalloc``);
    a benchmark that traces already keeps its trace running."""
    import tracemalloc

    own = not tracemalloc.is_tracing()
    if own:
        tracemalloc.start()
    else:
        tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    try:
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if own:
            tracemalloc.stop()
    return max(0, peak - before)


def allocation_peak(sizes) -> int:
    """The peak of the running sum of allocation sizes (bytes; frees negative), from 0."""
    running = peak = 0
    for n in sizes:
        running += n
        peak = max(peak, running)
    return peak


class _TensorAllocations:
    """torch's CPU allocations during a ``with`` block, from the profiler's memory events
    (``torch.autograd.profiler.profile(profile_memory=True)``); ``peak`` is None where the
    profiler could not run (another one running, a build without it)."""

    def __init__(self):
        self.prof = None
        self.peak: int | None = None

    def __enter__(self) -> "_TensorAllocations":
        if "torch" in sys.modules:
            try:
                from torch.autograd.profiler import profile

                prof = profile(profile_memory=True)
                prof.__enter__()
                self.prof = prof
            except Exception:  # noqa: BLE001 - Python's allocations alone then
                self.prof = None
        return self

    def __exit__(self, *exc) -> None:
        if self.prof is None:
            return
        self.prof.__exit__(None, None, None)
        try:
            events = [e for e in self.prof.kineto_results.events() if e.name() == "[memory]"
                      and str(e.device_type()).endswith("CPU")]
            events.sort(key=lambda e: e.start_ns())  # stable: equal times keep the record order
            self.peak = allocation_peak(e.nbytes() for e in events)
        except Exception:  # noqa: BLE001 - an older profiler without these accessors
            self.peak = None


def measure_memory(fn: Callable[[], object], device: str, release: Callable[[], None] | None = None) -> dict:
    """The peak memory of one warm call of ``fn`` (the module docstring), gc paused, whatever the
    device (a call of seconds costs one more per process pair). ``device``: a registered device's
    torch device string (``cpu``, ``cuda:N``); ``release``, called first, drops what the timing
    allocated for itself (the L2-flush buffer).

    Returns ``{kind, peak_bytes, rss_bytes, ...}``: ``kind`` the device's name where it has
    memory of its own (``cuda``: ``peak_bytes`` is ``max_memory_allocated``, absolute;
    ``reserved_bytes`` beside it) or ``cpu`` (``peak_bytes`` = ``tensor_bytes`` +
    ``python_bytes``, growth during the call); ``rss_bytes`` the resident set's growth during
    the call (None where ``/proc`` cannot tell; on a CPU it includes tracemalloc's bookkeeping).

    Raises:
        KeyError: ``device`` is no registered device; whatever ``fn`` raises.
    """
    backend = devices.get(device)
    if release is not None:
        release()
    # no gc.collect() first: with torch imported one costs 0.1-0.3 s, and garbage left from before
    # the call changes none of its allocations (the collector is paused during the call)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _device_peak(fn, backend) if backend.device_memory else _cpu_peak(fn)
    finally:
        if was_enabled:
            gc.enable()


def _device_peak(fn: Callable[[], object], backend: devices.Device) -> dict:
    """:func:`measure_memory` on a device with memory of its own: the allocator's peak."""
    backend.synchronize()
    backend.empty_cache()
    backend.reset_peak_memory()

    def call() -> None:
        result = fn()
        backend.synchronize()
        del result

    _, rss = _resident_growth(call)
    return {"kind": backend.name, "peak_bytes": backend.peak_memory(),
            "reserved_bytes": backend.reserved_peak(), "rss_bytes": rss}


def _cpu_peak(fn: Callable[[], object]) -> dict:
    """:func:`measure_memory` on the CPU: torch's tensors and Python's objects, traced."""
    tensors = _TensorAllocations()

    def call() -> None:
        result = fn()
        del result

    def traced() -> int:
        with tensors:
            return _tracemalloc_peak(call)

    python, rss = _resident_growth(traced)
    return {"kind": "cpu", "peak_bytes": (tensors.peak or 0) + python, "tensor_bytes": tensors.peak,
            "python_bytes": python, "rss_bytes": rss}


def _resident_growth(call: Callable[[], T]) -> tuple[T, int | None]:
    """``(what call returned, bytes)``: the resident set's high-water mark during ``call`` over
    the resident set before it; None where Linux's ``/proc`` cannot tell."""
    before = _status_kib(("VmRSS",))
    reset = reset_high_water_mark()
    returned = call()
    after = _status_kib(("VmHWM",))
    if reset and "VmRSS" in before and "VmHWM" in after:
        return returned, max(0, after["VmHWM"] - before["VmRSS"]) * 1024
    return returned, None


# -- torch.compile -------------------------------------------------------------------------------

#: ``Graph break in user code at FILE:LINE`` / ``… (user stack suppressed due to duplicate graph
#: break) in user code at FILE:LINE``, then ``Graph Break Reason: …`` (torch._dynamo.symbolic_convert).
_BREAK = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\s*\nGraph Break Reason: (?P<reason>.*)", re.S)
#: The last frame of the user traceback a first graph-break message carries.
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\s]+)\n(?P<code>[^\n]*)')
#: ``Recompiling function NAME in FILE:LINE`` then ``- 0/0: guard failure`` lines (torch._dynamo.guards).
_RECOMPILE = re.compile(r"Recompiling function (?P<func>\S+) in (?P<file>.+?):(?P<line>\d+)")
_GUARD = re.compile(r"^\s*-\s*(?:\d+/\d+:\s*)?(?P<guard>.+)$", re.M)
#: A resume function dynamo made after a graph break: the user's function and the break's line.
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<func>.+)_at_(?P<line>\d+)$")


def short_reason(text: str) -> str:
    """The gist of a graph-break reason: the first line that says what dynamo could not do (its
    ``Encountered graph break when attempting to trace …`` preamble left out), then its
    ``Explanation:`` line when there is one; at most :data:`REASON_CHARS` characters."""
    lines = [ln.strip() for ln in text.splitlines()]
    paragraphs = [ln for ln in lines if ln]
    if len(paragraphs) > 1 and paragraphs[0].startswith("Encountered graph break"):
        paragraphs = paragraphs[1:]
    gist = paragraphs[0] if paragraphs else text.strip()
    for ln in paragraphs[1:3]:
        if ln.startswith("Explanation:"):
            gist += " — " + ln[len("Explanation:"):].strip()
            break
    return gist[:REASON_CHARS]


def user_function(name: str) -> str:
    """``torch_dynamo_resume_in_f_at_16`` → ``f (resumed after line 16)``; other names unchanged."""
    m = _RESUME.match(name)
    return f"{m['func']} (resumed after line {m['line']})" if m else name


class CompileWatch:
    """What torch.compile reports in this process: install before the benchmark is set up,
    :meth:`mark_first_call` after its first call, read :meth:`facts` after the timing.

    Args:
        root: the revision's worktree; frames under it are written relative to it.
    """

    def __init__(self, root: str | None = None):
        self.root = os.path.realpath(root or os.getcwd())
        self.breaks: dict[tuple, dict] = {}
        self.recompiles: dict[tuple, dict] = {}
        self.first_call_end: float | None = None
        self._handler: logging.Handler | None = None

    def install(self) -> bool:
        """Ask torch to log graph breaks and recompilations, and listen (False without torch)."""
        try:
            import torch  # the worker's server imported it already: no cost
        except Exception:  # noqa: BLE001 - no torch (or a broken one): nothing can compile
            return False
        if not hasattr(torch, "_logging"):
            return False
        watch = self

        class _Listener(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    watch._record(record.name, record.getMessage())
                except Exception:  # noqa: BLE001 - a message of another shape is not ours to fail on
                    pass

        try:
            torch._logging.set_logs(graph_breaks=True, recompiles=True)
        except Exception:  # noqa: BLE001 - a torch without these artifacts: counters alone
            return False
        self._handler = _Listener(level=logging.DEBUG)
        # dynamo's loggers stop at "torch._dynamo" (propagate off there), so listen on it
        logging.getLogger("torch._dynamo").addHandler(self._handler)
        return True

    def mark_first_call(self) -> None:
        """The benchmark's first call has returned: what compiled until now is its cold compile."""
        self.first_call_end = time.time()

    def frame(self, file: str, line: int | str) -> str:
        """``path:line``, the path relative to the revision's worktree when it is under it."""
        try:
            path = os.path.realpath(file)
            rel = os.path.relpath(path, self.root)
            shown = rel if not rel.startswith("..") else "/".join(Path(path).parts[-2:])
        except (OSError, ValueError):
            shown = file
        return f"{shown[-(FRAME_CHARS - 12):]}:{line}"

    def _record(self, name: str, message: str) -> None:
        if name.endswith("__graph_breaks"):
            m = _BREAK.search(message)
            if not m:
                return
            reason = short_reason(m["reason"].split("\nUser code traceback:")[0])
            key = (self.frame(m["file"], m["line"]), reason.split(" — ", 1)[0])
            site = self.breaks.setdefault(key, {"frame": key[0], "reason": reason, "count": 0})
            site["count"] += 1
            frames = list(_FRAME.finditer(message))
            if frames and "function" not in site:
                last = frames[-1]
                site["function"] = user_function(last["func"])[:FRAME_CHARS]
                site["code"] = last["code"].strip()[:200]
        elif name.endswith("__recompiles"):
            m = _RECOMPILE.search(message)
            if not m:
                return
            guards = [short_guard(g["guard"]) for g in _GUARD.finditer(message[m.end():])]
            reason = guards[0] if guards else "guard failure"
            key = (self.frame(m["file"], m["line"]), user_function(m["func"])[:FRAME_CHARS], reason)
            site = self.recompiles.setdefault(key, {"frame": key[0], "function": key[1], "reason": reason,
                                                    "count": 0})
            site["count"] += 1

    def facts(self) -> dict | None:
        """``{graphs, compiles, compile_s, recompile_s, graph_breaks: [{frame, function?, code?,
        reason, count}], recompiles: [{frame, function, reason, count}], graph_break_count,
        recompile_count}``, or None when nothing was compiled in this process (torch._dynamo
        never imported, or no frame compiled).

        ``compile_s``: torch's compile time (``entire_frame_compile_time_s``) of the frames
        compiled up to the end of the first call (the cold compile); ``recompile_s`` of those
        compiled after it (warm-up, timing).
        """
        if "torch._dynamo" not in sys.modules:
            return None
        try:
            from torch._dynamo.utils import counters, get_compilation_metrics

            metrics = list(get_compilation_metrics())
            graphs = int(counters["stats"].get("unique_graphs", 0))
            break_count = int(sum(counters["graph_break"].values()))
        except Exception:  # noqa: BLE001 - a torch whose dynamo keeps them elsewhere
            return None
        if not metrics and not graphs:
            return None
        first, later = 0.0, 0.0
        for m in metrics:
            seconds = float(getattr(m, "entire_frame_compile_time_s", None) or 0.0)
            start = getattr(m, "start_time", None)
            if self.first_call_end is None or start is None or start <= self.first_call_end:
                first += seconds
            else:
                later += seconds
        recompiles = [dict(v) for v in self.recompiles.values()]
        return {"graphs": graphs, "compiles": len(metrics), "compile_s": round(first, 6),
                "recompile_s": round(later, 6),
                "graph_breaks": _most(self.breaks.values(), lambda s: s["frame"]),
                "graph_break_count": break_count,
                "recompiles": _most(recompiles, lambda s: (s["frame"], s["reason"])),
                "recompile_count": sum(r["count"] for r in recompiles)}

    def close(self) -> None:
        if self._handler is not None:
            logging.getLogger("torch._dynamo").removeHandler(self._handler)
            self._handler = None


def _most(sites, order) -> list[dict]:
    """The :data:`MAX_SITES` most frequent sites, then in ``order``."""
    kept = sorted((dict(s) for s in sites), key=lambda s: -s["count"])[:MAX_SITES]
    return sorted(kept, key=order)


def short_guard(text: str) -> str:
    """A guard failure as torch words it, at most :data:`REASON_CHARS` characters."""
    return text.strip()[:REASON_CHARS]
