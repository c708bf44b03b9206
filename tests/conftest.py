"""Shared pytest set-up: the ``gpu`` mark and the real traces in ../shared/fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _shared_dir() -> Path:
    return Path(os.environ.get("PERFGATE_SHARED", REPO_ROOT.parent / "shared"))


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch means no GPU
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``../shared/fixtures`` (real Kineto traces); skips the test when it is absent."""
    path = _shared_dir() / "fixtures"
    if not path.is_dir():
        pytest.skip(f"{path} is not there (it is beside the clone in CI, not in a fresh clone)")
    return path
