"""The fake GitHub itself: it must refuse what GitHub's description refuses, and answer what
PyGithub asks in GitHub's shapes."""

from __future__ import annotations

import time

import pytest
import requests

REPO = "octo/demo"


@pytest.fixture
def gh(fake_github):
    from github import Auth, Github

    fake_github.state.add_pull(REPO, 7, head_sha="a" * 40, base_sha="b" * 40, title="Fuse", labels=["performance"])
    client = Github(auth=Auth.Token("t"), base_url=fake_github.url, seconds_between_requests=0,
                    seconds_between_writes=0, retry=None)
    yield client
    client.close()


def test_spec_prefers_literal_segments(github_openapi):
    op, params = github_openapi.match("GET", "/repos/o/r/issues/comments/5")
    assert op.operation_id == "issues/get-comment" and params == {"owner": "o", "repo": "r", "comment_id": "5"}
    op, params = github_openapi.match("GET", "/repos/o/r/issues/5/comments")
    assert op.operation_id == "issues/list-comments"
    assert github_openapi.match("GET", "/repos/o/r/no-such-thing") is None


def test_undocumented_operation_is_refused_and_recorded(fake_github):
    response = requests.post(f"{fake_github.url}/repos/{REPO}/issues/7/remarks", json={"body": "x"}, timeout=5)
    assert response.status_code == 404 and "not a documented operation" in response.json()["message"]
    assert fake_github.violations == [f"POST /repos/{REPO}/issues/7/remarks: no documented operation"]
    with pytest.raises(AssertionError, match="no documented operation"):
        fake_github.assert_no_violations()
    fake_github.violations.clear()


@pytest.mark.parametrize("method, path, body, fragment", [
    ("POST", f"/repos/{REPO}/issues/7/comments", {"text": "hi"}, "'body' is a required property"),
    ("POST", f"/repos/{REPO}/issues/7/comments", {"body": 5}, "5 is not of type 'string'"),
    ("POST", f"/repos/{REPO}/issues/comments/1/reactions", {"content": "party"}, "is not one of"),
    ("POST", f"/repos/{REPO}/check-runs", {"name": "perfgate", "head_sha": "a" * 40, "status": "done"}, "status"),
    ("GET", f"/repos/{REPO}/issues/seven", None, "issue_number='seven' is not an integer"),
    ("GET", f"/repos/{REPO}/issues/7/comments?colour=red", None, "query parameter 'colour' is not documented"),
])
def test_requests_that_break_the_description_get_422(fake_github, method, path, body, fragment):
    response = requests.request(method, fake_github.url + path, json=body, timeout=5)
    assert response.status_code == 422, response.text
    assert any(fragment in v for v in fake_github.violations), fake_github.violations
    fake_github.violations.clear()


def test_tokens_read_only_and_unknown(fake_github, gh):
    from github import GithubException

    fake_github.state.add_token("t", read_only=True)
    issue = gh.get_repo(REPO).get_issue(7)
    assert issue.title == "Fuse"  # reads are allowed
    with pytest.raises(GithubException) as info:
        issue.create_comment("hello")
    assert info.value.status == 403 and "not accessible" in info.value.data["message"]
    response = requests.get(f"{fake_github.url}/repos/{REPO}", headers={"Authorization": "token nope"}, timeout=5)
    assert response.status_code == 401


def test_comments_paginate_like_github(fake_github, gh):
    for i in range(35):
        fake_github.state.create_comment(REPO, 7, f"comment {i}", "octocat", "User")
    bodies = [c.body for c in gh.get_repo(REPO).get_issue(7).get_comments()]
    assert bodies == [f"comment {i}" for i in range(35)]
    assert len(fake_github.calls("issues/list-comments")) == 2


def test_app_side_operations_keep_state(fake_github, gh):
    repo = gh.get_repo(REPO)
    fake_github.state.set_permission(REPO, "maint", "maintain")
    fake_github.state.set_permission(REPO, "tri", "triage")
    assert repo.get_collaborator_permission("maint") == "write"
    assert repo.get_collaborator_permission("tri") == "read"

    check = repo.create_check_run("perfgate", "a" * 40, status="queued", external_id="run-1",
                                  output={"title": "queued", "summary": "waiting for a GPU"})
    check.edit(status="completed", conclusion="failure", output={"title": "1 regression", "summary": "slower"})
    stored = fake_github.state.check_runs[check.id]
    assert stored["conclusion"] == "failure" and stored["status"] == "completed"
    assert repo.get_check_run(check.id).output.title == "1 regression"

    run = repo.get_workflow("perfgate.yml").create_dispatch(
        "main", {"base-sha": "b" * 40, "head-sha": "a" * 40, "run-id": "run-1"}, throw=True, return_run_details=True)
    assert fake_github.state.dispatches[0]["inputs"]["head-sha"] == "a" * 40
    assert run.id == fake_github.state.dispatches[0]["run_id"]

    comment = repo.get_pull(7).create_issue_comment("/perf run")
    comment.create_reaction("eyes")
    assert fake_github.state.reactions[0]["content"] == "eyes" and fake_github.state.reactions[0]["comment_id"] == comment.id


def test_operations_without_state_answer_the_documented_example(fake_github, gh):
    limits = gh.get_rate_limit()
    assert limits.resources.core.limit > 0
    assert fake_github.calls("rate-limit/get")[0].status == 200


def test_unknown_repository_is_404(fake_github, gh):
    from github import GithubException

    with pytest.raises(GithubException) as info:
        gh.get_repo("nobody/nothing").get_issue(1).create_comment("x")
    assert info.value.status == 404


def test_app_installation_token_through_pyGithub(fake_github):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from github import Auth, GithubIntegration

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    fake_github.state.add_repo(REPO)
    fake_github.state.add_token("unrelated")  # tokens registered: only minted ones are accepted
    integration = GithubIntegration(auth=Auth.AppAuth(123, key), base_url=fake_github.url)
    installation = integration.get_repo_installation("octo", "demo")
    assert installation.id == fake_github.state.installation_id
    gh = integration.get_github_for_installation(installation.id)
    fake_github.state.add_pull(REPO, 1, head_sha="a" * 40, base_sha="b" * 40)
    comment = gh.get_repo(REPO).get_issue(1).create_comment("queued")
    assert comment.user.login == "perfgate[bot]"


def test_oauth_web_flow_hands_out_one_user_token_per_code(fake_github):
    """The OAuth endpoints (GitHub's web host, not the REST description): codes are single-use,
    bound to the client, and the user token reads only what the user may."""
    from urllib.parse import parse_qs, urlsplit

    state = fake_github.state
    state.add_repo("octo/secret", private=True)
    state.add_repo("octo/open")
    state.add_oauth_app("Iv1.a", "s3cret")
    assert requests.get(f"{fake_github.url}/login/oauth/authorize?client_id=Iv1.a", timeout=5).status_code == 401
    state.sign_in("alice")
    back = requests.get(f"{fake_github.url}/login/oauth/authorize?client_id=Iv1.a&redirect_uri=https://x.example/cb"
                        "&state=st", allow_redirects=False, timeout=5)
    query = parse_qs(urlsplit(back.headers["Location"]).query)
    assert back.headers["Location"].startswith("https://x.example/cb?") and query["state"] == ["st"]
    post = {"client_id": "Iv1.a", "client_secret": "wrong", "code": query["code"][0]}
    answer = requests.post(f"{fake_github.url}/login/oauth/access_token", json=post,
                           headers={"Accept": "application/json"}, timeout=5).json()
    assert answer["error"] == "incorrect_client_credentials"
    post["client_secret"] = "s3cret"
    token = requests.post(f"{fake_github.url}/login/oauth/access_token", json=post,
                          headers={"Accept": "application/json"}, timeout=5).json()["access_token"]
    again = requests.post(f"{fake_github.url}/login/oauth/access_token", json=post,
                          headers={"Accept": "application/json"}, timeout=5).json()
    assert again["error"] == "bad_verification_code"
    headers = {"Authorization": f"Bearer {token}"}
    assert requests.get(f"{fake_github.url}/user", headers=headers, timeout=5).json()["login"] == "alice"
    assert requests.get(f"{fake_github.url}/repos/octo/secret", headers=headers, timeout=5).status_code == 404
    assert requests.get(f"{fake_github.url}/repos/octo/open", headers=headers, timeout=5).status_code == 200



def test_an_app_revokes_its_own_user_tokens_only(fake_github):
    """``DELETE /applications/{client_id}/token`` (HTTP Basic with the client's id and secret):
    the token stops working; wrong credentials or another client's token: 404, nothing revoked."""
    state = fake_github.state
    state.add_oauth_app("Iv1.a", "s3cret")
    state.add_oauth_app("Iv1.b", "other")
    state.add_token("ghs_other")  # tokens stay registered: unknown ones get 401
    state.add_token("ghu_a", login="alice", user_type="User", client_id="Iv1.a")
    url = f"{fake_github.url}/applications/Iv1.a/token"
    assert requests.delete(url, json={"access_token": "ghu_a"}, auth=("Iv1.a", "wrong"), timeout=5).status_code == 404
    assert requests.delete(f"{fake_github.url}/applications/Iv1.b/token", json={"access_token": "ghu_a"},
                           auth=("Iv1.b", "other"), timeout=5).status_code == 404
    assert requests.delete(url, json={"access_token": "ghu_a"}, headers={"Authorization": "Bearer ghu_a"},
                           timeout=5).status_code == 404
    assert state.revoked == [] and "ghu_a" in state.tokens
    assert requests.delete(url, json={"access_token": "ghu_a"}, auth=("Iv1.a", "s3cret"), timeout=5).status_code == 204
    assert state.revoked == ["ghu_a"]
    assert requests.get(f"{fake_github.url}/user", headers={"Authorization": "Bearer ghu_a"}, timeout=5).status_code == 401
    assert requests.delete(url, json={"access_token": "ghu_a"}, auth=("Iv1.a", "s3cret"), timeout=5).status_code == 404
    assert requests.delete(url, json={}, auth=("Iv1.a", "s3cret"), timeout=5).status_code == 422  # body per the spec
    fake_github.violations.clear()  # the last request broke the description on purpose

# -- faults -------------------------------------------------------------------------------------
def _faulty(github_openapi, **faults):
    from testkit.fake_github import FakeGitHub, Faults

    gh = FakeGitHub(github_openapi, faults=Faults(**faults)).start()
    gh.state.add_pull(REPO, 7, head_sha="a" * 40, base_sha="b" * 40)
    return gh


@pytest.mark.parametrize("kind, status, message", [("502", 502, "Server Error"),
                                                   ("503", 503, "Service Unavailable")])
def test_fault_mode_server_errors_carry_nothing_out(github_openapi, kind, status, message):
    gh = _faulty(github_openapi, fraction=1.0, kinds=(kind,))
    try:
        response = requests.post(f"{gh.url}/repos/{REPO}/issues/7/comments", json={"body": "hi"}, timeout=5)
        assert response.status_code == status and response.json()["message"] == message
        assert gh.state.issue_comments(REPO, 7) == [] and gh.requests[-1].fault == kind
    finally:
        gh.stop()


def test_fault_mode_secondary_rate_limit_is_what_pygithub_retries(github_openapi):
    from github.Requester import Requester

    gh = _faulty(github_openapi, fraction=1.0, kinds=("secondary-rate-limit",))
    try:
        response = requests.get(f"{gh.url}/repos/{REPO}/pulls/7", timeout=5)
        assert response.status_code == 403 and response.headers["Retry-After"] == "1"
        message = response.json()["message"]
        assert Requester.isRateLimitError(message) and not Requester.isPrimaryRateLimitError(message)
    finally:
        gh.stop()


def test_fault_mode_time_out_carries_the_write_out_late(github_openapi):
    gh = _faulty(github_openapi, fraction=1.0, kinds=("timeout",), hang=1.0)
    try:
        with pytest.raises(requests.Timeout):
            requests.post(f"{gh.url}/repos/{REPO}/issues/7/comments", json={"body": "hi"}, timeout=0.2)
        assert gh.requests[-1].fault == "timeout"
        for _ in range(50):  # the held request is answered once the hang is over
            if gh.state.issue_comments(REPO, 7):
                break
            time.sleep(0.1)
        assert [c.body for c in gh.state.issue_comments(REPO, 7)] == ["hi"]
    finally:
        gh.stop()


def test_fault_mode_hits_about_the_fraction_and_keeps_validating(github_openapi):
    from testkit.fake_github import Faults

    gh = _faulty(github_openapi, fraction=0.3, seed=7, kinds=("502", "503", "secondary-rate-limit"))
    try:
        statuses = [requests.get(f"{gh.url}/repos/{REPO}/pulls/7", timeout=5).status_code for _ in range(200)]
        faulted = sum(s != 200 for s in statuses)
        assert 40 <= faulted <= 80 and set(statuses) == {200, 403, 502, 503}
        assert faulted == sum(r.fault is not None for r in gh.requests)
        bad = requests.post(f"{gh.url}/repos/{REPO}/issues/7/comments", json={"text": "x"}, timeout=5)
        assert bad.status_code == 422 and gh.violations  # validation comes before any fault
    finally:
        gh.stop()
    with pytest.raises(ValueError):
        Faults(1.5)
    with pytest.raises(ValueError):
        Faults(0.1, kinds=("teapot",))
