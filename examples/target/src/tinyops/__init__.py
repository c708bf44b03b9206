"""tinyops: row normalisation, softmax and pairwise distances on torch tensors."""

from .ops import pairwise_distance, rms_norm, softmax_rows

__all__ = ["pairwise_distance", "rms_norm", "softmax_rows"]
