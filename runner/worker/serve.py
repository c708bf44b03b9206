"""The worker side: one fork server per revision, one fresh child per benchmark and process pair.

Run as ``python -m runner.worker --sys-path P [--sys-path P ...] --device D [--cpus 1,2]`` with
the revision's worktree as the working directory; :mod:`runner.pipeline.workers` is the parent side.

Why a fork server. A benchmark's speed must not depend on what ran before it in the same
process: glibc's dynamic mmap threshold, the heap's free lists, Python's own allocator and
torch's caching allocator all carry history (seen: an untouched ``loss`` benchmark 45 % faster
in one worker because the benchmark before it no longer allocated 25 MB per call). So every
benchmark, and every process pair of a benchmark, runs in a fresh process, the same on both
sides (as pyperf and asv do). Starting Python and importing torch costs 1–3 s; the fork server
pays that once per side and forks a child per request in a few milliseconds. Every child of a
side starts from the same parent state, so no child sees another's history.

What the server must never do, because a forked child would inherit it broken: initialise CUDA
(CUDA does not survive ``fork``) or start threads (GNU OpenMP's pool hangs in a forked child;
measured here: a parallel ``a @ a`` in the parent, then any parallel op in the child, hangs).
Nor should it hold the benchmarks' data: every child would share it at the same physical pages
(:data:`PRELOAD_MAX_DATA_BYTES`). It therefore imports torch but runs nothing. ``preload``
imports the benchmark files into the server (so a heavy library is imported once, not once per
child) and then checks these conditions; when a file's import started a thread or CUDA or
allocated tensors, the server reports ``fork_safe: false`` and exits, and the parent starts a
new server without preloading (each child then imports the files itself).

Protocol: one JSON object per line, requests on standard input, responses on a private copy of
the original standard output (file descriptor 1 then points at standard error, so whatever
benchmarks print goes to the worker log and cannot corrupt the protocol). The server answers
``preload`` {dir, suite?, options?} and ``quit``; on ``fork`` it forks, and the *child* answers first
(``{ok, ready, pid}``) and then serves ``env``, ``list`` {dir, suite?, options?}, ``setup`` {dir, file,
func, name, suite?, case?, options?, min_sample_time, cold_cache, number?, warmup_samples?, warmup_seconds?},
``sample`` {count, number?}, ``measure`` {} (after the timing: the peak memory of one call and what
torch.compile did, :mod:`runner.worker.measures`), ``profile`` {trace_path, calls}, ``trace`` {the ``setup`` fields, root} (the code map: set-up and one
call under a tracer, :mod:`runner.worker.tracing`) until ``quit`` or end of input. ``suite``
names the convention (:mod:`runner.conventions`), ``case`` is the case as listed and ``options`` the
configuration keys the convention asks for. A case whose benchmark measures itself answers
``setup`` with ``self_measured: true`` and each ``sample`` with ``readings`` ``{name: {values, unit,
direction}}`` (one run of it) instead of timed samples. When the child has exited the
server writes ``{child_exited: pid, status}`` (status as ``os.waitstatus_to_exitcode``: negative
is the signal). Failures carry ``error`` (the traceback's last lines).

This is the only place (with runner.worker.profiling) where torch is imported by perfgate.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import warnings

from .. import conventions
from ..conventions.base import Skipped, format_error
from .measures import CompileWatch, isolate_compile_caches, measure_memory, remove_compile_caches
from .sampling import Timer, calibrate, recalibrate, warm_up


#: Conventions whose listing only imports the benchmark files (it runs no benchmark): the code map's
#: pass lists them untraced before it traces one case (:meth:`Worker.trace`).
IMPORT_ONLY_LISTINGS = (None, "perfgate", "asv", "pytest-benchmark")

#: Limits of what a listed case may carry (results.json's schema: a name, a parameter's label, a unit).
NAME_MAX, PARAMS_MAX, LABEL_MAX, UNIT_MAX = 500, 50, 500, 40


def list_suite(directory: str, suite: str | None = None, options: dict | None = None) -> dict:
    """The listing of ``directory`` by the convention ``suite`` (None: perfgate's), worker side:
    ``{benchmarks, errors, skipped}``. A case whose name, params or unit exceed what results.json
    holds (:data:`NAME_MAX`, …; names and labels come from the benchmarks' code) is an error of its
    file instead, so one such case cannot invalidate the whole result."""
    found = conventions.get(suite).collect(directory, dict(options or {}))
    cases, errors = [], list(found.get("errors") or [])
    for case in found.get("benchmarks") or []:
        params = case.get("params") or {}
        too_long = (len(str(case.get("name"))) > NAME_MAX or len(params) > PARAMS_MAX
                    or any(len(str(k)) > 200 or len(str(v)) > LABEL_MAX for k, v in params.items())
                    or len(str(case.get("unit") or "s")) > UNIT_MAX or len(str(case.get("family") or "")) > NAME_MAX)
        if too_long:
            errors.append({"file": case.get("file") or str(case.get("name"))[:NAME_MAX],
                           "error": f"a case named {str(case.get('name'))[:80]!r}… has a name, params or unit longer "
                                    f"than results.json holds ({NAME_MAX} characters a name, {PARAMS_MAX} params)"})
        else:
            cases.append(case)
    return {**found, "benchmarks": cases, "errors": errors}


def prepare(req: dict, device: str):
    """Set up the case a ``setup`` request names (the listed ``case``, else its ``file``, ``func``
    and ``name``) by its convention; the case gets the side's benchmark directory as ``dir``.

    Raises:
        LookupError, Skipped, BenchmarkShapeError: as the convention's ``prepare``.
    """
    case = dict(req.get("case") or {k: req.get(k) for k in ("file", "func", "name")})
    case["dir"] = req["dir"]
    return conventions.get(req.get("suite")).prepare(case, device, dict(req.get("options") or {}))


class Worker:
    """State of one worker child: the device and the benchmark currently set up."""

    def __init__(self, device: str, compile_cache: str | None = None):
        self.requested_device = device
        self.device = self._resolve_device(device)
        self.fn = None
        self.self_measure = None  # a benchmark that measures itself: one run of it → readings
        self.timer: Timer | None = None
        self.number = 1
        self.teardowns: list = []
        self.compile_cache = compile_cache
        self.compile_watch: CompileWatch | None = None

    @staticmethod
    def _resolve_device(device: str) -> str:
        if device == "cpu":
            return "cpu"
        try:
            import torch
        except ImportError:
            if device == "cuda":
                raise RuntimeError("device 'cuda' asked for, but torch is not installed in this environment")
            return "cpu"
        if torch.cuda.is_available():
            return "cuda"
        if device == "cuda":
            raise RuntimeError("device 'cuda' asked for, but torch.cuda.is_available() is False")
        return "cpu"

    # -- requests -----------------------------------------------------------------------
    def env(self, req: dict) -> dict:
        from ..environment import cpu_model

        info = {"device": self.device, "device_name": cpu_model(),
                "torch": None, "cuda": None, "driver": None}
        try:
            import torch

            info["torch"] = torch.__version__
            info["cuda"] = torch.version.cuda
            info["threads"] = {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}
            if self.device.startswith("cuda"):
                info["device_name"] = torch.cuda.get_device_name()
                cap = torch.cuda.get_device_capability()
                info["compute_capability"] = f"{cap[0]}.{cap[1]}"
        except ImportError:
            pass
        if hasattr(os, "sched_getaffinity"):
            info["cpus"] = sorted(os.sched_getaffinity(0))
        if self.device.startswith("cuda"):
            try:
                import pynvml

                pynvml.nvmlInit()
                info["driver"] = pynvml.nvmlSystemGetDriverVersion()
                if isinstance(info["driver"], bytes):
                    info["driver"] = info["driver"].decode()
            except Exception:  # noqa: BLE001 - NVML is optional
                pass
        return info

    def list(self, req: dict) -> dict:
        """The listing of a benchmark directory by its convention (:func:`list_suite`)."""
        return list_suite(req["dir"], req.get("suite"), req.get("options"))

    def setup(self, req: dict) -> dict:
        """Set a benchmark up: call its function, make the first call, calibrate, warm up.

        ``number`` (calls per sample) is calibrated when the request does not carry it (the
        first process pair of a benchmark) and reused as given otherwise (later pairs). The
        parent chooses the number each side samples with (it may share one side's between the two,
        :func:`runner.pipeline.schedule.calls_per_sample`) and sends it with every ``sample``.
        ``warmup_samples`` fixes the warm-up to that many samples (later pairs, 0 allowed);
        without it the warm-up runs until steady or until ``warmup_seconds`` (default 1 s, the
        parent bounds it by the budget) would pass (:func:`runner.worker.sampling.warm_up`). A
        case its suite skips answers ``ok`` false with ``skipped`` (the reason) instead of an error.

        Answers ``number``, ``per_call`` (seconds per call, warm: the median of the last warm-up
        samples), ``first_call_s``, ``warmup_calls`` and ``warmup_samples``; a benchmark that
        measures itself answers ``self_measured`` instead (nothing is timed here).
        """
        self.fn = self.self_measure = None
        if self.compile_watch is None:
            self.compile_watch = CompileWatch()
            self.compile_watch.install()  # before the set-up: a benchmark may compile in it
        try:
            prepared = prepare(req, self.device)
        except Skipped as exc:
            return {"ok": False, "skipped": str(exc), "error": f"skipped: {exc}"}
        if prepared.teardown is not None:
            self.teardowns.append(prepared.teardown)
        if prepared.measure is not None:
            self.self_measure = prepared.measure
            return {"self_measured": True, "number": 1}
        fn = prepared.fn
        self.timer = Timer(self.device, cold_cache=bool(req.get("cold_cache")))
        min_sample_time = float(req["min_sample_time"])
        t0 = time.perf_counter()
        fn()  # first call: lazy initialisation, compilation, autotuning
        first_call = time.perf_counter() - t0
        self.compile_watch.mark_first_call()
        estimate, initial = None, []
        if req.get("number"):
            self.number = int(req["number"])
        else:
            self.number, estimate = calibrate(self.timer, fn, min_sample_time)
            initial = [estimate]  # the last calibration sample, at this number: warm-up's first
        fixed = req.get("warmup_samples")
        calls, warm = warm_up(self.timer, fn, self.number, fixed_samples=int(fixed) if fixed is not None else None,
                              max_seconds=float(req.get("warmup_seconds") or 1.0), initial=initial)
        if not req.get("number"):
            # The first calibration samples are cold (caches, allocator, clocks): recalibrate on
            # the warm estimate so a slow first call does not leave samples shorter than asked.
            self.number = recalibrate(self.number, warm, min_sample_time)
        gc.collect()
        self.fn = fn
        tail = sorted(warm[-3:])
        per_call = tail[len(tail) // 2] if tail else None
        return {"number": self.number, "warmup_calls": calls + 1, "warmup_samples": len(warm),
                "estimate_s": estimate, "per_call": per_call, "first_call_s": first_call}

    def sample(self, req: dict) -> dict:
        """``count`` samples of ``number`` calls (default: the set-up's): seconds per call, and per
        sample its wall and CPU seconds and involuntary context switches
        (:class:`runner.worker.sampling.Sample`). For a benchmark that measures itself: one run of
        it, ``readings`` ``{name: {values, unit, direction}}``."""
        if self.self_measure is not None:
            readings = self.self_measure()
            return {"samples": [], "readings": {name: {"values": [float(v) for v in r.values], "unit": r.unit,
                                                       "direction": r.direction} for name, r in readings.items()}}
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        number = int(req.get("number") or self.number)
        self.timer.reset_peak_memory()
        taken = [self.timer.sample(self.fn, number) for _ in range(int(req.get("count", 1)))]
        return {"samples": [s.per_call for s in taken], "wall_s": [s.wall_s for s in taken],
                "cpu_s": [s.cpu_s for s in taken], "switches": [s.switches for s in taken],
                "others_busy": [s.others_busy for s in taken], "steal": [s.steal for s in taken],
                "number": number, "peak_memory_bytes": self.timer.peak_memory()}

    def measure(self, req: dict) -> dict:
        """After the timing, in the same process: what torch.compile did here (None when nothing
        compiled), then the peak memory of one call (:mod:`runner.worker.measures`) unless
        ``memory`` is false (the parent's budget rule, :func:`runner.measures.memory_due`). Answers
        ``{compile, memory}``, with ``memory_error`` instead of ``memory`` when measuring it
        failed (the timing stands)."""
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        out: dict = {"compile": self.compile_watch.facts() if self.compile_watch else None}
        if req.get("memory") is False:
            return out

        def release() -> None:
            if self.timer is not None:
                self.timer.release()

        try:
            out["memory"] = measure_memory(self.fn, self.device, release)
        except Exception as exc:  # noqa: BLE001 - the benchmark's failure is data
            out["memory_error"] = format_error(exc, 3)
        return out

    def trace(self, req: dict) -> dict:
        """The code map's pass for one case, in a process of its own: set it up as ``setup`` does
        and make one call (one run, for a benchmark that measures itself) under a tracer. Answers
        ``files`` (repository-relative paths under ``root`` that executed) and ``tool``, or
        ``skipped`` for a case its suite skips."""
        from .tracing import trace_files

        if req.get("suite") in IMPORT_ONLY_LISTINGS:
            # Import the benchmark files (and so the library) untraced first, as the fork server's
            # preload does: a module body that ran at import is then in no benchmark's map, whether
            # or not this side's server could preload (else a refused preload maps every module of
            # the package to every benchmark, and selection never skips anything).
            list_suite(req["dir"], req.get("suite"), req.get("options"))
        prepared_box: list = []

        def run() -> None:
            prepared = prepare(req, self.device)
            prepared_box.append(prepared)
            if prepared.measure is not None:
                prepared.measure()
            else:
                prepared.fn()

        try:
            files, tool = trace_files(run, req["root"])
        except Skipped as exc:
            return {"skipped": str(exc)}
        finally:
            for prepared in prepared_box:
                if prepared.teardown is not None:
                    self.teardowns.append(prepared.teardown)
        out = {"files": files, "tool": tool}
        fn = prepared_box[0].fn if prepared_box else None
        if req.get("overhead") and fn is not None:
            # what tracing costs a warm call (evaluation/selection.py): one call plain, one traced
            t0 = time.perf_counter()
            fn()
            out["plain_call_s"] = time.perf_counter() - t0
            timed: list[float] = []

            def traced_call() -> None:  # the call alone: the tracer's set-up is the pass's fixed cost
                t1 = time.perf_counter()
                fn()
                timed.append(time.perf_counter() - t1)

            trace_files(traced_call, req["root"])
            out["traced_call_s"] = timed[0]
        return out

    def close(self) -> None:
        """Run the teardowns of the cases set up in this process (asv ``teardown``), last first;
        one that raises is logged and does not stop the others; remove the process's compile caches."""
        if self.compile_watch is not None:
            self.compile_watch.close()
        try:
            self._teardown()
        finally:
            remove_compile_caches(self.compile_cache)

    def _teardown(self) -> None:
        while self.teardowns:
            try:
                self.teardowns.pop()()
            except Exception as exc:  # noqa: BLE001 - the measurements are taken; say it in the log
                print(f"teardown failed: {format_error(exc, 3)}", file=sys.stderr)

    def profile(self, req: dict) -> dict:
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        from .profiling import profile_callable

        return profile_callable(self.fn, device=self.device, trace_path=req["trace_path"],
                                calls=int(req.get("calls", 5)))


class Channel:
    """Line-delimited JSON over two file descriptors, read without buffering ahead.

    The server and its children share the request descriptor; the parent sends a request only
    after the previous response, so a plain ``os.read`` never takes bytes meant for another
    process (a buffered reader in the server could swallow a child's request).
    """

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._buf = b""

    def requests(self):
        """Yield decoded request lines (str) until end of input."""
        while True:
            while b"\n" not in self._buf:
                chunk = os.read(self.read_fd, 65536)
                if not chunk:
                    return
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
            text = line.decode("utf-8", "replace").strip()
            if text:
                yield text

    def respond(self, obj: dict, new_line: bool = False) -> None:
        """Write ``obj`` as one line; ``new_line`` first ends any half-written line."""
        data = (("\n" if new_line else "") + json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(self.write_fd, data):]


_CHILD_REQUESTS = ("env", "list", "setup", "sample", "measure", "profile", "trace")


def serve(worker: Worker, requests, respond) -> None:
    """A child's request loop (separate from the process plumbing, so it can be tested in-process)."""
    for line in requests:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "quit":
                return
            handler = getattr(worker, cmd, None) if cmd in _CHILD_REQUESTS else None
            if handler is None:
                respond({"ok": False, "error": f"unknown request {cmd!r}"})
                continue
            respond({"ok": True, **handler(req)})
        except BaseException as exc:  # noqa: BLE001 - the benchmark's failure is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            respond({"ok": False, "error": format_error(exc)})


def thread_count() -> int:
    """Threads of this process (``/proc/self/task``; 1 where that is not readable)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a broken torch cannot have initialised CUDA
        return False


#: Tensor/array data the fork server may hold after importing the benchmark files (bytes).
#:
#: Why: data a module allocates at import (model weights, a lookup table) is shared, copy-on-write,
#: by every child of the server, at the same physical pages for the whole compare; its placement
#: in the caches then is a property of the server, the same in every process pair, and no number
#: of pairs reveals it. Measured: an identical loss step reading 51 MB of module-level weights got
#: 2 false verdicts (+1.5 %, +2.1 %) in 10 A/A compares with the weights in the server, none with
#: each child importing (and allocating) them itself.
PRELOAD_MAX_DATA_BYTES = 2**20


def held_array_bytes() -> int:
    """Bytes of torch tensor storage and numpy array data this process holds (each buffer once)."""
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    seen: set[int] = set()
    total = 0

    def add(key: int, nbytes: int) -> None:
        nonlocal total
        if key not in seen:
            seen.add(key)
            total += nbytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on torch's deprecated lazy aliases warns
        for obj in gc.get_objects():
            if torch is not None and isinstance(obj, torch.Tensor):
                try:
                    storage = obj.untyped_storage()
                    add(storage.data_ptr(), storage.nbytes())
                except Exception:  # noqa: BLE001 - meta/sparse tensors have no plain storage
                    continue
            elif np is not None:
                # numpy arrays are not tracked by the collector: find them as referents
                for ref in gc.get_referents(obj):
                    if isinstance(ref, np.ndarray):
                        add(ref.__array_interface__["data"][0], ref.nbytes)
    return total


def fork_hazards(threads_before: int, data_check: bool = False) -> list[str]:
    """What would make a forked child of this process unsafe or its measurements shared: threads
    started since ``threads_before`` was counted, CUDA initialised, and (``data_check``) more than
    :data:`PRELOAD_MAX_DATA_BYTES` of tensor/array data. Empty when forking is safe."""
    hazards = []
    now = thread_count()
    if now > threads_before:
        hazards.append(f"{now - threads_before} thread(s) started")
    if _cuda_initialized():
        hazards.append("CUDA initialised")
    if data_check:
        held = held_array_bytes()
        if held > PRELOAD_MAX_DATA_BYTES:
            hazards.append(f"{held / 2**20:.1f} MiB of tensors/arrays allocated at import (would be shared by "
                           "every process pair)")
    return hazards


#: Range of the random offset :func:`shift_heap` puts before a child's own heap allocations (bytes).
HEAP_SHIFT_MAX = 1 << 16


def shift_heap() -> int:
    """Move where this process's next heap allocations land by a random multiple of 64 bytes
    (below :data:`HEAP_SHIFT_MAX`), and return the size of the block that moved them.

    Why: every child of a fork server starts from the server's heap, with address-space
    randomisation off, so a benchmark's temporaries sit at the same addresses in every process
    pair of a side — and at slightly other ones on the other side wherever the revisions' code
    differs (a changed constant is enough). Alignment against pages and cache sets then differs
    between the sides for the whole compare: a layout effect of the change, not of the code
    measured, that no number of pairs reveals (measured: an untouched 25 MB loss step read +1.0 %
    and +1.1 % in 2 of 10 compares, with intervals excluding nothing but narrow). A random offset
    per process makes the layout vary from pair to pair, so its effect becomes spread the interval
    carries instead of a bias (layout randomisation: Curtsinger & Berger, "Stabilizer:
    statistically sound performance evaluation", ASPLOS 2013). The block is never freed.
    """
    import ctypes
    import secrets

    # Above any free block the server left (256 KiB), so it is carved from the top of the heap,
    # where a benchmark's large temporaries come from too.
    size = (1 << 18) + secrets.randbelow(HEAP_SHIFT_MAX // 64) * 64
    if size:
        try:
            libc = ctypes.CDLL(None)
            libc.malloc.restype = ctypes.c_void_p
            libc.malloc(ctypes.c_size_t(size))
        except (OSError, AttributeError):  # no C library to ask (not Linux/glibc): nothing to shift
            return 0
    return size


def _run_child(chan: Channel, device: str) -> int:
    """Body of a forked child: a fresh process group (so the parent can kill whatever the
    benchmark spawned), then the request loop."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    # The server froze its objects before the fork (gc.freeze) so that its own collections stay
    # cheap; the child unfreezes them at once, as a plain ``python`` process has them: otherwise a
    # benchmark's ``gc.collect()`` (or a full collection its allocations trigger) walks only its
    # own objects, not torch's, and costs a fraction of what it costs the user. Seen on a real
    # PR (accelerate #2914, a ``gc.collect()`` per call removed): ×0.0001 in fresh processes, ×0.4
    # here while the objects stayed frozen. The price is memory: a collection in the child touches
    # the server's objects and copies their pages.
    gc.unfreeze()
    shift_heap()
    caches = isolate_compile_caches()  # a cold torch.compile in every process (runner.worker.measures)
    try:
        worker = Worker(device, compile_cache=caches)
    except Exception as exc:  # noqa: BLE001
        remove_compile_caches(caches)
        chan.respond({"ok": False, "error": str(exc), "fatal": True})
        return 1
    chan.respond({"ok": True, "ready": True, "pid": os.getpid(), "device": worker.device})
    try:
        serve(worker, chan.requests(), chan.respond)
    finally:
        worker.close()
    return 0


def serve_forks(chan: Channel, device: str) -> None:
    """The fork server's loop: ``preload``, ``fork`` (a child serves until it quits), ``quit``."""
    threads_before = thread_count()
    for line in chan.requests():
        try:
            req = json.loads(line)
        except ValueError:
            chan.respond({"ok": False, "error": f"not JSON: {line[:80]!r}"})
            continue
        cmd = req.get("cmd")
        if cmd == "quit":
            chan.respond({"ok": True})
            return
        if cmd == "preload":
            try:
                listing = list_suite(req["dir"], req.get("suite"), req.get("options"))
            except Exception as exc:  # noqa: BLE001 - a convention that cannot list: the compare says why
                chan.respond({"ok": False, "error": format_error(exc)})
                continue
            hazards = fork_hazards(threads_before, data_check=True)
            chan.respond({"ok": True, **listing, "fork_safe": not hazards, "hazards": hazards})
            if hazards:
                return  # a child of this process could hang or break; the parent starts a new server
            continue
        if cmd != "fork":
            chan.respond({"ok": False, "error": f"unknown request {cmd!r}"})
            continue
        gc.collect()
        gc.freeze()  # keep the server's objects out of the children's collections (no copy-on-write)
        try:
            pid = os.fork()
        except OSError as exc:
            chan.respond({"ok": False, "error": f"fork failed: {exc}"})
            continue
        if pid == 0:
            code = 1
            try:
                code = _run_child(chan, device)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        # A leading newline ends whatever line a killed child left half-written.
        chan.respond({"child_exited": pid, "status": code}, new_line=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.worker")
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin this worker to")
    args = parser.parse_args(argv)

    if args.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for p in reversed(args.sys_path):
        sys.path.insert(0, p)
    chan = Channel(0, proto_fd)
    try:
        import torch  # noqa: F401 - imported once here so that every child starts with it
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 - a broken torch install is the user's to fix
        chan.respond({"ok": False, "error": f"import torch failed: {format_error(exc, 3)}", "fatal": True})
        return 1
    chan.respond({"ok": True, "ready": True, "server": True, "pid": os.getpid()})
    serve_forks(chan, args.device)
    return 0
