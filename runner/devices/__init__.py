"""Devices: one module per vendor, registered in :data:`REGISTRY` (see :mod:`.base`).

Adding a vendor is its module (an object satisfying :class:`runner.devices.base.Device`) and one
line in :data:`REGISTRY`: the worker resolves the device through it (``auto`` takes the first
registered device that can run here, the CPU when none can), times samples with its events and
synchronisation, reads its memory peaks, flushes its L2, profiles its activity and reports it
among the fork hazards (:mod:`runner.worker`). Every module here imports the standard library
only at module level; torch and the vendor's libraries are imported inside the functions the
worker calls.

The parent still names devices itself: :data:`runner.config.DEVICES`, the values the ``device``
key, ``--device`` and the Action's input accept (tests/runner/test_devices.py ties it to this
registry), and per-device defaults keyed by name (``runner.config.AUTO_SAMPLE_TIME``,
``runner.measures.MEMORY_COST_CALLS``: a device they do not name gets the CPU's).
"""

from __future__ import annotations

from . import cpu, cuda
from .base import Device

#: The devices, in the order ``device = "auto"`` tries them (the CPU is the fallback).
REGISTRY: tuple[Device, ...] = (
    cpu.DEVICE,
    cuda.DEVICE,
)

#: The device a run falls back to when ``auto`` finds no other.
DEFAULT = "cpu"


def names() -> tuple[str, ...]:
    """The registered devices' names."""
    return tuple(d.name for d in REGISTRY)


def get(device: str) -> Device:
    """The registered device of a torch device string (``cuda``, ``cuda:1``, ``cpu``).

    Raises:
        KeyError: no such device (naming the ones there are).
    """
    kind = device.partition(":")[0]
    for registered in REGISTRY:
        if registered.name == kind:
            return registered
    raise KeyError(f"no device {device!r} (there are: {', '.join(names())})")


def resolve(requested: str) -> str:
    """The device a worker runs on: ``requested`` when it names a registered device, else
    (``auto``) the first registered device besides the CPU that can run here, else the CPU.

    Raises:
        RuntimeError: the device named cannot run here ("device 'cuda' asked for, but
            torch.cuda.is_available() is False").
    """
    for device in REGISTRY:
        if device.name == requested:
            reason = device.unavailable()
            if reason is not None:
                raise RuntimeError(f"device {requested!r} asked for, but {reason}")
            return device.name
    if requested != "auto":
        # "cuda:1" once became "cuda" (device 0) without a word (GPU review #21): one device a
        # worker, chosen by the environment (CUDA_VISIBLE_DEVICES=1), never an index dropped
        raise RuntimeError(f"device {requested!r}: not one of {', '.join(names())} (a worker uses "
                           "one device; choose which GPU with CUDA_VISIBLE_DEVICES)")
    for device in REGISTRY:
        if device.name != DEFAULT and device.unavailable() is None:
            return device.name
    return DEFAULT


def initialised() -> list[str]:
    """The titles of the registered devices whose runtime this process started (fork hazards)."""
    return [d.title for d in REGISTRY if d.initialised()]


__all__ = ["DEFAULT", "REGISTRY", "get", "initialised", "names", "resolve"]
