"""The three root causes laid onto a real recorded trace, so the scenarios' analysis runs on a CPU.

No GPU has recorded the scenarios yet. Until one does, each scenario's base is a real profiler
trace — BERT-small on an NVIDIA H100, ``tests/fixtures/traces/h100_bert-small.json.gz``
(AMD-AGI/TraceLens, MIT; its source in that folder's SOURCES.md) — and its head is the same trace
with what the scenario's head does to a GPU timeline, and nothing else:

``sync_overhead``
    after each elementwise kernel the host copies 4 bytes to pageable memory and waits
    (``cudaMemcpyAsync`` + ``Memcpy DtoH (Device -> Pageable)`` + ``cudaStreamSynchronize``:
    what ``.item()`` does); the host's later events move by the wait.
``register_pressure``
    the GEMM kernels use 168 registers per thread instead of 88 (``ptxas`` spilling a bigger
    tile), their estimated occupancy halves and each takes 1.5× as long.
``memory_contention``
    while each elementwise kernel of the main stream runs, a kernel runs on a side stream
    (stream 20): on base the spin kernel of ``torch.cuda._sleep`` (it moves no bytes), on head a
    memory-bound elementwise pass, and on head the main kernel, with the same launch
    configuration, takes 1.4× as long.

(For memory contention both sides are edited: base has the side stream's spin kernel.) Times
after an edit move by what it added, so the timeline stays ordered. When a GPU records the
real scenarios (``python -m evaluation.gpu_acceptance`` keeps their traces), those replace these.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The real trace every derived pair starts from.
SOURCE = ROOT / "tests" / "fixtures" / "traces" / "h100_bert-small.json.gz"
#: Trace categories of device-side events (the rest is host-side).
_GPU = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
SIDE_STREAM = 20


def _is_gpu(event: dict) -> bool:
    return event.get("cat") in _GPU or (event.get("cat") == "ac2g" and event.get("ph") == "f")


def _shift(events: list[dict], at: float, delta: float, *, cpu: bool = True, gpu: bool = True) -> None:
    """Move events that start at or after ``at`` (µs) by ``delta``; stretch the ones spanning it."""
    for e in events:
        if "ts" not in e or (_is_gpu(e) and not gpu) or (not _is_gpu(e) and not cpu):
            continue
        if e["ts"] >= at:
            e["ts"] += delta
        elif e.get("dur") is not None and e["ts"] + e["dur"] > at:
            e["dur"] += delta


def _kernels(events: list[dict], word: str, stream: int | None = 7) -> list[dict]:
    return sorted((e for e in events if e.get("cat") == "kernel" and word in e["name"]
                   and (stream is None or e["args"].get("stream") == stream)), key=lambda e: e["ts"])


def _launch(events: list[dict], kernel: dict) -> dict:
    corr = kernel["args"]["correlation"]
    return next(e for e in events if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") == corr)


def _sync_overhead(events: list[dict]) -> None:
    corr = 10**6
    for k in _kernels(events, "elementwise"):
        launch = _launch(events, k)
        at = launch["ts"] + launch["dur"]
        end = k["ts"] + k["dur"]
        wait = max(0.0, end - at) + 2.0 + 6.0  # until the kernel ends, then the copy, then the return
        _shift(events, at, wait + 4.0, gpu=False)
        _shift(events, end, 2.0 + 4.0, cpu=False)
        corr += 1
        pid, tid = launch["pid"], launch["tid"]
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": pid, "tid": tid,
                       "ts": at, "dur": 4.0, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": k["pid"],
                       "tid": k["tid"], "ts": end + 1.0, "dur": 2.0,
                       "args": {"device": k["args"].get("device", 0), "stream": k["args"]["stream"],
                                "correlation": corr, "bytes": 4}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": pid, "tid": tid,
                       "ts": at + 4.0, "dur": wait, "args": {"correlation": corr + 500_000}})


def _register_pressure(events: list[dict]) -> None:
    for k in _kernels(events, "gemm"):
        extra = 0.5 * k["dur"]
        _shift(events, k["ts"] + k["dur"], extra)
        k["dur"] += extra
        k["args"]["registers per thread"] = 168
        if k["args"].get("est. achieved occupancy %") is not None:
            k["args"]["est. achieved occupancy %"] = max(1, k["args"]["est. achieved occupancy %"] // 2)


#: The side stream's kernels: base ``torch.cuda._sleep``'s one-thread spin kernel (ATen's
#: Sleep.cu; it overlaps the main stream's kernels without slowing them), head a memory-bound
#: elementwise pass (it competes with them).
SIDE_KERNELS = {
    "base": "at::cuda::(anonymous namespace)::spin_kernel(long)",
    "head": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
}


#: The spin kernel's launch (``<<<1, 1>>>``); head's pass launches as the main kernel does.
SIDE_LAUNCH = {"base": {"grid": [1, 1, 1], "block": [1, 1, 1]}}


def _side_work(events: list[dict], side: str) -> None:
    """Beside each elementwise kernel of the main stream, one kernel on the side stream (the
    scenario's side work); on head the main kernel takes 1.4× as long (the contention)."""
    corr = 2 * 10**6
    for k in _kernels(events, "elementwise"):
        if side == "head":
            extra = 0.4 * k["dur"]
            _shift(events, k["ts"] + k["dur"], extra, cpu=False)
            k["dur"] += extra
        launch = _launch(events, k)
        corr += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": launch["pid"],
                       "tid": launch["tid"] + 1, "ts": launch["ts"], "dur": launch["dur"],
                       "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "pid": k["pid"], "tid": SIDE_STREAM, "ts": k["ts"],
                       "dur": k["dur"], "name": SIDE_KERNELS[side],
                       "args": dict(k["args"], stream=SIDE_STREAM, correlation=corr,
                                    **{"External id": corr}, **SIDE_LAUNCH.get(side, {}))})


#: Scenario → the edit of each side (None: the recorded trace as it is).
EDITS = {
    "sync_overhead": (None, _sync_overhead),
    "register_pressure": (None, _register_pressure),
    "memory_contention": (lambda events: _side_work(events, "base"), lambda events: _side_work(events, "head")),
}


def derive(name: str) -> tuple[dict, dict]:
    """``(base, head)`` trace documents of scenario ``name`` (a key of :data:`EDITS`).

    Raises:
        KeyError: an unknown scenario.
    """
    with gzip.open(SOURCE, "rt", encoding="utf-8") as fh:
        recorded = json.load(fh)
    docs = []
    for edit in EDITS[name]:
        doc = copy.deepcopy(recorded)
        if edit is not None:
            edit(doc["traceEvents"])
            doc["traceEvents"].sort(key=lambda e: e.get("ts", 0))
        docs.append(doc)
    return docs[0], docs[1]


def write_pair(name: str, folder: str | Path) -> tuple[Path, Path]:
    """Write scenario ``name``'s derived pair as ``folder/base/NAME.json.gz`` and
    ``folder/head/NAME.json.gz`` (the layout a compare's ``traces/`` has); returns the paths."""
    paths = []
    for side, doc in zip(("base", "head"), derive(name)):
        path = Path(folder) / side / f"{name}.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            json.dump(doc, fh)
        paths.append(path)
    return paths[0], paths[1]
