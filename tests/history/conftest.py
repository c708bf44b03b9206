"""Databases for the history tests: a fresh SQLite file each, and PostgreSQL when
``PERFGATE_TEST_POSTGRES_URL`` names a throwaway database (its ``public`` schema is dropped
and recreated before each test)."""

from __future__ import annotations

import os

import pytest

POSTGRES_URL = os.environ.get("PERFGATE_TEST_POSTGRES_URL")


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    from bot.db import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def _empty_database(kind: str, folder) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'perfgate.db'}"
    if not POSTGRES_URL:
        pytest.skip("PERFGATE_TEST_POSTGRES_URL is not set (a throwaway PostgreSQL database)")
    _reset_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A URL of an empty database; the postgresql variant skips without PERFGATE_TEST_POSTGRES_URL."""
    return _empty_database(request.param, tmp_path)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_database_url(request, tmp_path_factory):
    """Like ``database_url``, shared by the (read-only) tests of one module."""
    return _empty_database(request.param, tmp_path_factory.mktemp("db"))


@pytest.fixture
def db(database_url):
    from bot.db import open_database

    database = open_database(database_url)
    yield database
    database.dispose()
