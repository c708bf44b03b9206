"""Synthetic Kineto traces for the tests (field names as real traces write them)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8,
        "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 167936, "numSms": 108, "sharedMemPerBlockOptin": 166912}

#: An H100 SXM as torch 2.x's Kineto writes its ``deviceProperties`` (the CUDA runtime's figures).
H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85017755648, "computeMajor": 9,
        "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472, "numSms": 132,
        "sharedMemPerBlockOptin": 232448}

PID, TID = 100, 100


class TraceBuilder:
    """Builds one trace: CPU events advance a host cursor, GPU events a per-stream cursor.

    ``step()`` opens a ``perfgate::call`` annotation around what follows until the next step
    or ``build()``.
    """

    def __init__(self, props: dict | None = A100, gpu: bool = True):
        self.events: list[dict] = []
        self.props = props
        self.gpu = gpu
        self.cpu_t = 1000.0
        self.gpu_t: dict[int, float] = {}
        self.corr = 0
        self._step_start = None

    def _x(self, cat, name, ts, dur, pid=PID, tid=TID, **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                            "args": args})

    def step(self):
        self._close_step()
        self._step_start = self.cpu_t
        return self

    def _close_step(self):
        if self._step_start is not None:
            end = max([self.cpu_t] + list(self.gpu_t.values()))
            self._x("user_annotation", "perfgate::call", self._step_start, end - self._step_start)
            self.cpu_t = end + 1
            self._step_start = None

    def op(self, name, dur=5.0, input_types=("float",), dims=None, count=1):
        for _ in range(count):
            self._x("cpu_op", name, self.cpu_t, dur, **{"Input type": list(input_types),
                                                         "Input Dims": dims or [[16, 16]] * len(input_types)})
            self.cpu_t += dur + 1
        return self

    def runtime(self, name, dur=2.0, count=1):
        for _ in range(count):
            self.corr += 1
            self._x("cuda_runtime", name, self.cpu_t, dur, correlation=self.corr, cbid=1)
            self.cpu_t += dur + 1
        return self

    def kernel(self, name, dur=20.0, regs=32, grid=(1024, 1, 1), block=(256, 1, 1), smem=0, stream=7,
               count=1, est_occ=None, gap=0.0, start=None, occupancy=None, op=None):
        """``op``: the operator that launches it, ``{name, types, dims[, flops]}`` (its
        ``cpu_op`` event around the launch, linked by ``External id`` as Kineto links them)."""
        for _ in range(count):
            if op is not None:
                args = {"Input type": list(op["types"]), "Input Dims": op["dims"],
                        "External id": self.corr + 1}
                if op.get("flops") is not None:
                    args["flops"] = op["flops"]
                self._x("cpu_op", op["name"], self.cpu_t, 7.0, **args)
                self.cpu_t += 1
            self.corr += 1
            self._x("cuda_runtime", "cudaLaunchKernel", self.cpu_t, 4.0, correlation=self.corr, cbid=211)
            self.cpu_t += 5
            t = start if start is not None else max(self.gpu_t.get(stream, 0.0) + gap, self.cpu_t)
            args = {"device": 0, "stream": stream, "correlation": self.corr, "External id": self.corr,
                    "registers per thread": regs, "shared memory": smem, "grid": list(grid), "block": list(block)}
            if est_occ is not None:
                args["est. achieved occupancy %"] = est_occ
            if occupancy is not None:  # current Kineto: CUPTI's calculator, per kernel
                args["occupancy"] = dict(occupancy)
            self._x("kernel", name, t, dur, pid=0, tid=stream, **args)
            self.gpu_t[stream] = t + dur
            start = None
        return self

    def memcpy(self, kind="DtoH", nbytes=4, dur=2.0, pageable=True, stream=7, count=1, sync=True):
        label = {"DtoH": "Device -> Pageable" if pageable else "Device -> Pinned",
                 "HtoD": "Pageable -> Device" if pageable else "Pinned -> Device",
                 "DtoD": "Device -> Device"}[kind]
        for _ in range(count):
            self.runtime("cudaMemcpyAsync", 3.0)
            t = max(self.gpu_t.get(stream, 0.0), self.cpu_t)
            self._x("gpu_memcpy", f"Memcpy {kind} ({label})", t, dur, pid=0, tid=stream, device=0, stream=stream,
                    correlation=self.corr, bytes=nbytes)
            self.gpu_t[stream] = t + dur
            if sync:
                self.sync("cudaStreamSynchronize")
        return self

    def sync(self, api="cudaStreamSynchronize", count=1):
        for _ in range(count):
            end = max([self.cpu_t] + list(self.gpu_t.values()))
            self.corr += 1
            self._x("cuda_runtime", api, self.cpu_t, max(1.0, end - self.cpu_t) + 1, correlation=self.corr, cbid=131)
            self.cpu_t = end + 2
        return self

    def harness_sync(self):
        """The worker's own ``cudaDeviceSynchronize`` after a profiled call, inside its
        ``perfgate::sync`` annotation (runner.worker.profiling)."""
        start = self.cpu_t
        self.sync("cudaDeviceSynchronize")
        self._x("user_annotation", "perfgate::sync", start, self.cpu_t - start)
        return self

    def idle(self, us):
        self.cpu_t += us
        return self

    def memory(self, total_allocated, device_type=1):
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID,
                            "tid": TID, "ts": self.cpu_t,
                            "args": {"Total Allocated": total_allocated, "Bytes": 0, "Device Type": device_type,
                                     "Device Id": 0 if device_type else -1}})
        return self

    def build(self) -> dict:
        self._close_step()
        doc = {"schemaVersion": 1, "traceEvents": list(self.events)}
        if self.props is not None:
            doc["deviceProperties"] = [self.props]
        return doc


def write(doc: dict, path: Path) -> Path:
    path = Path(path)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            json.dump(doc, f)
    else:
        path.write_text(json.dumps(doc))
    return path


def repeat(build_call, calls=3, **kw) -> dict:
    """A trace of ``calls`` steps, each filled by ``build_call(builder)``."""
    b = TraceBuilder(**kw)
    for _ in range(calls):
        b.step()
        build_call(b)
    return b.build()
