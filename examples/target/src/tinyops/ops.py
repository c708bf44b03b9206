"""Operators of the base revision."""

import torch


def _inv_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2) + eps) * weight``."""
    return x * _inv_rms(x, eps) * weight


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    """Numerically stable softmax over the last dimension."""
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def pairwise_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Euclidean distances between the rows of ``a`` (n, d) and ``b`` (m, d) → (n, m).

    Base: broadcast the difference, materialising an (n, m, d) tensor.
    """
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(-1).sqrt()
