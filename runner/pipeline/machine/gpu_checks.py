"""``perfgate doctor``'s GPU checks (pure): one :class:`~runner.pipeline.machine.finding.Finding`
per check and GPU from the facts :func:`runner.pipeline.machine.machine_facts.gpu_facts` reads
(NVML); the list and what each check means are in :mod:`runner.pipeline.machine.doctor`'s docstring.
"""

from __future__ import annotations

from .clock_plan import LOCK_SM_MHZ, THROTTLE_REASONS, UNRESTRICT_FIX, plan
from .finding import Finding
from .sustained import SOAK_SECONDS

#: GPU utilisation (percent) above which a GPU counts as busy even when NVML lists no process
#: (another container's processes can be invisible).
BUSY_UTILIZATION_PCT = 5
#: An idle GPU warmer than this (°C) starts a run hot: it reaches its slowdown point sooner.
IDLE_TEMPERATURE_C = 60
#: Within this many °C of the slowdown threshold at idle, throttling during the run is likely.
SLOWDOWN_MARGIN_C = 10


def _gpu_subject(gpu: dict) -> str:
    return f"GPU {gpu.get('index')}" + (f" ({gpu['name']})" if gpu.get("name") else "")


def _busy(gpu: dict) -> bool:
    return bool(gpu.get("processes")) or (gpu.get("utilization_pct") or 0) > BUSY_UTILIZATION_PCT


def check_gpu_processes(gpu: dict) -> Finding:
    """Fail when another process holds the GPU, or it is busy with none visible."""
    subject, i = _gpu_subject(gpu), gpu.get("index")
    procs, util = gpu.get("processes"), gpu.get("utilization_pct")
    fix = (f"stop them or wait; run perfgate on a GPU nothing else uses (CUDA_VISIBLE_DEVICES), and give the "
           f"runner the GPU alone (one runner per GPU, ephemeral); nvidia-smi -i {i} shows who uses it")
    if procs:
        names = ", ".join(f"{p.get('name') or 'pid'} ({p['pid']}"
                          + (f", {p['used_memory_bytes'] / 2**20:.0f} MiB" if p.get("used_memory_bytes") else "") + ")"
                          for p in procs[:5])
        more = f" and {len(procs) - 5} more" if len(procs) > 5 else ""
        return Finding("gpu_processes", subject, "fail", f"{len(procs)} other process(es) on the GPU: {names}{more}", fix)
    if util is not None and util > BUSY_UTILIZATION_PCT:
        return Finding("gpu_processes", subject, "fail",
                       f"the GPU is {util:.0f} % busy but no process is listed (another container or VM?)", fix)
    if procs is None and util is None:
        return Finding("gpu_processes", subject, "skip", "NVML lists neither processes nor utilisation here")
    return Finding("gpu_processes", subject, "ok", "no other process on the GPU" +
                   (f", {util:.0f} % utilisation" if util is not None else ""))


def check_gpu_mig(gpu: dict) -> Finding:
    """Warn on MIG (a slice has a fraction of the SMs; results do not compare with a whole GPU)."""
    subject, mode, i = _gpu_subject(gpu), gpu.get("mig_mode"), gpu.get("index")
    if mode is None:
        return Finding("gpu_mig", subject, "skip", "MIG is not supported on this GPU")
    if mode["current"] != mode["pending"]:
        return Finding("gpu_mig", subject, "warn",
                       f"MIG mode changes from {'on' if mode['current'] else 'off'} to "
                       f"{'on' if mode['pending'] else 'off'} at the next GPU reset",
                       f"reset the GPU (sudo nvidia-smi -i {i} -r) when it is idle, so the mode is the one you expect")
    if mode["current"]:
        return Finding("gpu_mig", subject, "warn",
                       "MIG is on: benchmarks run in a slice with a fraction of the SMs and memory, and the results "
                       "compare only with runs in the same slice profile",
                       f"benchmark on a whole GPU (sudo nvidia-smi -i {i} -mig 0, then a reset), or keep every run "
                       f"of a series on the same MIG profile")
    return Finding("gpu_mig", subject, "ok", "MIG is off")


def check_gpu_persistence(gpu: dict) -> Finding:
    """Warn when persistence mode is off (the driver tears down between jobs: slow, cold starts)."""
    subject, mode = _gpu_subject(gpu), gpu.get("persistence_mode")
    if mode is None:
        return Finding("gpu_persistence", subject, "skip", "persistence mode is not reported (Windows, or no permission)")
    if not mode:
        return Finding("gpu_persistence", subject, "warn",
                       "persistence mode is off: the driver unloads between jobs, so every job pays for "
                       "initialisation and starts with reset clocks",
                       "run the NVIDIA persistence daemon (systemctl enable --now nvidia-persistenced) or "
                       f"sudo nvidia-smi -i {gpu.get('index')} -pm 1")
    return Finding("gpu_persistence", subject, "ok", "persistence mode is on")


def check_gpu_compute_mode(gpu: dict) -> Finding:
    """Fail unless the GPU takes several processes at once: base's and head's workers each hold a
    context on it during a pair, so in ``exclusive_process`` mode every second one fails, and in
    ``prohibited`` none starts (GPU review 2026-12-06, #12)."""
    subject, mode, i = _gpu_subject(gpu), gpu.get("compute_mode"), gpu.get("index")
    if mode is None:
        return Finding("gpu_compute_mode", subject, "skip", "the compute mode is not reported")
    if mode != "default":
        return Finding("gpu_compute_mode", subject, "fail",
                       f"compute mode is {mode.replace('_', ' ')}: both sides' workers hold a "
                       "CUDA context at once, and the second cannot get one",
                       f"sudo nvidia-smi -i {i} -c DEFAULT")
    return Finding("gpu_compute_mode", subject, "ok",
                   "compute mode is default: both sides' workers can share it")


def check_gpu_ecc(gpu: dict) -> Finding:
    """Fail on uncorrected ECC errors; warn on a pending ECC change; record the state."""
    subject, mode, errors, i = _gpu_subject(gpu), gpu.get("ecc_mode"), gpu.get("ecc_uncorrected_volatile"), gpu.get("index")
    if errors:
        return Finding("gpu_ecc", subject, "fail",
                       f"{errors} uncorrected ECC error(s) since the driver loaded: the GPU's memory is failing or "
                       f"pages are being retired",
                       f"drain the runner; check nvidia-smi -i {i} -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER and reset "
                       f"or replace the GPU")
    if mode is None:
        return Finding("gpu_ecc", subject, "skip", "ECC is not supported on this GPU")
    if mode["current"] != mode["pending"]:
        return Finding("gpu_ecc", subject, "warn",
                       f"ECC changes from {'on' if mode['current'] else 'off'} to {'on' if mode['pending'] else 'off'} "
                       f"at the next reboot: memory bandwidth and capacity will differ from today's runs",
                       "reboot before measuring, so the history's environment does not change mid-series")
    return Finding("gpu_ecc", subject, "ok", f"ECC is {'on' if mode['current'] else 'off'}, no uncorrected errors")


def check_gpu_clocks(gpu: dict) -> Finding:
    """Warn when GPU Boost picks the clocks (they follow temperature and power from call to call).

    A clock setting is seen when NVML reports the ``applications_clocks_setting`` clock-event
    reason (application or locked clocks hold the clock) or the application clock differs from
    its default."""
    subject, i = _gpu_subject(gpu), gpu.get("index")
    reasons = gpu.get("clock_event_reasons") or []
    app, default, top = (gpu.get("sm_application_clock_mhz"), gpu.get("sm_default_application_clock_mhz"),
                         gpu.get("sm_max_clock_mhz"))
    if "applications_clocks_setting" in reasons or (app and default and app != default):
        held = f" (application clock {app} MHz, default {default} MHz)" if app and default else ""
        return Finding("gpu_clocks", subject, "ok", f"the SM clock is held by a clock setting{held}")
    if app is None and top is None:
        return Finding("gpu_clocks", subject, "skip", "NVML reports no clock settings for this GPU")
    target = default or app
    return Finding("gpu_clocks", subject, "warn",
                   f"GPU Boost picks the SM clock (up to {top or '?'} MHz): it follows temperature and power, so "
                   f"timings drift within and between runs",
                   f"lock the clocks for benchmarking: sudo nvidia-smi -i {i} --lock-gpu-clocks={target},{target} "
                   f"(a clock the GPU sustains under load; undo with --reset-gpu-clocks)" if target else
                   f"lock the clocks for benchmarking: sudo nvidia-smi -i {i} --lock-gpu-clocks=MHZ,MHZ")


def check_gpu_clock_policy(gpu: dict) -> Finding:
    """Say what a compare does with this GPU's clocks
    (:func:`runner.pipeline.machine.clock_plan.plan`): locks them when asked (``lock_clocks =
    true``) and allowed, leaves a runner's own setting alone, else watches every round; warn when
    the clocks float and this runner may not lock them."""
    subject = _gpu_subject(gpu)
    measured = gpu.get("sustained_clock_mhz")
    asked = plan(True, LOCK_SM_MHZ, gpu, measured)
    soaked = f"sustained under a {SOAK_SECONDS:.0f} s bf16 GEMM"
    target = (f" (the clock it {soaked}, p10)" if measured else
              " (its default application clock: its sustained clock under load is unmeasured, "
              "perfgate doctor measures it on an idle GPU)")
    own = (f"nvidia-smi -i {gpu.get('index')} -lgc {measured},{measured}" if measured
           else "nvidia-smi -lgc")
    if asked.policy == "held":
        return Finding("gpu_clock_policy", subject, "ok",
                       "a clock setting of this runner holds the clocks: perfgate leaves it and still leaves out "
                       "rounds the GPU throttled")
    if asked.policy == "lock":
        how = "as root" if asked.method == "locked_clocks" else "application clocks are unrestricted"
        return Finding("gpu_clock_policy", subject, "ok",
                       f"perfgate may lock the clocks here ({how}): with lock_clocks = true a compare locks SM "
                       f"{asked.sm_mhz} MHz" + (f", memory {asked.memory_mhz} MHz" if asked.memory_mhz else "")
                       + target + " for its timing and restores them; without it, it leaves out "
                         "rounds the GPU throttled or "
                         "whose clock moved")
    return Finding("gpu_clock_policy", subject, "warn",
                   "perfgate may not lock the clocks here (not root, application clocks restricted): a compare "
                   "leaves out the rounds the GPU throttled or whose SM clock moved more than 2 %, as NVML reports them",
                   UNRESTRICT_FIX + f"; or lock them for every job in the runner's set-up ({own}"
                   + (f": {measured} MHz is the SM clock it {soaked}, p10)" if measured else ")"))


def check_gpu_throttle(gpu: dict) -> Finding:
    """Fail when power or heat holds the clocks down right now."""
    subject, reasons = _gpu_subject(gpu), gpu.get("clock_event_reasons")
    if reasons is None:
        return Finding("gpu_throttle", subject, "skip", "NVML reports no clock-event reasons for this GPU")
    active = [r for r in reasons if r in THROTTLE_REASONS]
    if active:
        return Finding("gpu_throttle", subject, "fail",
                       f"the clocks are held down now: {', '.join(active)}",
                       f"check cooling, power cap and neighbours (nvidia-smi -i {gpu.get('index')} -q -d "
                       f"PERFORMANCE,POWER,TEMPERATURE) and measure once the reason has cleared")
    return Finding("gpu_throttle", subject, "ok",
                   "no power or thermal slowdown" + (f" ({', '.join(reasons)})" if reasons else ""))


def check_gpu_temperature(gpu: dict) -> Finding:
    """Fail near the slowdown threshold at idle; warn when idle but already warm."""
    subject, temp, slowdown = _gpu_subject(gpu), gpu.get("temperature_c"), gpu.get("slowdown_temperature_c")
    if temp is None:
        return Finding("gpu_temperature", subject, "skip", "NVML reports no temperature for this GPU")
    if _busy(gpu):
        return Finding("gpu_temperature", subject, "skip", f"{temp:.0f} °C, but the GPU is busy: no idle reading")
    fix = ("improve the airflow or fan curve, or let the GPU cool between jobs (a previous job may have just "
           "ended); nvidia-smi -q -d TEMPERATURE shows the thresholds")
    if slowdown and temp >= slowdown - SLOWDOWN_MARGIN_C:
        return Finding("gpu_temperature", subject, "fail",
                       f"{temp:.0f} °C at idle, within {slowdown - temp:.0f} °C of the slowdown threshold "
                       f"({slowdown:.0f} °C): it will throttle under load", fix)
    if temp > IDLE_TEMPERATURE_C:
        return Finding("gpu_temperature", subject, "warn",
                       f"{temp:.0f} °C at idle (above {IDLE_TEMPERATURE_C} °C): the run starts hot", fix)
    return Finding("gpu_temperature", subject, "ok", f"{temp:.0f} °C at idle"
                   + (f" (slowdown at {slowdown:.0f} °C)" if slowdown else ""))


def _major_minor(version: str | None) -> tuple[int, int] | None:
    try:
        major, minor = (version or "").split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def check_gpu_software(nvml: dict, torch: dict | None, gpus: list[dict]) -> Finding:
    """Driver, CUDA and torch: fail when torch cannot use this driver's GPUs, warn on CUDA minor
    version compatibility (a torch built for a newer CUDA 12.x than the driver's runs, without the
    features that need the newer driver), ok when the driver covers torch's CUDA."""
    subject = f"driver {nvml.get('driver') or '?'}"
    if torch is None:
        return Finding("gpu_software", subject, "skip", "torch is not installed in this environment")
    built = f"torch {torch.get('version')}"
    if torch.get("hip"):
        return Finding("gpu_software", subject, "skip", f"{built} is a ROCm build (HIP {torch['hip']}): NVML checks do not apply")
    if not torch.get("cuda"):
        return Finding("gpu_software", subject, "fail",
                       f"{built} is a CPU-only build: on this machine's {len(gpus)} GPU(s) nothing would run",
                       "install a CUDA build of torch that this driver supports")
    need, have = _major_minor(torch.get("cuda")), _major_minor(nvml.get("cuda_driver"))
    if need is None or have is None:
        return Finding("gpu_software", subject, "skip",
                       f"{built} (CUDA {torch.get('cuda')}); the driver's CUDA version is unknown")
    line = f"{built} built with CUDA {torch['cuda']}; the driver supports CUDA up to {nvml['cuda_driver']}"
    if need[0] > have[0]:
        return Finding("gpu_software", subject, "fail", line + ": torch cannot start CUDA",
                       f"upgrade the NVIDIA driver to one for CUDA {torch['cuda']}, or install a torch built for "
                       f"CUDA {have[0]}.x")
    if need > have:
        return Finding("gpu_software", subject, "warn",
                       line + ": it runs under minor version compatibility, without the features (and PTX JIT) "
                              "that need the newer driver",
                       f"upgrade the driver to one for CUDA {torch['cuda']}, or use a torch built for CUDA "
                       f"{nvml['cuda_driver']} or older")
    return Finding("gpu_software", subject, "ok", line)
