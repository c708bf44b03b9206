"""Lightning-AI/torchmetrics PR #3103: enhancement: improve performance of _rank_data — spearman_corrcoef on data with many ties."""
import torch
import torchmetrics.functional as F


def bench_spearman_many_ties(device):
    torch.manual_seed(0)
    # the scenario (#3102): a large tensor with many duplicate values; base loops over every
    # repeated value in _rank_data, head ranks with torch.unique + scatter_add_
    n = 10_000
    preds = torch.randint(0, 100, (n,), device=device).float()
    target = (preds + torch.randint(0, 50, (n,), device=device)).float()
    return lambda: F.spearman_corrcoef(preds, target)
