"""``/setup``: register the GitHub App from perfgate's manifest, served by ``perfgate serve``
while it has no App credentials (the manifest itself is :mod:`bot.app.manifest`'s; the call to
GitHub is :func:`bot.app.gateway.convert_manifest`).

GitHub's flow: the browser posts the manifest to GitHub, the user confirms, GitHub redirects to
``/setup/callback?code=…&state=…``, and this server exchanges the one-hour code for the App's
credentials (``POST /app-manifests/{code}/conversions``). They are written to
``$PERFGATE_HOME/github-app.env`` and ``github-app.pem``, created with mode 0600 and never
overwritten; the page then says to restart with them and to install the App. The ``state`` is a
random value of this process, compared in constant time, so a callback forged from elsewhere
stores nothing.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

from flask import Blueprint, Flask, current_app, render_template, request

from runner.errors import UserError

from ..app.gateway import GitHubError, convert_manifest
from ..app.manifest import app_manifest, registration_url, settings_file

log = logging.getLogger(__name__)

setup = Blueprint("app_setup", __name__)

ENV_FILE, KEY_FILE = "github-app.env", "github-app.pem"

_CODE = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


def init_setup(app: Flask, *, home: Path, public_url: str, github_url: str, api_url: str,
               client_options: dict | None = None) -> None:
    """Serve ``/setup`` on ``app``: credentials go under ``home``; ``public_url`` is where GitHub
    will deliver webhooks ("" = the address the browser used, which must then be https);
    ``client_options``: extra PyGithub client arguments (tests)."""
    app.extensions["perfgate_setup"] = {"state": secrets.token_urlsafe(24), "home": Path(home),
                                        "public_url": public_url, "github_url": github_url.rstrip("/"),
                                        "api_url": api_url.rstrip("/"), "client_options": client_options or {}}
    app.register_blueprint(setup)


def _cfg() -> dict:
    return current_app.extensions["perfgate_setup"]


def _page(status: int = 200, form_target: str | None = None, **context):
    cfg = _cfg()
    response = current_app.make_response((render_template(
        "app/setup.html", env_file=cfg["home"] / ENV_FILE, key_file=cfg["home"] / KEY_FILE, **context), status))
    if form_target:  # the one page with a form: it may post to GitHub and nowhere else
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'; "
            f"form-action {form_target}")
    return response


@setup.get("/setup")
def setup_page():
    cfg = _cfg()
    if (cfg["home"] / ENV_FILE).exists():
        return _page(done=True)
    organization = request.args.get("organization") or None
    try:
        manifest = app_manifest(cfg["public_url"] or request.host_url)
        post_url = registration_url(cfg["github_url"], organization, cfg["state"])
    except UserError as exc:
        hint = "" if cfg["public_url"] else " Set PERFGATE_PUBLIC_URL to the https:// address GitHub reaches."
        return _page(400, error=f"{exc}.{hint}")
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
    if (home / ENV_FILE).exists():
        return _page(done=True)
    code, state = request.args.get("code", ""), request.args.get("state", "")
    if not hmac.compare_digest(state.encode(), cfg["state"].encode()):
        return _page(403, error="this callback does not answer the registration this server started")
    if not _CODE.match(code):
        return _page(400, error="GitHub's callback carries no valid code")
    try:
        answer = convert_manifest(cfg["api_url"], code, cfg["client_options"])
        env_text = settings_file(answer, str(home / KEY_FILE), secrets.token_urlsafe(48))
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
        return _page(done=True)
    registered = {"name": answer.get("name") or answer.get("slug") or "perfgate", "id": answer.get("id"),
                  "oauth": "GITHUB_CLIENT_ID" in env_text,
                  "install_url": f"{cfg['github_url']}/apps/{quote(str(answer.get('slug') or ''), safe='')}"
                                 "/installations/new"}
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
