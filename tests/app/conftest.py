"""Fixtures of the App's tests: the shared fake GitHub (with workflow-run artifacts and
repository files), an App key pair, and an App (``bot.create_app``)
on a fresh SQLite database — or a throwaway PostgreSQL the tests start when it is installed."""

from __future__ import annotations


# PyGithub attaches a logging handler to the stream of its first import (see tests/action).
import github  # noqa: F401
import pytest

from bot.app.github.github_errors import TESTING_CLIENT_OPTIONS
from testkit import app_fakes
from testkit.fake_github import FakeGitHub
from testkit.payloads import SECRET, private_key
from tests.fake_github.fixtures import github_openapi  # noqa: F401


#: PyGithub without retries or pacing sleeps (GITHUB.md: never sleep in tests); what
#: ``bot.app.runtime.build_runtime`` also uses when ``TESTING`` is set.
CLIENT_OPTIONS = TESTING_CLIENT_OPTIONS


@pytest.fixture(scope="session")
def app_private_key() -> str:
    return private_key()


@pytest.fixture
def scene():
    scene = app_fakes.AppScene()
    server = app_fakes.BlobServer(scene)
    yield scene
    server.stop()


@pytest.fixture
def fake_github(github_openapi, scene):  # noqa: F811
    with FakeGitHub(github_openapi, handlers=app_fakes.handlers(scene)) as gh:
        gh.state.add_repo("octo/demo")
        gh.state.add_token("ghs_nobody")  # from now on only minted installation tokens are accepted
        yield gh
        gh.assert_no_violations()




@pytest.fixture
def app_env(database_url, tmp_path, fake_github, app_private_key) -> dict[str, str]:
    return {"DATABASE_URL": database_url, "PERFGATE_HOME": str(tmp_path / "home"), "TESTING": "1",
            "GITHUB_APP_ID": "12345", "GITHUB_PRIVATE_KEY": app_private_key, "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake_github.url, "GITHUB_SERVER_URL": "https://github.com", "HUEY_URL": "memory://",
            "PERFGATE_PUBLIC_URL": "https://perfgate.example.org"}


@pytest.fixture
def app(app_env):
    from bot import create_app

    flask_app = create_app(app_env)
    yield flask_app
    flask_app.extensions["perfgate"]["db"].dispose()


@pytest.fixture
def client(app):
    return app.test_client()
