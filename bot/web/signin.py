"""Signing in with GitHub and the read check of every view (Flask shell of ``bot.app.access``).

``/login``, ``/login/callback`` and ``/logout`` (registered only when signing in is configured);
:func:`allowed` / :func:`require` / :func:`viewer` for the views. Who may read what is decided by
``bot.app.access.may_read``; this module only gathers its inputs (the recorded visibility, the
signed-in user's answer from GitHub, cached in the session cookie).
"""

from __future__ import annotations

import secrets
import time

from flask import Blueprint, abort, current_app, redirect, request, session

from ..app.access import may_read, safe_next

#: Seconds a signed-in user's answer from GitHub about one repository is reused.
CACHE_SECONDS = 600
#: Repositories whose answers the session cookie keeps (a cookie holds ~4 KB).
CACHE_ENTRIES = 20

auth = Blueprint("access", __name__)


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
    from ..app.gateway import TESTING_CLIENT_OPTIONS

    return TESTING_CLIENT_OPTIONS if current_app.config.get("TESTING") else None


def _private(repository: str) -> bool | None:
    from ..history import store as history_store

    with current_app.extensions["perfgate"]["db"].session() as s:
        return history_store.visibility(s, repository)


def _user_can_read(repository: str) -> bool | None:
    """The signed-in user's access to ``repository`` (None: nobody signed in); asks GitHub at
    most once per :data:`CACHE_SECONDS`; a GitHub failure reads as no."""
    from ..app.gateway import GitHubError, user_can_read

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
    from ..app.gateway import oauth_login_url

    settings = _settings()
    state = secrets.token_urlsafe(24)
    session["oauth_state"], session["next"] = state, safe_next(request.args.get("next"))
    callback = f"{settings.public_url or request.host_url.rstrip('/')}/login/callback"
    return redirect(oauth_login_url(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret,
                                    callback, state))


@auth.get("/login/callback")
def callback():
    from ..app.gateway import GitHubError, oauth_user

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
