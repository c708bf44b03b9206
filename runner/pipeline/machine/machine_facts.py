"""What ``perfgate doctor`` judges, read from this machine: the imperative shell of the doctor.

:func:`gather` returns plain data (the shape is in its docstring) that
:mod:`runner.pipeline.machine.doctor`'s pure checks turn into findings. Sources: the host settings
of :func:`runner.pipeline.machine.conditions.host_facts` (the same readers that record
``environment.worker.host``), ``os.getloadavg``, ``shutil.disk_usage``, torch's ``version.py`` (read
as text: torch is never imported here, so the parent of a compare stays torch-free), and NVML
through ``pynvml`` (package ``nvidia-ml-py``; the calls and constants are those of ``nvml.h``).
Nothing here raises for a missing GPU, driver, field or file: what cannot be read is None, and
``nvml.reason`` says why NVML could not be used.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Iterable

from .conditions import host_facts
from .doctor import run_checks
from .finding import summarize
from .sustained import from_cache
from .telemetry import decode_reasons, nvml_text, nvml_value, read_sample


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the platform has none."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def disks(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Free and total bytes of the file system under each path, one entry per file system.

    A path that does not exist yet is measured at its nearest existing parent.
    """
    seen, out = set(), []
    for raw in paths:
        path = Path(raw).expanduser().absolute()
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            device = path.stat().st_dev
            usage = shutil.disk_usage(path)
        except OSError:
            continue
        if device in seen:
            continue
        seen.add(device)
        out.append({"path": str(path), "free_bytes": usage.free, "total_bytes": usage.total})
    return out


def torch_build() -> dict | None:
    """``{version, cuda, hip}`` of the installed torch, from ``torch/version.py`` without importing
    torch (``cuda``/``hip``: the toolkit it was built with, None for a CPU-only build); None when
    torch is not installed."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    values: dict = {}
    for folder in spec.submodule_search_locations:
        try:
            tree = ast.parse((Path(folder) / "version.py").read_text())
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                values[target.id] = value.value
        break
    return {"version": values.get("__version__"), "cuda": values.get("cuda"), "hip": values.get("hip")}


def _ask(nvml, name: str, *args):
    """NVML's ``name(*args)``, or None when this pynvml lacks it or NVML cannot answer."""
    return nvml_value(getattr(nvml, name, None), *args)


def _processes(nvml, handle) -> list[dict] | None:
    found, any_answer = {}, False
    for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        listed = _ask(nvml, name, handle)
        if listed is None:
            continue
        any_answer = True
        for proc in listed:
            pid = int(proc.pid)
            comm = None
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                pass  # another container's process, or gone
            memory = getattr(proc, "usedGpuMemory", None)
            found[pid] = {"pid": pid, "name": comm, "used_memory_bytes": int(memory) if memory is not None else None}
    return sorted(found.values(), key=lambda p: p["pid"]) if any_answer else None


def _pair(value) -> dict | None:
    """NVML's ``[current, pending]`` answers (MIG mode, ECC mode) as booleans."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    return {"current": bool(value[0]), "pending": bool(value[1])}


def this_euid() -> int | None:
    """This process's effective user id (None where the platform has none)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


#: NVML's compute modes (nvml.h ``nvmlComputeMode_t``) by value.
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def gpu_facts(nvml, index: int, handle, *, euid: int | None = None) -> dict:
    """The facts of one GPU (see :func:`gather`); ``euid``: the effective user id that decides
    whether clocks may be locked (default: this process's)."""
    sm = getattr(nvml, "NVML_CLOCK_SM", 1)
    mem = getattr(nvml, "NVML_CLOCK_MEM", 2)
    sample = read_sample(nvml, handle)
    memory_max = _ask(nvml, "nvmlDeviceGetMaxClockInfo", handle, mem)
    supported = _ask(nvml, "nvmlDeviceGetSupportedGraphicsClocks", handle, memory_max) if memory_max else None
    restricted = _ask(nvml, "nvmlDeviceGetAPIRestriction", handle,
                      getattr(nvml, "NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS", 0))
    user = this_euid() if euid is None else euid
    persistence = _ask(nvml, "nvmlDeviceGetPersistenceMode", handle)
    uncorrected = _ask(nvml, "nvmlDeviceGetTotalEccErrors", handle,
                             getattr(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1), getattr(nvml, "NVML_VOLATILE_ECC", 0))
    return {
        "index": index,
        "uuid": nvml_text(_ask(nvml, "nvmlDeviceGetUUID", handle)),
        "name": nvml_text(_ask(nvml, "nvmlDeviceGetName", handle)),
        "processes": _processes(nvml, handle),
        "utilization_pct": sample["gpu_utilization_pct"],
        "mig_mode": _pair(_ask(nvml, "nvmlDeviceGetMigMode", handle)),
        "persistence_mode": None if persistence is None else bool(persistence),
        "compute_mode": COMPUTE_MODES.get(_ask(nvml, "nvmlDeviceGetComputeMode", handle)),
        "ecc_mode": _pair(_ask(nvml, "nvmlDeviceGetEccMode", handle)),
        "ecc_uncorrected_volatile": None if uncorrected is None else int(uncorrected),
        "sm_clock_mhz": sample["sm_clock_mhz"],
        "sm_application_clock_mhz": _ask(nvml, "nvmlDeviceGetApplicationsClock", handle, sm),
        "sm_default_application_clock_mhz": _ask(nvml, "nvmlDeviceGetDefaultApplicationsClock", handle, sm),
        "sm_max_clock_mhz": _ask(nvml, "nvmlDeviceGetMaxClockInfo", handle, sm),
        "clock_event_reasons": decode_reasons(sample["reasons"]) if sample["reasons"] is not None else None,
        "temperature_c": sample["temperature_c"],
        "slowdown_temperature_c": _ask(nvml, "nvmlDeviceGetTemperatureThreshold", handle,
                                             getattr(nvml, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
        "memory_max_clock_mhz": memory_max,
        "sm_supported_clocks_mhz": sorted(int(c) for c in supported) if supported else None,
        "clock_permission": {"root": None if user is None else user == 0,
                             "applications_clocks_restricted": None if restricted is None else bool(restricted)},
    }


def nvml_facts(nvml=None, *, euid: int | None = None) -> tuple[dict, list[dict]]:
    """``(nvml, gpus)`` as in :func:`gather`; ``nvml`` a module-like object (tests), by default
    ``pynvml``; ``euid`` the user id clock locking is judged for (default: this process's). NVML
    is initialised and shut down here."""
    try:
        if nvml is None:
            import pynvml as nvml  # noqa: PLC0415 - optional dependency (nvidia-ml-py)
        nvml.nvmlInit()
    except ImportError:
        return {"available": False, "reason": "pynvml is not installed (pip install nvidia-ml-py)"}, []
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU, no permission: say why, never fail
        return {"available": False, "reason": f"NVML unavailable: {str(exc) or type(exc).__name__}"}, []
    try:
        cuda = _ask(nvml, "nvmlSystemGetCudaDriverVersion")
        info = {"available": True, "reason": None, "driver": nvml_text(_ask(nvml, "nvmlSystemGetDriverVersion")),
                "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) and cuda > 0 else None}
        gpus = []
        for index in range(_ask(nvml, "nvmlDeviceGetCount") or 0):
            handle = _ask(nvml, "nvmlDeviceGetHandleByIndex", index)
            if handle is not None:
                gpu = gpu_facts(nvml, index, handle, euid=euid)
                gpus.append({**gpu, "sustained_clock_mhz": read_sustained(gpu["uuid"])})
        return info, gpus
    finally:
        _ask(nvml, "nvmlShutdown")


def sandbox_facts() -> dict:
    """Can the GitHub Action's sandbox (bubblewrap, :mod:`runner.sandbox.bubblewrap`) run here?
    ``{available, reason (None when it can), in_actions (running inside GitHub Actions), limits
    (limit → the mechanism that would enforce it here,
    :func:`runner.sandbox.limits.enforcement`)}``."""
    import shutil

    from ...sandbox.confine import memory_total, offers
    from ...sandbox.limits import default_limits, enforcement
    from ...sandbox.bubblewrap import SandboxUnavailable, drop_to_for, probe

    try:
        probe(timeout=10)
        reason = None
    except SandboxUnavailable as exc:
        reason = str(exc)
    machine = offers(drop_to_for(), shutil.which("bwrap") or "bwrap")
    how = dict(enforcement(default_limits(memory_total()), machine).how)
    return {"available": reason is None, "reason": reason, "limits": how,
            "in_actions": os.environ.get("GITHUB_ACTIONS") == "true"}


def layout_facts() -> dict:
    """Can the workers run with address-space layout randomisation off (``setarch -R``,
    :func:`runner.pipeline.machine.layouts.layout_pinned`)? ``{randomised: None when they can, else
    why in words, cause: None or the cause's key}``
    (:func:`runner.pipeline.machine.layouts.layout_left_random`)."""
    from .layouts import layout_left_random

    cause, reason = layout_left_random() or (None, None)
    return {"randomised": reason, "cause": cause}


def state_folder(state_dir: str | os.PathLike | None = None) -> Path:
    """perfgate's state folder on this runner: ``state_dir``, else ``PERFGATE_STATE_DIR``, else
    ``~/.local/state/perfgate``."""
    return Path(state_dir or os.environ.get("PERFGATE_STATE_DIR")
                or Path.home() / ".local" / "state" / "perfgate")


def sustained_file(uuid: str, state_dir: str | os.PathLike | None = None) -> Path:
    """Where the sustained SM clock of the GPU ``uuid`` is cached."""
    return state_folder(state_dir) / f"sustained-{uuid}.json"


def read_sustained(uuid: str | None, state_dir: str | os.PathLike | None = None) -> int | None:
    """The sustained SM clock ``perfgate doctor`` measured for the GPU ``uuid``
    (:func:`.sustained.from_cache`: the file is read, never trusted), or None."""
    if not uuid:
        return None
    try:
        record = json.loads(sustained_file(uuid, state_dir).read_text())
    except (OSError, ValueError):
        return None
    return from_cache(record, uuid)


def gather(paths: Iterable[str | os.PathLike] = (".",), *, nvml=None) -> dict:
    """Everything the doctor's checks read, as plain data.

    Args:
        paths: folders whose free space matters (the output folder, the temporary folder where
            the revisions' worktrees go); the temporary folder is always added.
        nvml: a ``pynvml``-like module for tests (default: ``pynvml`` when installed).
    Returns:
        ``{host: runner.pipeline.machine.conditions.host_facts(), cpus: the machine's CPU count (the
        load average counts the whole machine's runnable tasks, whatever this process's affinity),
        load_average: [1m, 5m, 15m] | None, disks: [{path, free_bytes, total_bytes}], torch:
        {version, cuda, hip} | None, nvml: {available, reason, driver, cuda_driver ("12.4")}, gpus:
        [{index, name, processes: [{pid, name, used_memory_bytes}] | None, utilization_pct,
        mig_mode: {current, pending} | None, persistence_mode, ecc_mode: {current, pending} | None,
        ecc_uncorrected_volatile, sm_clock_mhz, sm_application_clock_mhz,
        sm_default_application_clock_mhz, sm_max_clock_mhz, clock_event_reasons: [names] | None,
        temperature_c, slowdown_temperature_c, memory_max_clock_mhz, sm_supported_clocks_mhz: [MHz]
        | None, clock_permission: {root, applications_clocks_restricted}, uuid,
        sustained_clock_mhz: :func:`read_sustained` | None}], sandbox:
        :func:`sandbox_facts`, layout: :func:`layout_facts`}``; clocks in MHz, temperatures in °C.
    """
    import tempfile

    nvml_info, gpus = nvml_facts(nvml)
    return {
        "host": host_facts(),
        "cpus": os.cpu_count() or 1,
        "load_average": load_average(),
        "disks": disks([*paths, tempfile.gettempdir()]),
        "torch": torch_build(),
        "nvml": nvml_info,
        "gpus": gpus,
        "sandbox": sandbox_facts(),
        "layout": layout_facts(),
    }


def examine(paths: Iterable[str | os.PathLike] = (".",), *, nvml=None) -> dict:
    """Gather this machine's facts now and check them: ``environment.doctor`` (:func:`summarize`)."""
    return summarize(run_checks(gather(paths, nvml=nvml)))
