"""Each process gets only what it needs, and the webhook secret must be one (security review N8):
the web process runs with the webhook secret and no App key, the worker with the key and no
webhook secret; short, repeated or example webhook secrets stop start-up; sign-in only over
https (or loopback); the queue's URL is judged for a password and TLS."""

from __future__ import annotations

import pytest

from bot import create_app
from bot.app.queue import queue_warning
from bot.settings import (EXAMPLE_SECRETS, MIN_WEBHOOK_SECRET, MissingSetting, check_webhook_secret,
                          is_loopback_url, load_settings)
from runner.errors import UserError
from testkit import payloads as P

KEY = "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n"


def test_the_web_process_runs_with_the_webhook_secret_alone(app_env, tmp_path):
    web_env = {k: v for k, v in app_env.items() if k not in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY")}
    settings = load_settings(web_env)
    assert settings.has_intake and not settings.has_app and settings.private_key is None
    with pytest.raises(UserError, match="memory://"):  # its jobs would run here, without the key
        create_app(web_env)
    web = create_app(dict(web_env, HUEY_URL=f"sqlite:///{tmp_path / 'q.db'}"))
    try:
        assert web.extensions["perfgate"]["runtime"] is None
        queue = web.extensions["perfgate"]["queue"]
        with pytest.raises(MissingSetting, match="perfgate worker"):
            queue.runtime()  # nothing here could run a job
        body = P.encode(P.ping()[1])
        assert web.test_client().post("/webhook", data=body, headers=P.headers("ping", body)).status_code == 202
    finally:
        web.extensions["perfgate"]["db"].dispose()


def test_the_worker_runs_with_the_key_and_no_webhook_secret():
    settings = load_settings({"GITHUB_APP_ID": "7", "GITHUB_PRIVATE_KEY": KEY})
    assert settings.has_app and not settings.has_intake and settings.require_app() is settings
    with pytest.raises(MissingSetting, match="GITHUB_WEBHOOK_SECRET"):
        settings.require_intake()
    with pytest.raises(MissingSetting, match="GITHUB_WEBHOOK_SECRET"):  # a web process given the key, not the secret
        create_app({"GITHUB_APP_ID": "7", "GITHUB_PRIVATE_KEY": KEY, "DATABASE_URL": "sqlite://"})
    with pytest.raises(MissingSetting, match="GITHUB_APP_ID"):
        load_settings({"GITHUB_PRIVATE_KEY": KEY})
    with pytest.raises(MissingSetting, match="GITHUB_PRIVATE_KEY"):
        load_settings({"GITHUB_APP_ID": "7"})


@pytest.mark.parametrize("secret, accepted", [
    ("x", False), ("It's a Secret to Everybody", False),  # GitHub's documentation example: 26 characters
    ("a" * 64, False), ("abababab" * 8, False),  # long, but a few characters repeated
    ("0123456789abcdef0123456789abcde", False),  # 31
    ("0123456789abcdef0123456789abcdef", True),  # 32
    ("e340154128314309424b7c8e90325147d99fdafa", True),  # what GitHub's manifest flow hands out
    *[(example, False) for example in sorted(EXAMPLE_SECRETS)],
    ("Replace-With-The-Webhook-Secret-Of-Your-GitHub-App", False),
])
def test_webhook_secrets_that_are_not_secret_are_refused(secret, accepted):
    if accepted:
        assert check_webhook_secret(secret) == secret
        assert load_settings({"GITHUB_WEBHOOK_SECRET": secret}).webhook_secret == secret
        return
    with pytest.raises(UserError, match="GITHUB_WEBHOOK_SECRET") as refused:
        load_settings({"GITHUB_WEBHOOK_SECRET": secret})
    assert len(secret) < 4 or secret not in str(refused.value)  # the value itself is not echoed
    assert len(secret) < MIN_WEBHOOK_SECRET or "example" in str(refused.value) or "repeats" in str(refused.value)


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8000", True), ("http://localhost:8000", True), ("http://[::1]:8000", True),
    ("http://127.9.9.9", True), ("https://127.0.0.1", False), ("http://10.0.0.1", False),
    ("http://127.0.0.1.evil.example", False), ("http://localhost.evil.example", False), ("", False), (None, False),
])
def test_loopback_addresses(url, loopback):
    assert is_loopback_url(url) is loopback


@pytest.mark.parametrize("url, problems", [
    (None, None), ("sqlite:///q.db", None), ("rediss://:pw@redis.example.org:6380/0", None),
    ("redis://:pw@127.0.0.1:6379/0", None),
    ("rediss://redis.example.org:6380/0", ["no password"]),
    ("redis://:pw@redis:6379/0", ["no TLS"]),
    ("redis://redis:6379/0", ["no password", "no TLS"]),
])
def test_the_queue_url_is_judged_for_a_password_and_tls(url, problems):
    warning = queue_warning(url)
    if problems is None:
        assert warning is None
    else:
        assert warning is not None and all(p in warning for p in problems) and "pw" not in warning


@pytest.mark.parametrize("key, accepted", [
    ("x" * 31, False), ("abababab" * 8, False),
    ("replace-with-a-random-queue-key-of-64-hex-digits", False),
    ("0123456789abcdef0123456789abcdef", True), (None, True),  # unset: $PERFGATE_HOME/queue.key
])
def test_the_queue_key_must_be_a_secret_too(key, accepted, tmp_path):
    """PERFGATE_QUEUE_KEY signs the queue's messages (review P10): refused like a webhook secret;
    unset, a key file in $PERFGATE_HOME is made once, mode 0600, and read back the same."""
    from bot.app.queue import queue_key

    source = {"GITHUB_WEBHOOK_SECRET": "e340154128314309424b7c8e90325147d99fdafa"}  # a web process
    source.update({"PERFGATE_QUEUE_KEY": key} if key else {})
    if not accepted:
        with pytest.raises(UserError, match="PERFGATE_QUEUE_KEY"):
            load_settings(source)
        return
    assert load_settings(source).queue_key == key
    made = queue_key(tmp_path / "home")
    assert len(made) == 64 and queue_key(tmp_path / "home") == made
    assert (tmp_path / "home" / "queue.key").stat().st_mode & 0o777 == 0o600
