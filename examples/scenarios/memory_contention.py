"""memory_contention: memory-bound kernels now overlap other memory-bound work.

Both sides run the same memory-bound main work (``MAIN_PASSES`` ``torch.mul`` passes over
256 MiB fp32 tensors) on the current stream while a side stream does work of the same length.
In base that side work uses no memory: ``torch.cuda._sleep`` (a one-thread spin kernel)
calibrated at set-up to last as long as head's side work does alone. In head it is
``MAIN_PASSES`` ``torch.add`` passes over other 256 MiB tensors ("cache instead of recompute"),
which compete with the main kernels for memory bandwidth: the main kernels, unchanged, take
longer, and so does the call.

Why head is slower on any GPU, by the arithmetic of GPU review 2026-12-06 (#4), which found the
first version 2.5x *faster* on an H100 (its base ran two FP32 SGEMMs 4096^3 with TF32 off:
2.75e11 FLOP, 4.1-5.5 ms at 50-67 TFLOPS, against 1 ms of memory passes):

- main work: a ``mul`` pass reads 256 MiB and writes 256 MiB, 0.537 GB; six passes 3.22 GB.
  At an achieved ~3.0 TB/s of an H100 SXM's 3.35 TB/s, M = 1.07 ms; on an H200 (4.8 TB/s,
  ~4.3 achieved), M = 0.75 ms.
- head's side work: six ``add`` passes, the same 3.22 GB, S = M alone.
- base: the spin kernel lasts S and moves no bytes (one thread on one SM of 132), so the two
  streams overlap without sharing bandwidth: base = max(M, S) = M.
- head: both streams' 6.44 GB go through the same memory: head >= 6.44 GB / bandwidth = 2 M
  (2.15 ms on an H100, 1.5 ms on an H200).
- head / base = (M + S) / max(M, S) = 2 by construction, whatever the GPU's bandwidth; the
  scenario's test needs > 1.02. The calibration measures S on the GPU it runs on, so a GPU
  whose FP32 or tensor throughput differs from the H100's changes nothing (the first version's
  flaw: its base's length was a GEMM's, its head's a memory pass's).
"""

EXPECTED_HINT = "memory_contention"
N = 64 * 2**20          # elements: 256 MiB of fp32 per tensor
MAIN_PASSES = 6


#: The share of the datasheet bandwidth a streaming pass achieves (the arithmetic above).
ACHIEVED_BANDWIDTH = 0.9


def estimate_ms(peaks: dict) -> dict[str, float]:
    """Each side's milliseconds by the arithmetic above, on a GPU of ``peaks`` (a row of
    ``runner.profile.roofline.GPU_PEAKS``): base the longer of its two streams (the spin kernel
    moves no bytes), head both streams' bytes through the one memory."""
    per_s = peaks["bandwidth_gbs"] * 1e9 * ACHIEVED_BANDWIDTH
    main = side = MAIN_PASSES * 2 * N * 4  # each pass reads one fp32 tensor and writes one
    return {"base": max(main, side) / per_s * 1e3, "head": (main + side) / per_s * 1e3}


def available() -> bool:
    import torch

    return torch.cuda.is_available()


def _make(device, side_work):
    import torch

    a = torch.randn(N, device=device)
    b = torch.empty_like(a)
    side = torch.cuda.Stream(device=device)
    work = side_work(device)

    def run():
        main = torch.cuda.current_stream(device)
        side.wait_stream(main)
        with torch.cuda.stream(side):
            work()
        for _ in range(MAIN_PASSES):
            torch.mul(a, 2.0, out=b)
        main.wait_stream(side)

    return run


def spin_cycles(target_ms: float, ms_per_million: float) -> int:
    """The cycles ``torch.cuda._sleep`` takes to last ``target_ms``, given that a million take
    ``ms_per_million`` (at least one)."""
    return max(1, round(1e6 * target_ms / ms_per_million))


def _spin(device):
    """Base's side work: a spin kernel as long as head's side work alone, measured here."""
    import torch

    from .run import time_ms

    target = time_ms(_stream(device), repeats=5)
    cycles = spin_cycles(target, time_ms(lambda: torch.cuda._sleep(1_000_000), repeats=5))

    def work():
        torch.cuda._sleep(cycles)

    return work


def _stream(device):
    import torch

    c = torch.randn(N, device=device)
    d = torch.empty_like(c)

    def work():
        for _ in range(MAIN_PASSES):
            torch.add(c, 1.0, out=d)

    return work


def base(device="cuda"):
    return _make(device, _spin)


def head(device="cuda"):
    return _make(device, _stream)
