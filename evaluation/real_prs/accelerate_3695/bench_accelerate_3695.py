"""huggingface/accelerate PR #3695: CpuOffload pre_forward don't attempt to move if already on device — times repeated forwards of a cpu_offload_with_hook-chained model that already sits on its execution device."""
import torch
from torch import nn

import accelerate
from accelerate import cpu_offload_with_hook


def _mlp(d, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(d, d), nn.GELU()]
    return nn.Sequential(*layers)


def bench_cpu_offload_repeated_forward(device):
    torch.manual_seed(0)
    exec_device = torch.device(device)
    model_1 = _mlp(64, 4).eval()
    model_2 = _mlp(64, 16).eval()
    # the docstring's pipeline: model_2 is called many times after model_1 (diffusion-loop style)
    model_1, hook_1 = cpu_offload_with_hook(model_1, exec_device)
    model_2, hook_2 = cpu_offload_with_hook(model_2, exec_device, prev_module_hook=hook_1)
    x = torch.randn(8, 64, device=exec_device)
    with torch.no_grad():
        hid = model_1(x)

    def step():
        with torch.no_grad():
            return model_2(hid)

    return step
