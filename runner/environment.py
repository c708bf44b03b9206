"""The environment a result was measured in, captured once and stored with the results.

The host facts (Python, platform, CPU) are read here in the parent; the device facts (device,
its name, torch, CUDA, driver) come from the worker, which is where torch is imported.
The record's words that the parent writes and the report reads live here too (``ASLR_LEFT_ON``).
"""

from __future__ import annotations

import os
import platform
import sys

#: ``environment.worker.aslr`` when the workers ran with the system's layout randomisation
#: (:func:`runner.pipeline.machine.conditions.describe` records it; the report's conditions line
#: reads it): ``setarch -R`` missing or not permitted (a container's seccomp profile), or
#: ``PERFGATE_ASLR=1``.
ASLR_LEFT_ON = "system default"

#: What a random layout means for the numbers (the report's conditions line and ``perfgate
#: doctor``'s ``aslr`` check), from :func:`runner.pipeline.machine.layouts.layout_pinned`'s
#: measurement: A/A on a 2-CPU VM, two workers running identical code differed by up to ±9 %, alike
#: for every benchmark of the run, an offset that process pairs forked from the same server cannot
#: reveal.
LAYOUT_EFFECT = ("each side's fork server has its own random layout, which can shift every "
                 "benchmark of one side alike by a few percent (up to 9 % measured on a 2-CPU VM)")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), with the number of logical cores."""
    name = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine()
    return f"{name} ({os.cpu_count()} logical cores)"


def capture(worker_env: dict | None, telemetry: dict | None) -> dict:
    """``environment`` of results.json.

    Args:
        worker_env: the worker's ``env`` response: ``{device, device_name, torch, cuda,
            driver, ...}`` (None when no worker could start).
        telemetry: :meth:`runner.pipeline.machine.telemetry.TelemetrySampler.summary` or None.

    Returns:
        ``{device, device_name, torch, cuda, driver, python, platform, cpu, telemetry, ...}``.
    """
    worker_env = dict(worker_env or {})
    worker_env.pop("ok", None)
    env = {
        "device": worker_env.pop("device", None),
        "device_name": worker_env.pop("device_name", None),
        "torch": worker_env.pop("torch", None),
        "cuda": worker_env.pop("cuda", None),
        "driver": worker_env.pop("driver", None),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "telemetry": telemetry or {"available": False, "reason": "not sampled"},
    }
    env.update({k: v for k, v in worker_env.items() if k not in env})
    env["executable"] = sys.executable
    return env
