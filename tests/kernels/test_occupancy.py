"""The occupancy calculator's rules (runner.kernels.occupancy), against values worked out by
the CUDA Occupancy Calculator's formulas (its ``Calculator`` sheet: registers per warp rounded to
256, warps rounded down to the 4 sub-partitions, shared memory in 128-byte units plus 1 KB
reserved per block)."""

from __future__ import annotations

import pytest

from runner.kernels.occupancy import occupancy


@pytest.mark.parametrize("arch, regs, threads, shared, blocks, limited", [
    ("sm_80", 32, 256, 0, 8, "warps, registers"),        # 100 %: 64 warps
    ("sm_80", 64, 256, 0, 4, "registers"),               # 2048 regs/warp: 32 warps
    ("sm_90", 255, 128, 0, 2, "registers"),              # 8160 → 8192 regs/warp: 8 warps
    ("sm_90", 255, 256, 0, 1, "registers"),
    ("sm_90", 168, 128, 0, 3, "registers"),              # 5376/warp: 12 warps
    ("sm_90", 80, 32, 0, 24, "registers"),               # 25 warps rounded down to 24
    ("sm_86", 0, 256, 0, 6, "warps"),                    # 48 warps a SM
    ("sm_89", 32, 128, 0, 12, "warps"),
    ("sm_86", 16, 32, 0, 16, "blocks"),                  # 16 blocks a SM
    ("sm_80", 32, 128, 65536, 2, "shared memory"),       # 66560 B a block of 167936
    ("sm_90", 32, 128, 65536 + 1024, 3, "shared memory"),  # 67584 B a block of 233472
])
def test_calculator_values(arch, regs, threads, shared, blocks, limited):
    o = occupancy(arch, regs, threads, shared)
    assert (o["blocks"], o["limited_by"]) == (blocks, limited)
    assert o["warps"] == blocks * -(-threads // 32)


def test_occupancy_is_active_warps_over_the_maximum():
    assert occupancy("sm_80", 64, 256, 0)["occupancy"] == 0.5
    assert occupancy("sm_86", 0, 256, 0)["occupancy"] == 1.0


def test_blocks_that_cannot_launch():
    assert occupancy("sm_86", 32, 128, 110_000) == {
        "blocks": 0, "warps": 0, "occupancy": 0.0, "limited_by": "shared memory per block",
        "limits": {}}
    assert occupancy("sm_90", 256, 128, 0)["limited_by"] == "registers per thread > 255"


def test_unknown_arch_and_bad_launch():
    with pytest.raises(KeyError):
        occupancy("sm_75", 32, 128, 0)
    with pytest.raises(ValueError):
        occupancy("sm_80", 32, 0, 0)
