"""Theoretical occupancy of one kernel launch, by the rules of NVIDIA's CUDA Occupancy Calculator
(pure).

Inputs: registers per thread and stack as ``cuobjdump --dump-resource-usage`` reads them, threads
per block (``num_warps`` x 32 for Triton), shared memory per block (static + dynamic, bytes).
Limits, per streaming multiprocessor (SM), for each architecture: CUDA C++ Programming Guide,
"Technical Specifications per Compute Capability" (12.x) and the Occupancy Calculator's
``GPU Data`` sheet (the same table Nsight Compute's occupancy section uses):

=====  ==========  ===========  ============  ====================  ========================
arch   warps / SM  blocks / SM  regs / SM     shared / SM (max)     shared / block (opt-in)
=====  ==========  ===========  ============  ====================  ========================
sm_80  64          32           65536         167936 (164 KB)       166912 (163 KB)
sm_86  48          16           65536         102400 (100 KB)       101376 (99 KB)
sm_89  48          24           65536         102400 (100 KB)       101376 (99 KB)
sm_90  64          32           65536         233472 (228 KB)       232448 (227 KB)
=====  ==========  ===========  ============  ====================  ========================

The calculator's rules: registers are allocated per warp in units of 256
(``ceil(regs x 32 / 256) x 256``), and warps are placed on the SM's 4 sub-partitions, so the
warps the register file holds are rounded down to a multiple of 4 (the warp allocation
granularity) before dividing by the warps of a block; shared memory is allocated in units of 128
bytes and the CUDA runtime reserves 1 KB of it per block (sm_80 and later); a block asking for
more shared memory than an SM gives one block, or more registers than 255 per thread, does not
launch (0 blocks). Occupancy = active warps / maximum warps per SM.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP = 32
#: Registers are allocated per warp in units of this many.
REG_UNIT = 256
#: Warps are allocated to the 4 sub-partitions: the register limit is rounded down to this many.
WARP_GRANULARITY = 4
#: Shared memory is allocated per block in units of this many bytes.
SHARED_UNIT = 128
#: Shared memory the CUDA runtime reserves per block (sm_80 and later), bytes.
RESERVED_SHARED = 1024
MAX_REGS_PER_THREAD = 255


@dataclass(frozen=True)
class Arch:
    """One architecture's per-SM limits (see the module's table)."""

    name: str
    max_warps: int
    max_blocks: int
    regs: int
    shared: int
    shared_per_block: int


ARCHS = {a.name: a for a in (
    Arch("sm_80", 64, 32, 65536, 167936, 166912),
    Arch("sm_86", 48, 16, 65536, 102400, 101376),
    Arch("sm_89", 48, 24, 65536, 102400, 101376),
    Arch("sm_90", 64, 32, 65536, 233472, 232448),
)}


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(arch: str, regs_per_thread: int, threads_per_block: int,
              shared_per_block: int) -> dict:
    """Blocks and warps per SM for one launch on ``arch`` (a key of :data:`ARCHS`).

    Returns:
        ``{blocks, warps, occupancy (0..1, 3 decimals), limited_by, limits}``: ``limits`` the
        blocks each resource allows (``warps``, ``blocks``, ``registers``, ``shared_memory``);
        ``limited_by`` the resources giving the fewest, in that order ("warps" first on a tie,
        as the calculator lists them), or ``"registers per thread > 255"`` /
        ``"shared memory per block"`` when the block cannot launch.

    Raises:
        KeyError: an architecture :data:`ARCHS` does not know.
        ValueError: ``threads_per_block`` < 1 or a negative resource.
    """
    a = ARCHS[arch]
    if threads_per_block < 1 or regs_per_thread < 0 or shared_per_block < 0:
        raise ValueError(f"no launch: {threads_per_block} threads, {regs_per_thread} registers, "
                         f"{shared_per_block} B shared")
    warps_per_block = -(-threads_per_block // WARP)
    if regs_per_thread > MAX_REGS_PER_THREAD:
        return _none(a, "registers per thread > 255")
    shared = _round_up(shared_per_block + RESERVED_SHARED, SHARED_UNIT)
    if shared_per_block > a.shared_per_block:
        return _none(a, "shared memory per block")
    limits = {"warps": a.max_warps // warps_per_block, "blocks": a.max_blocks}
    if regs_per_thread:
        per_warp = _round_up(regs_per_thread * WARP, REG_UNIT)
        warps = (a.regs // per_warp) // WARP_GRANULARITY * WARP_GRANULARITY
        limits["registers"] = warps // warps_per_block
    else:
        limits["registers"] = a.max_blocks
    limits["shared_memory"] = a.shared // shared
    blocks = min(limits.values())
    limited = [k for k, v in limits.items() if v == blocks]
    return {"blocks": blocks, "warps": blocks * warps_per_block,
            "occupancy": round(blocks * warps_per_block / a.max_warps, 3),
            "limited_by": ", ".join(k.replace("_", " ") for k in limited), "limits": limits}


def _none(a: Arch, why: str) -> dict:
    return {"blocks": 0, "warps": 0, "occupancy": 0.0, "limited_by": why, "limits": {}}
