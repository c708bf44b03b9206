"""kornia/kornia PR #3269: optimized bbox_to_mask by 200x — bbox_to_mask for 16 boxes on a 256x256 mask."""
import torch
import kornia


def bench_bbox_to_mask(device):
    torch.manual_seed(0)
    # PR table row "Instance Segmentation": 16 boxes, 256x256 mask
    n, w, h = 16, 256, 256
    x0 = torch.randint(0, w // 2, (n,)).float()
    y0 = torch.randint(0, h // 2, (n,)).float()
    x1 = x0 + torch.randint(1, w // 2, (n,)).float()
    y1 = y0 + torch.randint(1, h // 2, (n,)).float()
    boxes = torch.stack(
        [torch.stack([x0, y0], -1), torch.stack([x1, y0], -1), torch.stack([x1, y1], -1), torch.stack([x0, y1], -1)],
        dim=1,
    ).to(device)  # (n, 4, 2) clockwise from top-left, x-y order
    return lambda: kornia.geometry.bbox.bbox_to_mask(boxes, w, h)
