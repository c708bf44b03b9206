"""``perfgate doctor``: is this runner fit to measure? Checks with a fix for each.

pyperf's ``system show`` is the model (it lists what makes a CPU benchmark unstable and how to
tune it); this adds the GPU's side. The checks are pure functions over the facts that
:func:`runner.pipeline.machine.machine_facts.gather` reads (functional core, imperative shell):

GPU (NVML), per device
    ``gpu_processes`` other processes or load on the GPU · ``gpu_mig`` MIG mode ·
    ``gpu_persistence`` persistence mode · ``gpu_ecc`` ECC state and uncorrected errors ·
    ``gpu_clocks`` application/locked clocks against GPU Boost · ``gpu_clock_policy`` whether
    perfgate may lock the clocks for a compare or watches every round instead ·
    ``gpu_throttle`` clock-event reasons now · ``gpu_temperature`` temperature at idle · ``gpu_software`` driver, CUDA and
    torch compatibility
CPU and host
    ``cpu_governor`` · ``cpu_turbo`` · ``cpu_smt`` · ``transparent_hugepages`` ·
    ``load_average`` · ``disk_space`` · ``aslr`` whether the workers can run with address-space
    layout randomisation off · ``sandbox`` whether the GitHub Action's sandbox
    (bubblewrap) can run the pull request's code here

Each finding has a ``status``: ``fail`` (timings taken now will be wrong or noisy: fix first),
``warn`` (adds noise or drift; the paired design absorbs some of it), ``ok``, or ``skip`` (the
machine does not expose it). ``compare`` and ``run`` record the findings in ``results.json``
``environment.doctor`` and the report warns when a check failed.
"""

from __future__ import annotations

from ...environment import LAYOUT_EFFECT
from .finding import Finding
from .gpu_checks import (check_gpu_clock_policy, check_gpu_clocks, check_gpu_compute_mode,
                         check_gpu_ecc, check_gpu_mig, check_gpu_persistence, check_gpu_processes,
                         check_gpu_software, check_gpu_temperature, check_gpu_throttle)

#: Free disk space (bytes) under which a compare may fail (worktrees, venvs, traces) or warns.
DISK_FAIL_BYTES, DISK_WARN_BYTES = 2 * 2**30, 10 * 2**30
#: Load per CPU (1-minute average) at or above which other work takes the workers' CPUs.
LOAD_FAIL_PER_CPU = 0.5


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
        how = sorted((sandbox.get("limits") or {}).items())
        limits = "; ".join(f"{what}: {mechanism}" for what, mechanism in how)
        return Finding("sandbox", "host", "ok", "bubblewrap can confine the pull request's code "
                       "(the Action's sandbox)" + (f"; its limits by {limits}" if limits else ""))
    fix = ("install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces "
           "(README, 'The runner needs bubblewrap'); in a Kubernetes pod, give it the seccomp "
           "profile and unmasked /proc of deploy/kubernetes/runners/values.yaml")
    line = f"the Action's sandbox cannot run here: {sandbox.get('reason')}"
    if sandbox.get("in_actions"):
        return Finding("sandbox", "host", "fail", line + "; the Action will not run pull request code", fix)
    return Finding("sandbox", "host", "skip", line + " (needed on a GPU runner, not for a local compare)", fix)


#: What to do, by why the layout stays random (``cause`` of
#: :func:`runner.pipeline.machine.machine_facts.layout_facts`).
ASLR_FIXES = {
    "PERFGATE_ASLR": "unset PERFGATE_ASLR",
    "platform": "measure on a Linux runner, where perfgate turns it off",
    "setarch_missing": "install util-linux (it provides setarch)",
    "setarch_refused": ("let the container call personality(PER_LINUX|ADDR_NO_RANDOMIZE): a seccomp profile that "
                        "allows it (Docker's default with the personality value 0x40000 added), or docker run "
                        "--security-opt seccomp=unconfined"),
}


def check_aslr(layout: dict) -> Finding:
    """Warn when the workers will run with a random address-space layout (``layout["randomised"]``
    says why; :func:`runner.pipeline.machine.machine_facts.layout_facts`). Each side's fork server
    then has its own layout, shared by every process pair forked from it, so pairs cannot reveal it:
    two workers running identical code differed by up to ±9 % per call, alike for every benchmark
    of the run, on a 2-CPU VM (:func:`runner.pipeline.machine.layouts.layout_pinned`)."""
    reason = layout.get("randomised")
    if reason is None:
        return Finding("aslr", "host", "ok", "the workers run with address-space layout randomisation off (setarch -R)")
    return Finding("aslr", "host", "warn", f"the workers will run with a random address-space layout: {reason}; "
                   f"{LAYOUT_EFFECT}", ASLR_FIXES.get(layout.get("cause")))


def run_checks(facts: dict) -> list[Finding]:
    """Every check over ``facts`` (the shape of
    :func:`runner.pipeline.machine.machine_facts.gather`), GPUs first."""
    findings: list[Finding] = []
    nvml, gpus = facts.get("nvml") or {}, facts.get("gpus") or []
    if not nvml.get("available"):
        findings.append(Finding("nvml", "GPU", "skip", f"GPU checks skipped: {nvml.get('reason') or 'NVML not read'}"))
    elif not gpus:
        findings.append(Finding("nvml", "GPU", "skip", "NVML found no NVIDIA GPU"))
    else:
        for gpu in gpus:
            findings += [check(gpu) for check in (check_gpu_processes, check_gpu_mig, check_gpu_persistence,
                                                  check_gpu_compute_mode, check_gpu_ecc,
                                                  check_gpu_clocks, check_gpu_clock_policy,
                                                  check_gpu_throttle, check_gpu_temperature)]
        findings.append(check_gpu_software(nvml, facts.get("torch"), gpus))
    host = facts.get("host") or {}
    findings += [check_cpu_governor(host), check_cpu_turbo(host), check_cpu_smt(host), check_transparent_hugepages(host),
                 check_load(facts.get("load_average"), facts.get("cpus") or 1)]
    findings += [check_disk(d) for d in facts.get("disks") or []]
    if "layout" in facts:
        findings.append(check_aslr(facts["layout"]))
    if "sandbox" in facts:
        findings.append(check_sandbox(facts["sandbox"]))
    return findings
