"""huggingface/peft PR #2122: ENH Faster DoRA in when no dropout/eval mode — times an eval-mode forward of a DoRA (use_dora=True, lora_dropout=0) model."""
import torch
from torch import nn

import peft
from peft import LoraConfig, get_peft_model


class MLP(nn.Module):
    def __init__(self, d=512, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def bench_dora_eval_forward(device):
    torch.manual_seed(0)
    model = MLP().to(device)
    config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, use_dora=True,
                        target_modules=["layers.0", "layers.1"], init_lora_weights=False)
    peft_model = get_peft_model(model, config).eval()
    x = torch.randn(4, 64, 512, device=device)

    def forward():
        with torch.no_grad():
            return peft_model(x)

    return forward
