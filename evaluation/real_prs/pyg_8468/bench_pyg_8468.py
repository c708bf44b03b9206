"""pyg-team/pytorch_geometric PR #8468: Test memory mode in `io.fs` (tests only, control) — times `torch_geometric.utils.to_dense_batch` on a mini-batch of graphs."""
import torch
from torch_geometric.utils import to_dense_batch


def bench_to_dense_batch(device):
    torch.manual_seed(0)
    num_graphs = 64
    sizes = torch.randint(10, 60, (num_graphs,), device=device)
    batch = torch.arange(num_graphs, device=device).repeat_interleave(sizes)
    x = torch.randn(batch.numel(), 64, device=device)
    return lambda: to_dense_batch(x, batch)
