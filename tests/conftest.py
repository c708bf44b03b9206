"""Shared pytest set-up: the ``gpu`` mark, the real traces in tests/fixtures/traces, databases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Benchmark suites the runner tests list and run (their test_*.py files are not this project's tests).
collect_ignore_glob = ["fixtures/suites/*"]


def pytest_collection_modifyitems(config, items):
    _fast_lane(config, items)
    _skip_gpu(items)


def _fast_lane(config, items) -> None:
    """``python -m pytest -q`` is the fast lane: ``slow`` items (real pipelines end to end, the
    evaluation scripts' smoke runs) are deselected, unless a ``-m`` expression chooses the lane
    (``-m slow``: the slow lane, which CI runs after the fast one) or a test is named by its node
    id (``path::test``)."""
    if config.option.markexpr or any("::" in str(arg) for arg in config.args):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        config.stash[_SLOW_LEFT] = len(slow)


_SLOW_LEFT = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, config):
    left = config.stash.get(_SLOW_LEFT, 0)
    if left:
        terminalreporter.write_line(f"fast lane: {left} slow items not run; "
                                    "`python -m pytest -q -m slow` runs "
                                    "them (CI runs both lanes)")


def _skip_gpu(items) -> None:
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


@pytest.fixture(scope="session")
def postgres_server_url():
    """URL of a throwaway PostgreSQL database for the whole session: the one named by
    ``PERFGATE_TEST_POSTGRES_URL`` when set, else a server this fixture starts from the installed
    ``initdb``/``postgres`` programs (testkit/services.py) on a free 127.0.0.1 port and stops
    at the end. Skips only when neither is there (PostgreSQL not installed)."""
    url = os.environ.get("PERFGATE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    from testkit.services import Postgres, postgres_bin

    missing = [name for name in ("initdb", "postgres") if not postgres_bin(name)]
    if missing:
        pytest.skip(f"PostgreSQL is not installed ({', '.join(missing)} not found; Debian: apt install postgresql)")
    with Postgres("perfgate", "perfgate", "perfgate_test") as server:
        yield server.url()


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    from bot.db import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def _empty_database(request, kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'perfgate.db'}"
    url = request.getfixturevalue("postgres_server_url")
    _reset_postgres(url)
    return url


#: The databases the storage tests run on: PostgreSQL's twins are in the slow lane (CI runs both).
DATABASES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


@pytest.fixture(params=DATABASES)
def database_url(request, tmp_path):
    """URL of an empty database: a fresh SQLite file, or the session's throwaway PostgreSQL
    database (``postgres_server_url``) with its ``public`` schema dropped and recreated."""
    return _empty_database(request, request.param, tmp_path)


@pytest.fixture(scope="module", params=DATABASES)
def module_database_url(request, tmp_path_factory):
    """Like ``database_url``, shared by the (read-only) tests of one module."""
    return _empty_database(request, request.param, tmp_path_factory.mktemp("db"))
