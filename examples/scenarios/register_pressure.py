"""register_pressure: a bigger matmul tile whose accumulator no longer fits in registers.

Both sides run the same Triton kernel, :func:`matmul_kernel` (C = A @ B, fp16 in, fp32
accumulator), over ``SIZE``^3; only the launch differs (:data:`CONFIGS`). Base takes 128x128
tiles with 8 warps; head 256x256 tiles with 4 warps ("fewer, bigger programs"): its accumulator
is 256 * 256 / 128 threads = 512 fp32 values a thread, twice the 255 registers a thread can
have, so ptxas spills, and occupancy falls. The trace shows the same kernel, matched by name,
with more registers, less occupancy and more time (``_more_registers``); the static pass shows
the spill (a 256x256x64 fp16 tile: ``tests/kernels/test_static_pass.py``).

Why head is slower on an H100 or H200, by the arithmetic of GPU review 2026-12-06 (#4), which
found the first version (elementwise kernels, 8192 values a one-warp program) most likely
*faster*: it moved half the bytes and its spills stayed in L1.

- Work, either side: 2 * 4096^3 = 1.37e11 FLOP, 0.14 ms at the 989 TFLOPS dense fp16 peak
  (the same on H100 SXM and H200). The operand tiles come from the 50 MB L2: a 128x128x64 step
  does 2.1 MFLOP on 32 KB of tiles (64 FLOP/B), a 256x256x64 step 8.4 MFLOP on 64 KB (128).
- Base: 32 x 32 = 1024 programs, 64 fp32 accumulator values a thread, no spill; 3 stages of
  (128x64 + 64x128) fp16 = 96 KiB of shared memory. L2 traffic: 1.37e11 / 64 = 2.1 GB.
- Head: 16 x 16 = 256 programs, at least 512 - 255 = 257 accumulator values a thread in local
  memory, each loaded and stored at every k-step of 64: 2 * 257 * 4 B * 128 threads = 263 KB a
  program a step, 256 * 64 = 16,384 program-steps: 4.3 GB of local-memory traffic a call. Its
  3 stages of (256x64 + 64x256) fp16 = 192 KiB of shared memory leave at most 64 KB of the
  SM's 256 KB L1 for a program's 131 KB of spill, so at least half of it goes to the L2
  (132 resident programs' 17 MB of spill fit there, not in DRAM): >= 2.2 GB, plus 1.07 GB of
  operand tiles = 3.3 GB of L2 traffic, 1.55x base's.
- Whatever bounds base, head is slower: where base is bound by its L2 traffic, head moves
  1.55x as many bytes through the same L2; where base is bound by its tensor work, head does
  the same tensor work and adds the 2.2 GB of spill traffic in series with it (one program of
  one warpgroup an SM has nothing to issue while its accumulator reloads: wgmma needs it in
  registers), 0.4 ms at ~5.5 TB/s of L2 bandwidth, beside base's >= 0.14 ms. Either way head /
  base >= 1.5 (the scenario's test needs > 1.02); for the two to meet, head's spills would all
  have to hit L1 and overlap its tensor work.

Compiled for sm_90 (Triton 3.9, ptxas, no GPU; ``tests/trace/test_scenarios_gpu.py``): base
115 registers a thread, no spill, 97 KiB of shared memory, 2 programs (16 warps) an SM; head
255 registers and a 2,520-byte stack a thread (630 values, more than the 257 assumed above; 907
local loads and 1,290 local stores in its SASS), 193 KiB, 1 program (4 warps) an SM.
"""

EXPECTED_HINT = "register_pressure"
SIZE = 4096
#: Each side's launch: the tile (BM x BN, BK deep), warps and pipeline stages.
CONFIGS = {"base": {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8, "num_stages": 3},
           "head": {"BM": 256, "BN": 256, "BK": 64, "num_warps": 4, "num_stages": 3}}

try:
    import triton
    import triton.language as tl
except ImportError:  # the scenarios' analysis runs without Triton; the kernel needs it
    triton = None

if triton is not None:
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        """C[M, N] = A[M, K] @ B[K, N], row-major, fp16 in and out, fp32 accumulator; M, N and
        K multiples of the tile."""
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * K + rk[None, :]
        b = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(a), tl.load(b))
            a += BK
            b += BK * N
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


#: What the arithmetic above assumes of an H100/H200 SM and its L2 (not in the datasheets'
#: peaks): registers a thread may have, L1 + shared memory per SM, and the L2's bandwidth.
MAX_REGISTERS, L1_BYTES, L2_BYTES_PER_S = 255, 256 * 1024, 5.5e12


def estimate_ms(peaks: dict) -> dict[str, float]:
    """Each side's milliseconds by the arithmetic above, on a GPU of ``peaks`` (a row of
    ``runner.profile.roofline.GPU_PEAKS``): the tensor time at the fp16 peak or the operand
    tiles' L2 traffic, whichever is longer, plus the spills' L2 traffic (the part L1 cannot
    hold) in series."""
    tensor_s = 2 * SIZE**3 / (peaks["tflops"]["fp16"] * 1e12)
    out = {}
    for side, c in CONFIGS.items():
        threads = c["num_warps"] * 32
        steps = (SIZE // c["BM"]) * (SIZE // c["BN"]) * (SIZE // c["BK"])
        tile_bytes = (c["BM"] * c["BK"] + c["BK"] * c["BN"]) * 2
        spilled = max(0, c["BM"] * c["BN"] // threads - MAX_REGISTERS)
        footprint = spilled * 4 * threads
        free_l1 = max(0, L1_BYTES - c["num_stages"] * tile_bytes)
        in_l1 = min(1.0, free_l1 / footprint) if spilled else 1.0
        spill_bytes = steps * 2 * footprint * (1.0 - in_l1)
        seconds = max(tensor_s, steps * tile_bytes / L2_BYTES_PER_S) + spill_bytes / L2_BYTES_PER_S
        out[side] = seconds * 1e3
    return out


def available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return triton is not None and torch.cuda.is_available()


def _run(device, side: str):
    import torch

    cfg = dict(CONFIGS[side])
    a = torch.randn(SIZE, SIZE, device=device, dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device=device, dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device=device, dtype=torch.float16)
    grid = (SIZE // cfg["BM"], SIZE // cfg["BN"])

    def run():
        matmul_kernel[grid](a, b, c, SIZE, SIZE, SIZE, **cfg)

    return run


def base(device="cuda"):
    return _run(device, "base")


def head(device="cuda"):
    return _run(device, "head")
