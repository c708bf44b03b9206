"""pyg-team/pytorch_geometric PR #8035: Replace `einsum` with `matmul` in `Performer` — times a `PerformerAttention` forward pass (inference)."""
import torch
from torch_geometric.nn.attention import PerformerAttention


def bench_performer_attention_forward(device):
    torch.manual_seed(0)
    attn = PerformerAttention(channels=128, heads=4, head_channels=64).to(device).eval()
    x = torch.randn(2, 256, 128, device=device)   # (batch, max nodes per graph, channels)

    def run():
        with torch.no_grad():
            return attn(x)

    return run
