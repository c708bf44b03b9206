"""``/setup``: register the GitHub App from perfgate's manifest, served by ``perfgate serve``
while it has no App credentials (the manifest itself is :mod:`bot.app.core.manifest`'s; the call to
GitHub is :func:`bot.app.github.github_user.convert_manifest`).

GitHub's flow: the browser posts the manifest to GitHub, the user confirms, GitHub redirects to
``/setup/callback?code=…&state=…``, and this server exchanges the one-hour code for the App's
credentials (``POST /app-manifests/{code}/conversions``). They are written to
``$PERFGATE_HOME/github-app.env`` and ``github-app.pem``, created with mode 0600 and never
overwritten; the page then says to restart with them and to install the App.

Whoever completes the flow decides whose App the server runs, so it belongs to the operator
(security review N4):

- ``perfgate serve`` prints a **setup token** at start (:func:`init_setup` makes it); the link
  ``PUBLIC_URL/setup?token=…`` admits the first browser that opens it — the token is then
  spent — with a random browser id in the cookie :data:`COOKIE` (``HttpOnly``, ``Secure``,
  ``SameSite=Lax`` so that GitHub's redirect back carries it, path ``/setup``). Everyone else
  gets 403 and no ``state``.
- Each visit of ``/setup`` by that browser makes a new ``state`` bound to it, usable once,
  within :data:`STATE_SECONDS` (GitHub's code lives an hour). A callback whose ``state`` was not
  made for the browser presenting it stores nothing.
- Once the App is registered (the files exist) ``/setup`` and the callback refuse (410); only the
  browser that registered it sees which App (id, name, owner) — no file system path is shown.
- The manifest's addresses come from ``PERFGATE_PUBLIC_URL`` only, never from the request's
  ``Host`` (without it ``perfgate serve`` does not serve ``/setup``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

from flask import Blueprint, Flask, current_app, redirect, render_template, request

from runner.errors import UserError

from ..app.github.github_user import GitHubError, convert_manifest
from ..app.core.manifest import app_manifest, registration_url, settings_file

log = logging.getLogger(__name__)

setup = Blueprint("app_setup", __name__)

ENV_FILE, KEY_FILE = "github-app.env", "github-app.pem"
#: The cookie that admits the operator's browser (its value: a random browser id).
COOKIE = "perfgate_setup"
#: Seconds a ``state`` handed to the browser stays valid (GitHub's code: one hour).
STATE_SECONDS = 3600
#: The newest states kept per browser (each visit of /setup makes one).
STATES_PER_BROWSER = 8

_CODE = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,100}$")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def init_setup(app: Flask, *, home: Path, public_url: str, github_url: str, api_url: str,
               client_options: dict | None = None) -> str:
    """Serve ``/setup`` on ``app``; returns the one-time setup token to show the operator.

    Args:
        home: where the credentials go. public_url: ``PERFGATE_PUBLIC_URL``, where GitHub will
            deliver webhooks (https). client_options: extra PyGithub client arguments (tests).
    Raises:
        UserError: ``public_url`` is not an https address (the manifest needs one).
    """
    app_manifest(public_url)  # refuse a missing or non-https address now, not on the page
    token = secrets.token_urlsafe(32)
    app.extensions["perfgate_setup"] = {
        "token": _digest(token), "token_used": False, "browsers": set(), "states": {}, "lock": threading.Lock(),
        "registered": None, "registered_by": None, "home": Path(home), "public_url": public_url.rstrip("/"),
        "github_url": github_url.rstrip("/"), "api_url": api_url.rstrip("/"), "client_options": client_options or {}}
    app.register_blueprint(setup)
    return token


def _cfg() -> dict:
    return current_app.extensions["perfgate_setup"]


def _browser() -> str | None:
    """The admitted browser's id hash from the cookie, or None."""
    value = request.cookies.get(COOKIE, "")
    if not _TOKEN.match(value):
        return None
    digest = _digest(value)
    with _cfg()["lock"]:
        return digest if digest in _cfg()["browsers"] else None


def _configured() -> bool:
    cfg = _cfg()
    return cfg["registered"] is not None or (cfg["home"] / ENV_FILE).exists()


def _page(status: int = 200, form_target: str | None = None, **context):
    response = current_app.make_response((render_template("app/setup.html", **context), status))
    if form_target:  # the one page with a form: it may post to GitHub and nowhere else
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'; "
            f"form-action {form_target}")
    response.headers["Cache-Control"] = "no-store"
    return response


def _done(browser: str | None):
    cfg = _cfg()
    if browser is not None and browser == cfg["registered_by"]:
        return _page(registered=cfg["registered"])
    return _page(410, done=True)


def _admit(token: str):
    """The operator's first visit with the printed token: spend it, admit this browser."""
    cfg = _cfg()
    with cfg["lock"]:
        good = (not cfg["token_used"] and _TOKEN.match(token) is not None
                and hmac.compare_digest(_digest(token), cfg["token"]))
        if good:
            cfg["token_used"] = True
            browser = secrets.token_urlsafe(32)
            cfg["browsers"].add(_digest(browser))
    if not good:
        return _page(403, denied=True, spent=cfg["token_used"])
    response = redirect("/setup" + (f"?organization={quote(request.args['organization'], safe='')}"
                                    if request.args.get("organization") else ""))
    response.set_cookie(COOKIE, browser, max_age=STATE_SECONDS * 6, path="/setup", httponly=True, secure=True,
                        samesite="Lax")
    response.headers["Cache-Control"] = "no-store"
    return response


def _new_state(browser: str) -> str:
    cfg, now = _cfg(), time.monotonic()
    state = secrets.token_urlsafe(24)
    with cfg["lock"]:
        states = cfg["states"]
        for key in [k for k, (_, until) in states.items() if until <= now]:
            del states[key]
        mine = sorted((until, k) for k, (b, until) in states.items() if b == browser)
        for _, key in mine[:max(0, len(mine) - STATES_PER_BROWSER + 1)]:
            del states[key]
        states[state] = (browser, now + STATE_SECONDS)
    return state


def _take_state(state: str, browser: str | None) -> bool:
    """Is ``state`` one made for ``browser`` and still valid? It is used up if so."""
    cfg, now = _cfg(), time.monotonic()
    with cfg["lock"]:
        held = cfg["states"].get(state) if isinstance(state, str) else None
        if held is None or browser is None or not hmac.compare_digest(held[0], browser):
            return False
        del cfg["states"][state]
        return held[1] > now


@setup.get("/setup")
def setup_page():
    browser = _browser()
    if _configured():
        return _done(browser)
    if "token" in request.args:
        return _admit(request.args.get("token", ""))
    if browser is None:
        return _page(403, denied=True, spent=_cfg()["token_used"])
    cfg = _cfg()
    organization = request.args.get("organization") or None
    try:
        manifest = app_manifest(cfg["public_url"])
        post_url = registration_url(cfg["github_url"], organization, _new_state(browser))
    except UserError as exc:
        return _page(400, error=str(exc))
    origin = urlsplit(cfg["github_url"])
    return _page(form_target=f"{origin.scheme}://{origin.netloc}", manifest=manifest,
                 manifest_json=json.dumps(manifest), post_url=post_url, github_host=origin.netloc,
                 organization=organization)


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` with mode 0600 (never replacing a file) and write ``text``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


@setup.get("/setup/callback")
def setup_callback():
    cfg = _cfg()
    home = cfg["home"]
    browser = _browser()
    if _configured():
        return _done(browser)
    code, state = request.args.get("code", ""), request.args.get("state", "")
    if not _take_state(state, browser):
        return _page(403, error="this callback does not answer a registration this browser started here "
                                "(open /setup again from the browser that has the setup link)")
    if not _CODE.match(code):
        return _page(400, error="GitHub's callback carries no valid code")
    try:
        answer = convert_manifest(cfg["api_url"], code, cfg["client_options"])
        env_text = settings_file(answer, str(home / KEY_FILE), secrets.token_urlsafe(48), cfg["public_url"])
        pem = str(answer.get("pem") or "")
        if "PRIVATE KEY" not in pem:
            raise ValueError("GitHub's answer has no private key")
    except GitHubError as exc:
        log.warning("manifest conversion failed: %s", exc.detail)
        return _page(502, error=f"GitHub refused the registration code (HTTP {exc.status}); it is valid for one "
                                "hour and once")
    except ValueError as exc:
        return _page(502, error=str(exc))
    home.mkdir(parents=True, exist_ok=True)
    try:
        _write_private(home / KEY_FILE, pem)
        _write_private(home / ENV_FILE, env_text)
    except FileExistsError:  # a second callback raced this one: the first one's files stay
        return _done(browser)
    owner = answer.get("owner") if isinstance(answer.get("owner"), dict) else {}
    registered = {"name": answer.get("name") or answer.get("slug") or "perfgate", "id": answer.get("id"),
                  "owner": owner.get("login"), "oauth": "GITHUB_CLIENT_ID" in env_text,
                  "install_url": f"{cfg['github_url']}/apps/{quote(str(answer.get('slug') or ''), safe='')}"
                                 "/installations/new"}
    with cfg["lock"]:
        cfg["registered"], cfg["registered_by"] = registered, browser
        cfg["states"].clear()
    return _page(registered=registered)


def main_app_manifest(args) -> int:
    """``perfgate app manifest --url PUBLIC_URL [--name NAME] [--organization ORG]``: print the
    manifest (JSON) and where to post it, for registering by hand or from a script.

    Raises:
        UserError: a URL or name GitHub would refuse (exit 2).
    """
    manifest = app_manifest(args.url, args.name)
    print(json.dumps(manifest, indent=2))
    github_url = os.environ.get("GITHUB_SERVER_URL") or "https://github.com"
    print(f"# post it as the form field `manifest` to {registration_url(github_url, args.organization)}"
          " (or run `perfgate serve` without App credentials and open /setup)", file=sys.stderr)
    return 0
