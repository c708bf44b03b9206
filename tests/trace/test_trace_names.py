"""runner.trace_names: one table of runtime calls per vendor, categories across Kineto versions."""

from __future__ import annotations

from runner.profile import summaries as trace
from runner.profile import names
from runner.profile.kernels import kernel_dtype


def test_every_api_has_one_kind_and_reported_syncs_are_syncs():
    seen = {}
    for runtime, kinds in names.RUNTIME_CALLS.items():
        assert set(kinds) == set(names.CALL_KINDS), runtime
        for kind, apis in kinds.items():
            for api in apis:
                assert api not in seen, f"{api} is {seen[api]} and {kind}"
                seen[api] = kind
    for runtime, apis in names.REPORTED_SYNCS.items():
        assert all(names.call_kind(api) in ((runtime, "sync"), (runtime, "stream_wait")) for api in apis)
    assert set(names.RUNTIME_CALLS) == set(names.REPORTED_SYNCS) == set(names.RUNTIME_VENDORS)


def test_call_kinds_across_vendors_and_suffixes():
    assert names.call_kind("cudaLaunchKernel") == ("cuda", "launch")
    assert names.call_kind("cuLaunchKernel_ptsz") == ("cuda", "launch")
    assert names.call_kind("cudaGraphLaunch_v10000") == ("cuda", "graph_launch")
    assert names.call_kind("hipExtModuleLaunchKernel") == ("hip", "launch")
    assert names.call_kind("hipLaunchKernel_spt") == ("hip", "launch")
    assert names.call_kind("hipGraphLaunch") == ("hip", "graph_launch")
    assert names.call_kind("hipMemcpyWithStream") == ("hip", "sync_copy")
    assert names.call_kind("urEnqueueKernelLaunch") == ("xpu", "launch")
    assert names.call_kind("urQueueFinish") == ("xpu", "sync")
    assert names.call_kind("cudaStreamIsCapturing") == (None, None)


def test_categories_of_every_kineto_version_map_to_todays():
    pairs = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Runtime": "cuda_runtime",
             "Operator": "cpu_op", "xpu_runtime": "cuda_runtime", "xpu_driver": "cuda_driver"}
    for old, new in pairs.items():
        assert names.CATEGORIES[old] == new == names.CATEGORIES[new]


def _xpu_trace():
    """The event shapes kineto's XPU plugin writes (libkineto/test/xpupti): ``xpu_runtime`` calls
    from the Unified Runtime, ``Memcpy M2D`` copies, kernels."""
    ev = []
    t = 100.0
    for i, (api, cat, name) in enumerate([("urEnqueueUSMMemcpy", "gpu_memcpy", "Memcpy M2D (Memory -> Device)"),
                                          ("urEnqueueKernelLaunch", "kernel", "Run(sycl::_V1::queue, ...)"),
                                          ("urEnqueueKernelLaunch", "kernel", "gemm_kernel<sycl::half>"),
                                          ("urEnqueueUSMMemcpy", "gpu_memcpy", "Memcpy D2M (Device -> Memory)")]):
        ev.append({"ph": "X", "cat": "xpu_runtime", "name": api, "pid": 1, "tid": 1, "ts": t, "dur": 5,
                   "args": {"correlation": i}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 2, "ts": t + 10, "dur": 20,
                   "args": {"correlation": i, "device": 0, "queue": 2, "bytes": 64}})
        t += 40
    ev.append({"ph": "X", "cat": "xpu_runtime", "name": "urQueueFinish", "pid": 1, "tid": 1, "ts": t, "dur": 30,
               "args": {"correlation": 9}})
    return {"traceEvents": ev}


def test_intel_xpu_trace_counts_launches_copies_and_syncs():
    s = trace.summarize(_xpu_trace())
    rt = s["runtime"]
    assert rt["api"] == "xpu" and s["device"]["vendor"] == "Intel" and s["device"]["label"] == "GPU, no name in trace"
    assert rt["launches"]["count"] == 2 == s["kernel_totals"]["count"]
    assert set(rt["memcpy"]) == {"HtoD", "DtoH"} and rt["memcpy"]["HtoD"]["bytes"] == 64
    assert rt["sync"]["urQueueFinish"] == {"count": 1, "total_us": 30.0}
    assert rt["launch_delay_mean_us"] == 5.0 and s["gpu_busy_us"] == 80.0
    assert kernel_dtype("gemm_kernel<sycl::half>") == "fp16"
