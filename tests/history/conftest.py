"""The history tests use the shared ``database_url`` fixture of tests/conftest.py (a fresh
SQLite file each, and a throwaway PostgreSQL database the tests start when PostgreSQL is
installed)."""

import pytest


@pytest.fixture
def db(database_url):
    from bot.db import open_database

    database = open_database(database_url)
    yield database
    database.dispose()
