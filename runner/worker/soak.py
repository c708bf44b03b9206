"""``python -m runner.worker.soak SECONDS``: a bf16 GEMM loop on the GPU for SECONDS, the load
under which ``perfgate doctor`` reads the SM clock a GPU sustains
(:func:`runner.pipeline.machine.clocks.measure_sustained`, GPU review #8).

A large bf16 matrix product is what draws a datacentre GPU to its power limit (tensor cores busy,
HBM streaming): the clock it keeps there is the one a power-heavy benchmark gets. GPU-only: the
parent sets ``CUDA_VISIBLE_DEVICES`` to the one GPU to soak.
"""

from __future__ import annotations

import sys
import time

#: The matrices' side: 8192² bf16 (128 MiB each), minutes of tensor-core work per second.
SIDE = 8192
#: Products enqueued between two synchronisations (the host never runs far ahead).
BATCH = 8


def soak(seconds: float, side: int = SIDE) -> int:
    """Multiply two ``side``² bf16 matrices on ``cuda`` until ``seconds`` have passed; the
    products made."""
    import torch

    a = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    made, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(BATCH):
            torch.mm(a, b, out=out)
        torch.cuda.synchronize()
        made += BATCH
    return made


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    soak(float(args[0]) if args else 10.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
