"""Signing in with GitHub and the read check of every view (Flask shell of ``bot.app.core.access``).

``/login``, ``/login/callback`` and ``/logout`` (registered only when signing in is configured);
:func:`allowed` / :func:`require` / :func:`viewer` for the views. Who may read what is decided by
``bot.app.core.access.may_read``; this module only gathers its inputs (the recorded visibility, the
signed-in user's answer from GitHub, cached with their session).

Sessions are kept on the server (``bot.web.sessions``, security review N6): the cookie
``perfgate_session`` holds a random id and nothing else; the user's GitHub token stays in the
App's database, encrypted, and is revoked at GitHub when they sign out. Between ``/login`` and
the callback the only client-side state is ``perfgate_login``: the OAuth ``state`` and where to
go next, signed (``itsdangerous``, keyed by ``PERFGATE_SESSION_SECRET``) and valid for
:data:`LOGIN_SECONDS` — it binds the callback to the browser that started it. Both cookies are
``HttpOnly``, ``SameSite=Lax`` and ``Secure`` (``PERFGATE_PUBLIC_URL`` is https, which
``bot.settings`` requires for signing in, unless it is an ``http://`` loopback address for trying
it on one's own machine). Flask's own cookie session is not used (no ``secret_key`` is set).
"""

from __future__ import annotations

import logging
import secrets
import time

from flask import Blueprint, abort, current_app, g, redirect, request

from ..app.core.access import may_read, safe_next
from ..db import utc_now
from . import sessions

log = logging.getLogger("perfgate.bot")

#: Seconds a signed-in user's answer from GitHub about one repository is reused.
CACHE_SECONDS = 600
#: Repositories whose answers a session keeps.
CACHE_ENTRIES = 200
#: Seconds between ``/login`` and GitHub's callback (the ``perfgate_login`` cookie's life).
LOGIN_SECONDS = 600
LOGIN_COOKIE = "perfgate_login"

auth = Blueprint("access", __name__)


def init_app(app) -> None:
    """The sign-in routes, when signing in is configured (``Settings.oauth``)."""
    settings = app.extensions["perfgate"]["settings"]
    if settings.oauth:
        app.extensions["perfgate_signin"] = {"box": sessions.TokenBox(settings.session_secret),
                                             "secure": (settings.public_url or "").startswith("https://")}
        app.register_blueprint(auth)


def _settings():
    return current_app.extensions["perfgate"]["settings"]


def _db():
    return current_app.extensions["perfgate"]["db"]


def _client_options() -> dict | None:
    from ..app.github.github_errors import TESTING_CLIENT_OPTIONS

    return TESTING_CLIENT_OPTIONS if current_app.config.get("TESTING") else None


def _private(repository: str) -> bool | None:
    from ..history import reads as history_reads

    with _db().session() as s:
        return history_reads.visibility(s, repository)


def _current() -> dict | None:
    """The request's signed-in session as plain data (``login``, ``token`` sealed, ``access``),
    read once per request; None: nobody is signed in (or signing in is off)."""
    if "perfgate_session" in g:
        return g.perfgate_session
    found = None
    value = request.cookies.get(sessions.COOKIE)
    if _settings().oauth and value:
        with _db().session() as s, s.begin():
            row = sessions.find(s, value, utc_now())
            if row is not None:
                found = {"login": row.login, "token": row.token, "access": dict(row.access or {})}
    g.perfgate_session = found
    return found


def _user_can_read(repository: str) -> bool | None:
    """The signed-in user's access to ``repository`` (None: nobody signed in); asks GitHub at
    most once per :data:`CACHE_SECONDS`; a GitHub failure reads as no."""
    from ..app.github.github_user import GitHubError, user_can_read

    current = _current()
    if current is None:
        return None
    hit = current["access"].get(repository)
    if hit and time.time() - hit[1] < CACHE_SECONDS:
        return bool(hit[0])
    token = current_app.extensions["perfgate_signin"]["box"].open(current["token"])
    if token is None:
        return False
    try:
        answer = user_can_read(_settings().api_url, token, repository, _client_options())
    except GitHubError:
        return False
    current["access"][repository] = [answer, time.time()]
    current["access"] = dict(sorted(current["access"].items(), key=lambda kv: kv[1][1])[-CACHE_ENTRIES:])
    with _db().session() as s, s.begin():
        row = sessions.find(s, request.cookies.get(sessions.COOKIE), utc_now())
        if row is not None:
            row.access = current["access"]
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
    if page and _settings().oauth and viewer() is None:
        abort(redirect(f"/login?next={request.full_path.rstrip('?')}"))
    abort(404)


def viewer() -> str | None:
    """The signed-in user's login (None: anonymous)."""
    current = _current()
    return current["login"] if current else None


def _login_serializer():
    from itsdangerous import URLSafeTimedSerializer

    return URLSafeTimedSerializer(_settings().session_secret, salt="perfgate-login")


def _set_cookie(response, name: str, value: str, max_age: int, path: str) -> None:
    response.set_cookie(name, value, max_age=max_age, path=path, httponly=True, samesite="Lax",
                        secure=current_app.extensions["perfgate_signin"]["secure"])


@auth.get("/login")
def login():
    from ..app.github.github_user import oauth_login_url

    settings = _settings()
    state = secrets.token_urlsafe(24)
    callback = f"{settings.public_url}/login/callback"  # never from the Host header
    response = redirect(oauth_login_url(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret,
                                        callback, state))
    carried = _login_serializer().dumps({"state": state, "next": safe_next(request.args.get("next"))})
    _set_cookie(response, LOGIN_COOKIE, carried, LOGIN_SECONDS, "/login")
    return response


@auth.get("/login/callback")
def callback():
    from itsdangerous import BadData

    from ..app.github.github_user import GitHubError, oauth_user

    settings = _settings()
    try:
        carried = _login_serializer().loads(request.cookies.get(LOGIN_COOKIE, ""), max_age=LOGIN_SECONDS)
        expected = str(carried["state"])
    except (BadData, KeyError, TypeError):
        carried, expected = {}, ""
    if not expected or not secrets.compare_digest(expected.encode(), request.args.get("state", "").encode()):
        return "Sign-in failed: the request did not come from this sign-in (state mismatch). Try again.", 400
    code = request.args.get("code", "")
    if not code or len(code) > 200:
        return "Sign-in failed: GitHub sent no code (was access denied?).", 400
    try:
        login_name, token = oauth_user(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret, code,
                                       _client_options())
    except GitHubError:
        return "Sign-in failed: GitHub did not accept the code. Try again.", 400
    now = utc_now()
    with _db().session() as s, s.begin():
        sessions.end(s, request.cookies.get(sessions.COOKIE))  # never keep an id from before signing in
        sessions.purge(s, now)
        value = sessions.create(s, login_name, current_app.extensions["perfgate_signin"]["box"].seal(token), now)
    response = redirect(safe_next(str(carried.get("next") or "/")))
    _set_cookie(response, sessions.COOKIE, value, int(sessions.LIFETIME.total_seconds()), "/")
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@auth.get("/logout")
def logout():
    from ..app.github.github_user import GitHubError, revoke_user_token

    settings = _settings()
    with _db().session() as s, s.begin():
        row = sessions.end(s, request.cookies.get(sessions.COOKIE))
        sealed = row.token if row is not None else None
    token = current_app.extensions["perfgate_signin"]["box"].open(sealed)
    if token:
        try:
            revoke_user_token(settings.api_url, settings.oauth_client_id, settings.oauth_client_secret, token,
                              _client_options())
        except GitHubError as exc:  # the session is gone anyway; the token expires within 8 hours
            log.warning("could not revoke a user token at sign-out: %s", exc.detail)
    response = redirect("/")
    response.delete_cookie(sessions.COOKIE, path="/")
    return response
