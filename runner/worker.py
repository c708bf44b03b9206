"""The worker process: one per revision, long-lived, driven by the parent (runner.manager).

Run as ``python -m runner.worker --sys-path P [--sys-path P ...] --device D``, with the
revision's worktree as the working directory. The protocol is one JSON object per line: a
request on standard input, a response on a private copy of the original standard output.
File descriptor 1 is then pointed at standard error, so whatever the benchmarks print goes to
the worker log and cannot corrupt the protocol.

Requests (``cmd``): ``env``, ``list`` {dir}, ``setup`` {dir, file, func, params,
min_sample_time, cold_cache}, ``sample`` {count}, ``profile`` {trace_path, calls}, ``quit``.
Every response has ``ok``; failures carry ``error`` (the traceback's last lines).

This is the only place (with runner.profiling) where torch is imported by perfgate.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

from .discovery import collect, format_error, import_file
from .sampling import Timer, calibrate, recalibrate, warm_up


class Worker:
    """State of one worker: the device and the benchmark currently set up."""

    def __init__(self, device: str):
        self.requested_device = device
        self.device = self._resolve_device(device)
        self.fn = None
        self.timer: Timer | None = None
        self.number = 1

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
        from .environment import cpu_model

        info = {"device": self.device, "device_name": cpu_model(),
                "torch": None, "cuda": None, "driver": None}
        try:
            import torch

            info["torch"] = torch.__version__
            info["cuda"] = torch.version.cuda
            if self.device.startswith("cuda"):
                info["device_name"] = torch.cuda.get_device_name()
                cap = torch.cuda.get_device_capability()
                info["compute_capability"] = f"{cap[0]}.{cap[1]}"
        except ImportError:
            pass
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
        cases, errors = collect(req["dir"])
        return {"benchmarks": cases, "errors": errors}

    def setup(self, req: dict) -> dict:
        self.fn = None
        module = import_file(Path(req["dir"]) / req["file"])
        func = getattr(module, req["func"], None)
        if func is None:
            raise LookupError(f"{req['func']} is not defined in {req['file']} on this revision")
        fn = func(self.device, **req.get("params", {}))
        if not callable(fn):
            raise TypeError(f"{req['func']} must return the zero-argument callable to time, got {type(fn).__name__}")
        self.timer = Timer(self.device, cold_cache=bool(req.get("cold_cache")))
        min_sample_time = float(req["min_sample_time"])
        fn()  # first call: lazy initialisation, compilation, autotuning
        self.number, estimate = calibrate(self.timer, fn, min_sample_time)
        calls, warm = warm_up(self.timer, fn, self.number)
        # The first calibration samples are cold (caches, allocator, clocks): recalibrate on
        # the warm estimate so a slow first call does not leave samples shorter than asked.
        self.number = recalibrate(self.number, warm, min_sample_time)
        gc.collect()
        self.fn = fn
        return {"number": self.number, "warmup_calls": calls + 1, "warmup_samples": warm, "estimate_s": estimate}

    def sample(self, req: dict) -> dict:
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        self.timer.reset_peak_memory()
        values = [self.timer.time(self.fn, self.number) for _ in range(int(req.get("count", 1)))]
        return {"samples": values, "peak_memory_bytes": self.timer.peak_memory()}

    def profile(self, req: dict) -> dict:
        if self.fn is None:
            raise RuntimeError("no benchmark is set up")
        from .profiling import profile_callable

        return profile_callable(self.fn, device=self.device, trace_path=req["trace_path"],
                                calls=int(req.get("calls", 5)))


def serve(worker: Worker, requests, respond) -> None:
    """The request loop (separate from the process plumbing, so it can be tested in-process)."""
    for line in requests:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "quit":
                respond({"ok": True})
                return
            handler = getattr(worker, cmd, None) if cmd in ("env", "list", "setup", "sample", "profile") else None
            if handler is None:
                respond({"ok": False, "error": f"unknown request {cmd!r}"})
                continue
            respond({"ok": True, **handler(req)})
        except BaseException as exc:  # noqa: BLE001 - the benchmark's failure is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            respond({"ok": False, "error": format_error(exc)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.worker")
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin this worker to")
    args = parser.parse_args(argv)

    if args.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for p in reversed(args.sys_path):
        sys.path.insert(0, p)

    def respond(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        worker = Worker(args.device)
    except Exception as exc:  # noqa: BLE001
        respond({"ok": False, "error": str(exc), "fatal": True})
        return 1
    respond({"ok": True, "ready": True, "pid": os.getpid(), "device": worker.device})
    serve(worker, sys.stdin, respond)
    return 0


if __name__ == "__main__":
    sys.exit(main())
