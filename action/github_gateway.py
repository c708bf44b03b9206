"""The action's only contact with GitHub: PyGithub with the workflow token (thin shell).

``GITHUB_API_URL`` is the ``base_url`` (github.com, GitHub Enterprise, or the tests' fake).
Conversation comments go through the issue API (``create_issue_comment``, GITHUB.md), never
review comments. GitHub errors become :class:`GitHubDenied` (401/403: the token may not) or
:class:`GitHubFailed` (anything else), each with a message a maintainer can act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.errors import UserError

from .publish import find_sticky


class GitHubDenied(UserError):
    """The token lacks a permission (HTTP 401/403)."""


class GitHubFailed(UserError):
    """Any other refusal or failure of the GitHub API."""


@dataclass(frozen=True)
class StickyResult:
    comment_id: int
    url: str
    created: bool  # False: an existing comment was updated


#: Extra keyword arguments of ``github.Github`` (tests turn PyGithub's pacing sleeps off here).
CLIENT_OPTIONS: dict[str, Any] = {}


def _client(api_url: str, token: str):
    from github import Auth, Github

    options = {"timeout": 30, "lazy": True, **CLIENT_OPTIONS}
    return Github(auth=Auth.Token(token), base_url=api_url.rstrip("/"), **options)


def _message(exc: Any) -> str:
    data = getattr(exc, "data", None)
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(exc)


def _translate(exc: Exception, doing: str) -> UserError:
    from github import GithubException

    if isinstance(exc, GithubException):
        if exc.status in (401, 403):
            return GitHubDenied(f"GitHub refused to {doing} (HTTP {exc.status}: {_message(exc)}); the workflow "
                                "needs `permissions: pull-requests: write` (and a token that may write to the "
                                "repository)")
        return GitHubFailed(f"GitHub could not {doing} (HTTP {exc.status}: {_message(exc)})")
    return GitHubFailed(f"could not reach GitHub to {doing}: {exc}")


def upsert_sticky_comment(api_url: str, token: str, repository: str, pr_number: int, body: str,
                          author: str) -> StickyResult:
    """Create the single perfgate comment on PR ``pr_number``, or edit it if it is there.

    Ours is the oldest comment by ``author`` whose body starts with the ``<!-- perfgate -->``
    marker (:func:`action.publish.find_sticky`).

    Raises:
        GitHubDenied: the token may not read or write the PR's comments.
        GitHubFailed: any other API failure (unknown PR, body rejected, network).
    """
    from github import GithubException

    gh = _client(api_url, token)
    try:
        issue = gh.get_repo(repository).get_issue(pr_number)
        comments = list(issue.get_comments())
    except (GithubException, OSError) as exc:
        raise _translate(exc, f"list the comments of #{pr_number} in {repository}") from None
    by_id = {c.id: c for c in comments}
    mine = find_sticky(({"id": c.id, "body": c.body, "login": c.user.login if c.user else None} for c in comments),
                       author)
    try:
        if mine is not None:
            comment = by_id[mine["id"]]
            comment.edit(body)
            return StickyResult(comment.id, comment.html_url, created=False)
        comment = issue.create_comment(body)
        return StickyResult(comment.id, comment.html_url, created=True)
    except (GithubException, OSError) as exc:
        raise _translate(exc, f"write the perfgate comment on #{pr_number} in {repository}") from None
    finally:
        gh.close()


def pull_request_text(api_url: str, token: str, repository: str, pr_number: int) -> tuple[str, str, list[str]]:
    """``(title, body, label names)`` of a PR, for the intent section of a dispatched run.

    Raises:
        GitHubDenied, GitHubFailed: as :func:`upsert_sticky_comment`.
    """
    from github import GithubException

    gh = _client(api_url, token)
    try:
        pull = gh.get_repo(repository).get_pull(pr_number)
        return pull.title or "", pull.body or "", [label.name for label in pull.labels]
    except (GithubException, OSError) as exc:
        raise _translate(exc, f"read pull request #{pr_number} of {repository}") from None
    finally:
        gh.close()
