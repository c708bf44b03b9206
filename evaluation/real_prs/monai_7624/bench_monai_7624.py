"""Project-MONAI/MONAI PR #7624: Fix test error in `test_soft_clipping_one_sided_high` (tests only: control) — ClipIntensityPercentiles with soft clipping."""
import torch
from monai.transforms import ClipIntensityPercentiles


def bench_clip_intensity_percentiles_soft(device):
    torch.manual_seed(0)
    # the transform whose tests the PR fixes; library code is byte-identical between base and head
    img = torch.rand((1, 32, 32, 32), device=device) * 1000
    transform = ClipIntensityPercentiles(upper=95, lower=5, sharpness_factor=1.0)
    return lambda: transform(img)
