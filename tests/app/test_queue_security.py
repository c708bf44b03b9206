"""The job queue holds nothing worth writing (security review N3): a crafted pickle written into
the real queue — the SQLite file, and Redis with AUTH and TLS as the compose file runs it — is
dropped by a real ``perfgate worker`` without running, and the worker goes on with the next
delivery; Redis refuses clients without TLS or the password. The web process is composed as in
production: the webhook secret and the queue, not the App's key (N8)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit import payloads as P
from testkit.services import stop

from .flow import deliver, deliveries

ROOT = Path(__file__).resolve().parents[2]
WEB_ONLY = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY")


class Plant:
    """Unpickling it makes the folder ``path``: proof that code ran."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def _crafted(marker: Path) -> list[bytes]:
    """What someone who can write to the queue would put there."""
    name = "bot.app.queue.perfgate.process_delivery"
    good = {"v": 1, "id": "x", "name": name, "eta": None, "retries": 0, "retry_delay": 0, "priority": None,
            "args": ["d-1"], "retry_backoff": 0}
    return [pickle.dumps(Plant(str(marker))),  # the review's probe: code in the worker
            pickle.dumps(("not", "a", "message")),
            json.dumps(dict(good, name="os.system", args=["touch /tmp/x"])).encode(),  # not one of the App's tasks
            json.dumps(dict(good, args=[{"py/object": "os.system"}])).encode(),  # the right task, wrong argument
            json.dumps(dict(good, kwargs={"x": 1})).encode(),  # a field perfgate never writes
            b"\x80" * 5000]


def _web(app_env, queue_url: str):
    """The web process as deployed: webhook secret and queue, no App key."""
    from bot import create_app

    env = {k: v for k, v in app_env.items() if k not in WEB_ONLY}
    web = create_app(dict(env, HUEY_URL=queue_url))
    assert web.extensions["perfgate"]["runtime"] is None and web.extensions["perfgate"]["queue"] is not None
    return web


def _worker(app_env, queue_url: str, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_"))}
    env.update({k: v for k, v in app_env.items() if k != "GITHUB_WEBHOOK_SECRET"},  # the worker's share (N8)
               HUEY_URL=queue_url, PYTHONPATH=str(ROOT), PERFGATE_WORKERS="1", PERFGATE_LOG_LEVEL="INFO")
    return subprocess.Popen([sys.executable, "-m", "runner.cli", "worker"], cwd=log.parent, env=env,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)


def _wait(predicate, what: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what}: worker exit {proc.poll()}\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def _crafted_then_a_real_delivery(app_env, fake_github, tmp_path, queue_url: str) -> None:
    """Crafted messages first, then a labelled PR's delivery: the worker drops the first, runs the second."""
    from bot.app.queue import make_huey

    marker = tmp_path / "code-ran"
    web = _web(app_env, queue_url)
    storage = make_huey(queue_url, tmp_path).storage  # the queue itself, as an attacker would reach it
    for data in _crafted(marker):
        storage.enqueue(data, None)
    fake_github.state.add_pull(P.REPO, 7, head_sha="1" * 40, base_sha="2" * 40, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "admin")
    assert deliver(web.test_client(), P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40)).status_code == 202
    log = tmp_path / "worker.log"
    worker = _worker(app_env, queue_url, log)
    try:
        _wait(lambda: fake_github.state.dispatches, "the real delivery after the crafted ones", worker, log)
        _wait(lambda: set(deliveries(web).values()) == {"done"}, "the delivery done", worker, log)
        assert not marker.exists(), "the crafted pickle ran in the worker"
        text = log.read_text(errors="replace")
        assert text.count("dropped a queue message perfgate did not write") == len(_crafted(marker))
        assert "Traceback" not in text
        assert [d["inputs"]["head-sha"] for d in fake_github.state.dispatches] == ["1" * 40]
        assert worker.poll() is None, "the worker stopped"
        # the delivery is marked done inside its task, a moment before the queue lets the message go
        _wait(lambda: storage.queue_size() == 0, "the queue drained", worker, log, timeout=30)
    finally:
        stop(worker)
        web.extensions["perfgate"]["db"].dispose()


def test_a_crafted_pickle_in_the_sqlite_queue_runs_nothing_and_the_worker_goes_on(app_env, fake_github, tmp_path):
    _crafted_then_a_real_delivery(app_env, fake_github, tmp_path, f"sqlite:///{tmp_path / 'queue.db'}")


@pytest.fixture
def redis_tls(tmp_path):
    """redis-server as docker-compose.yml runs it: TLS only, a password, the files of ``perfgate queue-tls``."""
    from bot.tls import make_tls_files
    from testkit.services import free_port, wait_for

    if not shutil.which("redis-server"):
        pytest.skip("needs redis-server (Debian package redis-server)")
    tls = tmp_path / "tls"
    make_tls_files(tls, ["redis"])
    port, password = free_port(), "queue-password-0123456789abcdef"
    log = tmp_path / "redis.log"
    proc = subprocess.Popen(["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
                             "--tls-cert-file", str(tls / "redis.crt"), "--tls-key-file", str(tls / "redis.key"),
                             "--tls-ca-cert-file", str(tls / "ca.crt"), "--tls-auth-clients", "no",
                             "--requirepass", password, "--save", "", "--dir", str(tmp_path)],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        import redis

        def up() -> bool:
            try:
                return redis.Redis(port=port, password=password, ssl=True, ssl_ca_certs=str(tls / "ca.crt"),
                                   socket_timeout=2).ping()
            except redis.RedisError:
                return False

        wait_for(up, 30, "redis-server with TLS", proc, log)
        yield {"port": port, "password": password, "ca": tls / "ca.crt"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_redis_refuses_clients_without_tls_or_the_password(redis_tls):
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    port, ca = redis_tls["port"], str(redis_tls["ca"])

    def client(**kw):  # each refusal at once: redis-py 8 retries a connection error (a refused
        # password is one) three times with a backoff, 4 s a client
        return redis.Redis(port=port, socket_timeout=2, retry=Retry(NoBackoff(), 0), **kw)

    with pytest.raises(redis.ConnectionError):  # no TLS: the server talks only TLS
        client(password=redis_tls["password"]).lpush("huey.redis.perfgate", b"x")
    with pytest.raises(redis.AuthenticationError):  # TLS, no password: NOAUTH
        client(ssl=True, ssl_ca_certs=ca).lpush("huey.redis.perfgate", b"x")
    with pytest.raises(redis.AuthenticationError):
        client(password="guess", ssl=True, ssl_ca_certs=ca).ping()
    with pytest.raises(redis.ConnectionError):  # a server certificate from another CA is not trusted
        client(password=redis_tls["password"], ssl=True).ping()


def test_a_crafted_pickle_in_redis_runs_nothing_and_the_worker_goes_on(app_env, fake_github, tmp_path, redis_tls):
    """Even someone holding Redis' password gets no code run: the worker reads JSON only."""
    url = (f"rediss://:{redis_tls['password']}@127.0.0.1:{redis_tls['port']}/0"
           f"?ssl_ca_certs={redis_tls['ca']}")
    from bot.app.queue import queue_warning

    assert queue_warning(url) is None
    assert "no password" in queue_warning(f"rediss://127.0.0.1:{redis_tls['port']}/0")
    assert "no TLS" in queue_warning("redis://:pw@redis.example.org:6379/0")
    _crafted_then_a_real_delivery(app_env, fake_github, tmp_path, url)


def test_with_the_redis_password_no_replay_forgery_or_revocation_key_moves_the_worker(
        app_env, fake_github, tmp_path, redis_tls):
    """Security review P10, on the real queue: someone holding Redis' password writes a value under
    Huey's revocation key of the App's task (it made every job raise), copies a message the web
    process queued and pushes it again once it ran (it was run again), and writes a message in the
    App's own shape (it was taken). The worker takes the real deliveries, drops the replay and the
    forgery with a line each, and runs nothing twice."""
    import redis

    url = (f"rediss://:{redis_tls['password']}@127.0.0.1:{redis_tls['port']}/0"
           f"?ssl_ca_certs={redis_tls['ca']}")
    queue = redis.Redis(port=redis_tls["port"], password=redis_tls["password"], ssl=True,
                        ssl_ca_certs=str(redis_tls["ca"]), socket_timeout=5)
    revocation = "rt:bot.app.queue.perfgate.process_delivery"  # Huey's key: every job of the task
    queue.hset("huey.results.perfgate", revocation, b"[null, false]")
    web = _web(app_env, url)
    gh = fake_github.state
    gh.set_permission(P.REPO, "maintainer", "admin")
    for number, head in ((7, "1" * 40), (8, "3" * 40)):
        gh.add_pull(P.REPO, number, head_sha=head, base_sha="2" * 40, labels=["performance"])
    labeled = P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40)
    assert deliver(web.test_client(), labeled).status_code == 202
    (copied,) = queue.lrange("huey.redis.perfgate", 0, -1)
    log = tmp_path / "worker.log"
    worker = _worker(app_env, url, log)
    try:
        _wait(lambda: set(deliveries(web).values()) == {"done"}, "the delivery done", worker, log)
        (delivery_id,) = deliveries(web)
        forged = {"v": 2, "id": "x", "name": "bot.app.queue.perfgate.process_delivery", "eta": None,
                  "retries": 0, "retry_delay": 0, "priority": None, "args": [delivery_id],
                  "retry_backoff": 0, "sent": time.time()}
        queue.lpush("huey.redis.perfgate", copied)  # the replay
        queue.lpush("huey.redis.perfgate", b"0" * 64 + b":" + json.dumps(forged).encode())
        second = P.pull_request("labeled", number=8, head_sha="3" * 40, base_sha="2" * 40)
        assert deliver(web.test_client(), second).status_code == 202
        _wait(lambda: len(gh.dispatches) == 2 and set(deliveries(web).values()) == {"done"},
              "the second delivery done", worker, log)
        _wait(lambda: "was run before" in log.read_text(errors="replace"), "the replay dropped",
              worker, log)
        text = log.read_text(errors="replace")
        assert [d["inputs"]["head-sha"] for d in gh.dispatches] == ["1" * 40, "3" * 40]
        assert text.count("was run before (a replay): dropped") == 1
        assert text.count("not signed with the queue key") == 1
        assert "Traceback" not in text and "Unhandled" not in text and worker.poll() is None
    finally:
        stop(worker)
        web.extensions["perfgate"]["db"].dispose()
