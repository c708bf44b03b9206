"""The App's schema upgrade when a deployment starts: several processes opening one fresh
database at the same instant all succeed (SQLite, and a throwaway
PostgreSQL the tests start when it is installed), and ``perfgate migrate`` is the one-time step that upgrades and
exits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sqlalchemy import create_engine, inspect

from bot.schema import all_metadata
from runner.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

#: Each process imports everything, says it is ready, then opens the database when told to go:
#: the upgrades really start together (a start-time deadline is missed under load).
_OPENER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from bot.db import open_database
    folder = Path(sys.argv[2])
    (folder / f"ready-{sys.argv[3]}").touch()
    while not (folder / "go").exists():
        time.sleep(0.001)
    open_database(sys.argv[1]).dispose()
""")


def test_processes_starting_together_all_open_a_fresh_database(database_url, tmp_path):
    n = 4
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _OPENER, database_url, str(tmp_path), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(n)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < n and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    (tmp_path / "go").touch()
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * n, "\n".join(outputs)[-3000:]
    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    assert set(all_metadata().tables) <= set(inspect(engine).get_table_names())
    engine.dispose()


#: Each process imports once, then per round waits for its go and opens that round's fresh file.
_CONNECTOR = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from bot.db import make_engine
    folder, rounds, me = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    for r in range(rounds):
        (folder / f"ready-{r}-{me}").touch()
        while not (folder / f"go-{r}").exists():
            time.sleep(0.0005)
        engine = make_engine(f"sqlite:///{folder / f'{r}.db'}", busy_timeout=120)
        with engine.begin() as connection:  # as a migration starts: a write
            connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (a)")
        engine.dispose()
""")


def test_processes_connecting_at_once_to_a_fresh_sqlite_file_all_switch_it_to_wal(tmp_path):
    """The switch to write-ahead logging takes the file's exclusive lock; processes that each hold
    the shared one deadlock and SQLite says "database is locked" at once, busy time-out or not
    (before the retry: 8 processes over 40 fresh files failed in 2 runs of 3)."""
    n, rounds = 8, 40
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", _CONNECTOR, str(tmp_path), str(rounds)]
    procs = [subprocess.Popen([*argv, str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for i in range(n)]
    for r in range(rounds):  # every round's processes wait at its start, then go together
        deadline = time.monotonic() + 120
        while (len(list(tmp_path.glob(f"ready-{r}-*"))) < n and time.monotonic() < deadline
               and all(p.poll() is None for p in procs)):
            time.sleep(0.005)
        (tmp_path / f"go-{r}").touch()
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * n, "\n".join(outputs)[-3000:]
    import sqlite3

    for r in range(rounds):
        with sqlite3.connect(tmp_path / f"{r}.db") as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_migrate_upgrades_and_exits(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PERFGATE_HOME", str(tmp_path / "home"))
    assert main(["migrate"]) == 0
    assert "newest schema" in capsys.readouterr().out
    engine = create_engine(f"sqlite:///{tmp_path / 'home' / 'perfgate.db'}")
    assert "alembic_version" in inspect(engine).get_table_names()
    engine.dispose()
    assert main(["migrate"]) == 0  # again: nothing to do, still fine


def test_migrate_names_an_unreachable_database_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", "postgresql://perfgate:secret@127.0.0.1:1/perfgate")
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfgate: error: cannot open the database") and "secret" not in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_sqlite_files_are_private_and_in_wal_mode_with_a_busy_timeout_below_githubs_deadline(tmp_path):
    import stat

    from sqlalchemy import text

    from bot.app.queue import make_huey
    from bot.db import SQLITE_BUSY_TIMEOUT, open_database

    database = open_database(f"sqlite:///{tmp_path / 'home' / 'perfgate.db'}")
    with database.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"  # readers never wait for the writer
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == SQLITE_BUSY_TIMEOUT * 1000 < 10_000
    database.dispose()
    make_huey(None, tmp_path / "home")
    for name in ("perfgate.db", "huey.db"):
        assert stat.S_IMODE((tmp_path / "home" / name).stat().st_mode) == 0o600, name
