"""Six kornia operations of the modules docs-only commits touched (geometry.transform, filters,
color, geometry.conversions), at sizes of 0.1-5 ms per call on a 2-CPU VM: the suite every
kornia control of evaluation/identical_code.py runs whole, at the default budget split."""
import torch
import kornia


def _image(*shape):
    torch.manual_seed(0)
    return torch.rand(*shape)


def bench_pyrdown(device):
    x = _image(4, 3, 128, 128).to(device)
    return lambda: kornia.geometry.transform.pyrdown(x)


def bench_pyrup(device):
    x = _image(4, 3, 64, 64).to(device)
    return lambda: kornia.geometry.transform.pyrup(x)


def bench_hflip(device):
    x = _image(8, 3, 128, 128).to(device)
    return lambda: kornia.geometry.transform.hflip(x)


def bench_gaussian_blur2d(device):
    x = _image(2, 3, 128, 128).to(device)
    return lambda: kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5))


def bench_rgb_to_grayscale(device):
    x = _image(4, 3, 128, 128).to(device)
    return lambda: kornia.color.rgb_to_grayscale(x)


def bench_axis_angle_to_rotation_matrix(device):
    x = _image(1024, 3).to(device)
    return lambda: kornia.geometry.conversions.axis_angle_to_rotation_matrix(x)
