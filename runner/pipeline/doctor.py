"""``perfgate doctor``: is this runner fit to measure? Checks with a fix for each.

pyperf's ``system show`` is the model (it lists what makes a CPU benchmark unstable and how to
tune it); this adds the GPU's side. The checks are pure functions over the facts that
:func:`runner.pipeline.machine_facts.gather` reads (functional core, imperative shell):

GPU (NVML), per device
    ``gpu_processes`` other processes or load on the GPU · ``gpu_mig`` MIG mode ·
    ``gpu_persistence`` persistence mode · ``gpu_ecc`` ECC state and uncorrected errors ·
    ``gpu_clocks`` application/locked clocks against GPU Boost · ``gpu_clock_policy`` whether
    perfgate may lock the clocks for a compare or watches every round instead ·
    ``gpu_throttle`` clock-event reasons now · ``gpu_temperature`` temperature at idle · ``gpu_software`` driver, CUDA and
    torch compatibility
CPU and host
    ``cpu_governor`` · ``cpu_turbo`` · ``cpu_smt`` · ``transparent_hugepages`` ·
    ``load_average`` · ``disk_space`` · ``sandbox`` whether the GitHub Action's sandbox
    (bubblewrap) can run the pull request's code here

Each finding has a ``status``: ``fail`` (timings taken now will be wrong or noisy: fix first),
``warn`` (adds noise or drift; the paired design absorbs some of it), ``ok``, or ``skip`` (the
machine does not expose it). ``compare`` and ``run`` record the findings in ``results.json``
``environment.doctor`` and the report warns when a check failed.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Iterable

from .clocks import UNRESTRICT_FIX, plan
from .telemetry import THROTTLE_REASONS

STATUSES = ("fail", "warn", "ok", "skip")

#: GPU utilisation (percent) above which a GPU counts as busy even when NVML lists no process
#: (another container's processes can be invisible).
BUSY_UTILIZATION_PCT = 5
#: An idle GPU warmer than this (°C) starts a run hot: it reaches its slowdown point sooner.
IDLE_TEMPERATURE_C = 60
#: Within this many °C of the slowdown threshold at idle, throttling during the run is likely.
SLOWDOWN_MARGIN_C = 10
#: Free disk space (bytes) under which a compare may fail (worktrees, venvs, traces) or warns.
DISK_FAIL_BYTES, DISK_WARN_BYTES = 2 * 2**30, 10 * 2**30
#: Load per CPU (1-minute average) at or above which other work takes the workers' CPUs.
LOAD_FAIL_PER_CPU = 0.5


@dataclass(frozen=True)
class Finding:
    """One check's verdict. ``check``: stable id (module docstring); ``subject``: what was looked
    at (``GPU 0 (NVIDIA H200)``, ``CPU``, a path); ``summary``: one sentence with the numbers;
    ``fix``: what to do, None when nothing is needed."""

    check: str
    subject: str
    status: str
    summary: str
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


# -- GPU checks (pure) ---------------------------------------------------------------------------

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
    """Say what a compare does with this GPU's clocks (:func:`runner.pipeline.clocks.plan`): locks
    them when asked (``lock_clocks = true``) and allowed, leaves a runner's own setting alone, else
    watches every round; warn when the clocks float and this runner may not lock them."""
    subject = _gpu_subject(gpu)
    asked = plan(True, 0, gpu)
    if asked.policy == "held":
        return Finding("gpu_clock_policy", subject, "ok",
                       "a clock setting of this runner holds the clocks: perfgate leaves it and still leaves out "
                       "rounds the GPU throttled")
    if asked.policy == "lock":
        how = "as root" if asked.method == "locked_clocks" else "application clocks are unrestricted"
        return Finding("gpu_clock_policy", subject, "ok",
                       f"perfgate may lock the clocks here ({how}): with lock_clocks = true a compare locks SM "
                       f"{asked.sm_mhz} MHz" + (f", memory {asked.memory_mhz} MHz" if asked.memory_mhz else "")
                       + " for its timing and restores them; without it, it leaves out rounds the GPU throttled or "
                         "whose clock moved")
    return Finding("gpu_clock_policy", subject, "warn",
                   "perfgate may not lock the clocks here (not root, application clocks restricted): a compare "
                   "leaves out the rounds the GPU throttled or whose SM clock moved more than 2 %, as NVML reports them",
                   UNRESTRICT_FIX + "; or lock them for every job in the runner's set-up")


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


# -- CPU and host checks (pure) ------------------------------------------------------------------

def check_cpu_governor(host: dict) -> Finding:
    """Warn unless the cpufreq governor is ``performance`` (as pyperf's ``system tune`` sets it)."""
    governor = host.get("cpu_governor")
    if governor is None:
        return Finding("cpu_governor", "CPU", "skip", "no cpufreq governor is exposed (a VM or container)")
    if governor != "performance":
        return Finding("cpu_governor", "CPU", "warn",
                       f"the frequency governor is {governor!r}: the CPU's clock follows load, so the host side "
                       f"of each call (launches, Python) varies",
                       "sudo cpupower frequency-set --governor performance (or pyperf system tune)")
    return Finding("cpu_governor", "CPU", "ok", "the frequency governor is 'performance'")


def _flag(check: str, value: bool | None, *, missing: str, on: str, off: str, fix: str) -> Finding:
    """A host setting that should be off: skip when not exposed, warn when on, else ok."""
    if value is None:
        return Finding(check, "CPU", "skip", missing)
    return Finding(check, "CPU", "warn", on, fix) if value else Finding(check, "CPU", "ok", off)


def check_cpu_turbo(host: dict) -> Finding:
    """Warn when turbo/boost is on (the clock depends on temperature and on the other cores)."""
    return _flag("cpu_turbo", host.get("cpu_turbo"), missing="turbo/boost is not exposed (a VM or container)",
                 on="turbo/boost is on: the CPU clock depends on temperature and on how many cores are busy",
                 off="turbo/boost is off",
                 fix="echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo (intel_pstate) or "
                     "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost (acpi-cpufreq, amd-pstate)")


def check_cpu_smt(host: dict) -> Finding:
    """Warn when SMT (hyper-threading) is active: a sibling thread's work slows the worker's core."""
    return _flag("cpu_smt", host.get("smt_active"), missing="SMT state is not exposed",
                 on="SMT (hyper-threading) is on: whatever runs on a sibling thread shares the core of a worker",
                 off="SMT is off",
                 fix="echo off | sudo tee /sys/devices/system/cpu/smt/control, or give the workers CPUs whose "
                     "siblings stay idle (PERFGATE_CPUS)")


def check_transparent_hugepages(host: dict) -> Finding:
    """Warn on THP ``always`` (khugepaged and direct compaction stall allocations at random)."""
    enabled, defrag = host.get("transparent_hugepages"), host.get("transparent_hugepages_defrag")
    if enabled is None:
        return Finding("transparent_hugepages", "kernel", "skip", "transparent huge pages are not exposed")
    if enabled == "always" or defrag == "always":
        return Finding("transparent_hugepages", "kernel", "warn",
                       f"transparent huge pages: enabled={enabled}, defrag={defrag}: page compaction can stall any "
                       f"allocation, at random",
                       "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled "
                       "/sys/kernel/mm/transparent_hugepage/defrag")
    return Finding("transparent_hugepages", "kernel", "ok", f"transparent huge pages: enabled={enabled}, defrag={defrag}")


def check_load(load: list[float] | None, cpus: int) -> Finding:
    """Fail when other work keeps half the CPUs busy; warn from one busy CPU on."""
    if not load:
        return Finding("load_average", "host", "skip", "no load average on this platform")
    one = load[0]
    line = f"load average {one:.2f} (1 min) on {cpus} CPU(s)"
    fix = "wait for the other work to finish, or run the benchmarks on a runner that does nothing else"
    if one >= LOAD_FAIL_PER_CPU * cpus:
        return Finding("load_average", "host", "fail", line + ": other work competes with the workers", fix)
    if one >= 1:
        return Finding("load_average", "host", "warn", line + ": something else is running", fix)
    return Finding("load_average", "host", "ok", line)


def check_disk(disk: dict) -> Finding:
    """Fail under 2 GiB free (worktrees, per-revision venvs, traces), warn under 10 GiB."""
    free = disk["free_bytes"]
    line = f"{free / 2**30:.1f} GiB free of {disk['total_bytes'] / 2**30:.0f} GiB"
    fix = "free space there (old .perfgate/ outputs, pip and torch caches) or point TMPDIR/--out elsewhere"
    if free < DISK_FAIL_BYTES:
        return Finding("disk_space", disk["path"], "fail", line + ": a compare may run out of space", fix)
    if free < DISK_WARN_BYTES:
        return Finding("disk_space", disk["path"], "warn", line, fix)
    return Finding("disk_space", disk["path"], "ok", line)


def check_sandbox(sandbox: dict | None) -> Finding:
    """Can the Action confine the pull request's code here (bubblewrap with user namespaces)? It
    refuses to run the code otherwise, so inside GitHub Actions that fails the check; elsewhere (a
    developer's machine, where ``perfgate compare`` needs no sandbox) the answer is a skip that
    says what a runner would need."""
    if not sandbox:
        return Finding("sandbox", "host", "skip", "not examined")
    if sandbox.get("available"):
        return Finding("sandbox", "host", "ok", "bubblewrap can confine the pull request's code (the Action's sandbox)")
    fix = ("install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces "
           "(README, 'The runner needs bubblewrap'), or set the action's sandbox: none on an ephemeral runner")
    line = f"the Action's sandbox cannot run here: {sandbox.get('reason')}"
    if sandbox.get("in_actions"):
        return Finding("sandbox", "host", "fail", line + "; the Action will not run pull request code", fix)
    return Finding("sandbox", "host", "skip", line + " (needed on a GPU runner, not for a local compare)", fix)


def run_checks(facts: dict) -> list[Finding]:
    """Every check over ``facts`` (the shape of :func:`runner.pipeline.machine_facts.gather`), GPUs first."""
    findings: list[Finding] = []
    nvml, gpus = facts.get("nvml") or {}, facts.get("gpus") or []
    if not nvml.get("available"):
        findings.append(Finding("nvml", "GPU", "skip", f"GPU checks skipped: {nvml.get('reason') or 'NVML not read'}"))
    elif not gpus:
        findings.append(Finding("nvml", "GPU", "skip", "NVML found no NVIDIA GPU"))
    else:
        for gpu in gpus:
            findings += [check(gpu) for check in (check_gpu_processes, check_gpu_mig, check_gpu_persistence,
                                                  check_gpu_ecc, check_gpu_clocks, check_gpu_clock_policy,
                                                  check_gpu_throttle, check_gpu_temperature)]
        findings.append(check_gpu_software(nvml, facts.get("torch"), gpus))
    host = facts.get("host") or {}
    findings += [check_cpu_governor(host), check_cpu_turbo(host), check_cpu_smt(host), check_transparent_hugepages(host),
                 check_load(facts.get("load_average"), facts.get("cpus") or 1)]
    findings += [check_disk(d) for d in facts.get("disks") or []]
    if "sandbox" in facts:
        findings.append(check_sandbox(facts["sandbox"]))
    return findings


def summarize(findings: Iterable[Finding]) -> dict:
    """``environment.doctor`` of results.json: ``{checks: [finding...], failed: [ids], warned: [ids]}``
    with ids ``check`` or ``check:subject`` when a check ran on several subjects."""
    findings = list(findings)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.check] = counts.get(f.check, 0) + 1

    def ident(f: Finding) -> str:
        return f.check if counts[f.check] == 1 else f"{f.check}:{f.subject}"

    return {"checks": [f.to_dict() for f in findings],
            "failed": [ident(f) for f in findings if f.status == "fail"],
            "warned": [ident(f) for f in findings if f.status == "warn"]}


# -- shell -------------------------------------------------------------------------------------

def examine(paths: Iterable[str | os.PathLike] = (".",), *, nvml=None) -> dict:
    """Gather this machine's facts now and check them: ``environment.doctor`` (:func:`summarize`)."""
    from .machine_facts import gather

    return summarize(run_checks(gather(paths, nvml=nvml)))
