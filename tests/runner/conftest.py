"""Fixtures of the runner tests."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


@pytest.fixture
def suite_copy(monkeypatch, tmp_path):
    """``suite_copy(example)``: a copy of an example suite (tests/fixtures/suites/...) as a worker
    sees its revision — the working directory at its root, the root on ``sys.path`` — and the
    modules the test imported from it forgotten afterwards (each worker process imports afresh)."""
    before = set(sys.modules)

    def copy(example: Path) -> Path:
        root = tmp_path / example.name
        shutil.copytree(example, root)
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.chdir(root)
        return root

    yield copy
    for name in set(sys.modules) - before:
        del sys.modules[name]
