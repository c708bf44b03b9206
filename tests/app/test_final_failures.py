"""A delivery that fails for good is ``abandoned``, not retried by the sweep for 6 hours
(security review N10 b); a transient failure is still ``failed`` and retried.

Real deliveries through ``POST /webhook`` against the fake GitHub; the worker's retries are
``executor.handle_delivery`` called again (what Huey does), the sweep is
``executor.lost_deliveries`` 16 minutes later."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.app.job import executor, sweeps
from bot.app.github.github_errors import GitHubError
from bot.app.job.shell import RETRIES
from bot.db import utc_now
from runner.errors import UserError
from testkit import payloads as P

from .flow import deliver, deliveries

HEAD, BASE = "1" * 40, "2" * 40


@pytest.mark.parametrize("exc, attempt, final", [
    (UserError("issue_comment delivery without an installation id"), 1, True),
    (GitHubError(422, "GitHub could not update the check run (HTTP 422)"), 1, False),  # Huey's retries first
    (GitHubError(422, "GitHub could not update the check run (HTTP 422)"), RETRIES + 1, True),
    (GitHubError(404, "GitHub could not read octo/gone (HTTP 404)"), RETRIES + 1, True),
    (GitHubError(403, "GitHub could not reply (HTTP 403)"), RETRIES + 1, True),
    (GitHubError(403, "x", "You have exceeded a secondary rate limit"), 9, False),
    (GitHubError(429, "x"), 9, False),
    (GitHubError(401, "GitHub could not create an installation token (HTTP 401)"), 9, False),  # the App's key
    (GitHubError(502, "x"), 9, False),
    (GitHubError(0, "could not reach GitHub"), 9, False),
    (RuntimeError("database is locked"), 9, False),
])
def test_which_failures_are_final(exc, attempt, final):
    assert executor.final_failure(exc, attempt) is final


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    return fake_github


def _swept(app) -> list[str]:
    return sweeps.lost_deliveries(app.extensions["perfgate"]["runtime"], utc_now() + dt.timedelta(minutes=16))


@pytest.mark.parametrize("installation", [None, 4711.0, 2 ** 70])
def test_a_delivery_without_a_usable_installation_is_abandoned_at_once(app, client, gh, installation):
    name, payload = P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))
    if installation is None:
        del payload["installation"]
    else:
        payload["installation"]["id"] = installation
    assert deliver(client, (name, payload), delivery="d-bad").status_code == 202  # schema-valid
    assert deliveries(app) == {"d-bad": "abandoned"} and gh.state.dispatches == []
    assert _swept(app) == []


def test_githubs_refusal_is_abandoned_after_the_jobs_own_retries(app, client, gh, scene):
    scene.failures["checks/create"] = 422
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)),
            delivery="d-refused")
    assert deliveries(app)["d-refused"] == "failed"  # a refusal may follow a write not yet replicated
    rt = app.extensions["perfgate"]["runtime"]
    for _ in range(RETRIES - 1):
        with pytest.raises(GitHubError):
            executor.handle_delivery(rt, "d-refused")  # Huey's retry: still failed
        assert deliveries(app)["d-refused"] == "failed"
    assert executor.handle_delivery(rt, "d-refused") == []  # the last of Huey's tries: settled
    assert deliveries(app)["d-refused"] == "abandoned"
    assert _swept(app) == [] and gh.state.dispatches == [] and gh.state.check_runs == {}
    gh.violations.clear()  # the 422s the test asked for
    # GitHub's "Redeliver" is the operator's choice: it queues the delivery again
    del scene.failures["checks/create"]
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)),
            delivery="d-refused")
    assert deliveries(app)["d-refused"] == "done" and len(gh.state.dispatches) == 1


def test_a_transient_failure_is_still_swept(app, client, gh, scene):
    scene.failures["checks/create"] = 502
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)),
            delivery="d-down")
    rt = app.extensions["perfgate"]["runtime"]
    for _ in range(RETRIES):
        with pytest.raises(GitHubError):
            executor.handle_delivery(rt, "d-down")
    assert deliveries(app)["d-down"] == "failed" and _swept(app) == ["d-down"]
    gh.violations.clear()


def test_a_maintainers_huge_filter_gets_a_clear_reply_not_a_failed_delivery(app, client, gh):
    """The review's 100 kB filter: its run could not be stored (PostgreSQL: the 500-character
    column) nor its queued comment posted (GitHub's 65,536 characters, 422), and the delivery
    was retried for 6 hours."""
    text = "/perf run " + "x" * 100_000
    comment = gh.state.create_comment(P.REPO, 7, text, "maintainer", "User")
    deliver(client, P.issue_comment("created", text, comment_id=comment.id), delivery="d-huge")
    assert deliveries(app)["d-huge"] == "done" and gh.state.dispatches == []
    (reply,) = [c for c in gh.state.issue_comments(P.REPO, 7) if c.user_type == "Bot"]
    assert "the FILTER is 100000 characters long; at most 500" in reply.body and len(reply.body) < 5000
