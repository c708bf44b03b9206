"""Who may read the App's pages and JSON (security review F11): by default only public
repositories are shown; signing in with GitHub (the App's OAuth web flow, against the fake
GitHub) shows a private repository to those GitHub lets read it; ``all`` opens everything."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from bot import create_app
from testkit import payloads as P
from tests.history.factory import populate

from .flow import deliver

SECRET_REPO = "octo/secret"
SESSION_SECRET = "s" * 40


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_repo(SECRET_REPO, private=True)
    for repo in (P.REPO, SECRET_REPO):
        fake_github.state.add_pull(repo, 7, head_sha="a" * 40, base_sha="b" * 40, labels=["performance"])
        fake_github.state.set_permission(repo, "maintainer", "write")
    return fake_github


def _runs(app):
    from bot.app.store import store as app_store

    with app.extensions["perfgate"]["db"].session() as s:
        return {r.repository: r.key for r in app_store.recent_runs(s)}


def _label_both(client):
    for repo, private in ((P.REPO, False), (SECRET_REPO, True)):
        deliver(client, P.pull_request("labeled", head_sha="a" * 40, base_sha="b" * 40, labels=("performance",),
                                       repo=repo, private=private))


def test_by_default_only_public_repositories_are_shown(app, client, gh):
    _label_both(client)
    runs = _runs(app)
    with app.extensions["perfgate"]["db"].session() as s, s.begin():
        populate(s)  # a history of acme/kernels, reported public by populate ...
        from bot.app.store import store as app_store
        from bot.db import utc_now
        from bot.history import store as history_store

        # ... then made private on GitHub
        app_store.record_visibility(s, "acme/kernels", True, utc_now())
        history_store.get_or_create_repository(s, "acme/unknown")  # stored from the CLI: never reported
    assert client.get(f"/runs/{runs[P.REPO]}").status_code == 200
    assert client.get(f"/api/runs/{runs[P.REPO]}").status_code == 200
    for path in (f"/runs/{runs[SECRET_REPO]}", f"/api/runs/{runs[SECRET_REPO]}", "/acme/kernels",
                 "/api/acme/kernels", "/api/acme/kernels/series", "/api/acme/kernels/alerts", "/acme/unknown",
                 "/api/acme/unknown"):
        assert client.get(path).status_code == 404, path
    index = client.get("/").get_data(as_text=True)
    assert runs[P.REPO][:10] in index and SECRET_REPO not in index and runs[SECRET_REPO][:10] not in index
    # the front page lists no hidden history, and says why history can be hidden (issue 47)
    assert "acme/unknown" not in index and "acme/kernels" not in index
    assert "PERFGATE_READ_ACCESS=all" in index


def test_privatized_and_publicized_events_update_what_is_shown(app, client, gh):
    _label_both(client)
    key = _runs(app)[P.REPO]
    name, payload = P.pull_request("labeled", head_sha="a" * 40, base_sha="b" * 40)
    event = {"action": "privatized", "repository": dict(payload["repository"], private=True),
             "sender": payload["sender"], "installation": payload["installation"]}
    import json
    import uuid

    body = json.dumps(event).encode()
    assert client.post("/webhook", data=body, headers=P.headers("repository", body, delivery=str(uuid.uuid4()))).status_code == 202
    assert client.get(f"/runs/{key}").status_code == 404


@pytest.fixture
def oauth_app(app_env, gh):
    gh.state.add_oauth_app("Iv1.perfgate", "oauth-client-secret")
    flask_app = create_app({**app_env, "GITHUB_CLIENT_ID": "Iv1.perfgate", "GITHUB_CLIENT_SECRET": "oauth-client-secret",
                            "PERFGATE_SESSION_SECRET": SESSION_SECRET})
    yield flask_app
    flask_app.extensions["perfgate"]["db"].dispose()


def _sign_in(client, gh, next_path: str):
    """The browser's round trip: /login → GitHub's authorize page → /login/callback."""
    start = client.get(f"/login?next={next_path}")
    assert start.status_code == 302
    authorize = start.headers["Location"]
    assert authorize.startswith(f"{gh.url}/login/oauth/authorize?")
    query = parse_qs(urlsplit(authorize).query)
    assert query["client_id"] == ["Iv1.perfgate"] and query["state"][0]
    assert query["redirect_uri"] == ["https://perfgate.example.org/login/callback"]
    back = requests.get(authorize, allow_redirects=False, timeout=10)
    assert back.status_code == 302
    callback = urlsplit(back.headers["Location"])
    return client.get(f"{callback.path}?{callback.query}")


def test_signing_in_with_github_shows_private_repositories_to_those_who_may_read_them(oauth_app, gh):
    client = oauth_app.test_client()
    _label_both(client)
    key = _runs(oauth_app)[SECRET_REPO]
    # a visitor is sent to sign in for a page, and gets 404 from the JSON API
    page = client.get(f"/runs/{key}")
    assert page.status_code == 302 and page.headers["Location"] == f"/login?next=/runs/{key}"
    assert client.get(f"/api/runs/{key}").status_code == 404

    gh.state.sign_in("alice", {SECRET_REPO})
    done = _sign_in(client, gh, f"/runs/{key}")
    assert done.status_code == 302 and done.headers["Location"] == f"/runs/{key}"
    assert client.get(f"/runs/{key}").status_code == 200
    assert client.get(f"/api/runs/{key}").json["repository"] == SECRET_REPO
    assert "Signed in as alice" in client.get("/").get_data(as_text=True)
    token_calls = [r for r in gh.requests if r.operation_id == "oauth/access-token"]
    assert len(token_calls) == 1 and token_calls[0].body["client_secret"] == "oauth-client-secret"
    # the answer is cached in the session: no second question to GitHub
    asked = len(gh.calls("repos/get"))
    client.get(f"/api/runs/{key}")
    assert len(gh.calls("repos/get")) == asked

    other = oauth_app.test_client()
    gh.state.sign_in("bob")  # signed in, but GitHub does not let bob read octo/secret
    assert _sign_in(other, gh, "/").status_code == 302
    assert other.get(f"/runs/{key}").status_code == 404
    assert other.get(f"/api/runs/{key}").status_code == 404
    assert other.get("/logout").status_code == 302


def test_the_sign_in_rejects_forged_state_tampered_cookies_and_foreign_redirects(oauth_app, gh):
    client = oauth_app.test_client()
    gh.state.sign_in("alice", {SECRET_REPO})
    start = client.get("/login?next=https://evil.example/")
    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    callback = urlsplit(back.headers["Location"])
    forged = {k: v[0] for k, v in parse_qs(callback.query).items()}
    assert client.get(f"{callback.path}?code={forged['code']}&state=forged").status_code == 400
    # a fresh attempt works, and never leaves the site
    assert _sign_in(client, gh, "https://evil.example/").headers["Location"] == "/"
    # Flask's signed cookie session is not used: one signed even with the real secret grants nothing
    _label_both(client)
    key = _runs(oauth_app)[SECRET_REPO]
    assert client.get(f"/api/runs/{key}").status_code == 200
    from flask.sessions import SecureCookieSessionInterface
    from itsdangerous import URLSafeTimedSerializer

    interface = SecureCookieSessionInterface()
    forged_cookie = URLSafeTimedSerializer(SESSION_SECRET, salt=interface.salt, serializer=interface.serializer,
                                           signer_kwargs={"key_derivation": "hmac", "digest_method": interface.digest_method}
                                           ).dumps({"login": "alice", "token": "ghu_x", "access": {SECRET_REPO: [True, 9e12]}})
    stranger = oauth_app.test_client()
    stranger.set_cookie("session", forged_cookie)
    assert stranger.get(f"/api/runs/{key}").status_code == 404


def test_read_access_settings_are_checked_at_start(app_env):
    from runner.errors import UserError

    with pytest.raises(UserError, match="PERFGATE_READ_ACCESS"):
        create_app({**app_env, "PERFGATE_READ_ACCESS": "everyone"})
    with pytest.raises(UserError, match="GITHUB_CLIENT_SECRET"):
        create_app({**app_env, "GITHUB_CLIENT_ID": "Iv1.x"})
    with pytest.raises(UserError, match="PERFGATE_SESSION_SECRET"):
        create_app({**app_env, "GITHUB_CLIENT_ID": "Iv1.x", "GITHUB_CLIENT_SECRET": "y"})
    everything = create_app({**app_env, "PERFGATE_READ_ACCESS": "all"})
    with everything.extensions["perfgate"]["db"].session() as s, s.begin():
        from bot.history import store as history_store

        history_store.get_or_create_repository(s, "acme/unknown")
    assert everything.test_client().get("/api/acme/unknown").status_code == 200
    assert ('<a href="/acme/unknown">acme/unknown</a>'
            in everything.test_client().get("/").get_data(as_text=True))
    everything.extensions["perfgate"]["db"].dispose()
