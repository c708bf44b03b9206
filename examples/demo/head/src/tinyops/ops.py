"""Operators of the head revision (the demo's "pull request")."""

import torch


def _inv_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2) + eps) * weight``.

    Head: "upcast to float32 for accuracy" — but the input already is float32, so the two
    ``copy=True`` casts are pure extra passes over memory (a copy that regresses).
    """
    xf = x.to(torch.float32, copy=True)
    return (xf * _inv_rms(xf, eps)).to(x.dtype, copy=True) * weight


def softmax_rows(x: torch.Tensor) -> torch.Tensor:
    """Numerically stable softmax over the last dimension (unchanged)."""
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def pairwise_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Euclidean distances between the rows of ``a`` (n, d) and ``b`` (m, d) → (n, m).

    Head: ``|a|^2 + |b|^2 - 2 a b^T`` through one matrix multiply (the (n, m, d) temporary
    disappears; an algorithm replacement).
    """
    sq = a.pow(2).sum(-1)[:, None] + b.pow(2).sum(-1)[None, :] - 2.0 * (a @ b.T)
    return sq.clamp_min_(0.0).sqrt()
