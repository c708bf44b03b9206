"""sync_overhead: a host synchronisation per step of a loop of tiny kernels.

base accumulates 64 row sums on the device and synchronises once (one ``.item()``);
head calls ``.item()`` on every row sum, so every step is a device-to-host copy plus a
``cudaStreamSynchronize`` and the GPU idles between tiny kernels.
"""

EXPECTED_HINT = "sync_overhead"
ROWS = 64


def available() -> bool:
    import torch

    return torch.cuda.is_available()


def base(device="cuda"):
    import torch

    x = torch.randn(ROWS, 4096, device=device)

    def run():
        acc = torch.zeros((), device=device)
        for i in range(ROWS):
            acc += x[i].sum()
        return acc.item()

    return run


def head(device="cuda"):
    import torch

    x = torch.randn(ROWS, 4096, device=device)

    def run():
        acc = 0.0
        for i in range(ROWS):
            acc += x[i].sum().item()
        return acc

    return run
