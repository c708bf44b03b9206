"""arogozhnikov/einops PR #262: add type-based caching — per-call dispatch overhead of rearrange on small tensors."""
import torch
import einops


def bench_rearrange_small_overhead(device):
    torch.manual_seed(0)
    # tiny tensors: time is dominated by einops' Python-side dispatch (get_backend + recipe lookup)
    xs = [torch.randn(2, 3, 4, 4, device=device) for _ in range(16)]

    def run():
        for x in xs:
            einops.rearrange(x, "b c h w -> b (h w) c")

    return run
