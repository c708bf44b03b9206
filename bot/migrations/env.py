"""Alembic environment of perfgate's database (used by ``bot.db.upgrade``).

The connection is handed in through ``config.attributes["connection"]`` by
``bot.db.upgrade``; run standalone (``alembic -x url=...``) it connects to the URL itself.
SQLite runs in batch mode so later migrations can alter tables there too.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from bot.schema import all_metadata

config = context.config
target_metadata = all_metadata()


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = create_engine(url)
    with engine.begin() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():  # pragma: no cover - SQL scripts are not part of the workflow
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
