"""kornia/kornia PR #2884: Vectorize lovasz_softmax loss — lovasz_softmax_loss forward, 15 classes."""
import torch
import kornia


def bench_lovasz_softmax_loss(device):
    torch.manual_seed(0)
    # the PR's benchmark uses (2, 15, 256, 256); spatial size reduced to 64x64 to keep one call in the ms range
    label = torch.randint(0, 15, (2, 64, 64), device=device)
    pred = torch.rand(2, 15, 64, 64, device=device)
    return lambda: kornia.losses.lovasz_softmax_loss(pred, label)
