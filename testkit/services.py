"""Throwaway PostgreSQL and Redis servers from the system packages (Debian ``postgresql``,
``redis-server``), started as processes on 127.0.0.1 in a temporary folder on a free port, for
tests that stand in for the compose file's ``postgres`` and ``redis`` services.

PostgreSQL is prepared as the official image's entrypoint does for ``POSTGRES_USER``,
``POSTGRES_PASSWORD`` and ``POSTGRES_DB``: ``initdb`` with that superuser and password
(SCRAM over TCP), then the database created. PostgreSQL refuses to run as root, so under root
the server runs as the ``postgres`` account (else ``nobody``) in a folder it owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin(name: str) -> str | None:
    """A PostgreSQL server program (``initdb``, ``postgres``): PATH, else Debian's newest version."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return candidates[-1] if candidates else None


def missing_programs() -> list[str]:
    """The server programs these helpers need that are not installed."""
    missing = [name for name in ("initdb", "postgres") if not postgres_bin(name)]
    return missing + [name for name in ("redis-server", "redis-cli", "pg_isready") if not shutil.which(name)]


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    """Poll ``predicate()`` until true; AssertionError naming ``what`` (and the log's tail) if not."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"{what} did not come up (exit {proc.poll() if proc else None}):\n{tail}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Terminate ``proc`` (a service started by a test), kill it if it lingers past ``timeout`` s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Postgres:
    """``with Postgres(user, password, database) as pg: pg.port``; ``durable=False`` (tests) turns
    fsync off, ``True`` keeps PostgreSQL's default (a load measurement)."""

    def __init__(self, user: str, password: str, database: str, *, durable: bool = False):
        self.user, self.password, self.database, self.durable = user, password, database, durable
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.folder = Path(tempfile.mkdtemp(prefix="perfgate-pg-"))
        self.account = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self.account = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _run_as(self) -> dict:
        if self.account is None:
            return {}
        return {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}

    def __enter__(self) -> "Postgres":
        data, pwfile, log = self.folder / "data", self.folder / "pw", self.folder / "server.log"
        pwfile.write_text(self.password + "\n")
        if self.account is not None:
            os.chown(self.folder, self.account.pw_uid, self.account.pw_gid)
            os.chown(pwfile, self.account.pw_uid, self.account.pw_gid)
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "HOME": str(self.folder)}
        subprocess.run([postgres_bin("initdb"), "-D", str(data), f"--username={self.user}", f"--pwfile={pwfile}",
                        "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "--encoding=UTF8", "--no-sync"],
                       check=True, capture_output=True, env=env, cwd=self.folder, **self._run_as())
        self.proc = subprocess.Popen(
            [postgres_bin("postgres"), "-D", str(data), "-p", str(self.port), "-c", "listen_addresses=127.0.0.1",
             "-c", f"unix_socket_directories={self.folder}", "-c", f"fsync={'on' if self.durable else 'off'}"],
            stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, cwd=self.folder, **self._run_as())
        import psycopg

        def accepting() -> bool:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        wait_for(accepting, 60, "PostgreSQL", self.proc, log)
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')
        return self

    def url(self, database: str | None = None) -> str:
        return (f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{database or self.database}")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # PostgreSQL's "fast" shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class Redis:
    """``with Redis(command, folder) as r: r.port``; ``command``: the compose service's
    ``redis-server`` argv. This instance's port goes where the command names its port —
    ``--tls-port`` (the compose file's: TLS only, ``--port 0``) or ``--port`` — and its address
    and folder are added. ``password``/``ca``: what a client needs to ping it (AUTH, TLS)."""

    def __init__(self, command: list[str], folder: Path, *, password: str | None = None, ca: Path | None = None):
        self.command, self.folder, self.port = command, folder, free_port()
        self.password, self.ca = password, ca
        self.proc: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        argv = [shutil.which(self.command[0]) or self.command[0], *self.command[1:]]
        if "--tls-port" in argv:
            argv[argv.index("--tls-port") + 1] = str(self.port)
        else:
            argv += ["--port", str(self.port)]
        return argv + ["--bind", "127.0.0.1", "--dir", str(self.folder), "--save", ""]

    def ping(self) -> bool:
        """Does it answer PONG to a client with the password and the CA?"""
        cli = ["redis-cli", "-p", str(self.port)] + (["--tls", "--cacert", str(self.ca)] if self.ca else [])
        env = dict(os.environ, REDISCLI_AUTH=self.password) if self.password else None
        done = subprocess.run([*cli, "ping"], capture_output=True, text=True, env=env)
        return done.stdout.strip() == "PONG"  # redis-cli exits 0 on an error reply too

    def __enter__(self) -> "Redis":
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "redis.log"
        self.proc = subprocess.Popen(self.argv(), stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=self.folder)
        wait_for(lambda: self.ping() and self.proc.poll() is None, 30, "Redis", self.proc, log)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            stop(self.proc, timeout=10)
