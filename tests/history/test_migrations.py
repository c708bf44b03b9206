"""Alembic migrations produce exactly the schema of bot.history.tables, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from bot import db as dbmod
from bot.schema import all_metadata


def _diff(engine):
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
        return compare_metadata(ctx, all_metadata())


def test_migrated_schema_equals_the_models(database_url):
    engine = dbmod.make_engine(database_url)
    dbmod.upgrade(engine)
    assert _diff(engine) == []
    tables = set(inspect(engine).get_table_names())
    assert set(all_metadata().tables) <= tables and "alembic_version" in tables
    engine.dispose()


def test_upgrade_is_idempotent_and_reaches_head(database_url):
    engine = dbmod.make_engine(database_url)
    dbmod.upgrade(engine)
    dbmod.upgrade(engine)
    head = ScriptDirectory.from_config(dbmod.alembic_config(engine)).get_current_head()
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == head
    engine.dispose()


def test_migrations_form_one_line_from_the_first_revision(tmp_path):
    engine = dbmod.make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    script = ScriptDirectory.from_config(dbmod.alembic_config(engine))
    revisions = list(script.walk_revisions())
    assert len(script.get_heads()) == 1
    assert revisions[-1].down_revision is None and revisions[-1].revision == "0001_history"
    assert all(r.down_revision == n.revision for r, n in zip(revisions, revisions[1:]))
    engine.dispose()


def test_downgrade_to_base_removes_every_table(tmp_path):
    engine = dbmod.make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    dbmod.upgrade(engine)
    from alembic import command

    cfg = dbmod.alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    engine.dispose()


def test_database_url_defaults_and_normalisation(tmp_path):
    assert dbmod.database_url({"PERFGATE_HOME": str(tmp_path)}) == f"sqlite:///{tmp_path / 'perfgate.db'}"
    assert dbmod.database_url({}).endswith("/.local/share/perfgate/perfgate.db")
    assert dbmod.database_url({"DATABASE_URL": "postgres://u:p@h/d"}) == "postgresql+psycopg://u:p@h/d"
    assert dbmod.database_url({"DATABASE_URL": "postgresql+psycopg://u:p@h/d"}) == "postgresql+psycopg://u:p@h/d"
    assert "secret" not in dbmod.display_url("postgresql+psycopg://u:secret@h/d")


def test_default_sqlite_file_is_created_with_its_folder(tmp_path):
    home = tmp_path / "deep" / "home"
    database = dbmod.open_from_environment({"PERFGATE_HOME": str(home)})
    database.dispose()
    assert (home / "perfgate.db").is_file()
