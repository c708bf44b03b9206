"""huggingface/peft PR #2814 (control, docs only): FIX DOC Add missing TOC entry for WaveFT — times an eval-mode forward of a small LoRA model (library code identical on both sides)."""
import torch
from torch import nn

import peft
from peft import LoraConfig, get_peft_model


class MLP(nn.Module):
    def __init__(self, d=256, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def bench_lora_eval_forward(device):
    torch.manual_seed(0)
    model = MLP().to(device)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["layers.0", "layers.1", "layers.2", "layers.3"],
                        init_lora_weights=False)
    peft_model = get_peft_model(model, config).eval()
    x = torch.randn(16, 256, device=device)

    def forward():
        with torch.no_grad():
            return peft_model(x)

    return forward
