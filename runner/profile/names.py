"""Names in Kineto (torch.profiler) traces across GPU vendors and torch versions — data only.

Everything that depends on *who* wrote a trace (CUDA/CUPTI, ROCm/roctracer/rocprofiler, Intel
XPU/PTI) or *which* Kineto wrote it (PyTorch 1.8 … today) is a table here, so the analysis in
:mod:`runner.profile.summaries` has no vendor or version branches. Sources, per table:

- event categories: ``libkineto/include/ActivityType.h`` (pytorch/kineto @114171df, today's
  names) and the TensorBoard plugin's ``EventTypeMap``, which read both spellings
  (pytorch/kineto @89be953a ``tb_plugin/torch_tb_profiler/profiler/trace.py``; PyTorch 1.8/1.9
  wrote ``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``, ``Operator``);
- CUDA runtime/driver calls: the CUDA Runtime and Driver API references (names as CUPTI reports
  them, which Kineto writes unchanged; suffixes ``_ptsz``/``_ptds``/``_vN`` are variants);
- HIP calls: kineto ``libkineto/src/RocprofLogger.cpp`` (``isKernelApi``, ``isCopyApi``,
  ``isMallocApi``) and the HIP Runtime API reference;
- Intel XPU: Unified Runtime ``include/ur_api.h`` (oneapi-src/unified-runtime, ``ur_function_t``)
  and the Level Zero specification; kineto's XPU plugin writes them under ``xpu_runtime`` /
  ``xpu_driver`` (``libkineto/test/xpupti/XpuptiProfilerTest.cpp``);
- blocking copies: torch's ``c10::cuda::memcpy_and_sync`` calls ``hipMemcpyWithStream`` on ROCm
  where it calls ``cudaMemcpyAsync`` + ``cudaStreamSynchronize`` on CUDA
  (``c10/cuda/CUDAFunctions.h``); ``cudaMemcpy``/``hipMemcpy`` are synchronous per the CUDA
  Runtime API's "API synchronization behavior".
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# event categories (``cat``)

#: Category names across Kineto versions and vendors → the name perfgate analyses by (today's
#: CUDA spelling). Unlisted categories are looked up lower-cased, then ignored.
CATEGORIES = {
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "gpu_memcpy", "Memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset", "Memset": "gpu_memset",
    "cuda_runtime": "cuda_runtime", "Runtime": "cuda_runtime", "xpu_runtime": "cuda_runtime",
    "privateuse1_runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver", "xpu_driver": "cuda_driver", "privateuse1_driver": "cuda_driver",
    "cpu_op": "cpu_op", "Operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "cuda_sync": "cuda_sync", "xpu_sync": "cuda_sync",
    "cpu_instant_event": "cpu_instant_event",
    "python_function": "python_function",
    "Trace": "Trace",
}

#: Canonical categories of work on the device.
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")

#: Event ``args`` keys as older Kineto spelled them: canonical name → spellings, first wins.
ARG_NAMES = {
    "External id": ("External id", "external id"),
    "Input Dims": ("Input Dims", "Input dims"),
    "est. achieved occupancy %": ("est. achieved occupancy %", "theoretical occupancy %"),
}

# ---------------------------------------------------------------------------------------------
# device properties

#: Top-level keys holding the per-device property list (``computeProperties``: Kineto of 2021).
DEVICE_PROPERTY_LISTS = ("deviceProperties", "computeProperties")

#: Property names perfgate uses → the spellings seen (CUDA today, Kineto 2021, ROCm).
DEVICE_PROPERTY_KEYS = {
    "name": ("name",),
    "numSms": ("numSms", "multiProcessorCount"),
    "computeMajor": ("computeMajor", "major"),
    "computeMinor": ("computeMinor", "minor"),
    "maxThreadsPerMultiprocessor": ("maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor"),
    "regsPerMultiprocessor": ("regsPerMultiprocessor",),
    "sharedMemPerMultiprocessor": ("sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor"),
    "maxBlocksPerMultiProcessor": ("maxBlocksPerMultiProcessor",),
    "warpSize": ("warpSize",),
    "totalGlobalMem": ("totalGlobalMem",),
}

# ---------------------------------------------------------------------------------------------
# runtime and driver calls

#: Kinds of runtime call: ``launch`` (one kernel), ``graph_launch`` (a captured graph: many
#: kernels), ``sync`` (the host waits for the device), ``stream_wait`` (a stream waits for an
#: event: ordering on the device, the host does not wait), ``sync_copy`` (a copy that returns
#: when done: a copy and a host synchronisation), ``memcpy`` and ``memset`` (asynchronous),
#: ``alloc`` (allocation and release of device or pinned memory).
CALL_KINDS = ("launch", "graph_launch", "sync", "stream_wait", "sync_copy", "memcpy", "memset", "alloc")

#: Runtime/driver API names per vendor runtime and kind (base names: see :func:`api_base_name`).
RUNTIME_CALLS: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda": {
        "launch": ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
                   "cudaLaunchCooperativeKernelMultiDevice", "cuLaunchKernel", "cuLaunchKernelEx",
                   "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernelMultiDevice"),
        "graph_launch": ("cudaGraphLaunch", "cuGraphLaunch"),
        "sync": ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                 "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"),
        "stream_wait": ("cudaStreamWaitEvent", "cuStreamWaitEvent"),
        "sync_copy": ("cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
                      "cudaMemcpyPeer", "cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD"),
        "memcpy": ("cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpy3DAsync", "cudaMemcpyToSymbolAsync",
                   "cudaMemcpyFromSymbolAsync", "cudaMemcpyPeerAsync", "cudaMemcpyBatchAsync", "cuMemcpyAsync",
                   "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemcpyPeerAsync"),
        "memset": ("cudaMemset", "cudaMemsetAsync", "cudaMemset2DAsync", "cuMemsetD8Async", "cuMemsetD16Async",
                   "cuMemsetD32Async", "cuMemsetD8", "cuMemsetD32"),
        "alloc": ("cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocFromPoolAsync",
                  "cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaMallocManaged", "cudaHostRegister",
                  "cudaHostUnregister", "cuMemAlloc", "cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync",
                  "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemAddressReserve",
                  "cuMemAddressFree", "cuMemHostAlloc", "cuMemFreeHost"),
    },
    "hip": {
        "launch": ("hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
                   "hipHccModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipLaunchCooperativeKernelMultiDevice",
                   "hipModuleLaunchCooperativeKernel", "hipModuleLaunchCooperativeKernelMultiDevice",
                   "hipExtLaunchMultiKernelMultiDevice"),
        "graph_launch": ("hipGraphLaunch",),
        "sync": ("hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize"),
        "stream_wait": ("hipStreamWaitEvent",),
        "sync_copy": ("hipMemcpy", "hipMemcpyWithStream", "hipMemcpyHtoD", "hipMemcpyDtoH", "hipMemcpy2D",
                      "hipMemcpyToSymbol", "hipMemcpyFromSymbol", "hipMemcpyPeer"),
        "memcpy": ("hipMemcpyAsync", "hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync", "hipMemcpyDtoDAsync",
                   "hipMemcpyDtoD", "hipMemcpy2DAsync", "hipMemcpy3DAsync", "hipMemcpyToSymbolAsync",
                   "hipMemcpyFromSymbolAsync", "hipMemcpyPeerAsync"),
        "memset": ("hipMemset", "hipMemsetAsync", "hipMemsetD8", "hipMemsetD8Async", "hipMemsetD16Async",
                   "hipMemsetD32", "hipMemsetD32Async", "hipMemset2DAsync"),
        "alloc": ("hipMalloc", "hipFree", "hipMallocAsync", "hipFreeAsync", "hipMallocFromPoolAsync",
                  "hipExtMallocWithFlags", "hipHostMalloc", "hipHostFree", "hipMallocManaged", "hipHostRegister",
                  "hipHostUnregister"),
    },
    "xpu": {
        "launch": ("urEnqueueKernelLaunch", "urEnqueueKernelLaunchCustomExp", "urEnqueueCooperativeKernelLaunchExp",
                   "zeCommandListAppendLaunchKernel", "zeCommandListAppendLaunchCooperativeKernel"),
        "graph_launch": ("urCommandBufferEnqueueExp",),
        "sync": ("urQueueFinish", "urEventWait", "zeCommandQueueSynchronize", "zeCommandListHostSynchronize",
                 "zeEventHostSynchronize", "zeFenceHostSynchronize"),
        "stream_wait": ("urEnqueueEventsWait", "urEnqueueEventsWaitWithBarrier", "zeCommandListAppendWaitOnEvents",
                        "zeCommandListAppendBarrier"),
        "sync_copy": (),
        "memcpy": ("urEnqueueUSMMemcpy", "urEnqueueUSMMemcpy2D", "urEnqueueMemBufferRead", "urEnqueueMemBufferWrite",
                   "urEnqueueMemBufferCopy", "zeCommandListAppendMemoryCopy"),
        "memset": ("urEnqueueUSMFill", "urEnqueueUSMFill2D", "urEnqueueMemBufferFill",
                   "zeCommandListAppendMemoryFill"),
        "alloc": ("urUSMDeviceAlloc", "urUSMHostAlloc", "urUSMSharedAlloc", "urUSMFree", "urMemBufferCreate",
                  "urMemRelease", "zeMemAllocDevice", "zeMemAllocHost", "zeMemAllocShared", "zeMemFree"),
    },
}

#: Synchronising calls a summary always lists (count 0 when absent), per vendor runtime.
REPORTED_SYNCS = {
    "cuda": ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent"),
    "hip": ("hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize", "hipStreamWaitEvent"),
    "xpu": ("urQueueFinish", "urEventWait", "urEnqueueEventsWait"),
}

#: The runtime a trace without runtime calls is reported in (torch's default GPU backend).
DEFAULT_RUNTIME = "cuda"

#: Human names of the runtimes, for tables.
RUNTIME_TITLES = {"cuda": "CUDA", "hip": "HIP", "xpu": "XPU (Unified Runtime / Level Zero)"}

#: Top-level trace keys that name the runtime that recorded it.
RUNTIME_TRACE_KEYS = {"cupti_version": "cuda", "cuda_runtime_version": "cuda", "cuda_driver_version": "cuda",
                      "roctracer_version": "hip", "hip_runtime_version": "hip", "hip_driver_version": "hip"}

_API_SUFFIX = re.compile(r"_(?:ptsz|ptds|spt|v\d+)$")

#: base API name → (runtime, kind)
_API_KIND = {api: (runtime, kind) for runtime, kinds in RUNTIME_CALLS.items()
             for kind, apis in kinds.items() for api in apis}


def api_base_name(name: str) -> str:
    """An API name without the per-thread-stream / version suffix (``cuLaunchKernel_ptsz`` →
    ``cuLaunchKernel``, ``cuMemAlloc_v2`` → ``cuMemAlloc``, ``hipLaunchKernel_spt`` → ``hipLaunchKernel``)."""
    return _API_SUFFIX.sub("", name)


def call_kind(name: str) -> tuple[str | None, str | None]:
    """``(runtime, kind)`` of a runtime/driver call name (runtime ``cuda``, ``hip`` or ``xpu``;
    kind one of :data:`CALL_KINDS`), ``(None, None)`` for calls outside the table."""
    return _API_KIND.get(name) or _API_KIND.get(api_base_name(name)) or (None, None)


# ---------------------------------------------------------------------------------------------
# device-side work names

#: Copy directions in ``gpu_memcpy`` names: CUDA/HIP write ``Memcpy HtoD (Pageable -> Device)``,
#: Intel PTI ``Memcpy M2D (...)`` (M = host memory, D = device, S = shared).
MEMCPY_DIRECTIONS = {"HtoD": "HtoD", "DtoH": "DtoH", "DtoD": "DtoD", "HtoH": "HtoH", "PtoP": "PtoP",
                     "M2D": "HtoD", "D2M": "DtoH", "D2D": "DtoD", "M2M": "HtoH"}

#: Kernels of collective communication (NCCL, RCCL, torch symmetric memory, vLLM/SGLang custom
#: all-reduce): their dtype token is the reduced data's, not a compute precision, and they
#: often run on their own streams.
COLLECTIVE_KERNEL = re.compile(
    r"nccl|rccl|multimem_all_reduce|one_shot_all_reduce|two_shot_all_reduce|cross_device_reduce|allreduce",
    re.IGNORECASE)

# ---------------------------------------------------------------------------------------------
# known defects of torch's trace export

#: Key under which :func:`runner.profile.kineto.load_trace` records the known export defects it repaired.
REPAIRED_KEY = "perfgate_repaired"

#: JSON errors torch's exporter is known to cause, and how :func:`runner.profile.kineto.load_trace`
#: repairs them: ``{message (prefix of json's error), issue, what, repair}``.
KNOWN_EXPORT_DEFECTS = (
    {"message": "Invalid control character", "issue": "pytorch/pytorch#113001", "repair": "control_characters",
     "what": "raw control characters (a newline in a with_stack source line) inside event names"},
    {"message": "Invalid \\escape", "issue": "pytorch/pytorch#98432", "repair": "backslashes",
     "what": "unescaped backslashes (Windows paths) inside event names"},
    {"message": "Invalid \\uXXXX escape", "issue": "pytorch/pytorch#98432", "repair": "backslashes",
     "what": "unescaped backslashes (Windows paths) inside event names"},
)

# ---------------------------------------------------------------------------------------------
# vendors

#: The vendor whose GPUs each runtime drives.
RUNTIME_VENDORS = {"cuda": "NVIDIA", "hip": "AMD", "xpu": "Intel"}

#: Device-name prefixes (upper-cased) that name the runtime when a trace has no runtime calls.
DEVICE_NAME_RUNTIMES = {"NVIDIA": "cuda", "TESLA": "cuda", "AMD": "hip", "INTEL": "xpu"}

#: What a vendor calls the device's compute units (``numSms`` in the trace).
UNIT_NAMES = {"NVIDIA": "SMs", "AMD": "CUs", "Intel": "Xe cores"}
