"""The history tests use the shared ``database_url`` fixture of tests/conftest.py (a fresh
SQLite file each, and PostgreSQL when ``PERFGATE_TEST_POSTGRES_URL`` names a throwaway
database)."""

import pytest


@pytest.fixture
def db(database_url):
    from bot.db import open_database

    database = open_database(database_url)
    yield database
    database.dispose()
