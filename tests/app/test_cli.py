"""``perfgate serve`` / ``perfgate worker``: settings from the environment, one-line errors,
and the SQLite-backed queue shared by the web process and the worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runner.cli.main import main
from testkit import payloads as P
from testkit.services import free_port

from .conftest import CLIENT_OPTIONS
from .flow import deliver, deliveries

GITHUB_VARS = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET",
               "GITHUB_API_URL", "HUEY_URL", "REDIS_URL", "DATABASE_URL")


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in GITHUB_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERFGATE_HOME", str(tmp_path))
    return monkeypatch


@pytest.mark.parametrize("command,env,named", [
    ("worker", {}, "GITHUB_APP_ID"),  # `serve` with no GitHub setting at all serves /setup instead
    # the worker needs the App's id and key, not the webhook secret; the web process the secret
    ("worker", {"GITHUB_WEBHOOK_SECRET": P.SECRET}, "GITHUB_APP_ID"),
    ("serve", {"GITHUB_APP_ID": "12", "GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nx\n"},
     "GITHUB_WEBHOOK_SECRET"),
    *[(command, env, named) for command in ("serve", "worker") for env, named in [
    ({"GITHUB_APP_ID": "12"}, "GITHUB_PRIVATE_KEY"),
    ({"GITHUB_APP_ID": "12", "GITHUB_PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, "GITHUB_PRIVATE_KEY_PATH"),
    ({"GITHUB_APP_ID": "my-app"}, "GITHUB_APP_ID"),
    ({"GITHUB_WEBHOOK_SECRET": "a-long-random-string"}, "GITHUB_WEBHOOK_SECRET"),  # .env.example's
    ({"GITHUB_WEBHOOK_SECRET": "x"}, "GITHUB_WEBHOOK_SECRET"),
    ]],
])
def test_a_missing_setting_stops_start_up_naming_it(clean_env, capsys, command, env, named):
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert main([command]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0] and "Traceback" not in err[0]


def test_the_worker_refuses_the_in_process_queue(clean_env, capsys, app_private_key):
    for name, value in {"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": app_private_key,
                        "GITHUB_WEBHOOK_SECRET": P.SECRET, "HUEY_URL": "memory://"}.items():
        clean_env.setenv(name, value)
    assert main(["worker"]) == 2 and "HUEY_URL" in capsys.readouterr().err


def test_sqlite_queue_from_web_process_to_worker(app_env, tmp_path, fake_github):
    from bot import create_app
    from bot.cli import build_worker

    env = dict(app_env, HUEY_URL=f"sqlite:///{tmp_path / 'queue.db'}")
    web = create_app(env)
    fake_github.state.add_pull(P.REPO, 7, head_sha="1" * 40, base_sha="2" * 40, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "admin")
    assert deliver(web.test_client(), P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40)).status_code == 202
    assert fake_github.state.dispatches == [] and set(deliveries(web).values()) == {"queued"}

    worker = build_worker(env, client_options=CLIENT_OPTIONS)
    task = worker.huey.dequeue()
    worker.huey.execute(task)
    assert [d["inputs"]["head-sha"] for d in fake_github.state.dispatches] == ["1" * 40]
    assert set(deliveries(web).values()) == {"done"}
    assert worker.huey.dequeue() is None
    web.extensions["perfgate"]["db"].dispose()


def test_perfgate_serve_answers_webhooks(tmp_path, app_private_key):
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_"))}
    env.update(PERFGATE_HOME=str(tmp_path), PYTHONPATH=str(root), GITHUB_APP_ID="1", GITHUB_PRIVATE_KEY=app_private_key,
               GITHUB_WEBHOOK_SECRET=P.SECRET, GITHUB_API_URL="http://127.0.0.1:9", PERFGATE_LOG_LEVEL="WARNING")
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "serve", "--port", str(port)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        name, payload = P.ping()
        body = P.encode(payload)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/webhook", data=body, headers=P.headers(name, body))
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    assert response.status == 202
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError):  # not listening yet, or slow under load
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.stdout.read().decode(errors="replace")[-2000:]) from None
                time.sleep(0.2)
        assert (tmp_path / "huey.db").exists()  # the default queue: SQLite beside the database
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_perfgate_serve_without_credentials_serves_the_app_registration(tmp_path):
    """Without credentials ``perfgate serve`` prints a one-time setup link; only the browser
    that opens it gets the registration form (security review N4)."""
    import re

    port = free_port()
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_"))}
    env.update(PERFGATE_HOME=str(tmp_path), PYTHONPATH=str(root), PERFGATE_PUBLIC_URL="https://perfgate.example.com",
               GITHUB_API_URL="https://ghe.example.com/api/v3", PERFGATE_LOG_LEVEL="WARNING")
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "serve", "--port", str(port)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        printed = b""
        while b"/setup?token=" not in printed:
            line = proc.stdout.readline()
            assert line, printed.decode(errors="replace")
            printed += line
        token = re.search(rb"https://perfgate\.example\.com/setup\?token=([A-Za-z0-9_-]+)", printed).group(1).decode()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/setup", timeout=10)
                raise AssertionError("an anonymous visitor got the setup page")
            except urllib.error.HTTPError as exc:
                assert exc.code == 403 and "state=" not in exc.read().decode()
                break
            except (urllib.error.URLError, TimeoutError, ConnectionError):  # not listening yet, or slow under load
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.stdout.read().decode(errors="replace")[-2000:]) from None
                time.sleep(0.2)

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        with pytest.raises(urllib.error.HTTPError) as admitted:
            urllib.request.build_opener(NoRedirect).open(f"{base}/setup?token={token}", timeout=5)
        assert admitted.value.code == 302
        cookie = admitted.value.headers["Set-Cookie"].split(";")[0]
        form = urllib.request.Request(f"{base}/setup", headers={"Cookie": cookie})
        with urllib.request.urlopen(form, timeout=5) as response:
            html = response.read().decode()
        assert 'action="https://ghe.example.com/settings/apps/new?state=' in html
        assert "https://perfgate.example.com/webhook" in html
        with pytest.raises(urllib.error.HTTPError) as spent:  # the link works once
            urllib.request.urlopen(f"{base}/setup?token={token}", timeout=5)
        assert spent.value.code == 403
        with pytest.raises(urllib.error.HTTPError) as refused:  # the App itself is not there yet
            urllib.request.urlopen(urllib.request.Request(f"{base}/webhook", data=b"{}"), timeout=5)
        assert refused.value.code in (404, 503)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("public_url", [None, "http://127.0.0.1:{port}"])
def test_perfgate_serve_tried_locally_serves_the_pages_and_says_how_to_register(tmp_path,
                                                                                public_url):
    """Issue 47: with no PERFGATE_PUBLIC_URL, or the http loopback address the README allows,
    ``perfgate serve`` served nothing (a manifest needs https); now it serves the pages and the
    history, and its front page says how to register an App."""
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_", "PERFGATE_"))}
    env.update(PERFGATE_HOME=str(tmp_path), PYTHONPATH=str(root), PERFGATE_LOG_LEVEL="WARNING")
    if public_url:
        env["PERFGATE_PUBLIC_URL"] = public_url.format(port=port)
    proc = subprocess.Popen([sys.executable, "-m", "runner.cli", "serve", "--port", str(port)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        printed = proc.stdout.readline()
        while b"serving the pages" not in printed:
            line = proc.stdout.readline()
            assert line, printed.decode(errors="replace")
            printed += line
        assert b"PERFGATE_PUBLIC_URL" in printed and b"Traceback" not in printed
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
                    page = response.read().decode()
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert "No GitHub App yet" in page and "<h2>History</h2>" in page
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_perfgate_sweep_queues_lost_work_for_the_running_consumers(app_env, tmp_path, fake_github, monkeypatch, capsys):
    """A delivery whose worker died (queued, its job gone) is queued again by ``perfgate sweep``
    once it is older than ``--stale-after``; a fresh one is left to its job."""
    import datetime as dt

    from bot import create_app
    from bot.app.store import store as app_store
    from bot.cli import build_worker

    env = dict(app_env, HUEY_URL=f"sqlite:///{tmp_path / 'queue.db'}")
    web = create_app(env)
    fake_github.state.add_pull(P.REPO, 7, head_sha="1" * 40, base_sha="2" * 40, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "admin")
    deliver(web.test_client(), P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40), delivery="d-old")
    deliver(web.test_client(), P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40), delivery="d-new")
    worker = build_worker(env, client_options=CLIENT_OPTIONS)
    worker.huey.flush()  # the queue lost both jobs (a wiped Redis, a killed consumer)
    with web.extensions["perfgate"]["db"].session() as session, session.begin():
        old = app_store.get_delivery(session, "d-old")
        old.received_at -= dt.timedelta(minutes=5)
        old.queued_at -= dt.timedelta(minutes=5)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["sweep", "--stale-after", "120"]) == 0
    assert "1 lost deliveries queued again" in capsys.readouterr().out
    assert worker.huey.pending_count() == 1
    worker.huey.execute(worker.huey.dequeue())
    assert deliveries(web) == {"d-old": "done", "d-new": "queued"}
    assert len(fake_github.state.dispatches) == 1
    assert main(["sweep", "--stale-after", "0"]) == 2
    for bad in ("-1", "nan", "inf"):
        assert main(["sweep", "--stale-after", "120", "--reconcile-after", bad]) == 2
        assert main(["sweep", "--stale-after", bad]) == 2
    assert main(["sweep", "--stale-after", "120", "--reconcile-after", "0"]) == 0
    assert "0 commits' check runs reconciled" in capsys.readouterr().out
    web.extensions["perfgate"]["db"].dispose()
