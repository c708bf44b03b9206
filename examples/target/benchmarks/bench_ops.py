"""Benchmarks of tinyops: plain functions, no import of perfgate needed."""

import torch

import tinyops


def bench_rms_norm(device, rows=2048):
    torch.manual_seed(0)
    x = torch.randn(rows, 512, device=device)
    w = torch.ones(512, device=device)
    return lambda: tinyops.rms_norm(x, w)


bench_rms_norm.params = {"rows": [2048]}


def bench_softmax(device):
    torch.manual_seed(0)
    x = torch.randn(1024, 512, device=device)
    return lambda: tinyops.softmax_rows(x)


def bench_pairwise_distance(device):
    torch.manual_seed(0)
    a = torch.randn(128, 16, device=device)
    b = torch.randn(128, 16, device=device)
    return lambda: tinyops.pairwise_distance(a, b)
