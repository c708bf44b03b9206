"""A worker child's requests (:mod:`.serve` runs the loop that calls them): list a benchmark
directory, set a case up (first call, calibration, warm-up), take samples, measure memory and
torch.compile after the timing, profile, trace for the code map. Requests and replies are the
typed messages of :mod:`runner.protocol`."""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

from .. import conventions, devices
from ..conventions.base import Skipped, format_error
from ..protocol import (Failure, ListRequest, MeasureReply, MeasureRequest, ProfileRequest, SampleReply,
                        SampleRequest, SetupReply, SetupRequest)
from ..outputs.summary import SETUP_SEED, OutputReply, OutputRequest
from .caches import remove_compile_caches
from .measures import CompileWatch, measure_memory
from .outputs import seed_all, summarize
from .sampling import Timer, calibrate, recalibrate, warm_up


#: Conventions whose listing only imports the benchmark files (it runs no benchmark): the code map's
#: pass lists them untraced before it traces one case (:meth:`Worker.trace`).
IMPORT_ONLY_LISTINGS = (None, "perfgate", "asv", "pytest-benchmark")

#: The generations the worker collects after a set-up on a CPU, before any sample (:meth:`Worker.setup`;
#: a full collection on a device with memory of its own, whose peak memory is absolute):
#: ``gc.collect(1)``, generations 0 and 1 (Python 3.14's incremental collector reads it as the young
#: generation and one increment of the old: still not a walk of every object).
SETUP_GC_GENERATION = 1

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
    """State of one worker child: the device and the benchmark currently set up. Each request
    handler takes the request's JSON and answers the JSON of its :mod:`runner.protocol` reply.

    Args:
        device: the device asked for: a registered device's name or ``auto``
            (:func:`runner.devices.resolve`).

    Raises:
        RuntimeError: the device named cannot run here.
    """

    def __init__(self, device: str, compile_cache: str | None = None):
        self.requested_device = device
        self.device = devices.resolve(device)
        self.backend = devices.get(self.device)
        self.fn = None
        self.self_measure = None  # a benchmark that measures itself: one run of it → readings
        self.timer: Timer | None = None
        self.number = 1
        self.teardowns: list = []
        self.compile_cache = compile_cache
        self.compile_watch: CompileWatch | None = None

    # -- requests -----------------------------------------------------------------------
    def env(self, req: dict) -> dict:
        """``{device, device_name, torch, cuda, driver, threads?, compute_capability?, cpus?}``:
        the device, torch and what each registered vendor says torch was built with
        (:meth:`runner.devices.base.Device.torch_build`), the device's own facts, the CPUs."""
        from ..environment import cpu_model

        try:
            import torch
        except ImportError:
            torch = None
        info = {"device": self.device, "device_name": cpu_model(),
                "torch": torch.__version__ if torch is not None else None}
        for registered in devices.REGISTRY:
            info.update(registered.torch_build(torch))
        info["driver"] = None
        if torch is not None:
            info["threads"] = {"intra_op": torch.get_num_threads(),
                               "inter_op": torch.get_num_interop_threads()}
        info.update(self.backend.facts())
        if hasattr(os, "sched_getaffinity"):
            info["cpus"] = sorted(os.sched_getaffinity(0))
        return info

    def list(self, req: dict) -> dict:
        """The listing of a benchmark directory by its convention (:func:`list_suite`)."""
        asked = ListRequest.from_json(req)
        return list_suite(asked.dir, asked.suite, asked.options)

    def setup(self, req: dict) -> dict:
        """Set a benchmark up: call its function, make the first call, calibrate, warm up.

        ``number`` (calls per sample) is calibrated when the request does not carry it (the
        first process pair of a benchmark) and reused as given otherwise (later pairs). The
        parent chooses the number each side samples with (it may share one side's between the two,
        :func:`runner.pipeline.timing.schedule.calls_per_sample`) and sends it with every
        ``sample``. ``warmup_samples`` fixes the warm-up to that many samples (later pairs, 0
        allowed); without it the warm-up runs until steady or until ``warmup_seconds`` (default 1 s,
        the parent bounds it by the budget) would pass (:func:`runner.worker.sampling.warm_up`). A
        case its suite skips answers ``ok`` false with ``skipped`` (the reason) instead of an error.

        Answers ``number``, ``per_call`` (seconds per call, warm: the median of the last warm-up
        samples), ``first_call_s``, ``warmup_calls`` (every call so far: the first, calibration's,
        warm-up's) and ``warmup_samples``; a benchmark that
        measures itself answers ``self_measured`` instead (nothing is timed here).
        """
        asked = SetupRequest.from_json(req)
        self.fn = self.self_measure = None
        if self.compile_watch is None:
            self.compile_watch = CompileWatch()
            self.compile_watch.install()  # before the set-up: a benchmark may compile in it
        seed_all(SETUP_SEED)  # inputs drawn without a seed alike on both sides (runner.outputs)
        try:
            prepared = prepare(req, self.device)
        except Skipped as exc:
            return Failure(f"skipped: {exc}", skipped=str(exc)).to_json()
        if prepared.teardown is not None:
            self.teardowns.append(prepared.teardown)
        if prepared.measure is not None:
            self.self_measure = prepared.measure
            return SetupReply(number=1, self_measured=True).to_json()
        fn = prepared.fn
        cold = prepared.cold_cache if asked.cold_cache is None else asked.cold_cache
        self.timer = Timer(self.device, cold_cache=bool(cold))
        min_sample_time = float(asked.min_sample_time)
        self.backend.synchronize()
        t0 = time.perf_counter()
        fn()  # first call: lazy initialisation, compilation, autotuning
        self.backend.synchronize()  # its device work, not its launches (GPU review #20)
        first_call = time.perf_counter() - t0
        self.compile_watch.mark_first_call()
        estimate, warm = self._calibrate_and_warm_up(asked, fn, min_sample_time)
        self._collect_setup_garbage()
        self.fn = fn
        tail = sorted(warm[-3:])
        per_call = tail[len(tail) // 2] if tail else None
        return SetupReply(number=self.number, warmup_calls=1 + self.timer.calls,
                          warmup_samples=len(warm), estimate_s=estimate, per_call=per_call,
                          first_call_s=first_call, cold_cache=self.timer.cold_cache).to_json()

    def _calibrate_and_warm_up(self, asked: SetupRequest, fn,
                               min_sample_time: float) -> tuple[float | None, list[float]]:
        """Set :attr:`number` (the request's, else calibrated to ``min_sample_time`` seconds a
        sample and recalibrated on the warm estimate) and warm ``fn`` up.

        Returns: ``(calibration's last sample or None, the warm-up's samples)``, seconds per call.
        """
        estimate, initial = None, []
        if asked.number:
            self.number = int(asked.number)
        else:
            self.number, estimate = calibrate(self.timer, fn, min_sample_time)
            initial = [estimate]  # the last calibration sample, at this number: warm-up's first
        fixed = asked.warmup_samples
        _, warm = warm_up(self.timer, fn, self.number,
                          fixed_samples=int(fixed) if fixed is not None else None,
                          max_seconds=float(asked.warmup_seconds or 1.0), initial=initial)
        if not asked.number:
            # The first calibration samples are cold (caches, allocator, clocks): recalibrate on
            # the warm estimate so a slow first call does not leave samples shorter than asked.
            self.number = recalibrate(self.number, warm, min_sample_time)
        return estimate, warm

    def _collect_setup_garbage(self) -> None:
        """Collect the set-up's and warm-up's garbage before the samples: on a CPU the young
        generations only (:data:`SETUP_GC_GENERATION`), on a device with memory of its own all."""
        # A full collection walks torch's ~10^6 objects (unfrozen in the child,
        # runner.worker.serve._run_child): 0.10-0.12 s on this project's 2-vCPU VM, twice per
        # process pair, which was half of what an A/A pair of a fast benchmark cost
        # (evaluation/RESULTS_sensitivity.md); the young generations hold what a set-up just made,
        # and collecting them costs microseconds. On a device with memory of its own the peak
        # memory measured after the timing is absolute (CUDA's max_memory_allocated), so a
        # set-up's older cyclic garbage holding device memory must be gone first.
        if self.backend.device_memory:
            gc.collect()
        else:
            gc.collect(SETUP_GC_GENERATION)

    def sample(self, req: dict) -> dict:
        """``count`` samples of ``number`` calls (default: the set-up's): seconds per call, and per
        sample its wall and CPU seconds and involuntary context switches
        (:class:`runner.worker.sampling.Sample`). For a benchmark that measures itself: one run of
        it, ``readings`` ``{name: {values, unit, direction}}``."""
        if self.self_measure is not None:
            readings = self.self_measure()
            return SampleReply(readings={name: {"values": [float(v) for v in r.values], "unit": r.unit,
                                                "direction": r.direction} for name, r in readings.items()}).to_json()
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        asked = SampleRequest.from_json(req)
        number = int(asked.number or self.number)
        self.timer.reset_peak_memory()
        taken = [self.timer.sample(self.fn, number) for _ in range(asked.count)]
        return SampleReply(tuple(s.per_call for s in taken), tuple(s.wall_s for s in taken),
                           tuple(s.cpu_s for s in taken), tuple(s.switches for s in taken),
                           tuple(s.others_busy for s in taken), tuple(s.steal for s in taken),
                           number, self.timer.peak_memory()).to_json()

    def output(self, req: dict) -> dict:
        """After a pair's samples, untimed: ``calls`` calls of the benchmark, each after seeding
        every generator with ``seed``, each return value summarised
        (:func:`runner.worker.outputs.summarize`) for :mod:`runner.outputs.verdict` to compare."""
        if self.fn is None:
            raise RuntimeError("no benchmark is set up" if self.self_measure is None
                               else "the benchmark measures itself: no output to compare")
        asked = OutputRequest.from_json(req)
        summaries = []
        for _ in range(asked.calls):
            seed_all(asked.seed)
            value = self.fn()
            self.backend.synchronize()
            summaries.append(summarize(value))
            del value
        return OutputReply(tuple(summaries)).to_json()

    def measure(self, req: dict) -> dict:
        """After the timing, in the same process: what torch.compile did here (None when nothing
        compiled), then the peak memory of one call (:mod:`runner.worker.measures`) unless
        ``memory`` is false (the parent's budget rule, :func:`runner.measures.memory_due`). Answers
        ``{compile, memory}``, with ``memory_error`` instead of ``memory`` when measuring it
        failed (the timing stands)."""
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        compiled = self.compile_watch.facts() if self.compile_watch else None
        if not MeasureRequest.from_json(req).memory:
            return MeasureReply(compiled).to_json()

        def release() -> None:
            if self.timer is not None:
                self.timer.release()

        try:
            return MeasureReply(compiled, measure_memory(self.fn, self.device, release)).to_json()
        except Exception as exc:  # noqa: BLE001 - the benchmark's failure is data
            return MeasureReply(compiled, memory_error=format_error(exc, 3)).to_json()

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
            # what tracing costs a warm call (evaluation/selection.py): three calls plain and three
            # traced, alternating, medians (one of each read a neighbour's burst as the tracer's cost)
            plain: list[float] = []
            timed: list[float] = []

            def traced_call() -> None:  # the call alone: the tracer's set-up is the pass's fixed cost
                t1 = time.perf_counter()
                fn()
                timed.append(time.perf_counter() - t1)

            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                plain.append(time.perf_counter() - t0)
                trace_files(traced_call, req["root"])
            out["plain_call_s"] = statistics.median(plain)
            out["traced_call_s"] = statistics.median(timed)
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

        asked = ProfileRequest.from_json(req)
        return profile_callable(self.fn, device=self.device, trace_path=asked.trace_path, calls=asked.calls)
