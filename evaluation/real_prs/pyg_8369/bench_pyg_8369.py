"""pyg-team/pytorch_geometric PR #8369: Add faster `mask_select` method — times `Data.subgraph` with a boolean node mask."""
import torch
from torch_geometric.data import Data


def bench_subgraph_bool_mask(device):
    torch.manual_seed(0)
    num_nodes, num_edges = 5_000, 25_000
    data = Data(
        x=torch.randn(num_nodes, 64, device=device),
        edge_index=torch.randint(0, num_nodes, (2, num_edges), device=device),
        edge_attr=torch.randn(num_edges, 16, device=device),
    )
    subset = torch.rand(num_nodes, device=device) < 0.5
    return lambda: data.subgraph(subset)
