"""Every table of the App's database, for Alembic (``bot/migrations/env.py``) and the schema test."""

from __future__ import annotations

from sqlalchemy import MetaData


def all_metadata() -> MetaData:
    """``bot.db.Base.metadata`` with the tables of the history, of the App and of the web
    sessions registered."""
    from .app.store import tables as app_tables  # noqa: F401 - declares the App's tables on Base
    from .db import Base
    from .history import tables as history_tables  # noqa: F401 - declares the history's tables on Base
    from .web import sessions as web_sessions  # noqa: F401 - declares web_sessions on Base

    return Base.metadata
