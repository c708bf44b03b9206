"""What the fake GitHub remembers: repositories, pull requests, comments, reactions, check runs,
workflow dispatches and runs, collaborator permissions, tokens and the OAuth web flow.

Plain data, no HTTP: the Flask app (``app.py``) turns requests into calls on this object and
its records into schema-shaped JSON. Tests set the scene through it (``add_repo``,
``add_pull``, ``set_permission``, ``add_token``) and read the outcome back.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Token:
    """An access token the fake accepts. ``read_only`` answers 403 to every write (a fork PR's
    ``GITHUB_TOKEN``); ``deny`` lists operation ids answered 403 even for reads; ``repos``
    limits a user token's reads of private repositories."""

    login: str = "github-actions[bot]"
    user_type: str = "Bot"
    read_only: bool = False
    deny: set[str] = field(default_factory=set)
    repos: set[str] | None = None  # a user's token: the private repositories it may read (None: any)
    client_id: str | None = None  # a user's token: the OAuth client (GitHub App) it was issued to


@dataclass
class Comment:
    id: int
    repo: str
    issue_number: int
    body: str
    login: str
    user_type: str
    created_at: str
    updated_at: str


@dataclass
class Pull:
    repo: str
    number: int
    title: str
    body: str
    head_sha: str
    base_sha: str
    head_ref: str = "feature"
    base_ref: str = "main"
    head_repo: str | None = None  # full name of the fork, None: same repository
    labels: list[str] = field(default_factory=list)
    user: str = "octocat"
    state: str = "open"


@dataclass
class Issue:
    """An issue (not a pull request); numbers are shared with the repository's pull requests."""

    repo: str
    number: int
    title: str
    body: str
    login: str
    user_type: str = "User"
    state: str = "open"
    state_reason: str | None = None
    created_at: str = ""
    updated_at: str = ""


class GitHubState:
    """Thread-safe in-memory GitHub; ids are unique across object kinds (like GitHub's)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._ids = itertools.count(1001)
        self.repos: dict[str, dict[str, Any]] = {}
        self.pulls: dict[tuple[str, int], Pull] = {}
        self.comments: dict[int, Comment] = {}
        self.reactions: list[dict[str, Any]] = []
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.dispatches: list[dict[str, Any]] = []
        self.workflow_runs: dict[int, dict[str, Any]] = {}
        self.permissions: dict[tuple[str, str], str] = {}
        self.tokens: dict[str, Token] = {}
        self.installation_id = 4711
        # the OAuth web flow: registered apps (client id → secret), who is signed in to GitHub in
        # the test's browser (and which private repositories they may read), codes handed out
        self.oauth_apps: dict[str, str] = {}
        self.browser_user: tuple[str, set[str]] | None = None
        self.oauth_codes: dict[str, dict[str, Any]] = {}
        self.revoked: list[str] = []  # user tokens deleted by their App (DELETE /applications/{client_id}/token)
        self.issues: dict[tuple[str, int], Issue] = {}
        self.commit_pulls: dict[tuple[str, str], list[int]] = {}  # merged pull requests of a commit
        # commits (compare): each repository's default branch, oldest first, and commits GitHub
        # serves from the repository off that branch (a fork's, through refs/pull/N/head)
        self.branch_commits: dict[str, list[str]] = {}
        self.other_commits: dict[str, set[str]] = {}

    def next_id(self) -> int:
        return next(self._ids)

    # -- scene setting -----------------------------------------------------------------------
    def add_repo(self, full_name: str, *, default_branch: str = "main", private: bool = False) -> dict:
        with self.lock:
            self.repos[full_name] = {"id": self.next_id(), "full_name": full_name,
                                     "default_branch": default_branch, "private": private}
            return self.repos[full_name]

    def add_pull(self, repo: str, number: int, *, head_sha: str, base_sha: str, title: str = "Make it faster",
                 body: str = "", labels: list[str] | None = None, head_repo: str | None = None,
                 head_ref: str = "feature", base_ref: str = "main", user: str = "octocat") -> Pull:
        with self.lock:
            if repo not in self.repos:
                self.add_repo(repo)
            pull = Pull(repo, number, title, body, head_sha, base_sha, head_ref, base_ref, head_repo,
                        list(labels or []), user)
            self.pulls[(repo, number)] = pull
            return pull

    def next_number(self, repo: str) -> int:
        """The next issue or pull request number of ``repo`` (they share one sequence)."""
        with self.lock:
            used = [n for r, n in (*self.pulls, *self.issues) if r == repo]
            return max(used, default=0) + 1

    def add_issue(self, repo: str, title: str, body: str = "", login: str = "octocat", user_type: str = "User",
                  number: int | None = None) -> Issue:
        with self.lock:
            if repo not in self.repos:
                self.add_repo(repo)
            stamp = now_iso()
            issue = Issue(repo, number or self.next_number(repo), title, body, login, user_type,
                          created_at=stamp, updated_at=stamp)
            self.issues[(repo, issue.number)] = issue
            return issue

    def repo_issues(self, repo: str) -> list[Issue]:
        with self.lock:
            return sorted((i for (r, _), i in self.issues.items() if r == repo), key=lambda i: i.number)

    def add_commits(self, repo: str, shas: list[str], *, on_default_branch: bool = True) -> None:
        """Commits of ``repo``: appended to its default branch (oldest first), or elsewhere in
        its network (a fork PR's commits: ``compare`` answers ``diverged``)."""
        with self.lock:
            if on_default_branch:
                self.branch_commits.setdefault(repo, []).extend(shas)
            else:
                self.other_commits.setdefault(repo, set()).update(shas)

    def set_permission(self, repo: str, login: str, permission: str) -> None:
        """``permission``: admin | maintain | write | triage | read | none."""
        with self.lock:
            self.permissions[(repo, login)] = permission

    def add_token(self, token: str, **kwargs: Any) -> Token:
        """Register a token; once any is registered, unknown tokens get 401."""
        with self.lock:
            self.tokens[token] = Token(**kwargs)
            return self.tokens[token]

    def add_oauth_app(self, client_id: str, client_secret: str) -> None:
        """A GitHub App's OAuth credentials (the web application flow)."""
        with self.lock:
            self.oauth_apps[client_id] = client_secret

    def sign_in(self, login: str, private_repos: set[str] | frozenset[str] = frozenset()) -> None:
        """``login`` is signed in to GitHub in the browser and may read ``private_repos``."""
        with self.lock:
            self.browser_user = (login, set(private_repos))

    # -- mutations used by the handlers ------------------------------------------------------
    def create_comment(self, repo: str, issue_number: int, body: str, login: str, user_type: str) -> Comment:
        with self.lock:
            stamp = now_iso()
            comment = Comment(self.next_id(), repo, issue_number, body, login, user_type, stamp, stamp)
            self.comments[comment.id] = comment
            return comment

    def issue_comments(self, repo: str, issue_number: int) -> list[Comment]:
        with self.lock:
            return sorted((c for c in self.comments.values() if c.repo == repo and c.issue_number == issue_number),
                          key=lambda c: c.id)
