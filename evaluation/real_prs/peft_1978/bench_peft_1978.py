"""huggingface/peft PR #1978: ENH Faster bf16 merging on CPU — times merge_adapter + unmerge_adapter of a bf16 LoRA model on CPU."""
import torch
from torch import nn

import peft
from peft import LoraConfig, get_peft_model


class MLP(nn.Module):
    def __init__(self, d=1024, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def bench_bf16_merge_unmerge(device):
    torch.manual_seed(0)
    model = MLP().to(device=device, dtype=torch.bfloat16)
    config = LoraConfig(r=16, lora_alpha=32, target_modules=["layers.0", "layers.1", "layers.2", "layers.3"],
                        init_lora_weights=False)
    peft_model = get_peft_model(model, config)
    peft_model.to(torch.bfloat16)

    def merge_unmerge():
        peft_model.merge_adapter()
        peft_model.unmerge_adapter()

    return merge_unmerge
