"""kornia/kornia PR #3474: use addcmul for rgb_to_grayscale speedup — rgb_to_grayscale on a (4, 3, 256, 256) batch."""
import torch
import kornia


def bench_rgb_to_grayscale(device):
    torch.manual_seed(0)
    # the PR benchmarks (64, 3, 512, 512) (~7 s on CPU); reduced to (4, 3, 256, 256) for a ms-range call
    image = torch.rand(4, 3, 256, 256, device=device)
    return lambda: kornia.color.rgb_to_grayscale(image)
