"""huggingface/accelerate PR #2914: Fix slowdown on init with `device_map="auto"` — times set_module_tensor_to_device to a non-CPU ("meta") device, which calls clear_device_cache."""
import torch
from torch import nn

import accelerate
from accelerate.utils import set_module_tensor_to_device


def bench_set_module_tensor_to_meta(device):
    torch.manual_seed(0)
    model = nn.Linear(256, 256)
    value = torch.randn(256, 256)
    # one parameter per call: on base each call runs a full gc.collect(), which alone costs ~0.1 s here
    return lambda: set_module_tensor_to_device(model, "weight", "meta", value=value)
