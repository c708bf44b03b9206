"""Registering the App from a manifest: the manifest (pure), and the setup pages of a server
without credentials, against the fake GitHub (the conversion call validated against GitHub's
OpenAPI description)."""

from __future__ import annotations

import json
import re
import stat
from html import unescape
from pathlib import Path

import pytest

from bot.app.core.manifest import EVENTS, PERMISSIONS, app_manifest, registration_url, settings_file
from runner.errors import UserError
from tests.fake_github.fixtures import fake_github, github_openapi  # noqa: F401

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_manifest_points_github_at_this_server():
    manifest = app_manifest("https://perfgate.example.com/app/")
    assert manifest["hook_attributes"] == {"url": "https://perfgate.example.com/app/webhook", "active": True}
    assert manifest["redirect_url"] == "https://perfgate.example.com/app/setup/callback"
    assert manifest["callback_urls"] == ["https://perfgate.example.com/app/login/callback"]
    assert manifest["default_permissions"] == PERMISSIONS and manifest["public"] is False


def test_the_readme_lists_the_permissions_and_events_the_manifest_asks_for():
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    for name, access in PERMISSIONS.items():
        assert f"`{name}: {access}`" in readme
    sentence = readme.split("and the events", 1)[1].split(".", 1)[0]
    assert [e.strip(" ,") for e in re.findall(r"[a-z_]+", sentence.split("(")[0])] == list(EVENTS)


@pytest.mark.parametrize("url", ["http://perfgate.example.com", "perfgate.example.com", "https://x.example/?a=1", ""])
def test_a_webhook_address_github_would_not_use_is_refused(url):
    with pytest.raises(UserError, match="https://"):
        app_manifest(url)


def test_registration_url_for_a_user_and_an_organization():
    assert registration_url("https://github.com") == "https://github.com/settings/apps/new"
    assert registration_url("https://ghe.corp/", "ml-infra", "s t") == \
        "https://ghe.corp/organizations/ml-infra/settings/apps/new?state=s%20t"
    with pytest.raises(UserError):
        registration_url("https://github.com", "../evil")


def test_settings_file_refuses_line_breaks_that_would_add_settings():
    with pytest.raises(ValueError):
        settings_file({"id": 1, "webhook_secret": "a\nGITHUB_API_URL=https://evil"}, "/k.pem", "s" * 48)
    text = settings_file({"id": 7, "webhook_secret": "s", "client_id": "Iv1", "client_secret": "c", "slug": "pg"},
                         "/k.pem", "x" * 48)
    assert "GITHUB_APP_ID=7\n" in text and "GITHUB_PRIVATE_KEY_PATH=/k.pem\n" in text and "GITHUB_CLIENT_ID=Iv1\n" in text
    assert f"PERFGATE_SESSION_SECRET={'x' * 48}\n" in text


@pytest.fixture
def setup_app(tmp_path, fake_github):  # noqa: F811
    from bot import create_app
    from bot.web.setup import init_setup
    from bot.app.github.github_errors import TESTING_CLIENT_OPTIONS

    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", "PERFGATE_HOME": str(tmp_path),
                      "TESTING": "1"})
    options = {k: v for k, v in TESTING_CLIENT_OPTIONS.items() if k != "seconds_between_writes"}
    token = init_setup(app, home=tmp_path / "home", public_url="https://perfgate.example.com",
                       github_url="https://github.com", api_url=fake_github.url, client_options=options)
    return app, tmp_path / "home", fake_github, token


def operator(app, token):
    """The operator's browser, admitted with the setup link ``perfgate serve`` printed."""
    client = app.test_client()
    admitted = client.get(f"/setup?token={token}")
    assert admitted.status_code == 302 and admitted.headers["Location"] == "/setup"
    cookie = admitted.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "Secure" in cookie and "SameSite=Lax" in cookie and "Path=/setup" in cookie
    return client


def page_state(client, query: str = "") -> str:
    html = client.get(f"/setup{query}").get_data(as_text=True)
    return re.search(r'state=([A-Za-z0-9_-]+)"', html).group(1)


def test_setup_page_posts_the_manifest_to_github_only(setup_app):
    app, _, _, token = setup_app
    client = operator(app, token)
    response = client.get("/setup?organization=ml-infra")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    action = unescape(re.search(r'<form action="([^"]+)"', html).group(1))
    state = page_state(client)
    assert re.fullmatch(r"https://github.com/organizations/ml-infra/settings/apps/new\?state=[A-Za-z0-9_-]{32}", action)
    assert action.rsplit("=", 1)[1] != state  # each visit hands out its own state
    manifest = json.loads(unescape(re.search(r'name="manifest" value="([^"]+)"', html).group(1)))
    assert manifest["hook_attributes"]["url"] == "https://perfgate.example.com/webhook"
    assert response.headers["Content-Security-Policy"].endswith("form-action https://github.com")


def test_callback_stores_the_credentials_once_with_mode_0600(setup_app):
    app, home, github, token = setup_app
    client = operator(app, token)
    state = page_state(client)
    assert client.get("/setup/callback?code=abc123&state=wrong").status_code == 403
    assert github.calls("apps/create-from-manifest") == []

    response = client.get(f"/setup/callback?code=abc123&state={state}")
    assert response.status_code == 200, response.get_data(as_text=True)
    page = response.get_data(as_text=True)
    assert len(github.calls("apps/create-from-manifest")) == 1
    env, key = home / "github-app.env", home / "github-app.pem"
    for path in (env, key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert str(home) not in page and "$PERFGATE_HOME/github-app.env" in page  # no absolute path on the page
    values = dict(line.split("=", 1) for line in env.read_text().splitlines() if not line.startswith("#"))
    assert values["GITHUB_PRIVATE_KEY_PATH"] == str(key) and values["GITHUB_APP_ID"].isdigit()
    assert f"id {values['GITHUB_APP_ID']}" in page  # the operator sees which App was registered
    assert "PRIVATE KEY" in key.read_text()
    from bot.settings import load_settings

    settings = load_settings({**values, "GITHUB_PRIVATE_KEY_PATH": str(key)})  # the file as the App reads it
    assert str(settings.app_id) == values["GITHUB_APP_ID"] and settings.has_app and settings.oauth

    # A second callback (a replay, or a second tab) changes nothing and calls GitHub no more.
    again = client.get(f"/setup/callback?code=abc123&state={state}")
    assert again.status_code == 200 and f"id {values['GITHUB_APP_ID']}" in again.get_data(as_text=True)
    assert len(github.calls("apps/create-from-manifest")) == 1
    # anyone else: refused, without a word about which App or where its files are
    stranger = app.test_client().get("/setup")
    assert stranger.status_code == 410 and f"id {values['GITHUB_APP_ID']}" not in stranger.get_data(as_text=True)
    assert "registered its App already" in stranger.get_data(as_text=True)


def test_a_malformed_or_refused_code_stores_nothing(tmp_path, github_openapi):  # noqa: F811
    from bot import create_app
    from bot.web.setup import init_setup
    from testkit.fake_github.server import FakeGitHub

    def expired(ctx):
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}

    with FakeGitHub(github_openapi, handlers={"apps/create-from-manifest": expired}) as github:
        app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", "TESTING": "1"})
        token = init_setup(app, home=tmp_path / "home", public_url="https://perfgate.example.com",
                           github_url="https://github.com", api_url=github.url, client_options={"retry": None})
        client = operator(app, token)
        assert client.get(f"/setup/callback?code=bad%20code&state={page_state(client)}").status_code == 400
        assert github.calls("apps/create-from-manifest") == []
        response = client.get(f"/setup/callback?code=expired1&state={page_state(client)}")
        assert response.status_code == 502 and "valid for one hour" in response.get_data(as_text=True)
        assert len(github.calls("apps/create-from-manifest")) == 1
        github.assert_no_violations()
    assert not (tmp_path / "home").exists()
