"""The clock policy of a compare on one GPU (pure): lock, leave held, watch, or nothing — and the
clock-event reasons that count as throttling.

:func:`plan` decides from the facts :func:`runner.pipeline.machine.machine_facts.gpu_facts` reads;
:class:`runner.pipeline.machine.clocks.ClockControl` carries it out, ``perfgate doctor``
(:mod:`runner.pipeline.machine.doctor`) shows its answer. NVML's names and constants (``nvml.h``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: Clock-event reasons that mean the clocks were held down by power or heat (not idle, not a setting).
THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                    "hw_power_brake_slowdown")

#: What a compare does with the clocks: ``lock`` (set for the run, restored after), ``held``
#: (a setting of the runner's owner holds them: left alone), ``monitor`` (watched, not changed),
#: ``none`` (no NVIDIA GPU or NVML: nothing to lock or watch).
POLICIES = ("lock", "held", "monitor", "none")

#: The SM clock a locked timing pass locks to, MHz; 0: the GPU's sustained clock under load where
#: ``perfgate doctor`` measured it (:mod:`.sustained`), else its default application clock, which
#: on A100/H100-class parts a power-heavy kernel cannot hold (GPU review #8) (:func:`plan` takes
#: the supported clock nearest a target). An internal,
#: the key ``lock_clocks_mhz`` until deprecated (runner.config.INTERNALS): a runner that needs
#: another clock sets it itself (``nvidia-smi -ac``), and a compare leaves a held clock alone.
LOCK_SM_MHZ = 0

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


def has_gpu_clocks(device: str | None) -> bool:
    """Whether a run on the workers' ``device`` has GPU clocks to lock or watch (a CUDA device)."""
    return str(device or "").startswith("cuda")


def off_gpu() -> dict:
    """The clocks record (``environment.telemetry.clocks``) of a run not on a CUDA device."""
    return {"policy": "none", "reason": "not a CUDA run: no GPU clocks to lock or watch"}


def locked_sm_mhz(record: dict) -> float | None:
    """The SM clock a compare locked (its ``environment.telemetry.clocks`` record), else None."""
    return record.get("sm_mhz") if record.get("policy") == "lock" else None


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


def plan(lock: bool, requested_mhz: int, gpu: dict | None,
         sustained_mhz: int | None = None) -> ClockPlan:
    """The clock policy of a compare on ``gpu`` (pure).

    Args:
        lock: the configuration's ``lock_clocks``.
        requested_mhz: the SM clock to lock to, :data:`LOCK_SM_MHZ` (0: the GPU's default
            application clock) unless a deprecated ``lock_clocks_mhz`` says otherwise.
        gpu: one GPU's facts (:func:`runner.pipeline.machine.machine_facts.gpu_facts`), None without
        one.
        sustained_mhz: the SM clock this GPU sustains under load (:mod:`.sustained`, cached per
            GPU by ``perfgate doctor``), the target when ``requested_mhz`` is 0; None: unmeasured.
    Returns:
        a :class:`ClockPlan`; ``lock`` only when asked, allowed and a clock to lock to is known.
    """
    if not gpu:
        return ClockPlan("none", "no NVIDIA GPU seen through NVML: clocks neither locked nor watched")
    method = lock_method(gpu)
    default = gpu.get("sm_default_application_clock_mhz") or gpu.get("sm_application_clock_mhz")
    target = requested_mhz or sustained_mhz or default
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
                                    f"clock): {watch}")
    sm = _nearest(int(target), gpu.get("sm_supported_clocks_mhz"))
    memory = gpu.get("memory_max_clock_mhz")
    how = "nvidia-smi -lgc/-lmc's locked clocks" if method == "locked_clocks" else "application clocks (nvidia-smi -ac)"
    unmeasured = " (the default application clock; sustained clock unmeasured)"
    which = "" if requested_mhz else (" (sustained under load)" if sustained_mhz else unmeasured)
    return ClockPlan("lock", f"clocks locked for the timing pass with {how}: SM {sm} MHz{which}"
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
