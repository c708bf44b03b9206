"""Webhook payloads for the App's tests: a published example (``@octokit/webhooks-examples``)
patched to the scene of the test, completed to and validated against the published schema
(``@octokit/openapi-webhooks``). Every builder returns ``(event_name, payload)``."""

from __future__ import annotations

import json
import uuid

from bot.app.core.events import signature

from . import webhook_schemas as ws

REPO = "octo/demo"
INSTALLATION = 4711
#: The webhook secret of the tests (at least 32 characters: bot.settings refuses shorter ones).
SECRET = "tests-webhook-secret-0123456789abcdefXYZ"


def private_key() -> str:
    """A new 2048-bit RSA key, PEM (PKCS#1, unencrypted): the App's private key
    (``GITHUB_PRIVATE_KEY``) that signs its JWTs."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    encoding, layout = serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL
    return key.private_bytes(encoding, layout, serialization.NoEncryption()).decode()


def _repo(full_name: str = REPO, default_branch: str = "main", private: bool = False) -> dict:
    repo = ws.example("pull_request", "labeled")["repository"]
    owner, name = full_name.split("/")
    repo.update(full_name=full_name, name=name, default_branch=default_branch, private=private,
                url=f"https://api.github.com/repos/{full_name}", html_url=f"https://github.com/{full_name}")
    repo["owner"]["login"] = owner
    return repo


def _user(login: str, kind: str = "User") -> dict:
    user = ws.example("pull_request", "labeled")["sender"]
    user.update(login=login, type=kind, id=abs(hash(login)) % 10_000_000)
    return user


def _finish(event: str, action: str | None, payload: dict, *, installation: int | None = INSTALLATION) -> tuple[str, dict]:
    if installation is not None:
        payload["installation"] = {"id": installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    payload = ws.complete(event, action, payload)
    ws.check(event, action, payload)
    return event, payload


def pull_request(action: str, *, number: int = 7, head_sha: str, base_sha: str, labels: tuple[str, ...] = (),
                 label: str | None = None, fork: str | None = None, sender: str = "maintainer",
                 merged: bool = False, merge_sha: str | None = None, repo: str = REPO,
                 updated_at: str | None = None, private: bool = False) -> tuple[str, dict]:
    """``pull_request`` of ``action``; ``fork``: the head repository's full name for a fork PR;
    ``updated_at``: the PR's ISO time (default: the published example's)."""
    base_example = "labeled" if action in ("labeled", "unlabeled") else "synchronize" if action == "synchronize" else action
    try:
        payload = ws.example("pull_request", base_example)
    except KeyError:
        payload = ws.example("pull_request", "labeled")
    payload["action"] = action
    payload["number"] = number
    payload["repository"] = _repo(repo, private=private)
    payload["sender"] = _user(sender)
    pr = payload["pull_request"]
    pr.update(number=number, state="closed" if action == "closed" else "open", merged=merged,
              merge_commit_sha=merge_sha, merged_at="2026-01-02T00:00:00Z" if merged else None,
              html_url=f"https://github.com/{repo}/pull/{number}", title="Fuse the layer norm kernels")
    label_template = ws.example("pull_request", "labeled")["label"]
    pr["labels"] = [dict(label_template, name=n) for n in labels]
    if updated_at is not None:
        pr["updated_at"] = updated_at
    pr["head"].update(sha=head_sha, ref="feature")
    pr["base"].update(sha=base_sha, ref="main")
    pr["base"]["repo"] = _repo(repo, private=private)
    pr["head"]["repo"] = _repo(fork or repo, private=private and not fork)
    if fork:
        pr["head"]["repo"]["fork"] = True
    if action in ("labeled", "unlabeled"):
        payload["label"] = dict(label_template, name=label or "performance")
    else:
        payload.pop("label", None)
    if action == "synchronize":
        payload["before"], payload["after"] = "1" * 40, head_sha
    return _finish("pull_request", action, payload)


def issue_comment(action: str, body: str, *, number: int = 7, login: str = "maintainer", comment_id: int = 9001,
                  previous: str | None = None, on_pull: bool = True, user_type: str = "User",
                  repo: str = REPO, written_at: str | None = None,
                  association: str | None = None) -> tuple[str, dict]:
    """``issue_comment``; ``written_at``: the comment's ``created_at`` and ``updated_at`` (ISO;
    default: the published example's); ``association``: the comment's ``author_association``
    (default: the example's ``OWNER`` for ``maintainer``, ``NONE`` for anyone else)."""
    payload = ws.example("issue_comment", action if action != "edited" else "edited")
    payload["repository"] = _repo(repo)
    payload["sender"] = _user(login, user_type)
    association = association or ("OWNER" if login == "maintainer" else "NONE")
    payload["comment"].update(author_association=association)
    payload["comment"].update(id=comment_id, body=body, user=_user(login, user_type),
                              html_url=f"https://github.com/{repo}/pull/{number}#issuecomment-{comment_id}")
    payload["issue"].update(number=number, html_url=f"https://github.com/{repo}/pull/{number}", state="open")
    if on_pull:
        payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}",
                                            "html_url": f"https://github.com/{repo}/pull/{number}",
                                            "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
                                            "patch_url": f"https://github.com/{repo}/pull/{number}.patch"}
    else:
        payload["issue"].pop("pull_request", None)
    if written_at is not None:
        payload["comment"].update(created_at=written_at, updated_at=written_at)
    if action == "edited":
        payload["changes"] = {"body": {"from": previous if previous is not None else ""}}
    return _finish("issue_comment", action, payload)


def workflow_run_completed(run_id: int, *, conclusion: str = "success", head_sha: str = "f" * 40,
                           repo: str = REPO) -> tuple[str, dict]:
    return workflow_run("completed", run_id, conclusion=conclusion, head_sha=head_sha, repo=repo)


def workflow_run(action: str, run_id: int, *, conclusion: str | None = "success", head_sha: str = "f" * 40,
                 repo: str = REPO, display_title: str | None = None, event: str = "workflow_dispatch",
                 path: str = ".github/workflows/perfgate.yml") -> tuple[str, dict]:
    payload = ws.example("workflow_run", "completed")
    payload["action"] = action
    if action != "completed":
        conclusion = None
    payload["repository"] = _repo(repo)
    payload.pop("organization", None)
    wr = payload["workflow_run"]
    wr.update(id=run_id, conclusion=conclusion, status="completed" if action == "completed" else action,
              head_sha=head_sha, event=event, html_url=f"https://github.com/{repo}/actions/runs/{run_id}", path=path)
    if display_title is not None:
        wr["display_title"] = wr["name"] = display_title
    return _finish("workflow_run", action, payload)


def check_run(action: str, *, external_id: str, head_sha: str, check_run_id: int = 555,
              identifier: str = "rerun", repo: str = REPO, sender: str = "maintainer") -> tuple[str, dict]:
    payload = ws.example("check_run", action)
    payload["repository"] = _repo(repo)
    payload["sender"] = _user(sender)
    payload.pop("organization", None)
    payload["check_run"].update(id=check_run_id, external_id=external_id, head_sha=head_sha, name="perfgate")
    if action == "requested_action":
        payload["requested_action"] = {"identifier": identifier}
    return _finish("check_run", action, payload)


def installation(action: str = "created", *, account: str = "octo", installation_id: int = INSTALLATION) -> tuple[str, dict]:
    payload = ws.example("installation", action if action in ("created", "deleted", "suspend", "unsuspend") else "created")
    payload["action"] = action
    payload["installation"]["id"] = installation_id
    payload["installation"]["account"]["login"] = account
    return _finish("installation", action, payload, installation=None)


def repository(action: str, *, repo: str = REPO, private: bool | None = None,
               sender: str = "maintainer") -> tuple[str, dict]:
    """``repository`` ``privatized`` / ``publicized`` (``private`` follows the action unless given)."""
    payload = ws.example("repository", action)
    payload["action"] = action
    payload["repository"] = _repo(repo, private=(action == "privatized") if private is None else private)
    payload["sender"] = _user(sender)
    payload.pop("organization", None)
    return _finish("repository", action, payload)


def ping() -> tuple[str, dict]:
    return _finish("ping", None, ws.example("ping"), installation=None)


def push(*, before: str, after: str, ref: str = "refs/heads/main", repo: str = REPO) -> tuple[str, dict]:
    payload = ws.example("push")
    payload.update(before=before, after=after, ref=ref, deleted=False, created=False)
    payload["repository"] = _repo(repo)
    return _finish("push", None, payload)


def commit_comment(body: str, *, commit_id: str, login: str = "maintainer", comment_id: int = 9101,
                   user_type: str = "User", repo: str = REPO) -> tuple[str, dict]:
    """``commit_comment`` ``created`` on commit ``commit_id``."""
    payload = ws.example("commit_comment", "created")
    payload["repository"] = _repo(repo)
    payload["sender"] = _user(login, user_type)
    payload.pop("organization", None)
    payload["comment"].update(id=comment_id, body=body, commit_id=commit_id, user=_user(login, user_type),
                              html_url=f"https://github.com/{repo}/commit/{commit_id}#commitcomment-{comment_id}")
    return _finish("commit_comment", "created", payload)


def headers(event: str, body: bytes, *, secret: str = SECRET, delivery: str | None = None) -> dict[str, str]:
    """The headers GitHub sends with a delivery of ``body``."""
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + signature(secret, body), "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/abc123", "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-ID": "1", "X-GitHub-Hook-Installation-Target-Type": "integration"}


def encode(payload: dict) -> bytes:
    return json.dumps(payload).encode("utf-8")
