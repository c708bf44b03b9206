"""torchmetrics: one benchmark per functional module besides the real_prs cases (selection's replay)."""
import torch
import torchmetrics.functional as F
import torchmetrics.functional.classification as FC


def bench_mean_squared_error(device):
    torch.manual_seed(0)
    preds, target = torch.randn(100_000, device=device), torch.randn(100_000, device=device)
    return lambda: F.mean_squared_error(preds, target)


def bench_psnr(device):
    torch.manual_seed(0)
    preds, target = torch.rand(4, 3, 64, 64, device=device), torch.rand(4, 3, 64, 64, device=device)
    return lambda: F.peak_signal_noise_ratio(preds, target, data_range=1.0)


def bench_binary_accuracy(device):
    torch.manual_seed(0)
    preds, target = torch.rand(50_000, device=device), torch.randint(0, 2, (50_000,), device=device)
    return lambda: FC.binary_accuracy(preds, target)


def bench_pearson(device):
    torch.manual_seed(0)
    preds, target = torch.randn(50_000, device=device), torch.randn(50_000, device=device)
    return lambda: F.pearson_corrcoef(preds, target)
