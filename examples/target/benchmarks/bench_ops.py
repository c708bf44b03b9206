"""Benchmarks of tinyops: plain functions, no import of perfgate needed."""

import torch

import tinyops


def bench_rms_norm(device, rows=32):
    torch.manual_seed(0)
    x = torch.randn(rows, 512, device=device)
    w = torch.ones(512, device=device)
    return lambda: tinyops.rms_norm(x, w)


# Small rows keep every temporary under glibc's mmap threshold: with 4 MiB temporaries the time
# per call depended on each process's allocator history (whether freed chunks had raised the
# threshold), which perfgate rightly reports as between-process noise, not a change.
bench_rms_norm.params = {"rows": [32]}


def bench_softmax(device):
    torch.manual_seed(0)
    x = torch.randn(32, 512, device=device)
    return lambda: tinyops.softmax_rows(x)


def bench_pairwise_distance(device):
    torch.manual_seed(0)
    a = torch.randn(128, 16, device=device)
    b = torch.randn(128, 16, device=device)
    return lambda: tinyops.pairwise_distance(a, b)
