"""Who may read what the App shows: the run pages, the index, the dashboard and its JSON.

A repository's runs, reports and history are shown only to those who may read the repository:

- ``PERFGATE_READ_ACCESS=public`` (the default): repositories GitHub reported as public in its
  webhooks (``repository.private``, recorded per repository by the App) are readable by
  everyone; any other one answers 404, as if it did not exist.
- Signing in with GitHub (``GITHUB_CLIENT_ID``/``GITHUB_CLIENT_SECRET`` of the GitHub App, and
  ``PERFGATE_SESSION_SECRET``): the web application flow at ``/login``; a signed-in user also
  sees the private repositories for which GitHub answers ``GET /repos/{owner}/{repo}`` with
  their user token (the App is installed there and they may read it). The answer is cached in
  the signed session cookie for :data:`CACHE_SECONDS`.
- ``PERFGATE_READ_ACCESS=all``: everything to everyone, for deployments behind their own
  authentication (a VPN, an authenticating proxy).

:func:`may_read` and :func:`visibility` decide (pure); the rest is the Flask shell: the
``/login``, ``/login/callback`` and ``/logout`` routes and :func:`allowed` / :func:`require` for
the views.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Mapping
from urllib.parse import urlsplit

from flask import Blueprint, abort, current_app, redirect, request, session

#: Seconds a signed-in user's answer from GitHub about one repository is reused.
CACHE_SECONDS = 600
#: Repositories whose answers the session cookie keeps (a cookie holds ~4 KB).
CACHE_ENTRIES = 20

auth = Blueprint("access", __name__)


def may_read(mode: str, private: bool | None, user_can_read: bool | None = None) -> bool:
    """May this viewer read a repository? (pure)

    Args:
        mode: ``PERFGATE_READ_ACCESS`` (``public`` or ``all``).
        private: GitHub's ``repository.private`` as recorded; None when never reported (treated
            as private).
        user_can_read: the signed-in user's access as GitHub answered it (None: not signed in).
    """
    return mode == "all" or private is False or user_can_read is True


def visibility(payload: Mapping[str, Any]) -> dict[str, bool]:
    """``{owner/name: private}`` for every repository a webhook payload describes (pure): its
    ``repository``, and an installation's ``repositories`` / ``repositories_added``."""
    found: dict[str, bool] = {}
    repos = [payload.get("repository")]
    for key in ("repositories", "repositories_added"):
        repos += list(payload.get(key) or [])
    for repo in repos:
        if isinstance(repo, Mapping) and isinstance(repo.get("full_name"), str) and isinstance(repo.get("private"), bool):
            found[repo["full_name"]] = repo["private"]
    return found


def safe_next(target: str | None) -> str:
    """A local path to return to after signing in (anything else: ``/``), so ``/login?next=``
    cannot send people elsewhere."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


# -- Flask shell --------------------------------------------------------------------------------
def init_app(app) -> None:
    """Session cookie settings and, when configured, the sign-in routes."""
    settings = app.extensions["perfgate"]["settings"]
    if settings.oauth:
        app.secret_key = settings.session_secret
        app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax",
                          SESSION_COOKIE_SECURE=(settings.public_url or "").startswith("https://"))
        app.register_blueprint(auth)


def _settings():
    return current_app.extensions["perfgate"]["settings"]


def _client_options() -> dict | None:
    from .webhook import TESTING_CLIENT_OPTIONS

    return TESTING_CLIENT_OPTIONS if current_app.config.get("TESTING") else None


def _private(repository: str) -> bool | None:
    from . import history_store

    with current_app.extensions["perfgate"]["db"].session() as s:
        return history_store.visibility(s, repository)


def _user_can_read(repository: str) -> bool | None:
    """The signed-in user's access to ``repository`` (None: nobody signed in); asks GitHub at
    most once per :data:`CACHE_SECONDS`; a GitHub failure reads as no."""
    from .gateway import GitHubError, user_can_read

    settings = _settings()
    if not settings.oauth or not session.get("token"):
        return None
    cache = dict(session.get("access") or {})
    hit = cache.get(repository)
    if hit and time.time() - hit[1] < CACHE_SECONDS:
        return bool(hit[0])
    try:
        answer = user_can_read(settings.api_url, session["token"], repository, _client_options())
    except GitHubError:
        return False
    cache[repository] = [answer, time.time()]
    session["access"] = dict(sorted(cache.items(), key=lambda kv: kv[1][1])[-CACHE_ENTRIES:])
    return answer


def allowed(repository: str) -> bool:
    """May the current viewer read ``repository``?"""
    settings = _settings()
    if settings.read_access == "all":
        return True
    private = _private(repository)
    return may_read(settings.read_access, private, None if private is False else _user_can_read(repository))


def require(repository: str, *, page: bool = True):
    """Abort unless the viewer may read ``repository``: a page sends a visitor who is not
    signed in to ``/login`` (when signing in is possible), anything else answers 404."""
    if allowed(repository):
        return
    if page and _settings().oauth and not session.get("login"):
        abort(redirect(f"/login?next={request.full_path.rstrip('?')}"))
    abort(404)


def viewer() -> str | None:
    """The signed-in user's login (None: anonymous)."""
    return session.get("login") if _settings().oauth else None


@auth.get("/login")
def login():
    from .gateway import oauth_login_url

    settings = _settings()
    state = secrets.token_urlsafe(24)
    session["oauth_state"], session["next"] = state, safe_next(request.args.get("next"))
    callback = f"{settings.public_url or request.host_url.rstrip('/')}/login/callback"
    return redirect(oauth_login_url(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret,
                                    callback, state))


@auth.get("/login/callback")
def callback():
    from .gateway import GitHubError, oauth_user

    settings = _settings()
    expected = session.pop("oauth_state", None)
    if not expected or not secrets.compare_digest(expected, request.args.get("state", "")):
        return "Sign-in failed: the request did not come from this sign-in (state mismatch). Try again.", 400
    code = request.args.get("code", "")
    if not code:
        return "Sign-in failed: GitHub sent no code (was access denied?).", 400
    try:
        login_name, token = oauth_user(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret, code,
                                       _client_options())
    except GitHubError:
        return "Sign-in failed: GitHub did not accept the code. Try again.", 400
    target = session.pop("next", "/")
    session.clear()
    session.update(login=login_name, token=token, access={})
    return redirect(safe_next(target))


@auth.get("/logout")
def logout():
    session.clear()
    return redirect("/")
