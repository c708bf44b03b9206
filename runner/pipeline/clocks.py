"""The GPU's clocks during a compare: locked for the timing pass where the runner may, watched
where it may not.

GPU Boost picks the SM clock from moment to moment by temperature and power, so a sample's time
depends on what the GPU did before it. Two answers, both through NVML (``pynvml``, package
``nvidia-ml-py``; names and constants of ``nvml.h``):

* **lock** (config ``lock_clocks = true``): the SM clock (``lock_clocks_mhz``, else the GPU's
  default application clock, one it sustains under load) and the memory clock (its maximum) are
  locked before the timing pass and restored after it — ``nvmlDeviceSetGpuLockedClocks`` /
  ``nvmlDeviceSetMemoryLockedClocks``, what ``nvidia-smi -lgc`` / ``-lmc`` do, which needs root;
  else ``nvmlDeviceSetApplicationsClocks``, what ``nvidia-smi -ac`` does, which a non-root
  process may call once an administrator ran ``nvidia-smi -acp UNRESTRICTED``. Clocks the
  runner's owner already holds with a setting are left as they are.
* **monitor** (the default, and wherever locking is not allowed): nothing is changed; the NVML
  sampler records clocks, clock-event reasons and violation counters, and the rounds the GPU
  throttled or whose SM clock moved more than 2 % are left out of the estimate
  (:func:`runner.pipeline.telemetry.disturbed_rounds`).

:func:`plan` decides from the facts :func:`runner.pipeline.machine_facts.gpu_facts` reads (pure;
``perfgate doctor`` shows its answer); :class:`ClockControl` carries it out and undoes it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from .telemetry import nvml_value, open_device

#: What a compare does with the clocks: ``lock`` (set for the run, restored after), ``held``
#: (a setting of the runner's owner holds them: left alone), ``monitor`` (watched, not changed),
#: ``none`` (no NVIDIA GPU or NVML: nothing to lock or watch).
POLICIES = ("lock", "held", "monitor", "none")

#: How to unlock: ``nvidia-smi -acp`` values and what NVML answers for the restriction.
UNRESTRICT_FIX = ("run the benchmark job as root, or let non-root processes set application clocks: "
                  "sudo nvidia-smi -acp UNRESTRICTED (per GPU: -i N)")


@dataclass(frozen=True)
class ClockPlan:
    """What to do with one GPU's clocks.

    ``method``: ``locked_clocks`` (root) or ``applications_clocks`` (application clocks
    unrestricted); ``sm_mhz``/``memory_mhz``: the clocks to set; ``lockable``: whether this runner
    could lock them (whatever the configuration says); ``reason``: one sentence for the report.
    """

    policy: str
    reason: str
    method: str | None = None
    sm_mhz: int | None = None
    memory_mhz: int | None = None
    lockable: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def held_by_setting(gpu: dict) -> bool:
    """A clock setting holds the SM clock: NVML's ``applications_clocks_setting`` clock-event
    reason, or an application clock other than its default (the doctor's ``gpu_clocks`` rule)."""
    app, default = gpu.get("sm_application_clock_mhz"), gpu.get("sm_default_application_clock_mhz")
    return "applications_clocks_setting" in (gpu.get("clock_event_reasons") or []) or bool(app and default and app != default)


def lock_method(gpu: dict) -> str | None:
    """How this runner may lock the clocks (``locked_clocks`` as root, ``applications_clocks``
    when non-root processes may set them), or None."""
    permission = gpu.get("clock_permission") or {}
    if permission.get("root"):
        return "locked_clocks"
    if permission.get("applications_clocks_restricted") is False:
        return "applications_clocks"
    return None


def _nearest(target: int, supported: list[int] | None) -> int:
    return min(supported, key=lambda mhz: (abs(mhz - target), -mhz)) if supported else target


def plan(lock: bool, requested_mhz: int, gpu: dict | None) -> ClockPlan:
    """The clock policy of a compare on ``gpu`` (pure).

    Args:
        lock: the configuration's ``lock_clocks``.
        requested_mhz: ``lock_clocks_mhz`` (0: the GPU's default application clock).
        gpu: one GPU's facts (:func:`runner.pipeline.machine_facts.gpu_facts`), None without one.
    Returns:
        a :class:`ClockPlan`; ``lock`` only when asked, allowed and a clock to lock to is known.
    """
    if not gpu:
        return ClockPlan("none", "no NVIDIA GPU seen through NVML: clocks neither locked nor watched")
    method = lock_method(gpu)
    target = requested_mhz or gpu.get("sm_default_application_clock_mhz") or gpu.get("sm_application_clock_mhz")
    lockable = method is not None and bool(target)
    watch = "rounds the GPU throttled or whose SM clock moved more than 2 % are left out of the estimate"
    if held_by_setting(gpu):
        return ClockPlan("held", f"the SM clock is held by the runner's own clock setting (application clock "
                                 f"{gpu.get('sm_application_clock_mhz') or '?'} MHz): left as it is; {watch}",
                         lockable=lockable)
    if not lock:
        could = " (this runner could lock them: lock_clocks = true)" if lockable else ""
        return ClockPlan("monitor", f"clocks not locked (lock_clocks is off){could}: GPU Boost picks them; {watch}",
                         lockable=lockable)
    if method is None:
        return ClockPlan("monitor", f"lock_clocks is on but this runner may not set clocks (not root, application "
                                    f"clocks restricted): {watch}; to allow it, {UNRESTRICT_FIX}")
    if not target:
        return ClockPlan("monitor", f"lock_clocks is on but NVML names no clock to lock to (no default application "
                                    f"clock): set lock_clocks_mhz; {watch}")
    sm = _nearest(int(target), gpu.get("sm_supported_clocks_mhz"))
    memory = gpu.get("memory_max_clock_mhz")
    how = "nvidia-smi -lgc/-lmc's locked clocks" if method == "locked_clocks" else "application clocks (nvidia-smi -ac)"
    return ClockPlan("lock", f"clocks locked for the timing pass with {how}: SM {sm} MHz"
                             + (f", memory {memory} MHz" if memory else "") + ", restored after",
                     method=method, sm_mhz=sm, memory_mhz=memory, lockable=True)


def refusal(exc: BaseException) -> str:
    """One line for an NVML error: its message, and what it means for locking."""
    text = str(exc) or type(exc).__name__
    value = getattr(exc, "value", None)
    if value == 4 or "permission" in text.lower():
        return f"{text} (not allowed: {UNRESTRICT_FIX})"
    if value == 3 or "not supported" in text.lower():
        return f"{text} (this GPU or driver does not support it)"
    return text


class ClockControl:
    """Carries out :func:`plan` for one GPU and undoes it (the imperative shell).

    ``ClockControl(lock, requested_mhz, index=0, nvml=None)``; :meth:`start` returns the record for
    ``environment.telemetry.clocks`` and never raises (a refusal ends in ``monitor`` with the
    reason); :meth:`restore` resets exactly what :meth:`start` set (idempotent). ``nvml``: a
    ``pynvml``-like module (tests pass a fake); by default ``pynvml``.
    """

    def __init__(self, lock: bool, requested_mhz: int = 0, *, index: int = 0, nvml=None, euid=None):
        self.lock, self.requested_mhz, self.index = lock, requested_mhz, index
        self._nvml, self._euid = nvml, euid
        self._handle = None
        self._set: list[str] = []
        self.record: dict = {}

    def start(self) -> dict:
        from .machine_facts import gpu_facts

        try:
            self._nvml, self._handle = open_device(self._nvml, self.index)
            gpu = gpu_facts(self._nvml, self.index, self._handle, euid=self._euid)
        except Exception as exc:  # noqa: BLE001 - ImportError, no driver, no GPU: nothing to lock or watch
            self._handle = None
            self.record = {**plan(self.lock, self.requested_mhz, None).to_dict(), "error": refusal(exc)}
            return self.record
        chosen = plan(self.lock, self.requested_mhz, gpu)
        self.record = {**chosen.to_dict(), "restored": None}
        if chosen.policy == "lock":
            try:
                self._apply(chosen)
            except Exception as exc:  # noqa: BLE001 - NoPermission, NotSupported: watch instead
                self.restore()
                self.record.update(policy="monitor", reason=f"locking the clocks failed: {refusal(exc)}; rounds the "
                                   "GPU throttled or whose SM clock moved more than 2 % are left out of the estimate",
                                   sm_mhz=None, memory_mhz=None)
        return self.record

    def _apply(self, chosen: ClockPlan) -> None:
        nvml, handle = self._nvml, self._handle
        if chosen.method == "locked_clocks":
            nvml.nvmlDeviceSetGpuLockedClocks(handle, chosen.sm_mhz, chosen.sm_mhz)
            self._set.append("nvmlDeviceResetGpuLockedClocks")
            if chosen.memory_mhz:
                try:
                    nvml.nvmlDeviceSetMemoryLockedClocks(handle, chosen.memory_mhz, chosen.memory_mhz)
                    self._set.append("nvmlDeviceResetMemoryLockedClocks")
                except Exception as exc:  # noqa: BLE001 - many GPUs do not lock memory clocks: SM only
                    self.record["memory_mhz"] = None
                    self.record["reason"] += f" (memory clock not locked: {refusal(exc)})"
        else:
            nvml.nvmlDeviceSetApplicationsClocks(handle, chosen.memory_mhz or 0, chosen.sm_mhz)
            self._set.append("nvmlDeviceResetApplicationsClocks")

    def restore(self) -> None:
        """Reset the clocks :meth:`start` set, then shut NVML down; ``record["restored"]`` says
        whether every reset succeeded."""
        if self._handle is None:
            return
        ok = True
        while self._set:
            name = self._set.pop()
            try:
                getattr(self._nvml, name)(self._handle)
            except Exception as exc:  # noqa: BLE001 - say so; the runner's owner must reset them
                ok = False
                self.record["restore_error"] = f"{name}: {refusal(exc)}"
        if self.record.get("policy") == "lock":
            self.record["restored"] = ok
        nvml_value(self._nvml.nvmlShutdown)
        self._handle = None


def euid() -> int | None:
    """This process's effective user id (None where the platform has none)."""
    return os.geteuid() if hasattr(os, "geteuid") else None
