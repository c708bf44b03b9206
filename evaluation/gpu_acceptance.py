"""The first run on a lent GPU, in one command: everything perfgate does on CUDA, checked and measured.

A benchmark and a check, not a unit test: on a CUDA machine (sized for ≤ 8 minutes on one GPU:
the compares' budgets are 100 s and 60 s, the gpu tests' own compare 60 s) it runs,
in this order, and writes ``OUT/acceptance.json`` and ``OUT/acceptance.md``:

1. ``environment`` — torch, CUDA, the device, and ``perfgate doctor``'s findings;
2. ``gpu_tests`` — every ``gpu``-marked test (``pytest -m gpu``): all must pass;
3. ``scenarios`` — the three root-cause scenarios (examples/scenarios) timed and profiled: each
   head must be slower and rank its own root cause first; their traces are kept under
   ``OUT/scenarios/`` (the recorded traces a CPU run analyses until then come from
   examples/scenarios/recorded.py);
4. ``aa`` — ``perfgate compare`` of 6 identical CUDA benchmarks: 0 false verdicts, ≥ 75 %
   unchanged;
5. ``injected`` — ``perfgate compare`` (threshold 0.5 %) of kernels doing 1 % and 5 % more work
   (``add_`` passes over a 64 MiB tensor: 100 on base, 101 and 105 on head): both must be called
   regressions; the seconds to each verdict are reported;
6. ``overhead`` — what the harness adds to a GPU-bound kernel (``torch.cuda._sleep`` of ~50 µs):
   its warm time per call within 2 % of the kernel's device time (an unrolled CUDA graph of 200
   calls, replayed), its cold time within 3 % of ``triton.testing.do_bench``'s where Triton is
   installed, and the fixed cost of a sample (its sync latency); not run in a dry run (a simulated
   device's times are what it was told);
7. ``telemetry`` — the NVML sampler during 2 s of matmuls: samples, clocks, power, reasons,
   violation counters;
8. ``clocks`` — the clock policy (runner.pipeline.machine.clocks) this runner gets; with
   ``--try-lock`` the clocks are locked, read back during a loop of bf16 GEMMs (each reading within
   2 % of the lock) and restored (never without it: the lent machine's settings are not ours to
   change).

Every step runs in a process of its own (``--step NAME``, its record in ``OUT/steps/``), and
this one imports no torch: it holds no CUDA context while the compares run (their doctor would
count it as another process on the GPU), and no step inherits another's state (the scenarios'
profiler, whose CUPTI can stay active after profiling, never shares a process with
``overhead``) (GPU review #24).

``--dry-run`` runs every step but ``overhead`` on a CPU in about a minute, against the fakes the
tests use (a fake NVML, testkit/fake_nvml.py), the scenarios' recorded traces and small CPU
compares, so the script itself is proven in CI.
Its numbers are the fakes', not a GPU's; the timing gates (A/A, injected) are reported, not
enforced, in a dry run (a shared CPU is not what they judge).

Usage::

    python -m evaluation.gpu_acceptance [--out DIR] [--try-lock]   # on the GPU machine
    python -m evaluation.gpu_acceptance --dry-run                  # anywhere (CI)

Installs nothing. Exit status 1 when a step failed (the summary names it), else 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation.harness import compare  # noqa: E402 - run as a module: ``python -m evaluation...``
from testkit.gitrepo import make_repo  # noqa: E402

#: Files with ``gpu``-marked tests (found by their mark, so a new one is run too).
GPU_MARK = "pytest.mark.gpu"


@dataclass
class Step:
    """One step's outcome: ``status`` pass | fail | skip; ``summary`` one line with the figures;
    ``figures`` the numbers; ``seconds`` what the step took."""

    name: str
    status: str
    summary: str
    figures: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: the process the step ran in (never the acceptance's own)
    pid: int | None = None


@dataclass
class Context:
    """What every step knows: the mode, the output folder, the device."""

    dry_run: bool
    out: Path
    try_lock: bool = False
    device: str = "cuda"

    @property
    def mode(self) -> str:
        return "dry run (CPU, fakes)" if self.dry_run else "GPU"


# -- the steps ---------------------------------------------------------------------------------------

def step_environment(ctx: Context) -> Step:
    from runner.pipeline.machine.doctor import run_checks
    from runner.pipeline.machine.finding import summarize
    from runner.pipeline.machine.machine_facts import gather

    nvml = None
    if ctx.dry_run:
        from testkit.fake_nvml import BOOSTING_H100, FakeNVML

        nvml = FakeNVML(gpus=[dict(BOOSTING_H100)])
    facts = gather([ctx.out], nvml=nvml)
    doctor = summarize(run_checks(facts))
    torch_info = {"version": None, "cuda": None, "device": None}
    if not ctx.dry_run:
        import torch

        torch_info = {"version": torch.__version__, "cuda": torch.version.cuda,
                      "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
        if not torch.cuda.is_available():
            return Step("environment", "fail", f"torch {torch.__version__} sees no CUDA device (use --dry-run on a CPU)",
                        {"torch": torch_info})
    gpus = facts.get("gpus") or []
    figures = {"torch": torch_info, "python": platform.python_version(), "nvml": facts.get("nvml"),
               "gpus": [{k: g.get(k) for k in ("index", "name", "sm_clock_mhz", "sm_max_clock_mhz",
                                               "memory_max_clock_mhz", "clock_event_reasons", "temperature_c",
                                               "clock_permission")} for g in gpus],
               "doctor_failed": doctor["failed"], "doctor_warned": doctor["warned"]}
    name = torch_info["device"] or (gpus[0]["name"] if gpus else "no GPU")
    return Step("environment", "pass",
                f"{name}; torch {torch_info['version'] or '-'} (CUDA {torch_info['cuda'] or '-'}); doctor: "
                f"{len(doctor['failed'])} failed {doctor['failed'] or ''}, {len(doctor['warned'])} warned", figures)


def gpu_test_files() -> list[str]:
    """The test files that hold ``gpu``-marked tests."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
                  if GPU_MARK in p.read_text(encoding="utf-8"))


def junit_counts(path: Path) -> dict:
    """``{tests, failures, errors, skipped, passed, failed_names}`` of a JUnit XML report."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    counts["failed_names"] = [f"{c.get('classname')}.{c.get('name')}" for c in root.iter("testcase")
                              if c.find("failure") is not None or c.find("error") is not None]
    return counts


def step_gpu_tests(ctx: Context) -> Step:
    files = gpu_test_files()
    xml = ctx.out / "gpu-tests.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-s",
                           f"--junitxml={xml}", *files], cwd=ROOT, capture_output=True, text=True, timeout=420)
    (ctx.out / "gpu-tests.log").write_text(proc.stdout + proc.stderr)
    if not xml.exists():
        return Step("gpu_tests", "fail", f"pytest wrote no report (exit {proc.returncode}): "
                    f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] }", {"files": files})
    counts = junit_counts(xml)
    bad = counts["failures"] + counts["errors"]
    ok = bad == 0 and counts["tests"] > 0 and (ctx.dry_run or counts["passed"] == counts["tests"])
    line = (f"{counts['passed']} passed, {bad} failed, {counts['skipped']} skipped of {counts['tests']} gpu tests "
            f"in {len(files)} files" + (f": {', '.join(counts['failed_names'])}" if bad else ""))
    if ctx.dry_run and counts["skipped"] == counts["tests"]:
        line += " (no CUDA here: all skip, as they must)"
    return Step("gpu_tests", "pass" if ok else "fail", line, {**counts, "files": files})


def step_scenarios(ctx: Context) -> Step:
    from examples.scenarios import SCENARIOS
    from examples.scenarios.run import recorded_scenario, run_scenario

    rows, wrong = [], []
    for name in SCENARIOS:
        out = ctx.out / "scenarios" / name
        if ctx.dry_run:
            result = recorded_scenario(name, str(out))
        else:
            mod = importlib.import_module(f"examples.scenarios.{name}")
            if not mod.available():
                rows.append({"scenario": name, "skipped": "dependency missing (triton?)"})
                wrong.append(f"{name}: not run (dependency missing)")
                continue
            result = run_scenario(name, str(out))
        first = (result["hints"] or [None])[0]
        rank = result["hints"].index(result["expected"]) + 1 if result["expected"] in result["hints"] else None
        rows.append({"scenario": name, "ratio": result["ratio"], "base_ms": result["base_ms"],
                     "head_ms": result["head_ms"], "first_hint": first, "expected_rank": rank,
                     "hints": result["hints"], "summary": (result["top"] or {}).get("summary"), "traces": str(out)})
        if first != result["expected"] or result["ratio"] <= 1.02:
            wrong.append(f"{name}: first hint {first}, ratio {result['ratio']}")
    ranked = sum(r.get("first_hint") == r["scenario"] for r in rows)
    source = "recorded traces" if ctx.dry_run else "timed and profiled on the GPU"
    return Step("scenarios", "fail" if wrong else "pass",
                f"{ranked}/{len(SCENARIOS)} rank their own root cause first ({source})"
                + (f"; {'; '.join(wrong)}" if wrong else ""), {"rows": rows})


#: The A/A suite: identical code on both sides, kernels of several kinds and sizes.
AA_KINDS = {
    "matmul": "a = torch.randn({n}, {n}, device=device)\n    return lambda: a @ a",
    "add": "a = torch.randn({n} * 64, device=device)\n    return lambda: a.add_(1.0)",
    "softmax": "a = torch.randn({n}, {n}, device=device)\n    return lambda: torch.softmax(a, -1)",
    "layer_norm": "a = torch.randn({n}, {n}, device=device)\n    return lambda: torch.nn.functional.layer_norm(a, a.shape[-1:])",
    "sum": "a = torch.randn({n}, {n}, device=device)\n    return lambda: a.sum(0)",
    "gelu": "a = torch.randn({n}, {n}, device=device)\n    return lambda: torch.nn.functional.gelu(a)",
}


def aa_suite(sizes: list[int]) -> str:
    """A ``bench_*.py`` of every :data:`AA_KINDS` kernel at every size (``len(sizes) * 6`` benchmarks)."""
    out = ["import torch\n"]
    for kind, body in AA_KINDS.items():
        for n in sizes:
            out.append(f"\ndef bench_{kind}_{n}(device):\n    torch.manual_seed(0)\n    {body.format(n=n)}\n")
    return "".join(out)


def injected_suite(n_elements: int, passes: int, extra: dict[str, int]) -> str:
    """``bench_work_<label>``: ``passes`` (+ ``extra[label]`` on head) ``add_`` passes over a tensor."""
    lines = [f"import torch\n\nEXTRA = {extra!r}\n"]
    for label in extra:
        lines.append(f"\ndef bench_work_{label}(device):\n    a = torch.zeros({n_elements}, device=device)\n"
                     f"    count = {passes} + EXTRA.get({label!r}, 0)\n\n    def run():\n"
                     f"        for _ in range(count):\n            a.add_(1.0)\n    return run\n")
    return "".join(lines)


#: The generated suite's one file.
BENCH = "benchmarks/bench_gpu.py"


def compare_on_device(ctx: Context, repo: Path, out: Path, max_time: float, *extra: str) -> dict:
    """``perfgate compare`` (profiling off) on the device, in its own process (its output in
    ``OUT.log``); the results document.

    Raises:
        RuntimeError: the compare failed or wrote no results.
    """
    outcome = compare(repo, out, "--no-profile", "--device", ctx.device, "--max-time",
                      str(max_time), *extra, timeout=max_time + 240)
    (out.parent / f"{out.name}.log").write_text(outcome.stdout + outcome.stderr)
    if outcome.code != 0 or outcome.doc is None:
        raise RuntimeError(outcome.failure())
    return outcome.doc


#: The A/A gate: no false verdict, and at least this share of the identical benchmarks
#: ``unchanged`` — ``inconclusive`` decides nothing, and 12 of 12 inconclusive once passed
#: (GPU review 2026-12-06, #13).
AA_MIN_UNCHANGED = 0.75


def aa_gate(verdicts: list[str], minimum: int) -> tuple[bool, str]:
    """``(passes, why not)`` of the A/A step for the identical benchmarks' ``verdicts``: at least
    ``minimum`` of them, none ``regression``/``improvement``, ≥ :data:`AA_MIN_UNCHANGED`
    ``unchanged``."""
    false = sum(v in ("regression", "improvement") for v in verdicts)
    unchanged = verdicts.count("unchanged") / len(verdicts) if verdicts else 0.0
    if len(verdicts) < minimum:
        return False, f"{len(verdicts)} benchmarks compared, {minimum} needed"
    if false:
        return False, f"{false} false verdict(s)"
    if unchanged < AA_MIN_UNCHANGED:
        return False, f"{unchanged:.0%} unchanged, {AA_MIN_UNCHANGED:.0%} needed"
    return True, ""


def step_aa(ctx: Context) -> Step:
    # 6 benchmarks with 20 s each: every one reaches the pairs an `unchanged` needs (24 in 100 s
    # left ~4 s each, one or two pairs, and nothing could be decided: review #13)
    sizes = [8] if ctx.dry_run else [4096]
    max_time = 8.0 if ctx.dry_run else 120.0
    text = aa_suite(sizes)
    repo = make_repo(ctx.out / "aa-repo", {BENCH: text}, {"README.md": "head\n"})
    doc = compare_on_device(ctx, repo, ctx.out / "aa", max_time)
    verdicts = [b["change"]["verdict"] for b in doc["benchmarks"]]
    false = [b["name"] for b in doc["benchmarks"] if b["change"]["verdict"] in ("regression", "improvement")]
    counts = {v: verdicts.count(v) for v in sorted(set(verdicts))}
    clock_rounds = sum(b["change"].get("clock_rounds") or 0 for b in doc["benchmarks"])
    ok, why = aa_gate(verdicts, len(AA_KINDS) * len(sizes))
    status = "pass" if ok or (ctx.dry_run and len(verdicts) >= 4) else "fail"
    return Step("aa", status, (f"{why}: " if why else "") + f"{len(false)} false verdicts of "
                f"{len(verdicts)} identical benchmarks ({counts}); "
                f"{clock_rounds} rounds left out for the GPU's clocks; {doc['settings']['budget']['spent_s']:.0f} s"
                + (" (dry run: reported, not enforced)" if ctx.dry_run and false else ""),
                {"benchmarks": len(verdicts), "false": false, "verdicts": counts, "clock_rounds": clock_rounds,
                 "telemetry_clocks": (doc["environment"].get("telemetry") or {}).get("clocks")})


def step_injected(ctx: Context) -> Step:
    n, passes = (4096, 20) if ctx.dry_run else (16 * 2**20, 100)
    extra = {"1pct": passes // 100 or 1, "5pct": passes // 20 or 1}
    if ctx.dry_run:
        extra = {"5pct": 1, "50pct": 10}  # the CPU's noise hides 1 %; the dry run proves the path
    base = injected_suite(n, passes, {k: 0 for k in extra})
    repo = make_repo(ctx.out / "injected-repo", {BENCH: base},
                     {BENCH: injected_suite(n, passes, extra), "README.md": "head\n"})
    max_time = 8.0 if ctx.dry_run else 60.0
    doc = compare_on_device(ctx, repo, ctx.out / "injected", max_time, "--threshold", "0.005")
    rows = {}
    broken = [f"{b['name']}: {(b.get('head') or {}).get('error')}" for b in doc["benchmarks"]
              if not b["name"].startswith("bench_work_")]
    if broken:
        raise RuntimeError(f"the generated suite did not load: {broken}")
    for b in doc["benchmarks"]:
        c = b["change"]
        rows[b["name"].removeprefix("bench_work_")] = {
            "verdict": c["verdict"], "ratio": c.get("ratio"), "ci": [c.get("ci_low"), c.get("ci_high")],
            "seconds_to_verdict": c.get("seconds"), "stop_reason": c.get("stop_reason"),
            "process_pairs": c.get("process_pairs"), "true_ratio": round(1 + extra[b["name"].removeprefix("bench_work_")] / passes, 4)}
    missed = [k for k, r in rows.items() if r["verdict"] != "regression"]
    line = "; ".join(f"+{(r['true_ratio'] - 1) * 100:.0f} %: {r['verdict']} "
                     + (f"×{r['ratio']:.4f} " if r["ratio"] else "") + f"in {r['seconds_to_verdict']:.1f} s"
                     for r in rows.values())
    status = "pass" if not missed or ctx.dry_run else "fail"
    return Step("injected", status, line + (f" (dry run: reported, not enforced)" if ctx.dry_run and missed else ""),
                {"rows": rows, "threshold": 0.005})


#: How far the harness's warm time per call may read from the device's own for a GPU-bound
#: kernel, and cold mode from ``triton.testing.do_bench`` (the review's plan: 2 %, 3 %).
OVERHEAD_TOLERANCE, DO_BENCH_TOLERANCE = 0.02, 0.03

#: The GPU-bound kernel the overhead step times: ``torch.cuda._sleep`` of about this many µs (its
#: launch, a few µs of host time, hides behind the previous call's device time).
OVERHEAD_KERNEL_US = 50.0


def overhead_gate(figures: dict) -> tuple[bool, str]:
    """``(passes, why not)`` of the overhead step: the warm time per call of a GPU-bound kernel
    within :data:`OVERHEAD_TOLERANCE` of its device time (``reference_us``, an unrolled CUDA graph
    of it), and, where Triton gave one, the cold time within :data:`DO_BENCH_TOLERANCE` of
    ``do_bench``'s. It measured an empty callable before and could not fail (GPU review #14)."""
    why = []
    for key, ref, tolerance in (("warm_us", "reference_us", OVERHEAD_TOLERANCE),
                                ("cold_us", "do_bench_us", DO_BENCH_TOLERANCE)):
        if figures.get(ref) is None and ref == "do_bench_us":
            continue
        if not figures.get(key) or not figures.get(ref):
            why.append(f"no {key} or {ref}")
        elif abs(figures[key] / figures[ref] - 1) >= tolerance:
            why.append(f"{key} {figures[key]:.2f} µs is ×{figures[key] / figures[ref]:.3f} "
                       f"{ref} {figures[ref]:.2f} µs (within {tolerance:.0%} needed)")
    return not why, "; ".join(why)


def _graph_us_per_call(torch, fn: Callable, calls: int = 200, replays: int = 10) -> float:
    """Device µs per call of ``fn``: a CUDA graph of ``calls`` unrolled calls, its median replay
    over ``calls`` (no host launch inside: the reference ``timer_check.py`` uses)."""
    from examples.scenarios.run import time_ms
    from runner.conventions.replay import cuda_graph

    def unrolled() -> None:
        for _ in range(calls):
            fn()

    # warmed up on a side stream and captured, then replays timed with CUDA events
    return time_ms(cuda_graph(unrolled, torch), repeats=replays) * 1000 / calls


def _overhead_figures(torch, cycles: int) -> dict:
    from runner.worker.sampling import Timer, calibrate

    kernel = lambda: torch.cuda._sleep(cycles)  # noqa: E731

    def per_call_us(cold: bool, repeats: int = 5) -> tuple[float, int]:
        timer = Timer("cuda", cold_cache=cold)
        number, _ = calibrate(timer, kernel, 0.02)
        return statistics.median(timer.time(kernel, number) for _ in range(repeats)) * 1e6, number

    warm, number = per_call_us(False)
    cold, _ = per_call_us(True)
    reference = _graph_us_per_call(torch, kernel)
    try:
        from triton.testing import do_bench

        do_bench_us = float(do_bench(kernel, warmup=25, rep=200, return_mode="median")) * 1000
    except Exception:  # noqa: BLE001 - no Triton here: the cold check is not made, and said so
        do_bench_us = None
    figures = {"kernel_cycles": cycles, "number": number, "warm_us": warm, "cold_us": cold,
               "reference_us": reference, "do_bench_us": do_bench_us,
               # what one warm sample pays beyond its calls' device time (its sync latency)
               "fixed_per_sample_us": (warm - reference) * number}
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}


def step_overhead(ctx: Context) -> Step:
    if ctx.dry_run:  # a simulated device's times are whatever it was told: nothing to check
        return Step("overhead", "skip", "not run: its reference is a GPU's own device time (an "
                    "unrolled CUDA graph), and there is no GPU in a dry run")
    import torch

    figures = _overhead_figures(torch, _cycles_for_us(torch, OVERHEAD_KERNEL_US))
    ok, why = overhead_gate(figures)
    do_bench = (f"; cold {figures['cold_us']:.2f} µs vs do_bench {figures['do_bench_us']:.2f} µs"
                if figures["do_bench_us"] else "; cold vs do_bench not checked (no Triton)")
    line = (f"~{OVERHEAD_KERNEL_US:.0f} µs kernel: warm {figures['warm_us']:.2f} µs per call vs "
            f"{figures['reference_us']:.2f} µs of device time (unrolled CUDA graph, "
            f"×{figures['warm_us'] / figures['reference_us']:.4f}){do_bench}; "
            f"{figures['fixed_per_sample_us']:.1f} µs fixed per sample")
    return Step("overhead", "pass" if ok else "fail", line + (f"; {why}" if why else ""), figures)


def _cycles_for_us(torch, target_us: float) -> int:
    """``torch.cuda._sleep`` cycles that last about ``target_us`` on this GPU (measured)."""
    cycles = 1000
    for _ in range(6):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(200):
            torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        us = start.elapsed_time(end) * 1000 / 200
        cycles = max(1, int(cycles * target_us / max(us, 1e-3)))
    return cycles


def step_telemetry(ctx: Context) -> Step:
    from runner.pipeline.machine.telemetry import TelemetrySampler

    if ctx.dry_run:
        from testkit.fake_nvml import BOOSTING_H100, FakeNVML

        sampler = TelemetrySampler(interval_s=0.01, nvml=FakeNVML(gpus=[dict(BOOSTING_H100, gpu_util=98)])).start()
        sampler.set_side("base")
        time.sleep(0.2)
    else:
        import torch

        sampler = TelemetrySampler(interval_s=0.05).start()
        a = torch.randn(8192, 8192, device="cuda")
        sampler.set_side("base")
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
    sampler.set_side(None)
    sampler.stop()
    summary = sampler.summary()
    samples = sampler.samples
    if not summary.get("available"):
        return Step("telemetry", "fail", f"NVML not available: {summary.get('reason')}", summary)
    side = summary["sides"].get("base") or {}
    counters = {key: (samples[0].get(key), samples[-1].get(key)) for key in ("power_violation_ns", "thermal_violation_ns")}
    figures = {"samples": len(samples), "sm_clock_mhz": side.get("sm_clock_mhz"), "power_w": side.get("power_w"),
               "mean_power_w": side.get("mean_power_w"), "energy_j": side.get("energy_j"),
               "temperature_c": side.get("temperature_c"), "throttle_reasons": side.get("throttle_reasons"),
               "violation_counters": counters, "notes": summary.get("notes")}
    clock = side.get("sm_clock_mhz") or {}
    ok = len(samples) >= 3 and bool(clock)
    return Step("telemetry", "pass" if ok else "fail",
                f"{len(samples)} samples; SM clock {clock.get('median', '–')} MHz (min {clock.get('min', '–')}); "
                f"power max {(side.get('power_w') or {}).get('max', '–')} W, "
                f"{side.get('mean_power_w', '–')} W from energy; "
                f"reasons {side.get('throttle_reasons') or 'none'}; "
                f"violation counters {'read' if any(v[0] is not None for v in counters.values()) else 'not offered'}"
                + (" [fake NVML]" if ctx.dry_run else ""), figures)


def step_clocks(ctx: Context) -> Step:
    from runner.pipeline.machine.clock_plan import plan
    from runner.pipeline.machine.clocks import ClockControl
    from runner.pipeline.machine.machine_facts import nvml_facts

    nvml, euid = None, None
    if ctx.dry_run:
        from testkit.fake_nvml import BOOSTING_H100, FakeNVML

        nvml, euid = FakeNVML(gpus=[dict(BOOSTING_H100)]), 0
    _, gpus = nvml_facts(nvml, euid=euid)
    gpu = gpus[0] if gpus else None
    # the sustained clock perfgate doctor measured and cached (GPU review #8), else the default
    chosen = plan(True, 0, gpu, (gpu or {}).get("sustained_clock_mhz"))
    figures = {"plan_if_asked": chosen.to_dict(), "default_policy": plan(False, 0, gpu).policy}
    if not (ctx.try_lock or ctx.dry_run) or chosen.policy != "lock":
        why = "" if ctx.try_lock or ctx.dry_run else " (not tried: --try-lock)"
        return Step("clocks", "pass" if chosen.policy != "none" else "fail",
                    f"lock_clocks = true would give '{chosen.policy}': {chosen.reason}{why}", figures)
    control = ClockControl(True, nvml=nvml, euid=euid, uuid=(gpu or {}).get("uuid"))
    record = control.start()
    try:
        enqueue, wait = _gemm_load(ctx)
        under_load = clocks_during_load(enqueue, wait, lambda: _sm_clock_now(nvml))
    finally:
        control.restore()
    after = _sm_clock_now(nvml)
    held, why = lock_holds(under_load, record.get("sm_mhz"))
    figures.update(record=control.record, sm_clock_under_load_mhz=under_load,
                   sm_clock_after_mhz=after)
    ok = record["policy"] == "lock" and control.record.get("restored") is True and held
    return Step("clocks", "pass" if ok else "fail",
                f"locked SM {record.get('sm_mhz')} MHz (read back during GEMMs: {under_load}"
                f"{'; ' + why if why else ''}), restored: {control.record.get('restored')} "
                f"(SM clock after: {after} MHz)" + (" [fake NVML]" if ctx.dry_run else ""),
                figures)


#: How far a locked SM clock may read from the lock under load (the review's plan: 2 %).
LOCK_TOLERANCE = 0.02


def lock_holds(readings: list, target) -> tuple[bool, str]:
    """``(held, why not)``: every SM clock read under load within :data:`LOCK_TOLERANCE` of the
    lock ``target`` (MHz); no reading, or one NVML did not give, is not a lock shown to hold."""
    if not readings or not target or any(r is None for r in readings):
        return False, f"no clock read under load ({readings})"
    off = [r for r in readings if abs(r / target - 1) > LOCK_TOLERANCE]
    if off:
        return False, f"{off} MHz off the lock by more than {LOCK_TOLERANCE:.0%}"
    return True, ""


def clocks_during_load(enqueue: Callable[[], None], wait: Callable[[], None],
                       read: Callable[[], object], reads: int = 8, gap_s: float = 0.1) -> list:
    """``reads`` SM clock readings taken while the GPU works: ``enqueue`` queues the load (GEMMs,
    asynchronous), the readings come ``gap_s`` apart while it runs, then ``wait`` for it (a lock
    read at idle passed where the clock under power draw does not hold it: GPU review #24)."""
    enqueue()
    try:
        got = []
        for i in range(reads):
            if i:
                time.sleep(gap_s)
            got.append(read())
        return got
    finally:
        wait()


def _gemm_load(ctx: Context) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(enqueue, wait)``: bf16 GEMMs for about 1.5 s on the GPU, queued without waiting (sized
    by timing a few first); nothing on a dry run."""
    if ctx.dry_run:
        return (lambda: None), (lambda: None)
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ a
    torch.cuda.synchronize()
    count = max(10, int(1.5 / max((time.perf_counter() - t0) / 10, 1e-6)))

    def enqueue() -> None:
        for _ in range(count):
            a @ a

    return enqueue, torch.cuda.synchronize


def _sm_clock_now(nvml=None) -> int | None:
    from runner.pipeline.machine.telemetry import nvml_value

    if nvml is None:
        import pynvml as nvml  # noqa: PLC0415
    nvml.nvmlInit()
    try:
        return nvml_value(nvml.nvmlDeviceGetClockInfo, nvml.nvmlDeviceGetHandleByIndex(0),
                          getattr(nvml, "NVML_CLOCK_SM", 1))
    finally:
        nvml_value(nvml.nvmlShutdown)


STEPS: list[tuple[str, Callable[[Context], Step]]] = [
    ("environment", step_environment), ("gpu_tests", step_gpu_tests), ("scenarios", step_scenarios),
    ("aa", step_aa), ("injected", step_injected), ("overhead", step_overhead), ("telemetry", step_telemetry),
    ("clocks", step_clocks),
]


# -- the report ----------------------------------------------------------------------------------

def render_markdown(doc: dict) -> str:
    """The summary as Markdown: a table of the steps, then what failed."""
    lines = [f"# GPU acceptance ({doc['mode']})", "",
             f"`python -m evaluation.gpu_acceptance{' --dry-run' if doc['dry_run'] else ''}` at {doc['commit']}, "
             f"{doc['seconds']:.0f} s; {doc['passed']} passed, {doc['failed']} failed, {doc['skipped']} skipped.", "",
             "| step | status | what it found | seconds |", "|---|---|---|---:|"]
    for s in doc["steps"]:
        lines.append(f"| {s['name']} | {s['status'].upper()} | {s['summary'].replace('|', '/')} | {s['seconds']:.1f} |")
    failed = [s for s in doc["steps"] if s["status"] == "fail"]
    lines += ["", "What failed: " + ("; ".join(f"{s['name']} ({s['summary']})" for s in failed) if failed
                                     else "nothing."), ""]
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


#: What runs one step in a process of its own (``--step NAME`` and the run's options follow).
STEP_COMMAND = [sys.executable, "-m", "evaluation.gpu_acceptance"]

#: Seconds a step's process may take (the longest, ``aa``, is a 120 s compare plus its start).
STEP_TIMEOUT = 900


def run_step(name: str, run: Callable[[Context], Step], ctx: Context) -> Step:
    """One step in this process: a step that raises is a failed step with its reason."""
    t0 = time.monotonic()
    try:
        step = run(ctx)
    except Exception as exc:  # noqa: BLE001 - a step that breaks is a failed step
        step = Step(name, "fail", f"{type(exc).__name__}: {exc}",
                    {"traceback": traceback.format_exc(limit=6)})
    step.seconds, step.pid = round(time.monotonic() - t0, 2), os.getpid()
    return step


def step_in_own_process(name: str, ctx: Context) -> Step:
    """One step run by :data:`STEP_COMMAND` ``--step NAME`` (its record ``OUT/steps/NAME.json``, its
    output ``NAME.log``); a process that died, hung or wrote no record is a failed step."""
    folder = ctx.out / "steps"
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / f"{name}.json"
    record.unlink(missing_ok=True)
    cmd = [*STEP_COMMAND, "--step", name, "--out", str(ctx.out)]
    cmd += ["--dry-run"] * ctx.dry_run + ["--try-lock"] * ctx.try_lock
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Step(name, "fail", f"its process ran past {STEP_TIMEOUT} s")
    (folder / f"{name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not record.exists():
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        return Step(name, "fail", f"its process exited {proc.returncode}: {' '.join(last)}")
    return Step(**json.loads(record.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="every step on a CPU, against the fakes (CI)")
    parser.add_argument("--out", type=Path, help="output folder (default: a new temporary folder)")
    parser.add_argument("--only", action="append", choices=[name for name, _ in STEPS], help="run only these steps")
    parser.add_argument("--try-lock", action="store_true",
                        help="lock the clocks, read them back and restore them (only on a runner you own)")
    parser.add_argument("--step", choices=[name for name, _ in STEPS],
                        help="run this one step here, its record in OUT/steps/STEP.json "
                             "(what the acceptance runs for each step)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfgate-acceptance-"))
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(dry_run=args.dry_run, out=out, try_lock=args.try_lock, device="cpu" if args.dry_run else "cuda")
    if args.step:
        step = run_step(args.step, dict(STEPS)[args.step], ctx)
        (out / "steps").mkdir(exist_ok=True)
        (out / "steps" / f"{args.step}.json").write_text(json.dumps(asdict(step), default=str))
        return 0
    print(f"perfgate GPU acceptance, {ctx.mode}: writing {out}", flush=True)
    started = time.monotonic()
    steps = []
    for name, run in STEPS:
        if args.only and name not in args.only:
            continue
        t0 = time.monotonic()
        step = step_in_own_process(name, ctx)
        step.seconds = round(time.monotonic() - t0, 2)  # its process's start included
        steps.append(step)
        print(f"{step.status.upper():4} {step.name}: {step.summary} ({step.seconds:.1f} s)", flush=True)
    doc = {"mode": ctx.mode, "dry_run": ctx.dry_run, "commit": _commit(), "seconds": round(time.monotonic() - started, 1),
           "passed": sum(s.status == "pass" for s in steps), "failed": sum(s.status == "fail" for s in steps),
           "skipped": sum(s.status == "skip" for s in steps), "steps": [asdict(s) for s in steps],
           "pid": os.getpid(), "imported_torch": "torch" in sys.modules}
    (out / "acceptance.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    (out / "acceptance.md").write_text(render_markdown(doc))
    failed = [s.name for s in steps if s.status == "fail"]
    print(f"{doc['passed']} passed, {doc['failed']} failed{': ' + ', '.join(failed) if failed else ''}; "
          f"{doc['seconds']:.0f} s; {out / 'acceptance.json'}, {out / 'acceptance.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
