"""arogozhnikov/einops PR #383 (control, docs only): add einops.jl and einops for R in projects.md — rearrange + reduce."""
import torch
import einops


def bench_rearrange_reduce(device):
    torch.manual_seed(0)
    x = torch.randn(16, 32, 32, 32, device=device)

    def run():
        y = einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4)
        return einops.reduce(y, "b n d -> b d", "mean")

    return run
