"""CUDA paths of the sampling and the pipeline (run on a GPU machine: ``pytest -m gpu``)."""

from __future__ import annotations

import json

import pytest

from runner.cli.main import main
from testkit.gitrepo import make_repo

pytestmark = pytest.mark.gpu


def test_cuda_timer_events_cold_cache_and_peak_memory():
    import torch

    from runner.worker.sampling import Timer, calibrate

    x = torch.randn(4096, 4096, device="cuda")
    fn = lambda: x @ x  # noqa: E731
    warm = Timer("cuda")
    number, per_call = calibrate(warm, fn, 0.02)
    assert number >= 1 and per_call > 0
    warm.reset_peak_memory()
    hot = warm.time(fn, number)
    assert warm.peak_memory() >= 4096 * 4096 * 4  # the output of one matmul at least
    cold = Timer("cuda", cold_cache=True).time(fn, number)
    assert hot > 0 and cold > 0
    # a 64 MiB matmul operand does not fit in L2: flushing must not make it much faster
    assert cold > 0.5 * hot


def test_compare_on_cuda_finds_a_2x_slowdown(tmp_path):
    base = {"benchmarks/bench_gpu.py": """
        import torch

        def bench_mm(device, n=2048):
            x = torch.randn(n, n, device=device)
            return lambda: x @ x
    """, "perfgate.toml": 'device = "cuda"\nmax_time = 60\n'}
    head = {"benchmarks/bench_gpu.py": """
        import torch

        def bench_mm(device, n=2048):
            x = torch.randn(n, n, device=device)
            return lambda: (x @ x, x @ x)
    """}
    repo = make_repo(tmp_path / "repo", base, head)
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    mm = doc["benchmarks"][0]
    assert doc["environment"]["device"] == "cuda"
    assert mm["change"]["verdict"] == "regression" and 1.7 <= mm["change"]["ratio"] <= 2.3
    assert mm["head"]["peak_memory_bytes"] > 0
    assert any(h["kind"] in ("new_kernels", "launch_overhead", "kernel_time") for h in mm["hints"])


def test_work_on_a_side_stream_is_inside_the_timed_interval():
    """The memory-contention scenario puts work on two streams: a timer whose end event sits on the
    current stream alone would stop before the long side-stream kernel ends."""
    import torch

    from runner.worker.sampling import Timer

    side = torch.cuda.Stream()
    big = torch.randn(8192, 8192, device="cuda")
    small = torch.randn(16, device="cuda")
    torch.cuda.synchronize()

    def side_only():
        with torch.cuda.stream(side):
            big @ big

    def two_streams():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            big @ big          # long, on the side stream
        small.add_(1)          # short, on the current stream

    timer = Timer("cuda")
    timer.time(two_streams, 2)  # warm-up (cuBLAS handle, workspace)
    alone = timer.time(side_only, 5)
    both = timer.time(two_streams, 5)
    assert both >= 0.8 * alone > 0


def test_cold_cache_times_a_side_stream_the_call_joins_back():
    """With cold_cache the calls are not waited for one by one (as Triton's do_bench): work on a
    side stream counts when the call joins it back to the current stream before returning."""
    import torch

    from runner.worker.sampling import Timer

    side = torch.cuda.Stream()
    big = torch.randn(8192, 8192, device="cuda")

    def joined():
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            big @ big
        main.wait_stream(side)

    def alone():
        big @ big

    timer = Timer("cuda", cold_cache=True)
    timer.time(joined, 2)  # warm-up
    assert timer.time(joined, 5) >= 0.8 * timer.time(alone, 5) > 0


def test_nvml_telemetry_and_the_clock_plan_on_this_gpu():
    """The real pynvml: samples during GPU work carry clocks and the violation counters' fields,
    and the clock plan names a policy (nothing is locked here: lock_clocks off)."""
    import time

    import torch

    from runner.pipeline.machine.clocks import ClockControl
    from runner.pipeline.machine.telemetry import TelemetrySampler

    sampler = TelemetrySampler(interval_s=0.02).start()
    sampler.set_side("base")
    a = torch.randn(4096, 4096, device="cuda")
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        a @ a
        torch.cuda.synchronize()
    sampler.stop()
    summary = sampler.summary()
    assert summary["available"], summary
    assert summary["sides"]["base"]["sm_clock_mhz"]["median"] > 0
    assert all("power_violation_ns" in s for s in sampler.samples)
    control = ClockControl(False)
    record = control.start()
    control.restore()
    assert record["policy"] in ("held", "monitor") and record["reason"]


def test_each_sides_power_on_this_gpu_comes_from_its_own_windows():
    """GPU review #10 on the real NVML: sides alternating every 30 ms, base idle and head running
    bf16 GEMMs; NVML's 1 s power average mixes them, the energy counter's differences do not."""
    import time

    import torch

    from runner.pipeline.machine.telemetry import TelemetrySampler

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    sampler = TelemetrySampler(interval_s=0.1).start()
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        sampler.set_side("base")
        time.sleep(0.03)
        sampler.set_side("head")
        stop = time.monotonic() + 0.03
        while time.monotonic() < stop:
            a @ a
            torch.cuda.synchronize()
    sampler.stop()
    sides = sampler.summary()["sides"]
    print({side: (v.get("mean_power_w"), v.get("energy_s")) for side, v in sides.items()})
    if sides["base"].get("mean_power_w") is None:
        pytest.skip("this GPU or driver offers no energy counter (before Volta)")
    assert sides["head"]["mean_power_w"] > 1.2 * sides["base"]["mean_power_w"] > 0


def test_the_harness_times_a_gpu_bound_kernel_as_the_device_does(tmp_path):
    # the acceptance's overhead step (GPU review #14): warm within 2 % of an unrolled CUDA graph's
    # device time per call, cold within 3 % of do_bench's where Triton is installed
    from evaluation import gpu_acceptance as acc

    step = acc.step_overhead(acc.Context(dry_run=False, out=tmp_path))
    assert step.status == "pass", step.summary


def test_the_read_flush_against_the_zeroing_flush_on_a_small_memory_bound_call():
    """GPU review #15, to decide runner.protocol.L2_FLUSH: a small memory-bound call (a 16 MiB
    copy, inside an H100's 50 MiB L2) timed cold after each flush kind. A zeroing flush leaves up
    to an L2 of dirty lines, written back during the call; the read leaves none, so the call
    should read no slower after it. Prints both (median of 5 samples) for the record."""
    import statistics

    import torch

    from runner.worker.sampling import Timer

    src = torch.empty(16 * 2**20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    fn = lambda: dst.copy_(src)  # noqa: E731
    times = {}
    for kind in ("zero", "read"):
        timer = Timer("cuda", cold_cache=True, flush=kind)
        timer.time(fn, 50)  # warm-up
        times[kind] = statistics.median(timer.time(fn, 200) for _ in range(5))
    print(f"16 MiB copy, cold: after zero_() {times['zero'] * 1e6:.2f} us, "
          f"after sum() {times['read'] * 1e6:.2f} us ({times['read'] / times['zero'] - 1:+.1%})")
    assert times["read"] > 0 and times["zero"] > 0
    assert times["read"] <= times["zero"] * 1.10  # a read flush must not add to the call
