"""Project-MONAI/MONAI PR #4934: Improve data type conversion performance in convert_to_numpy — uint8 non-contiguous image to float32."""
import numpy as np
import torch
from monai.utils import convert_to_numpy


def bench_convert_uint8_noncontiguous_to_float32(device):
    torch.manual_seed(0)
    # the PR's scenario: a WSI region read as HWC uint8 and viewed channel-first (non-contiguous),
    # converted to float32; head makes it contiguous before the dtype cast (uint8 is smaller)
    rng = np.random.default_rng(0)
    hwc = rng.integers(0, 256, size=(1024, 1024, 3), dtype=np.uint8)
    chw = hwc.transpose(2, 0, 1)
    return lambda: convert_to_numpy(chw, dtype=np.float32)
