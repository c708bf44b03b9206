"""Lightning-AI/torchmetrics PR #2995: Add Tests for Top-K Functionality in Multiclass Precision and Recall (tests only: control) — multiclass_precision with top_k."""
import torch
import torchmetrics.functional.classification as FC


def bench_multiclass_precision_topk(device):
    torch.manual_seed(0)
    # the API whose tests the PR adds; library code is byte-identical between base and head
    num_classes = 10
    preds = torch.randn(10_000, num_classes, device=device).softmax(dim=-1)
    target = torch.randint(0, num_classes, (10_000,), device=device)
    return lambda: FC.multiclass_precision(preds, target, num_classes=num_classes, top_k=2)
