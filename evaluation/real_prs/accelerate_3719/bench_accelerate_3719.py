"""huggingface/accelerate PR #3719 (control, tests only): TST Add test for FSDP ignored_modules as str — times send_to_device on a nested batch (library code identical on both sides)."""
import torch

import accelerate
from accelerate.utils import send_to_device


def bench_send_to_device_nested(device):
    torch.manual_seed(0)
    batch = {
        "input_ids": torch.randint(0, 1000, (8, 128)),
        "attention_mask": torch.ones(8, 128, dtype=torch.long),
        "pixel_values": [torch.randn(3, 32, 32) for _ in range(64)],
        "extra": {
            "boxes": [torch.randn(4, 4) for _ in range(32)],
            "labels": torch.randint(0, 10, (8,)),
            "meta": ("a", 1, torch.zeros(4)),
        },
    }
    target = torch.device(device)
    return lambda: send_to_device(batch, target)
