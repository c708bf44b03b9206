"""Database connection: engine, sessions, the schema upgrade (SQLAlchemy 2 + Alembic), and the
declarative :class:`Base` every table is declared on (``bot.history.tables``,
``bot.app.store.tables``).

The URL comes from ``DATABASE_URL``; without it, a SQLite file
``$PERFGATE_HOME/perfgate.db`` with ``PERFGATE_HOME`` defaulting to
``~/.local/share/perfgate``. PostgreSQL URLs (``postgres://``, ``postgresql://``) are run
through the psycopg 3 driver. :func:`open_database` upgrades the schema to the newest
Alembic revision before anything else touches it; the App and the CLI both call it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from sqlalchemy import JSON, Double, Engine, MetaData, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import DateTime, TypeDecorator

from runner.errors import UserError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: Held while migrating on PostgreSQL, so several processes starting together (gunicorn
#: workers, the queue worker, a migration job) upgrade one after the other (an arbitrary
#: constant, "perfgate" in ASCII digits).
_PG_MIGRATION_LOCK = 7_065_102_767


#: Constraint names that are the same on every dialect (Alembic needs names to alter them).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC timestamp on every dialect.

    SQLite has no time zones and returns naive values; this type stores UTC and always hands
    back an aware ``datetime`` in UTC. Naive values given to it are taken as UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Optional[_dt.datetime], dialect) -> Optional[_dt.datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        value = value.astimezone(_dt.timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Optional[_dt.datetime], dialect) -> Optional[_dt.datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=_dt.timezone.utc)
        return value.astimezone(_dt.timezone.utc)


def utc_now() -> _dt.datetime:
    """Now, timezone-aware UTC."""
    return _dt.datetime.now(_dt.timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {_dt.datetime: UTCDateTime(), dict[str, Any]: JSON(), float: Double()}



def insert_missing(session: Session, model: type, values: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """``INSERT … ON CONFLICT (keys) DO NOTHING`` of one ``model`` row with ``values``: afterwards
    the row with those ``keys`` exists, whoever inserted it, and no unique-constraint error is
    raised when a concurrent transaction inserted it first (the caller then selects it). A
    check-then-insert races; this does not (SQLite ≥ 3.24 and PostgreSQL; SQLAlchemy's dialect
    ``insert`` constructs). On SQLite the statement also takes the database's write lock, so
    what the transaction reads next is the newest committed state; on PostgreSQL select the row
    ``with_for_update()`` to hold it. Column defaults of ``model`` apply. True when this call
    inserted the row (told by the primary key the statement returns: on PostgreSQL the row count
    of ``ON CONFLICT DO NOTHING`` with SQLAlchemy's implicit ``RETURNING`` is -1 either way).

    Raises:
        UserError: a database other than SQLite or PostgreSQL.
    """
    statement = insert_missing_statement(session.get_bind().dialect.name, model, keys)
    return session.execute(statement.values(**values)).first() is not None


def insert_missing_statement(dialect: str, model: type, keys: Sequence[str]):
    """The statement of :func:`insert_missing` without its values: ``INSERT INTO model …
    ON CONFLICT (keys) DO NOTHING RETURNING <primary key>`` for ``dialect`` (``sqlite`` ≥ 3.35 or
    ``postgresql``); execute it with the row's values as parameters
    (``connection.execute(statement, values)``): a row back when it inserted one, none when
    the row was there.

    Raises:
        UserError: a database other than SQLite or PostgreSQL.
    """
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise UserError(f"perfgate stores its data in SQLite or PostgreSQL, not {dialect}")
    return insert(model).on_conflict_do_nothing(index_elements=list(keys)).returning(
        *model.__table__.primary_key.columns)


def default_home(env: Mapping[str, str]) -> Path:
    """``PERFGATE_HOME`` or ``~/.local/share/perfgate``."""
    home = env.get("PERFGATE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "perfgate"


def database_url(env: Mapping[str, str]) -> str:
    """``DATABASE_URL`` from ``env`` (normalised), else the default SQLite file's URL."""
    url = (env.get("DATABASE_URL") or "").strip()
    if not url:
        return f"sqlite:///{default_home(env) / 'perfgate.db'}"
    return normalize_url(url)


def normalize_url(url: str) -> str:
    """Map Heroku-style ``postgres://`` and driverless ``postgresql://`` to psycopg 3.

    Raises:
        UserError: the URL cannot be parsed.
    """
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    try:
        make_url(url)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy raises ArgumentError and friends
        raise UserError(f"DATABASE_URL is not a database URL ({exc})") from None
    return url


def display_url(url: str) -> str:
    """``url`` with its password masked, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def make_engine(url: str, busy_timeout: float | None = None) -> Engine:
    """An engine for ``url``; for SQLite the parent folder is created and foreign keys enforced,
    and a writer waits ``busy_timeout`` seconds for the lock (default
    :data:`SQLITE_BUSY_TIMEOUT`).

    Raises:
        UserError: the database driver is not installed.
    """
    parsed = make_url(url)
    kwargs: dict = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            private_file(Path(parsed.database).expanduser())
        busy_timeout = SQLITE_BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        kwargs["connect_args"] = {"timeout": busy_timeout}
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except ModuleNotFoundError as exc:
        raise UserError(f"DATABASE_URL needs the Python package {exc.name!r} (for PostgreSQL: pip install 'psycopg[binary]')") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", functools.partial(_sqlite_pragmas, busy_timeout))
    return engine


#: Seconds a SQLite writer waits for the lock: below GitHub's 10 s webhook deadline, so a busy
#: database answers 503 (GitHub shows the delivery failed; redeliver) instead of timing out.
SQLITE_BUSY_TIMEOUT = 5.0

#: ... and while it migrates at start-up, where nothing answers GitHub yet: processes that start
#: together wait for the first one's migration (5 s was not enough on a loaded 2-CPU machine).
SQLITE_MIGRATION_TIMEOUT = 300.0


def private_file(path: Path) -> Path:
    """Create ``path`` (and its folder) readable by this account only (mode 0600) unless it
    exists; SQLite gives its ``-wal``/``-shm`` files the database file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    return path


#: Seconds between two tries of a fresh database's switch to write-ahead logging.
WAL_RETRY_PAUSE = 0.02


def _sqlite_pragmas(busy_timeout: float, dbapi_connection, _record) -> None:
    """Foreign keys on; write-ahead logging, so the pages read while the worker writes
    (readers never wait for a writer); the busy time-out, ``busy_timeout`` seconds.

    Processes that open a fresh database at once all switch it to WAL, which takes the file's
    exclusive lock: two that each hold the shared one deadlock, and SQLite answers "database is
    locked" at once without its busy handler (8 processes, 30 fresh files: 8 such failures). The
    switch is tried again until ``busy_timeout`` has passed (a retry mechanic)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_PAUSE)
    cursor.close()


def alembic_config(engine: Engine):
    """An Alembic ``Config`` for ``bot/migrations`` bound to ``engine`` (no alembic.ini)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the Alembic migrations up to ``revision`` (idempotent).

    Safe when several processes start on one database at once: each upgrade runs in one
    transaction that holds a lock until it commits — PostgreSQL's advisory transaction lock,
    SQLite's write lock (``BEGIN IMMEDIATE``, which also makes SQLite's DDL transactional) — so
    the first process migrates and the others then find the schema at ``revision``.
    """
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        elif engine.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


@dataclass
class Database:
    """An engine and its session factory. ``with db.session() as s: ...``."""

    url: str
    engine: Engine
    session: sessionmaker[Session]

    def dispose(self) -> None:
        self.engine.dispose()

    def reachable(self) -> bool:
        """Does the database answer ``SELECT 1``? (Any failure: no.)"""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any database failure means unreachable
            return False
        return True


def open_database(url: str, *, migrate: bool = True) -> Database:
    """Connect to ``url`` and (by default) upgrade its schema to the newest migration.

    Raises:
        UserError: the database cannot be reached or the driver is missing.
    """
    engine = make_engine(url)
    if migrate:
        migrating = (make_engine(url, busy_timeout=SQLITE_MIGRATION_TIMEOUT)
                     if engine.dialect.name == "sqlite" else engine)
        try:
            upgrade(migrating)
        except UserError:
            raise
        except Exception as exc:
            from sqlalchemy.exc import OperationalError

            if isinstance(exc, OperationalError):
                reason = " ".join(str(exc.orig).split())  # libpq's messages span lines
                raise UserError(f"cannot open the database {display_url(url)}: {reason}") from None
            raise
        finally:
            if migrating is not engine:
                migrating.dispose()
    return Database(url=url, engine=engine, session=sessionmaker(engine, expire_on_commit=False))


def open_from_environment(env: Mapping[str, str] | None = None) -> Database:
    """:func:`open_database` on ``DATABASE_URL`` (or the default SQLite file) of ``env``."""
    return open_database(database_url(os.environ if env is None else env))
