"""memory_contention: memory-bound kernels now overlap other memory-bound work.

Both sides run the same memory-bound main work (elementwise passes over 256 MiB tensors) on
the current stream while a side stream does other work. In base the side work is a GEMM
(compute-bound, it overlaps well); in head it was replaced by equally long memory-bound
elementwise passes ("cache instead of recompute"), which compete with the main kernels for
memory bandwidth: the main kernels, unchanged, take longer, and so does the call.
"""

EXPECTED_HINT = "memory_contention"
N = 64 * 2**20          # elements: 256 MiB of fp32 per tensor
MAIN_PASSES = 6
GEMM = 4096


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


def _gemm(device):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(GEMM, GEMM, device=device)
    y = torch.randn(GEMM, GEMM, device=device)
    out = torch.empty_like(x)

    def work():
        for _ in range(2):
            torch.mm(x, y, out=out)

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
    return _make(device, _gemm)


def head(device="cuda"):
    return _make(device, _stream)
