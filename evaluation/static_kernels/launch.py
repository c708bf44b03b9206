"""A capture command for issue 49's cases whose package does not import without a GPU
(flash-attention: its CUDA extension; unsloth: ``unsloth_zoo``), run in the case's worktree by
``perfgate kernels --capture`` and by ``static_kernels_captured.py``: it loads the kernel's own
file by its path and calls the repository's own launcher with CPU tensors at the shape the case
states (the hand check's), so Triton is asked for the launch the repository's code makes there.

    python evaluation/static_kernels/launch.py rotary|cross_entropy|fp8

``rotary``: ``flash_attn/ops/triton/rotary.py``'s ``apply_rotary`` on a Llama bf16 batch (2 ×
512 tokens × 32 heads × head dim 128, rotary dim 128). ``cross_entropy``:
``flash_attn/ops/triton/cross_entropy.py``'s ``cross_entropy_loss`` on 8 rows of GPT-2's vocab
(50257) in bf16. ``fp8``: ``unsloth/kernels/fp8.py``'s ``weight_dequant_block`` on a 4096 × 4096
e4m3 weight with 128 × 128 blocks to bf16; the three ``unsloth_zoo`` names the file imports
(``Version``, ``logger``, ``torch_compile``) are stood in for, as the kernel does not use them.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from pathlib import Path


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, Path(path).resolve())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _unsloth_zoo() -> None:
    from packaging.version import Version

    stand_ins = {"unsloth_zoo": {}, "unsloth_zoo.utils": {"Version": Version},
                 "unsloth_zoo.log": {"logger": logging.getLogger("unsloth")},
                 "unsloth_zoo.temporary_patches": {},
                 "unsloth_zoo.temporary_patches.common": {"torch_compile": lambda f=None, **_: f}}
    for name, values in stand_ins.items():
        sys.modules[name] = types.SimpleNamespace(**values)


def main(which: str) -> None:
    import torch

    if which == "rotary":
        rotary = _load("flash_attn/ops/triton/rotary.py", "flash_attn_rotary")
        x = torch.zeros(2, 512, 32, 128, dtype=torch.bfloat16)
        cos = torch.zeros(512, 64, dtype=torch.bfloat16)
        rotary.apply_rotary(x, cos, cos.clone())
    elif which == "cross_entropy":
        ce = _load("flash_attn/ops/triton/cross_entropy.py", "flash_attn_cross_entropy")
        logits = torch.zeros(8, 50257, dtype=torch.bfloat16)
        ce.cross_entropy_loss(logits, torch.zeros(8, dtype=torch.long))
    elif which == "fp8":
        _unsloth_zoo()
        fp8 = _load("unsloth/kernels/fp8.py", "unsloth_fp8")
        weight = torch.zeros(4096, 4096).to(torch.float8_e4m3fn)
        fp8.weight_dequant_block(weight, torch.ones(32, 32), block_size=128,
                                 dtype=torch.bfloat16)
    else:
        raise SystemExit(f"unknown launch {which!r}: rotary, cross_entropy or fp8")


if __name__ == "__main__":
    main(sys.argv[1])
