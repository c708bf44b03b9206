"""Lightning-AI/torchmetrics PR #1493: Improve speed and memory consumption of binned PrecisionRecallCurve — binary_average_precision with binned thresholds on many samples."""
import torch
import torchmetrics.functional.classification as FC


def bench_binned_average_precision(device):
    torch.manual_seed(0)
    # issue #1492: binned (thresholds=int) average precision over many samples, e.g. pixels of a
    # segmentation batch; above 50k samples head loops over thresholds instead of materialising a
    # samples x thresholds tensor. Sized down from the 16x512x512 / 200 thresholds for the CPU.
    target = torch.randint(0, 2, (4, 128, 128), device=device)
    preds = torch.rand(4, 128, 128, device=device)
    return lambda: FC.binary_average_precision(preds, target, thresholds=50)
