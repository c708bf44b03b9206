"""Lightning-AI/torchmetrics PR #2042: Improved the performance of RecallAtFixedPrecision for large batch sizes — binary_recall_at_fixed_precision, exact (thresholds=None), many samples."""
import torch
import torchmetrics.functional.classification as FC


def bench_recall_at_fixed_precision(device):
    torch.manual_seed(0)
    # issue #2041: thresholds=None on a large validation set; base picks the best (recall, precision,
    # threshold) with a Python max() over a generator of per-threshold tensors, head with tensor ops
    n = 4_000
    target = torch.randint(0, 2, (n,), device=device)
    preds = (0.3 * target + 0.7 * torch.rand(n, device=device)).clamp(0, 1)
    return lambda: FC.binary_recall_at_fixed_precision(preds, target, min_precision=0.5)
