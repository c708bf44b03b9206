"""register_pressure: an aggressive fusion with a huge tile per program.

base runs two small Triton elementwise kernels (1024 values per program, 4 warps: 8 values
per thread, few registers). head fuses them into one kernel that processes 8192 values per
program with a single warp (256 values per thread, all live at once): registers per thread
hit the limit and spill, theoretical occupancy collapses, and the fused kernel is slower than
the pair it replaced although it moves half the bytes.
"""

EXPECTED_HINT = "register_pressure"
N = 32 * 2**20


def available() -> bool:
    try:
        import torch
        import triton  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, x * 1.5 + 0.5, mask=m)

    @triton.jit
    def poly_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, x * (1.0 + x * (0.5 + x * (0.25 + x * 0.125))), mask=m)

    @triton.jit
    def fused_scale_poly_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m) * 1.5 + 0.5
        tl.store(y_ptr + offs, x * (1.0 + x * (0.5 + x * (0.25 + x * 0.125))), mask=m)

    return scale_kernel, poly_kernel, fused_scale_poly_kernel


def base(device="cuda"):
    import torch
    import triton

    scale, poly, _ = _kernels()
    x = torch.randn(N, device=device)
    t = torch.empty_like(x)
    y = torch.empty_like(x)
    block = 1024
    grid = (triton.cdiv(N, block),)

    def run():
        scale[grid](x, t, N, BLOCK=block, num_warps=4)
        poly[grid](t, y, N, BLOCK=block, num_warps=4)

    return run


def head(device="cuda"):
    import torch
    import triton

    _, _, fused = _kernels()
    x = torch.randn(N, device=device)
    y = torch.empty_like(x)
    block = 8192
    grid = (triton.cdiv(N, block),)

    def run():
        fused[grid](x, y, N, BLOCK=block, num_warps=1)

    return run
