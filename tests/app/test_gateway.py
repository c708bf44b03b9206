"""bot.app.github.gateway against the fake GitHub: the sticky comment is found and edited (never
duplicated, never someone else's), permissions fold to none, the target's config is read,
artifact downloads follow the redirect without the token and stop at the size limit."""

from __future__ import annotations

import pytest

from bot.app.github.gateway import Gateway
from bot.app.github.github_errors import ArtifactTooLarge, GitHubError
from runner.config import from_texts
from runner.errors import ConfigError
from runner.report import MARKER
from testkit import payloads as P
from testkit.app_fakes import results_zip
from testkit.results_doc import results_doc

from .conftest import CLIENT_OPTIONS


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha="1" * 40, base_sha="2" * 40)
    return fake_github


@pytest.fixture
def client(gh, app_private_key):
    return Gateway("12345", app_private_key, gh.url, CLIENT_OPTIONS).installation(P.INSTALLATION)


def test_sticky_comment_is_ours_and_single(gh, client):
    action = gh.state.create_comment(P.REPO, 7, MARKER + "\nstandalone action report", "github-actions[bot]", "Bot")
    ours = gh.state.create_comment(P.REPO, 7, MARKER + "\nold", "perfgate[bot]", "Bot")
    assert client.upsert_sticky(P.REPO, 7, MARKER + "\nnew") == ours.id
    assert gh.state.comments[ours.id].body.endswith("new")
    assert gh.state.comments[action.id].body.endswith("standalone action report")
    del gh.state.comments[ours.id]  # someone deleted it: the stored id is stale
    new_id = client.upsert_sticky(P.REPO, 7, MARKER + "\nagain", comment_id=ours.id)
    assert new_id != ours.id and gh.state.comments[new_id].login == "perfgate[bot]"
    assert len([c for c in gh.state.issue_comments(P.REPO, 7) if c.login == "perfgate[bot]"]) == 1


def test_permissions(gh, client):
    gh.state.set_permission(P.REPO, "m", "maintain")
    gh.state.set_permission(P.REPO, "t", "triage")
    assert [client.permission(P.REPO, u) for u in ("m", "t", "stranger")] == ["write", "read", "none"]


def test_config_texts(gh, client, scene):
    assert from_texts(client.config_texts(P.REPO))[0].label == "performance"
    scene.files[(P.REPO, "pyproject.toml")] = '[project]\nname = "x"\n[tool.perfgate]\nlabel = "perf"\nfail_threshold = 0.1\n'
    config = from_texts(client.config_texts(P.REPO, "main"))[0]
    assert (config.label, config.fail_threshold) == ("perf", 0.1)
    scene.files[(P.REPO, "perfgate.toml")] = "label = [broken"
    assert client.config_texts(P.REPO) == {"perfgate.toml": "label = [broken"}  # the first file that exists wins
    with pytest.raises(ConfigError, match="perfgate.toml: not valid TOML"):
        from_texts(client.config_texts(P.REPO))


def test_artifact_download_and_limit(gh, client, scene):
    data = results_zip(results_doc())
    gh.state.workflow_runs[99] = {"id": 99, "repo": P.REPO, "status": "completed", "conclusion": "success"}
    scene.artifacts[99] = [("perfgate-results-k", data)]
    (artifact,) = client.artifacts(P.REPO, 99)
    assert artifact.name == "perfgate-results-k" and artifact.size_in_bytes == len(data)
    assert client.download(artifact.archive_download_url, limit=1 << 20) == data
    with pytest.raises(ArtifactTooLarge):
        client.download(artifact.archive_download_url, limit=100)


def test_dispatch_errors_carry_the_status(gh, client, scene):
    scene.failures["actions/create-workflow-dispatch"] = 404
    with pytest.raises(GitHubError) as info:
        client.dispatch_workflow(P.REPO, "perfgate.yml", "main", {"head-sha": "1" * 40})
    assert info.value.status == 404 and "perfgate.yml" in str(info.value)
    gh.violations.clear()


def test_github_timeout_setting_bounds_every_call(github_openapi, app_private_key, tmp_path):
    """``PERFGATE_GITHUB_TIMEOUT``: a GitHub that holds the answer longer is a GitHubError
    (status 0) after about that long — REST calls and the artifact download alike."""
    import time

    from bot.app.runtime import build_runtime
    from bot.db import open_database
    from bot.settings import load_settings
    from testkit.fake_github import FakeGitHub, Faults

    with FakeGitHub(github_openapi, faults=Faults(1.0, kinds=("timeout",), hang=4.0)) as slow:
        slow.state.add_pull(P.REPO, 7, head_sha="1" * 40, base_sha="2" * 40)
        settings = load_settings({"GITHUB_APP_ID": "12345", "GITHUB_PRIVATE_KEY": app_private_key,
                                  "GITHUB_WEBHOOK_SECRET": P.SECRET, "GITHUB_API_URL": slow.url, "HUEY_URL": "memory://",
                                  "PERFGATE_HOME": str(tmp_path), "PERFGATE_GITHUB_TIMEOUT": "1"})
        db = open_database(f"sqlite:///{tmp_path / 'perfgate.db'}")
        client = build_runtime(settings, db, client_options={"retry": None}).client_for(P.INSTALLATION)
        for call in (lambda: client.pull(P.REPO, 7),
                     lambda: client.download(f"{slow.url}/repos/{P.REPO}/actions/artifacts/1/zip", 1000)):
            started = time.monotonic()
            with pytest.raises(GitHubError) as info:
                call()
            assert info.value.status == 0 and time.monotonic() - started < 3.5
        db.dispose()


def test_a_rate_limit_is_not_a_refusal_nor_a_missing_file(github_openapi, app_private_key):
    """A secondary rate limit answers 403 like a refusal: the permission and the config file
    must not read it as "none" / "no file" (a maintainer refused, the default config used)."""
    from testkit.fake_github import FakeGitHub, Faults

    with FakeGitHub(github_openapi, faults=Faults(1.0, kinds=("secondary-rate-limit",))) as limited:
        limited.state.set_permission(P.REPO, "maintainer", "maintain")
        client = Gateway("12345", app_private_key, limited.url, CLIENT_OPTIONS).installation(P.INSTALLATION)
        with pytest.raises(GitHubError) as info:
            client.permission(P.REPO, "maintainer")
        assert info.value.status == 403 and info.value.transient
        with pytest.raises(GitHubError) as info:
            client.config_texts(P.REPO, "main")
        assert info.value.transient


def test_a_refusal_still_reads_as_none(gh, client):
    assert client.permission(P.REPO, "stranger") == "none"  # 404: not a collaborator
    assert client.config_texts(P.REPO, "main") == {"perfgate.toml": None, "pyproject.toml": None}
