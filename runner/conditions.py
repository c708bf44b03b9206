"""The conditions both workers run under: CPU set, allocator, threads — chosen once, the same on
both sides, and recorded in ``results.json`` ``environment.worker``.

Each setting here exists because an A/A run (identical code on both sides) showed that leaving it
to chance made one side's process faster than the other's for its whole life; the measurement
that justified it is in the docstring and in evaluation/RESULTS.md. Pure functions of the parent's
environment and the configuration; :mod:`runner.manager` applies them when it starts a worker.
"""

from __future__ import annotations

import ctypes.util
import os
from pathlib import Path
from typing import Mapping

#: glibc malloc settings of the ``steady`` allocator preset (bytes).
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
    "MALLOC_TRIM_THRESHOLD_": str(16 * 2**30),
    "MALLOC_TOP_PAD_": str(64 * 2**20),
}

#: Allocator presets (config key ``allocator``).
ALLOCATORS = ("steady", "system", "jemalloc", "tcmalloc")

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

    ``steady``: :data:`GLIBC_STEADY` (a value the user already exported wins, so an experiment
    can still vary one). ``system``: nothing (the process's history decides, as outside perfgate).
    ``jemalloc``/``tcmalloc``: ``LD_PRELOAD`` of that library.

    Raises:
        AllocatorNotFound: for ``jemalloc``/``tcmalloc`` when the library is missing.
        ValueError: an unknown preset.
    """
    if allocator == "system":
        return {}
    if allocator == "steady":
        return {key: parent_env.get(key, value) for key, value in GLIBC_STEADY.items()}
    if allocator in _PRELOAD_NAMES:
        lib = find_allocator_library(allocator)
        preload = " ".join(filter(None, [lib, parent_env.get("LD_PRELOAD", "")]))
        return {"LD_PRELOAD": preload}
    raise ValueError(f"unknown allocator {allocator!r} (one of {', '.join(ALLOCATORS)})")


def cuda_allocator_env(cuda_alloc_conf: str, parent_env: Mapping[str, str]) -> dict[str, str]:
    """``PYTORCH_CUDA_ALLOC_CONF`` for both workers: the configured value, else the parent's, else
    none (torch's default). The same string on both sides; recorded with the results."""
    value = cuda_alloc_conf or parent_env.get("PYTORCH_CUDA_ALLOC_CONF", "")
    return {"PYTORCH_CUDA_ALLOC_CONF": value} if value else {}


def worker_cpus(parent_env: Mapping[str, str]) -> list[int]:
    """The CPUs both workers are pinned to: the same set for base and head.

    Why: on a VM each vCPU is a host thread whose speed changes by itself (host contention,
    CPU quotas); the scheduler keeps a worker on "its" vCPU, so base and head ran at different
    speeds for seconds at a time — A/A runs on a 2-vCPU VM showed head 1.5x slower than base for
    a whole benchmark. On the same CPUs both sides see the same speed, and pairing cancels it.
    Default: every CPU this process may use except the first (left to the parent and the
    system), or all of them when there are fewer than two. ``PERFGATE_CPUS="2,3"`` chooses the
    set; ``PERFGATE_CPUS=all`` turns pinning off. Returns [] when not pinning.
    """
    choice = parent_env.get("PERFGATE_CPUS", "").strip()
    if choice == "all" or not hasattr(os, "sched_getaffinity"):
        return []
    if choice:
        return sorted({int(c) for c in choice.replace(" ", "").split(",") if c})
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[1:] if len(allowed) >= 2 else allowed


def worker_env(base_env: Mapping[str, str], *, allocator: str, cuda_alloc_conf: str,
               cpus: list[int]) -> dict[str, str]:
    """The variables perfgate sets for both workers, on top of ``base_env``.

    Returns only what perfgate adds (the caller merges it): the allocator presets, a fixed
    string-hash seed (``PYTHONHASHSEED=0``: dict/set layouts cannot differ by side), a passive
    OpenMP wait policy (measured on 2 cores with ``torch.softmax``: sample CV 60–180 % with the
    default active wait, 15–28 % with ``PASSIVE``, because the idle worker's threads spun), and
    ``OMP_NUM_THREADS`` = the number of pinned CPUs. Values the user exported win.

    Raises:
        AllocatorNotFound, ValueError: see :func:`allocator_env`.
    """
    env = {"PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0", "OMP_WAIT_POLICY": "PASSIVE"}
    if cpus:
        env["OMP_NUM_THREADS"] = str(len(cpus))
    env = {key: base_env.get(key, value) for key, value in env.items()}
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


def describe(added_env: Mapping[str, str], *, allocator: str, cpus: list[int], layout_pinned: bool,
             isolation: str) -> dict:
    """``environment.worker`` of results.json: what both workers ran under.

    Returns:
        ``{isolation, allocator, allocator_env, cpus, omp_num_threads, aslr, host}`` with
        ``allocator_env`` the allocator variables as set (glibc tunables, ``LD_PRELOAD``,
        ``PYTORCH_CUDA_ALLOC_CONF``).
    """
    keys = tuple(GLIBC_STEADY) + ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF")
    return {
        "isolation": isolation,
        "allocator": allocator,
        "allocator_env": {k: added_env[k] for k in keys if k in added_env},
        "cpus": list(cpus) or None,
        "omp_num_threads": added_env.get("OMP_NUM_THREADS"),
        "omp_wait_policy": added_env.get("OMP_WAIT_POLICY"),
        "aslr": "off (setarch -R)" if layout_pinned else "system default",
        "host": host_facts(),
    }
