"""Project-MONAI/MONAI PR #6163: more efficient Dice metrics for large num_class — DiceMetric on one-hot 3D segmentations with many classes."""
import torch
from monai.metrics import DiceMetric


def bench_dice_metric_many_classes(device):
    torch.manual_seed(0)
    # many classes (the PR's scenario); one-hot y_pred and y, the input format both sides accept.
    # Base checks both tensors are binary and multiplies/sums whole float tensors; head drops the
    # checks and computes per channel with masked_select.
    batch, num_classes, spatial = 2, 32, (32, 32, 32)
    labels_pred = torch.randint(0, num_classes, (batch, *spatial), device=device)
    labels = torch.randint(0, num_classes, (batch, *spatial), device=device)
    y_pred = torch.nn.functional.one_hot(labels_pred, num_classes).permute(0, 4, 1, 2, 3).contiguous().float()
    y = torch.nn.functional.one_hot(labels, num_classes).permute(0, 4, 1, 2, 3).contiguous().float()
    metric = DiceMetric(include_background=True, reduction="mean")

    def run():
        metric(y_pred=y_pred, y=y)
        metric.reset()  # keep the metric's buffer from growing across calls

    return run
