"""The fake GitHub REST API as a Flask app: every request is checked against GitHub's OpenAPI
description, recorded, and answered from state (``state.py``) or the documented example.

Answers:
- no documented operation for the method and path → 404 and a violation;
- a path/query parameter or JSON body the description does not allow → 422 and a violation;
- an unknown token (once tokens are registered) → 401; a read-only token writing, or an
  operation denied to the token → 403 ``Resource not accessible by integration``;
- otherwise the stateful handler for the operation id (see ``HANDLERS``) or, for operations
  without one, the documented example response with ``https://api.github.com`` rewritten to
  the fake's own URL (PyGithub follows the ``url`` fields it gets back).

Responses of stateful handlers are validated against the response schema too; a mismatch is
recorded as a violation of the fake itself, so handlers cannot drift from GitHub's shapes.

Faults (off unless ``create_app(faults=Faults(...))``): a fraction of the valid, authorised
API calls is answered as GitHub answers when it struggles (:class:`Faults`); requests are still
validated and recorded first, with ``Recorded.fault`` naming what was injected.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from flask import Flask, Response, request

from .spec import Operation, Spec
from .state import Comment, GitHubState, Pull, Token, now_iso

GITHUB_API = "https://api.github.com"


@dataclass
class Recorded:
    """One request as the fake saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    operation_id: str | None
    status: int = 0
    token: str | None = None
    fault: str | None = None
    at: float = field(default_factory=time.time)  # when it arrived (epoch seconds)


@dataclass
class Ctx:
    """What a handler gets: the matched operation, its parameters, the body and the caller."""

    spec: Spec
    state: GitHubState
    op: Operation
    params: dict[str, str]
    query: dict[str, list[str]]
    body: Any
    token: Token
    base_url: str
    extra: dict = field(default_factory=dict)

    @property
    def repo(self) -> str:
        return f"{self.params['owner']}/{self.params['repo']}"

    def example(self, operation_id: str | None = None, status: int | None = None) -> Any:
        op = self.spec.operation(operation_id) if operation_id else self.op
        return rewrite_urls(self.spec.example_response(op, status), self.base_url)


Handler = Callable[[Ctx], "tuple[int, Any] | tuple[int, Any, dict]"]
HANDLERS: dict[str, Handler] = {}


def handles(operation_id: str) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        HANDLERS[operation_id] = func
        return func
    return register


def rewrite_urls(data: Any, base_url: str) -> Any:
    if data is None:
        return None
    return json.loads(json.dumps(data).replace(GITHUB_API, base_url))


def error(status: int, message: str) -> tuple[int, dict]:
    return status, {"message": message, "documentation_url": "https://docs.github.com/rest"}


#: GitHub's answer to a secondary rate limit (docs.github.com, "Rate limits for the REST API":
#: 403 or 429, ``Retry-After`` in seconds, this message; PyGithub's ``GithubRetry`` reads both).
SECONDARY_RATE_LIMIT = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                        "If you reach out to GitHub Support for help, please include the request ID "
                        "0000:1111:2222:3333:44444444.")
FAULT_KINDS = ("502", "503", "timeout", "secondary-rate-limit")


@dataclass(frozen=True)
class Faults:
    """Answer about ``fraction`` (0..1) of the API calls with one of ``kinds``, chosen by a
    ``random.Random(seed)`` (the same sequence of calls gets the same faults):

    - ``502``/``503``: GitHub's JSON error (``Server Error`` / ``Service Unavailable``),
      nothing carried out;
    - ``timeout``: the request is held ``hang`` seconds (set it above the client's time-out),
      then carried out and answered — the client gave up on a write that happened;
    - ``secondary-rate-limit``: 403 with ``Retry-After: 1`` and :data:`SECONDARY_RATE_LIMIT`,
      nothing carried out.
    """

    fraction: float
    seed: int = 0
    hang: float = 30.0
    kinds: tuple[str, ...] = FAULT_KINDS

    def __post_init__(self) -> None:
        if not 0 <= self.fraction <= 1 or not self.kinds or set(self.kinds) - set(FAULT_KINDS):
            raise ValueError(f"faults: fraction in [0, 1] and kinds among {FAULT_KINDS}, got {self}")


def _fault_picker(faults: Faults | None) -> Callable[[], str | None]:
    """A thread-safe ``pick() -> kind or None`` for ``faults``."""
    if faults is None or faults.fraction == 0:
        return lambda: None
    rng, lock = random.Random(faults.seed), threading.Lock()

    def pick() -> str | None:
        with lock:
            return rng.choice(faults.kinds) if rng.random() < faults.fraction else None
    return pick


def _fault_answer(kind: str) -> tuple[int, dict, dict]:
    if kind == "502":
        return (*error(502, "Server Error"), {})
    if kind == "503":
        return (*error(503, "Service Unavailable"), {})
    return 403, {"message": SECONDARY_RATE_LIMIT, "documentation_url":
                 "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}, \
        {"Retry-After": "1"}


def _not_found() -> tuple[int, dict]:
    return error(404, "Not Found")


# -- shapes -------------------------------------------------------------------------------------
def _user(ctx: Ctx, login: str, user_type: str = "User") -> dict:
    user = ctx.example("users/get-by-username")
    base = {k: v for k, v in user.items() if k in _SIMPLE_USER_KEYS}
    base.update(login=login, type=user_type, id=abs(hash(login)) % 10_000_000,
                url=f"{ctx.base_url}/users/{login}", html_url=f"https://github.com/{login}")
    return base


_SIMPLE_USER_KEYS = ("login", "id", "node_id", "avatar_url", "gravatar_id", "url", "html_url", "followers_url",
                     "following_url", "gists_url", "starred_url", "subscriptions_url", "organizations_url",
                     "repos_url", "events_url", "received_events_url", "type", "site_admin", "user_view_type")


def _repo_json(ctx: Ctx, full_name: str) -> dict:
    info = ctx.state.repos[full_name]
    owner, name = full_name.split("/")
    data = ctx.example("repos/get")
    data.update(id=info["id"], name=name, full_name=full_name, private=info["private"],
                default_branch=info["default_branch"], url=f"{ctx.base_url}/repos/{full_name}",
                html_url=f"https://github.com/{full_name}")
    data["owner"] = _user(ctx, owner, "Organization")
    return data


def _comment_json(ctx: Ctx, c: Comment) -> dict:
    data = ctx.example("issues/get-comment")
    data.update(id=c.id, node_id=f"IC_{c.id}", body=c.body, created_at=c.created_at, updated_at=c.updated_at,
                url=f"{ctx.base_url}/repos/{c.repo}/issues/comments/{c.id}",
                html_url=f"https://github.com/{c.repo}/issues/{c.issue_number}#issuecomment-{c.id}",
                issue_url=f"{ctx.base_url}/repos/{c.repo}/issues/{c.issue_number}",
                user=_user(ctx, c.login, c.user_type))
    data.pop("reactions", None)
    data.pop("performed_via_github_app", None)
    return data


def _pull_json(ctx: Ctx, p: Pull) -> dict:
    data = ctx.example("pulls/get")
    url = f"{ctx.base_url}/repos/{p.repo}/pulls/{p.number}"
    data.update(number=p.number, id=p.number + 500_000, title=p.title, body=p.body, state=p.state, url=url,
                html_url=f"https://github.com/{p.repo}/pull/{p.number}",
                issue_url=f"{ctx.base_url}/repos/{p.repo}/issues/{p.number}",
                comments_url=f"{ctx.base_url}/repos/{p.repo}/issues/{p.number}/comments",
                user=_user(ctx, p.user))
    label_template = data["labels"][0] if data.get("labels") else {}
    data["labels"] = [dict(label_template, name=name, id=i + 1) for i, name in enumerate(p.labels)]
    for side, sha, ref, repo in (("head", p.head_sha, p.head_ref, p.head_repo or p.repo),
                                 ("base", p.base_sha, p.base_ref, p.repo)):
        part = data[side]
        part.update(sha=sha, ref=ref, label=f"{repo.split('/')[0]}:{ref}", user=_user(ctx, repo.split("/")[0]))
        if repo in ctx.state.repos:
            part["repo"] = _repo_json(ctx, repo)
        else:
            part["repo"] = dict(_repo_json(ctx, p.repo), full_name=repo, name=repo.split("/")[1], fork=True,
                                url=f"{ctx.base_url}/repos/{repo}")
    return data


# -- handlers -----------------------------------------------------------------------------------
@handles("repos/get")
def _get_repo(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    readable = ctx.token.repos
    if readable is not None and ctx.state.repos[ctx.repo]["private"] and ctx.repo not in readable:
        return _not_found()  # GitHub hides private repositories from those who may not read them
    data = _repo_json(ctx, ctx.repo)
    if readable is not None:
        data["permissions"] = {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True}
    return 200, data


@handles("users/get-authenticated")
def _get_authenticated_user(ctx: Ctx):
    data = ctx.example()
    data.update(login=ctx.token.login, id=abs(hash(ctx.token.login)) % 10_000_000, type=ctx.token.user_type,
                url=f"{ctx.base_url}/users/{ctx.token.login}", html_url=f"https://github.com/{ctx.token.login}")
    return 200, data


@handles("pulls/get")
def _get_pull(ctx: Ctx):
    pull = ctx.state.pulls.get((ctx.repo, int(ctx.params["pull_number"])))
    return (200, _pull_json(ctx, pull)) if pull else _not_found()


def _issue_json(ctx: Ctx, issue) -> dict:
    data = ctx.example("issues/get")
    data.update(number=issue.number, id=issue.number + 700_000, title=issue.title, body=issue.body, state=issue.state,
                state_reason=issue.state_reason, created_at=issue.created_at, updated_at=issue.updated_at,
                url=f"{ctx.base_url}/repos/{issue.repo}/issues/{issue.number}",
                comments_url=f"{ctx.base_url}/repos/{issue.repo}/issues/{issue.number}/comments",
                html_url=f"https://github.com/{issue.repo}/issues/{issue.number}",
                user=_user(ctx, issue.login, issue.user_type), labels=[], assignee=None, assignees=[])
    data.pop("pull_request", None)
    return data


@handles("issues/get")
def _get_issue(ctx: Ctx):
    issue = ctx.state.issues.get((ctx.repo, int(ctx.params["issue_number"])))
    if issue is not None:
        return 200, _issue_json(ctx, issue)
    pull = ctx.state.pulls.get((ctx.repo, int(ctx.params["issue_number"])))
    if pull is None:
        return _not_found()
    data = ctx.example()
    data.update(number=pull.number, title=pull.title, body=pull.body, state=pull.state,
                url=f"{ctx.base_url}/repos/{ctx.repo}/issues/{pull.number}",
                comments_url=f"{ctx.base_url}/repos/{ctx.repo}/issues/{pull.number}/comments",
                html_url=f"https://github.com/{ctx.repo}/pull/{pull.number}", user=_user(ctx, pull.user))
    data["pull_request"] = {"url": f"{ctx.base_url}/repos/{ctx.repo}/pulls/{pull.number}",
                            "html_url": f"https://github.com/{ctx.repo}/pull/{pull.number}",
                            "diff_url": None, "patch_url": None}
    return 200, data


def _issue_exists(ctx: Ctx, number: int) -> bool:
    return ctx.repo in ctx.state.repos and ((ctx.repo, number) in ctx.state.pulls or (ctx.repo, number) in ctx.state.issues)


@handles("issues/create")
def _create_issue(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    if len(ctx.body.get("body") or "") > 65536:
        return error(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    if len(str(ctx.body["title"])) > 256:
        return error(422, "Validation Failed: title is too long (maximum is 256 characters)")
    issue = ctx.state.add_issue(ctx.repo, str(ctx.body["title"]), ctx.body.get("body") or "", ctx.token.login,
                                ctx.token.user_type)
    data = _issue_json(ctx, issue)
    return 201, data, {"Location": data["url"]}


@handles("issues/update")
def _update_issue(ctx: Ctx):
    issue = ctx.state.issues.get((ctx.repo, int(ctx.params["issue_number"])))
    if issue is None:
        return _not_found()
    if len(ctx.body.get("body") or "") > 65536:
        return error(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    with ctx.state.lock:
        for name in ("title", "body", "state", "state_reason"):
            if name in ctx.body:
                setattr(issue, name, ctx.body[name])
        issue.updated_at = now_iso()
    return 200, _issue_json(ctx, issue)


@handles("issues/list-for-repo")
def _list_issues(ctx: Ctx):
    """Issues (and, as GitHub lists them, pull requests: here the issues alone) newest first,
    filtered by ``state`` (default open) and ``creator``."""
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    state = ctx.query.get("state", ["open"])[0]
    creator = ctx.query.get("creator", [None])[0]
    items = [_issue_json(ctx, i) for i in reversed(ctx.state.repo_issues(ctx.repo))
             if (state == "all" or i.state == state) and (creator is None or i.login == creator)]
    return _paginate(ctx, items)


@handles("repos/list-pull-requests-associated-with-commit")
def _commit_pulls(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    items = []
    for number in ctx.state.commit_pulls.get((ctx.repo, ctx.params["commit_sha"]), []):
        pull = ctx.state.pulls.get((ctx.repo, number))
        if pull is not None:
            items.append(dict(_pull_json(ctx, pull), merged_at="2026-12-01T12:00:00Z", state="closed"))
    return _paginate(ctx, items)


@handles("issues/list-comments")
def _list_comments(ctx: Ctx):
    number = int(ctx.params["issue_number"])
    if not _issue_exists(ctx, number):
        return _not_found()
    comments = [_comment_json(ctx, c) for c in ctx.state.issue_comments(ctx.repo, number)]
    return _paginate(ctx, comments)


def _paginate(ctx: Ctx, items: list) -> tuple[int, list, dict]:
    per_page = min(int(ctx.query.get("per_page", ["30"])[0]), 100)
    page = int(ctx.query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per_page: page * per_page]
    headers = {}
    last = max(1, -(-len(items) // per_page))
    if page < last:
        from urllib.parse import urlencode

        url = f"{ctx.base_url}{request.path}"
        kept = urlencode([(k, v) for k, values in ctx.query.items() if k not in ("page", "per_page") for v in values])
        kept = f"&{kept}" if kept else ""
        headers["Link"] = (f'<{url}?per_page={per_page}&page={page + 1}{kept}>; rel="next", '
                           f'<{url}?per_page={per_page}&page={last}{kept}>; rel="last"')
    return 200, chunk, headers


@handles("issues/create-comment")
def _create_comment(ctx: Ctx):
    number = int(ctx.params["issue_number"])
    if not _issue_exists(ctx, number):
        return _not_found()
    if len(ctx.body["body"]) > 65536:
        return error(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    comment = ctx.state.create_comment(ctx.repo, number, ctx.body["body"], ctx.token.login, ctx.token.user_type)
    return 201, _comment_json(ctx, comment), {"Location": _comment_json(ctx, comment)["url"]}


def _own_comment(ctx: Ctx) -> Comment | None:
    comment = ctx.state.comments.get(int(ctx.params["comment_id"]))
    return comment if comment is not None and comment.repo == ctx.repo else None


@handles("issues/get-comment")
def _get_comment(ctx: Ctx):
    comment = _own_comment(ctx)
    return (200, _comment_json(ctx, comment)) if comment else _not_found()


@handles("issues/update-comment")
def _update_comment(ctx: Ctx):
    comment = _own_comment(ctx)
    if comment is None:
        return _not_found()
    if len(ctx.body["body"]) > 65536:
        return error(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    with ctx.state.lock:
        comment.body, comment.updated_at = ctx.body["body"], now_iso()
    return 200, _comment_json(ctx, comment)


@handles("issues/delete-comment")
def _delete_comment(ctx: Ctx):
    comment = _own_comment(ctx)
    if comment is None:
        return _not_found()
    with ctx.state.lock:
        del ctx.state.comments[comment.id]
    return 204, None


@handles("reactions/create-for-issue-comment")
def _create_reaction(ctx: Ctx):
    comment = _own_comment(ctx)
    if comment is None:
        return _not_found()
    reaction = {"id": ctx.state.next_id(), "comment_id": comment.id, "content": ctx.body["content"],
                "login": ctx.token.login}
    with ctx.state.lock:
        ctx.state.reactions.append(reaction)
    data = ctx.example()
    data.update(id=reaction["id"], content=reaction["content"], user=_user(ctx, ctx.token.login, ctx.token.user_type))
    return 201, data


def _check_run_json(ctx: Ctx, run: dict) -> dict:
    data = ctx.example("checks/get")
    data.update(id=run["id"], name=run["name"], head_sha=run["head_sha"], status=run["status"],
                conclusion=run.get("conclusion"), external_id=run.get("external_id"),
                details_url=run.get("details_url"), started_at=run.get("started_at"),
                completed_at=run.get("completed_at"),
                url=f"{ctx.base_url}/repos/{run['repo']}/check-runs/{run['id']}",
                html_url=f"https://github.com/{run['repo']}/runs/{run['id']}")
    output = run.get("output") or {}
    data["output"] = {"title": output.get("title"), "summary": output.get("summary"), "text": output.get("text"),
                      "annotations_count": len(output.get("annotations", [])),
                      "annotations_url": f"{ctx.base_url}/repos/{run['repo']}/check-runs/{run['id']}/annotations"}
    data["pull_requests"] = []
    return data


_CHECK_FIELDS = ("name", "head_sha", "details_url", "external_id", "status", "started_at", "conclusion",
                 "completed_at", "output", "actions")


@handles("checks/create")
def _create_check_run(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    run = {"id": ctx.state.next_id(), "repo": ctx.repo, "status": "queued"}
    run.update({k: v for k, v in ctx.body.items() if k in _CHECK_FIELDS})
    if run.get("conclusion"):
        run["status"] = "completed"
    with ctx.state.lock:
        ctx.state.check_runs[run["id"]] = run
    return 201, _check_run_json(ctx, run)


@handles("checks/update")
def _update_check_run(ctx: Ctx):
    run = ctx.state.check_runs.get(int(ctx.params["check_run_id"]))
    if run is None or run["repo"] != ctx.repo:
        return _not_found()
    with ctx.state.lock:
        run.update({k: v for k, v in ctx.body.items() if k in _CHECK_FIELDS})
        if ctx.body.get("conclusion"):
            run["status"] = "completed"
    return 200, _check_run_json(ctx, run)


@handles("checks/get")
def _get_check_run(ctx: Ctx):
    run = ctx.state.check_runs.get(int(ctx.params["check_run_id"]))
    if run is None or run["repo"] != ctx.repo:
        return _not_found()
    return 200, _check_run_json(ctx, run)


@handles("checks/list-for-ref")
def _list_check_runs(ctx: Ctx):
    runs = [_check_run_json(ctx, r) for r in ctx.state.check_runs.values()
            if r["repo"] == ctx.repo and r["head_sha"] == ctx.params["ref"]]
    return 200, {"total_count": len(runs), "check_runs": runs}


@handles("actions/get-workflow")
def _get_workflow(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    workflow_id = ctx.params["workflow_id"]
    data = ctx.example()
    data.update(path=f".github/workflows/{workflow_id}", name=workflow_id,
                url=f"{ctx.base_url}/repos/{ctx.repo}/actions/workflows/{workflow_id}")
    return 200, data


@handles("actions/create-workflow-dispatch")
def _dispatch(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    run_id = ctx.state.next_id()
    record = {"repo": ctx.repo, "workflow_id": ctx.params["workflow_id"], "ref": ctx.body["ref"],
              "inputs": ctx.body.get("inputs") or {}, "run_id": run_id}
    with ctx.state.lock:
        ctx.state.dispatches.append(record)
        ctx.state.workflow_runs[run_id] = {"id": run_id, "repo": ctx.repo, "status": "queued", "conclusion": None,
                                           "dispatch": record}
    if not ctx.body.get("return_run_details"):
        return 204, None
    return 200, {"workflow_run_id": run_id, "run_url": f"{ctx.base_url}/repos/{ctx.repo}/actions/runs/{run_id}",
                 "html_url": f"https://github.com/{ctx.repo}/actions/runs/{run_id}"}


@handles("actions/cancel-workflow-run")
def _cancel_run(ctx: Ctx):
    run = ctx.state.workflow_runs.get(int(ctx.params["run_id"]))
    if run is None or run["repo"] != ctx.repo:
        return _not_found()
    with ctx.state.lock:
        run["status"], run["conclusion"] = "completed", "cancelled"
    return 202, {}


@handles("repos/compare-commits-with-basehead")
def _compare(ctx: Ctx):
    """``BASE...HEAD`` where BASE is the default branch: ``identical`` (HEAD is its tip),
    ``behind`` (an older commit of it), ``diverged`` (a commit off it); 404 for an unknown
    commit (as GitHub answers)."""
    base, _, head = ctx.params["basehead"].partition("...")
    repo = ctx.state.repos.get(ctx.repo) or {}
    branch = ctx.state.branch_commits.get(ctx.repo, [])
    if base != repo.get("default_branch") or not branch:
        return _not_found()
    data = ctx.example()
    data.update(commits=[], files=[], ahead_by=0, behind_by=0, total_commits=0)
    if head in (branch[-1], base):
        return 200, dict(data, status="identical")
    if head in branch:
        return 200, dict(data, status="behind", behind_by=len(branch) - 1 - branch.index(head))
    if head in ctx.state.other_commits.get(ctx.repo, set()):
        return 200, dict(data, status="diverged", ahead_by=1, behind_by=1, total_commits=1)
    return _not_found()


@handles("repos/get-collaborator-permission-level")
def _permission(ctx: Ctx):
    login = ctx.params["username"]
    permission = ctx.state.permissions.get((ctx.repo, login))
    if permission is None:
        return _not_found()
    # GitHub folds maintain into write and triage into read for `permission` (role_name keeps it).
    folded = {"maintain": "write", "triage": "read"}.get(permission, permission)
    return 200, {"permission": folded, "role_name": permission, "user": _user(ctx, login)}


@handles("apps/create-installation-access-token")
def _installation_token(ctx: Ctx):
    """Mint an installation token (the caller's JWT is not checked: PyGithub signs it) and
    register it with write access when the test registered tokens."""
    token = f"ghs_fake{ctx.state.next_id():032d}"
    if ctx.state.tokens:
        ctx.state.add_token(token, login="perfgate[bot]", user_type="Bot")
    data = ctx.example()
    data.update(token=token, expires_at="2099-01-01T00:00:00Z")
    return 201, data


@handles("apps/get-repo-installation")
def _repo_installation(ctx: Ctx):
    if ctx.repo not in ctx.state.repos:
        return _not_found()
    data = ctx.example()
    data["id"] = ctx.state.installation_id
    return 200, data


#: Operations GitHub authenticates with the OAuth client's id and secret (HTTP Basic), not a
#: token (docs.github.com, "REST API endpoints for OAuth authorizations" / "Apps: OAuth tokens").
BASIC_AUTH_OPERATIONS = ("apps/check-token", "apps/reset-token", "apps/delete-token", "apps/delete-authorization",
                         "apps/scope-token")


@handles("apps/delete-token")
def _delete_token(ctx: Ctx):
    """Revoke a user token of this OAuth client: 204; a token it did not issue (or gone): 404."""
    token = str(ctx.body.get("access_token") or "")
    with ctx.state.lock:
        held = ctx.state.tokens.get(token)
        if held is None or held.client_id != ctx.params["client_id"]:
            return _not_found()
        del ctx.state.tokens[token]
        ctx.state.revoked.append(token)
    return 204, None


def _basic_client(auth: str, state: GitHubState, client_id: str) -> bool:
    """Does the ``Authorization: Basic`` header carry ``client_id`` and its secret?"""
    import base64
    import binascii

    if not auth.startswith("Basic "):
        return False
    try:
        user, _, password = base64.b64decode(auth[len("Basic "):], validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return user == client_id and state.oauth_apps.get(user) == password


def _oauth_routes(app: Flask, state: GitHubState, records: list[Recorded], violations: list[str]) -> None:
    """The OAuth web application flow, which lives on GitHub's web host and is not part of the
    REST description: checked against GitHub's documentation of the flow instead
    (docs.github.com, "Generating a user access token for a GitHub App": ``GET
    /login/oauth/authorize`` with ``client_id`` (required), ``redirect_uri``, ``state``,
    ``login``; ``POST /login/oauth/access_token`` with ``client_id``, ``client_secret``, ``code``
    (required) and ``redirect_uri``, answering ``access_token``/``token_type``/``scope`` or
    ``error``/``error_description`` with HTTP 200)."""
    import secrets
    from urllib.parse import urlencode

    def record(operation_id: str, body: Any) -> Recorded:
        rec = Recorded(request.method, request.path, {k: request.args.getlist(k) for k in request.args}, body,
                       operation_id)
        records.append(rec)
        return rec

    def unknown(params: dict, allowed: set[str], operation_id: str) -> None:
        for name in set(params) - allowed:
            violations.append(f"{operation_id}: undocumented parameter {name!r}")

    @app.get("/login/oauth/authorize")
    def authorize() -> Response:
        rec = record("oauth/authorize", None)
        args = request.args.to_dict()
        unknown(args, {"client_id", "redirect_uri", "state", "login", "scope", "allow_signup", "prompt",
                       "code_challenge", "code_challenge_method"}, "oauth/authorize")
        if args.get("client_id") not in state.oauth_apps:
            rec.status = 404
            return Response("no such application", status=404)
        if state.browser_user is None:
            rec.status = 401
            return Response("sign in to GitHub first", status=401)
        code = secrets.token_hex(10)
        with state.lock:
            state.oauth_codes[code] = {"client_id": args["client_id"], "login": state.browser_user[0],
                                       "repos": set(state.browser_user[1]), "redirect_uri": args.get("redirect_uri")}
        rec.status = 302
        target = args.get("redirect_uri") or "http://callback.invalid/"
        return Response("", status=302, headers={"Location": f"{target}?{urlencode({'code': code, 'state': args.get('state', '')})}"})

    @app.post("/login/oauth/access_token")
    def access_token() -> Response:
        body = request.get_json(silent=True) if request.is_json else request.form.to_dict()
        rec = record("oauth/access-token", body)
        body = body if isinstance(body, dict) else {}
        unknown(body, {"client_id", "client_secret", "code", "redirect_uri", "repository_id", "code_verifier",
                       "grant_type", "refresh_token"}, "oauth/access-token")
        missing = [k for k in ("client_id", "client_secret", "code") if not body.get(k)]
        if missing:
            violations.append(f"oauth/access-token: missing {', '.join(missing)}")
        rec.status = 200
        if state.oauth_apps.get(body.get("client_id")) != body.get("client_secret"):
            data = {"error": "incorrect_client_credentials",
                    "error_description": "The client_id and/or client_secret passed are incorrect."}
        else:
            with state.lock:
                grant = state.oauth_codes.pop(str(body.get("code")), None)
            if grant is None or grant["client_id"] != body.get("client_id") or (
                    body.get("redirect_uri") and body["redirect_uri"] != grant["redirect_uri"]):
                data = {"error": "bad_verification_code",
                        "error_description": "The code passed is incorrect or expired."}
            else:
                token = f"ghu_{secrets.token_hex(18)}"
                state.add_token(token, login=grant["login"], user_type="User", repos=grant["repos"],
                                client_id=grant["client_id"])
                data = {"access_token": token, "token_type": "bearer", "scope": ""}
        accept_json = "json" in request.headers.get("Accept", "")
        if accept_json:
            return Response(json.dumps(data), status=200, content_type="application/json; charset=utf-8")
        return Response(urlencode(data), status=200, content_type="application/x-www-form-urlencoded")


def create_app(spec: Spec, state: GitHubState, *, records: list[Recorded], violations: list[str],
               base_url: Callable[[], str], handlers: dict[str, Handler] | None = None,
               faults: Faults | None = None) -> Flask:
    """The WSGI app. ``records``/``violations`` are appended to; ``handlers`` add or override
    stateful operations (by operation id) on top of ``HANDLERS``; ``faults``: see :class:`Faults`."""
    app = Flask("fake_github")
    pick_fault = _fault_picker(faults)
    table = {**HANDLERS, **(handlers or {})}
    _oauth_routes(app, state, records, violations)

    @app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    @app.route("/<path:path>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    def dispatch(path: str) -> Response:
        raw = request.get_data()
        query = {k: request.args.getlist(k) for k in request.args}
        has_body = bool(raw.strip())
        body: Any = None
        if has_body:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        auth = request.headers.get("Authorization", "")
        token_text = auth.split(" ", 1)[1] if " " in auth else None
        record = Recorded(request.method, request.path, query, body, None, token=token_text)
        records.append(record)

        def answer(status: int, data: Any, headers: dict | None = None) -> Response:
            record.status = status
            text = "" if data is None else json.dumps(data)
            return Response(text, status=status, headers=headers or {},
                            content_type="application/json; charset=utf-8")

        matched = spec.match(request.method, request.path)
        if matched is None:
            violations.append(f"{request.method} {request.path}: no documented operation")
            return answer(*error(404, f"fake GitHub: {request.method} {request.path} is not a documented operation"))
        op, params = matched
        record.operation_id = op.operation_id
        if has_body and isinstance(body, str):
            violations.append(f"{op.operation_id}: body is not JSON")
            return answer(*error(400, "Problems parsing JSON"))
        problems = spec.request_errors(op, params, query, body, has_body)
        if problems:
            violations.extend(f"{op.operation_id}: {p}" for p in problems)
            return answer(*error(422, "fake GitHub: request violates the OpenAPI description: " + "; ".join(problems)))

        is_jwt = (token_text or "").count(".") == 2
        if op.operation_id in BASIC_AUTH_OPERATIONS:
            if not _basic_client(auth, state, params.get("client_id", "")):
                return answer(*error(404, "Not Found"))  # GitHub hides the client from wrong credentials
            token = Token(login=params["client_id"], user_type="App")
        elif is_jwt:
            # The App's JWT (PyGithub signs it; not checked) opens the apps/* operations only.
            if not op.operation_id.startswith("apps/"):
                return answer(*error(401, "A JSON web token could not be decoded"))
            token = Token(login="perfgate[bot]")
        elif state.tokens:
            token = state.tokens.get(token_text or "")
            if token is None:
                return answer(*error(401, "Bad credentials"))
        else:
            token = Token()
        if op.operation_id in token.deny or (token.read_only and request.method != "GET"):
            return answer(*error(403, "Resource not accessible by integration"))

        record.fault = pick_fault()
        if record.fault == "timeout":
            time.sleep(faults.hang)
        elif record.fault is not None:
            return answer(*_fault_answer(record.fault))
        ctx = Ctx(spec, state, op, params, query, body, token, base_url())
        handler = table.get(op.operation_id)
        if handler is None:
            status, data, headers = op.success_status, ctx.example(), {}
        else:
            result = handler(ctx)
            status, data = result[0], result[1]
            headers = result[2] if len(result) > 2 else {}
        pointer = spec.response_pointer(op, status) if 200 <= status < 300 else None
        if pointer and data is not None:
            data = spec.conform(pointer, data)
            bad = spec.schema_errors(pointer, data)
            violations.extend(f"{op.operation_id}: the fake's own response broke the schema: {e}" for e in bad[:5])
        return answer(status, data, headers)

    return app
