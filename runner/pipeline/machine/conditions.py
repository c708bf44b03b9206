"""The conditions both workers run under: CPU set, threads, allocator — chosen once, the same on
both sides, and recorded in ``results.json`` ``environment.worker``.

Each setting here exists because an A/A run (identical code on both sides) showed that leaving it
to chance made one side's process faster than the other's for its whole life; the measurement
that justified it is in the docstring and in evaluation/RESULTS.md. Pure functions of the parent's
environment and the configuration; :mod:`runner.pipeline.timing.workers` applies them when it starts
a worker.
"""

from __future__ import annotations

import ctypes.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ...config import ALLOCATORS
from ...environment import ASLR_LEFT_ON

#: A ``MALLOC_TRIM_THRESHOLD_`` no heap reaches (bytes): the heap's top is never returned to the
#: system, so freed heap memory stays faulted in (both presets below).
NEVER_TRIM = str(16 * 2**30)

#: glibc malloc settings of the ``fresh`` allocator preset, the default (bytes): the mmap threshold
#: a glibc process starts with (``DEFAULT_MMAP_THRESHOLD_MIN``), set explicitly, which turns its
#: dynamic adjustment off (mallopt(3)), and a trim threshold no heap reaches: the heap's top is
#: never returned to the system.
#:
#: Why the mmap threshold: with the adjustment on (``system``), the first free of a large block
#: raises both thresholds to its size, and from then on whether a benchmark's temporary is a fresh
#: ``mmap`` (page-faulted on every call) or a block reused from the heap, and whether the heap's
#: top is trimmed after it, depends on where earlier blocks lie: on the process's history, which a
#: docstring changes. Measured on a docs-only kornia commit (issue 45, the whole suite of six,
#: ``--max-time 90``, 8 memory layouts a side): with ``system`` each layout's pair read its own
#: stable ratio — ``pyrdown`` 1.0, 1.4 and 2.0 in different layouts, 635 to 1,747 page faults a
#: call between processes of one side — and all 6 benchmarks were ``inconclusive``; with the
#: threshold fixed, the faults per call were the same in every process (2,852 for ``pyrdown``),
#: every layout read 0.95-1.05 and 5 of 6 were ``unchanged`` (evaluation/RESULTS_identical_code.md).
#: What it costs: every temporary of 128 KiB or more is mapped and page-faulted on every call,
#: as in a process that has not freed a large block yet; a change that drops one shows its full
#: cost, a change to compute beside large outputs reads diluted by the faults (``hflip`` of a
#: 1.5 MB image: 0.16 ms with the heap reused, 0.47 ms here).
#:
#: Why the trim threshold: at glibc's start-up value (128 KiB, this preset's until 2026-12-07),
#: freeing temporaries under the mmap threshold trimmed the heap's top — and page-faulted them back
#: on the next call — only where they happened to lie at the top: the demo's identical
#: ``softmax_rows`` (three 64 KiB temporaries) ran at ~21 µs or ~56 µs a call by process, for the
#: process's whole life, 16 of 27 process pairs 2.6× apart either way, and once a false
#: ``regression`` of 2.65× (evaluation/RESULTS_identical_code.md, "The heap's top"). Never
#: trimmed, a freed block stays faulted in wherever it lies, in every process alike.
GLIBC_FRESH = {
    "MALLOC_MMAP_THRESHOLD_": str(128 * 2**10),
    "MALLOC_TRIM_THRESHOLD_": NEVER_TRIM,
}

#: glibc malloc settings of the ``steady`` allocator preset (bytes); opt-in (``allocator =
#: "steady"``) since real pull requests showed what it hides (runner.config.Config.allocator).
#:
#: Why: glibc serves a request above ``M_MMAP_THRESHOLD`` (128 KiB at start) with a fresh
#: ``mmap``, and raises that threshold *dynamically* when such a block is freed (up to 32 MiB on
#: 64-bit). Whether a benchmark's 25 MB temporary is page-faulted in on every call, or reused from
#: the heap, therefore depends on what the process did before. Measured (issue "Verdicts that
#: hold", a real GPT loss step on CPU, one thread): 43–47 ms per call with the defaults, 23.5–24.9
#: ms in every process with these settings. Setting the threshold explicitly turns the dynamic
#: adjustment off (mallopt(3)); 32 MiB is the largest value glibc accepts on 64-bit. A trim
#: threshold and top pad this large keep freed heap memory mapped, so a benchmark's steady state
#: is "memory already faulted in", as in a long-running training or serving process.
GLIBC_STEADY = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": NEVER_TRIM,
    "MALLOC_TOP_PAD_": str(64 * 2**20),
}


#: The variable that makes ``torch.cuda.is_available()`` ask NVML instead of the CUDA driver, so
#: that it does not initialise the driver in a fork server ("will NOT poison fork if ... set",
#: torch/cuda/__init__.py); the hazard check catches a driver started anyway
#: (runner.devices.cuda.driver_loaded).
NVML_CHECK = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


_PRELOAD_NAMES = {"jemalloc": ("jemalloc",), "tcmalloc": ("tcmalloc_minimal", "tcmalloc")}
_PRELOAD_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                 "/usr/local/lib")


class AllocatorNotFound(LookupError):
    """``allocator = "jemalloc"``/``"tcmalloc"`` asked for, but its shared library is not installed."""


def find_allocator_library(name: str) -> str:
    """Path of the shared library for ``jemalloc`` or ``tcmalloc`` (for ``LD_PRELOAD``).

    Raises:
        AllocatorNotFound: naming the Debian package that provides it.
    """
    for lib in _PRELOAD_NAMES[name]:
        for folder in _PRELOAD_DIRS:
            for candidate in sorted(Path(folder).glob(f"lib{lib}.so*")) if Path(folder).is_dir() else []:
                return str(candidate)
        found = ctypes.util.find_library(lib)
        if found:
            return found
    package = "libjemalloc2" if name == "jemalloc" else "libtcmalloc-minimal4"
    raise AllocatorNotFound(f"allocator = {name!r}: lib{_PRELOAD_NAMES[name][0]}.so is not installed "
                            f"(e.g. apt-get install {package}), or choose 'steady' or 'system'")


def allocator_env(allocator: str, parent_env: Mapping[str, str]) -> dict[str, str]:
    """Environment variables that select the host allocator ``allocator`` for a worker.

    ``fresh`` (the default): :data:`GLIBC_FRESH`; ``steady``: :data:`GLIBC_STEADY` (for both, a
    value the user already exported wins, so an experiment can still vary one). ``system``:
    nothing (the process's history decides, as outside perfgate).
    ``jemalloc``/``tcmalloc``: ``LD_PRELOAD`` of that library.

    Raises:
        AllocatorNotFound: for ``jemalloc``/``tcmalloc`` when the library is missing.
        ValueError: an unknown preset.
    """
    if allocator == "system":
        return {}
    presets = {"fresh": GLIBC_FRESH, "steady": GLIBC_STEADY}
    if allocator in presets:
        return {key: parent_env.get(key, value) for key, value in presets[allocator].items()}
    if allocator in _PRELOAD_NAMES:
        lib = find_allocator_library(allocator)
        preload = " ".join(filter(None, [lib, parent_env.get("LD_PRELOAD", "")]))
        return {"LD_PRELOAD": preload}
    raise ValueError(f"unknown allocator {allocator!r} (one of {', '.join(ALLOCATORS)})")


#: ``PYTORCH_CUDA_ALLOC_CONF`` of both workers; "": the runner's own (its environment's), else
#: torch's default. An internal, the key ``cuda_alloc_conf`` until deprecated
#: (runner.config.INTERNALS): the variable is the environment's to set, and both workers inherit it.
CUDA_ALLOC_CONF = ""


def cuda_allocator_env(cuda_alloc_conf: str, parent_env: Mapping[str, str]) -> dict[str, str]:
    """``PYTORCH_CUDA_ALLOC_CONF`` for both workers: ``cuda_alloc_conf`` (:data:`CUDA_ALLOC_CONF`
    unless a deprecated key says otherwise), else the parent's, else none (torch's default). The
    same string on both sides; recorded with the results."""
    value = cuda_alloc_conf or parent_env.get("PYTORCH_CUDA_ALLOC_CONF", "")
    return {"PYTORCH_CUDA_ALLOC_CONF": value} if value else {}


@dataclass(frozen=True)
class CpuPlan:
    """Which CPUs and how many threads both workers get, and why.

    Attributes:
        cpus: CPU ids both workers are pinned to; [] when not pinned.
        threads: intra-op threads both workers use (``OMP_NUM_THREADS``); None keeps the
            library's own default.
        default_threads: what torch would use on this machine, unpinned (its default is the
            number of physical cores, as MKL's; an exported ``OMP_NUM_THREADS`` wins).
        reduced: True when the workers run with fewer threads than ``default_threads``.
        note: one sentence for the report: the conditions, and what to set to change them.
    """

    cpus: list[int]
    threads: int | None
    default_threads: int
    reduced: bool
    note: str


def physical_cores(cpus: list[int]) -> int:
    """Physical cores among ``cpus`` (distinct package and core ids in sysfs; ``len(cpus)`` where
    the topology is not readable)."""
    cores = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        core, package = _read(str(topo / "core_id")), _read(str(topo / "physical_package_id"))
        if core is None or package is None:
            return len(cpus)
        cores.add((package, core))
    return len(cores) or len(cpus)


def _threads_word(n: int | None) -> str:
    return "the library's default threads" if n is None else f"{n} thread{'s' if n != 1 else ''}"


def _cpus_word(cpus: list[int]) -> str:
    return f"{len(cpus)} CPU{'s' if len(cpus) != 1 else ''} ({','.join(map(str, cpus))})"


def plan_cpus(choice: str, threads: int, allowed: list[int], default_threads: int) -> CpuPlan:
    """Choose the CPU set and thread count of both workers (pure).

    ``auto`` (the default) keeps the workload's default thread count and pins both workers to
    the same CPUs, leaving the first CPU to perfgate's parent process and the system — when enough
    CPUs remain for that thread count. Why pin: on a VM the scheduler kept each worker on "its"
    vCPU and the two vCPUs ran at different speeds for seconds (A/A: head 1.5x slower than base
    for a whole benchmark); on the same CPUs both sides see the same speed. When the machine is
    too small to do both, both workers share the same *reduced* conditions (the CPUs but the
    first, one thread per CPU) and the note says so; ``cpus = "all"`` keeps the default threads
    instead (no pinning; the parent then shares the CPUs, which costs some noise:
    evaluation/RESULTS.md). An explicit list pins to those CPUs.

    Args:
        choice: ``auto`` | ``all`` | comma-separated CPU ids.
        threads: intra-op threads to use; 0 for "the default" (``default_threads``, capped by the
            CPUs pinned to).
        allowed: the CPUs this process may use.
        default_threads: see :class:`CpuPlan`.

    Raises:
        ValueError: a CPU id that is not in ``allowed``, or a malformed list.
    """
    if choice == "all":
        n = threads or None
        return CpuPlan([], n, default_threads, bool(n and n < default_threads),
                       f"not pinned (cpus = \"all\"), {_threads_word(n)}; perfgate's parent shares the CPUs")
    if choice != "auto":
        try:
            cpus = sorted({int(c) for c in choice.replace(" ", "").split(",") if c})
        except ValueError:
            raise ValueError(f"cpus must be auto, all or a list of CPU ids like \"2,3\" (got {choice!r})") from None
        missing = [c for c in cpus if c not in allowed]
        if not cpus or missing:
            raise ValueError(f"cpus = {choice!r}: CPU(s) {missing or choice} not available here "
                             f"(this process may use {','.join(map(str, allowed))})")
        n = threads or min(default_threads, len(cpus))
        return CpuPlan(cpus, n, default_threads, n < default_threads,
                       f"pinned to {_cpus_word(cpus)} (cpus = {choice!r}), {_threads_word(n)}")
    want = threads or default_threads
    if len(allowed) < 2:
        n = min(want, len(allowed))
        return CpuPlan(list(allowed), n, default_threads, n < default_threads,
                       f"pinned to the only CPU this process may use ({','.join(map(str, allowed))}), "
                       f"{_threads_word(n)}; perfgate's parent shares it")
    rest = allowed[1:]
    if len(rest) >= want:
        return CpuPlan(rest, want, default_threads, want < default_threads,
                       f"pinned to {_cpus_word(rest)}, {_threads_word(want)} (the default here); "
                       f"CPU {allowed[0]} left to perfgate")
    n = min(want, len(rest))
    return CpuPlan(rest, n, default_threads, n < default_threads,
                   f"pinned to {_cpus_word(rest)} with {_threads_word(n)}: this machine has {len(allowed)} CPU(s), "
                   f"too few to keep torch's default of {default_threads} threads and leave a CPU to perfgate, so "
                   f"both sides run reduced; set cpus = \"all\" to measure with {default_threads} threads "
                   f"(noisier)")


def cpu_plan(parent_env: Mapping[str, str], choice: str = "auto", threads: int = 0) -> CpuPlan:
    """:func:`plan_cpus` for this machine: ``PERFGATE_CPUS`` (``all`` or a list) overrides ``choice``.

    Raises:
        ValueError: see :func:`plan_cpus`.
    """
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    exported = parent_env.get("OMP_NUM_THREADS") or parent_env.get("MKL_NUM_THREADS")
    default = int(exported) if exported and exported.isdigit() and int(exported) > 0 else physical_cores(allowed)
    override = parent_env.get("PERFGATE_CPUS", "").strip()
    if not hasattr(os, "sched_setaffinity") and (override or choice) not in ("all",):
        return CpuPlan([], threads or None, default, False, "not pinned (this platform cannot pin processes)")
    return plan_cpus(override or choice, threads, allowed, default)


def worker_env(base_env: Mapping[str, str], *, allocator: str, cuda_alloc_conf: str,
               threads: int | None) -> dict[str, str]:
    """The variables perfgate sets for both workers, on top of ``base_env``.

    Returns only what perfgate adds (the caller merges it): the allocator presets, a fixed
    string-hash seed (``PYTHONHASHSEED=0``: dict/set layouts cannot differ by side), a passive
    OpenMP wait policy (measured on 2 cores with ``torch.softmax``: sample CV 60–180 % with the
    default active wait, 15–28 % with ``PASSIVE``, because the idle worker's threads spun), and
    ``OMP_NUM_THREADS`` = ``threads`` (:class:`CpuPlan`) when it is set, and
    ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (:data:`NVML_CHECK`: a preloaded
    ``torch.cuda.is_available()`` then leaves the fork server's children able to use CUDA).
    Values the user exported win, except the thread count, which the plan already took from them.

    Raises:
        AllocatorNotFound, ValueError: see :func:`allocator_env`.
    """
    env = {"PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0", "OMP_WAIT_POLICY": "PASSIVE",
           **NVML_CHECK}
    env = {key: base_env.get(key, value) for key, value in env.items()}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    env.update(allocator_env(allocator, base_env))
    env.update(cuda_allocator_env(cuda_alloc_conf, base_env))
    return env


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _bracketed(text: str | None) -> str | None:
    """The selected value of a sysfs choice list: ``always [madvise] never`` → ``madvise``."""
    if not text:
        return text
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else text


def _switch(path: str, on: str = "1") -> bool | None:
    """A sysfs flag (``0``/``1``) as a bool; None when the file is absent or holds anything else."""
    value = _read(path)
    return None if value not in ("0", "1") else value == on


def host_facts() -> dict:
    """Machine settings that can make one process faster than another, read once for the record:
    transparent huge pages, NUMA nodes, the CPU frequency governor, turbo/boost (intel_pstate's
    ``no_turbo``, else cpufreq's ``boost``), simultaneous multithreading, address randomisation.
    A value the machine does not expose (a VM without cpufreq, a container) is None."""
    nodes = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*")) \
        if Path("/sys/devices/system/node").is_dir() else []
    turbo = _switch("/sys/devices/system/cpu/intel_pstate/no_turbo", on="0")
    return {
        "transparent_hugepages": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "transparent_hugepages_defrag": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/defrag")),
        "numa_nodes": len(nodes) or None,
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cpu_turbo": turbo if turbo is not None else _switch("/sys/devices/system/cpu/cpufreq/boost"),
        "smt_active": _switch("/sys/devices/system/cpu/smt/active"),
        "aslr_system": _read("/proc/sys/kernel/randomize_va_space"),
    }


def describe(added_env: Mapping[str, str], plan: CpuPlan, *, allocator: str, layout_pinned: bool,
             isolation: str) -> dict:
    """``environment.worker`` of results.json: what both workers ran under.

    Returns:
        ``{isolation, cpus, threads, default_threads, reduced, note, allocator, allocator_env,
        omp_num_threads, omp_wait_policy, aslr, host}`` with ``allocator_env`` the allocator
        variables as set (glibc tunables, ``LD_PRELOAD``, ``PYTORCH_CUDA_ALLOC_CONF``).
    """
    keys = tuple(GLIBC_STEADY) + ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF")
    return {
        "isolation": isolation,
        "cpus": list(plan.cpus) or None,
        "threads": plan.threads,
        "default_threads": plan.default_threads,
        "reduced": plan.reduced,
        "note": plan.note,
        "allocator": allocator,
        "allocator_env": {k: added_env[k] for k in keys if k in added_env},
        "omp_num_threads": added_env.get("OMP_NUM_THREADS"),
        "omp_wait_policy": added_env.get("OMP_WAIT_POLICY"),
        "aslr": "off (setarch -R)" if layout_pinned else ASLR_LEFT_ON,
        "host": host_facts(),
    }


def timer_description(device: str | None) -> str:
    """How a sample is timed on ``device``, in words, for the record (``environment.worker.timer``)."""
    if device and device.startswith("cuda"):
        return ("timed with CUDA events on the current stream, the device synchronised before the end event "
                "(work on every stream is inside the interval)")
    return "timed with time.perf_counter_ns around the calls"


def intra_op_threads(env: Mapping) -> int | None:
    """The workers' intra-op threads as a worker's ``env`` answer reports them, on a CPU device
    (1 lets the timing pass tell disturbed rounds,
    :func:`runner.pipeline.timing.schedule.disturbed_rounds`); None on a GPU (a GPU benchmark waits
    off the CPU) or when unknown."""
    return (env.get("threads") or {}).get("intra_op") if env.get("device") == "cpu" else None


#: An NVML device UUID (``GPU-`` or ``MIG-`` and the hex groups).
_NVML_UUID = re.compile(r"(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def workers_gpu(envs: list[Mapping]) -> str | None:
    """The GPU the workers run on as NVML names it (their ``env`` answers' ``gpu_uuid``): where
    every side names the same one in NVML's form, else None (NVML's GPU 0). A head's preloaded code
    could answer anything, and the clock lock must not follow it to another GPU."""
    named = {env.get("gpu_uuid") for env in envs}
    uuid = named.pop() if len(named) == 1 else None
    return uuid if isinstance(uuid, str) and _NVML_UUID.fullmatch(uuid) else None
