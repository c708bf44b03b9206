"""Project-MONAI/MONAI PR #6887: Improve performance for NormalizeIntensity — NormalizeIntensity(subtrahend, divisor) with nonzero=False on a 3D volume."""
import torch
from monai.transforms import NormalizeIntensity


def bench_normalize_intensity(device):
    torch.manual_seed(0)
    # the PR's own benchmark: NormalizeIntensity(subtrahend=1000, divisor=333) on
    # torch.rand((1, 1) + (100, 100, 100)), sized down to 64^3 for this CPU; base builds an all-True
    # mask and indexes with it, head skips the mask when nonzero=False. (Base writes the result into
    # the input in place; with a fixed subtrahend/divisor the values converge to a fixed point, so the
    # work per call stays the same.)
    img = torch.rand((1, 1, 64, 64, 64), device=device)
    transform = NormalizeIntensity(subtrahend=1000, divisor=333)
    return lambda: transform(img)
