"""arogozhnikov/einops PR #221: Improve type hinting (incl. commit "optimize reductions in torch where possible") — multi-axis reduce."""
import torch
import einops


def bench_reduce_multi_axis(device):
    torch.manual_seed(0)
    # reduce over several axes at once: base reduces axis by axis, head passes all dims to one torch call
    x = torch.randn(32, 64, 16, 16, device=device)

    def run():
        einops.reduce(x, "b c h w -> c", "max")
        einops.reduce(x, "b c h w -> b", "mean")

    return run
