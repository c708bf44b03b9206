"""The profiling pass, inside the worker process: a few calls under torch.profiler.

Separate from timing because profiling perturbs time. torch is imported inside the function
only, so importing this module stays light. The trace is written gzipped
(``traces/<side>/<benchmark>.json.gz``); Perfetto and chrome://tracing open it as is, and
:func:`runner.profile.summaries.summarize` reads it in the parent.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

from .. import devices

#: Name of the annotation around each profiled call (``runner.profile.summaries.CALL_ANNOTATION``).
CALL_ANNOTATION = "perfgate::call"
#: Name of the annotation around the worker's own synchronisation after each call
#: (``runner.profile.summaries.SYNC_ANNOTATION``): the summary leaves what is inside it out, so
#: that perfgate's sync is never a benchmark's ``sync_overhead`` (GPU review 2026-12-06, #2).
SYNC_ANNOTATION = "perfgate::sync"

#: Untimed calls before the profiled ones (lazy init, allocator warm-up, autotuning).
WARMUP_CALLS = 2


def profile_callable(fn, *, device: str, trace_path: str, calls: int = 5) -> dict:
    """Profile ``calls`` calls of ``fn`` and write a gzipped Chrome/Kineto trace.

    Args:
        fn: the benchmark's zero-argument callable.
        device: a registered device's name (:mod:`runner.devices`): the CPU's activity and the
            device's own (``cuda``: CUDA's), the device synchronised around every call.
        trace_path: where to write the trace; ``.json.gz`` (gzip) is what perfgate writes, a
            ``.json`` path is written uncompressed.
        calls: profiled calls, each inside a ``perfgate::call`` annotation.

    Returns:
        ``{"trace_path": str, "calls": int, "warmup_calls": int, "device": str, "bytes": int}``.

    Raises:
        KeyError: ``device`` is no registered device; whatever ``fn`` raises (the worker records
            it for this benchmark and side).
    """
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    backend = devices.get(device)
    sync = backend.synchronize
    for _ in range(WARMUP_CALLS):
        fn()
    sync()
    activities = [ProfilerActivity.CPU]
    if backend.profiler_activity is not None:
        activities.append(getattr(ProfilerActivity, backend.profiler_activity))
    # one step of the profiler's own warm-up first: CUPTI's start-up cost lands there, not in the
    # first profiled call (pytorch/kineto#328; GPU review #19)
    with profile(activities=activities, record_shapes=True, with_flops=True, profile_memory=True,
                 schedule=schedule(wait=0, warmup=1, active=calls, repeat=1)) as prof:
        fn()
        sync()
        prof.step()
        for _ in range(calls):
            with record_function(CALL_ANNOTATION):
                fn()
                with record_function(SYNC_ANNOTATION):
                    sync()
            prof.step()
    out = Path(trace_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".json", dir=str(out.parent))
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        if out.name.endswith(".gz"):
            with open(tmp, "rb") as src, gzip.open(out, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.copyfile(tmp, out)
    finally:
        os.unlink(tmp)
    return {"trace_path": str(out), "calls": calls, "warmup_calls": WARMUP_CALLS, "device": device,
            "bytes": out.stat().st_size}
