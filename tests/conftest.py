"""Shared pytest set-up: the ``gpu`` mark, the real traces in tests/fixtures/traces, databases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


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


TRACES = REPO_ROOT / "tests" / "fixtures" / "traces"


@pytest.fixture(scope="session")
def traces() -> Path:
    """``tests/fixtures/traces``: real Kineto traces, each with its source in SOURCES.md."""
    return TRACES


POSTGRES_URL = os.environ.get("PERFGATE_TEST_POSTGRES_URL")


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    from bot.db import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def _empty_database(kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'perfgate.db'}"
    if not POSTGRES_URL:
        pytest.skip("PERFGATE_TEST_POSTGRES_URL is not set (a throwaway PostgreSQL database)")
    _reset_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """URL of an empty database: a fresh SQLite file, or the throwaway PostgreSQL database named
    by ``PERFGATE_TEST_POSTGRES_URL`` with its ``public`` schema dropped and recreated (the
    postgresql variant skips without it; .ci/postgres starts one)."""
    return _empty_database(request.param, tmp_path)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_database_url(request, tmp_path_factory):
    """Like ``database_url``, shared by the (read-only) tests of one module."""
    return _empty_database(request.param, tmp_path_factory.mktemp("db"))
