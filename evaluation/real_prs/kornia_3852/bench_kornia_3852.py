"""kornia/kornia PR #3852 (control, docs only): fix + expand the custom-augmentation guide — gaussian_blur2d."""
import torch
import kornia


def bench_gaussian_blur2d(device):
    torch.manual_seed(0)
    image = torch.rand(2, 3, 128, 128, device=device)
    return lambda: kornia.filters.gaussian_blur2d(image, (5, 5), (1.5, 1.5))
