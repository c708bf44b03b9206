"""huggingface/peft PR #2785: ENH Small speedups to adapter injection — times add_adapter (+ delete_adapter) with a long explicit target_modules list on a model that already holds several LoRAs (diffusers loading many non-PEFT LoRAs)."""
import torch
from torch import nn

import peft
from peft import LoraConfig, get_peft_model


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_q = nn.Linear(d, d)
        self.to_k = nn.Linear(d, d)
        self.to_v = nn.Linear(d, d)
        self.to_out = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attn(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))


class Net(nn.Module):
    def __init__(self, d=16, depth=40):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])


def bench_add_adapter_many_target_modules(device):
    torch.manual_seed(0)
    depth = 10
    # explicit full names of every attention projection, like target_modules inferred from a state_dict
    target_modules = [
        f"blocks.{i}.attn.{name}" for i in range(depth) for name in ("to_q", "to_k", "to_v", "to_out")
    ]
    model = Net(depth=depth).to(device)
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=4, target_modules=list(target_modules)))
    # several LoRAs already loaded (the diffusers "load many LoRAs" scenario)
    for k in range(10):
        peft_model.add_adapter(f"loaded_{k}", LoraConfig(r=4, lora_alpha=4, target_modules=list(target_modules)))
    new_config = LoraConfig(r=4, lora_alpha=4, target_modules=list(target_modules))

    def add_and_remove():
        torch.manual_seed(0)
        peft_model.add_adapter("new", new_config)
        peft_model.delete_adapter("new")

    return add_and_remove
