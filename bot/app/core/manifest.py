"""Registering the App from a manifest (GitHub's "Registering a GitHub App from a manifest"
flow): the manifest itself, where to post it, and the settings file made of GitHub's answer.

Pure: the web view that posts the manifest and the call to the conversion endpoint
(``POST /app-manifests/{code}/conversions``) are the shell's.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from runner.errors import UserError

#: What the App may do (README, "GitHub App"): write check runs, comments and workflow dispatches;
#: read the repository's files (the config and the workflow live there).
PERMISSIONS = {"actions": "write", "checks": "write", "pull_requests": "write", "issues": "write",
               "contents": "read", "metadata": "read"}

#: The webhook events the App acts on (installation events are always sent).
EVENTS = ("pull_request", "issue_comment", "commit_comment", "workflow_run", "check_run", "check_suite", "push",
          "repository")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,33}$")
_ORG = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def _public_base(public_url: str) -> str:
    parts = urlsplit(public_url.strip())
    if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment:
        raise UserError(f"--url must be the App's public https:// address (GitHub delivers webhooks there), "
                        f"got {public_url!r}")
    return f"https://{parts.netloc}{parts.path.rstrip('/')}"


def app_manifest(public_url: str, name: str = "perfgate") -> dict:
    """The GitHub App manifest for a perfgate served at ``public_url``.

    Webhooks go to ``PUBLIC_URL/webhook``; after registration GitHub sends the browser to
    ``PUBLIC_URL/setup/callback`` with a one-hour ``code``; sign-in (optional) comes back to
    ``PUBLIC_URL/login/callback``. The App is private (installable only by its owner).

    Raises:
        UserError: ``public_url`` is not an https URL without query, or ``name`` is not a
            GitHub App name (≤ 34 characters).
    """
    base = _public_base(public_url)
    if not _NAME.match(name):
        raise UserError(f"--name: {name!r} is not a GitHub App name (letters, digits, spaces, '.', '_', '-'; ≤ 34)")
    return {
        "name": name,
        "url": base,
        "description": "Paired base-vs-head benchmarks of pull requests on your GPU runners, with root causes.",
        "hook_attributes": {"url": f"{base}/webhook", "active": True},
        "redirect_url": f"{base}/setup/callback",
        "callback_urls": [f"{base}/login/callback"],
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
        "request_oauth_on_install": False,
    }


def registration_url(github_url: str, organization: str | None = None, state: str = "") -> str:
    """Where the browser posts the manifest (a form field ``manifest``): the user's account
    ``GITHUB/settings/apps/new``, or ``GITHUB/organizations/ORG/settings/apps/new``; ``state``
    comes back on the callback (bind it to the browser session).

    Raises:
        UserError: ``organization`` is not a GitHub login.
    """
    base = github_url.rstrip("/")
    if organization:
        if not _ORG.match(organization):
            raise UserError(f"{organization!r} is not a GitHub organization name")
        path = f"/organizations/{organization}/settings/apps/new"
    else:
        path = "/settings/apps/new"
    return f"{base}{path}?state={quote(state, safe='')}" if state else f"{base}{path}"


def settings_file(conversion: dict, key_path: str, session_secret: str, public_url: str | None = None) -> str:
    """The environment file for ``perfgate serve``/``worker`` made of the conversion endpoint's
    answer (``id``, ``webhook_secret``, ``client_id``, ``client_secret``, ``slug``); the private
    key (``pem``) is stored apart, at ``key_path``. With the App's OAuth credentials (signing in
    with GitHub) it also holds ``session_secret`` as ``PERFGATE_SESSION_SECRET`` (≥ 32 random
    characters, which signing in needs; bot.settings) and ``public_url`` as ``PERFGATE_PUBLIC_URL``
    (signing in needs it; the manifest's addresses were made of it).

    Raises:
        ValueError: the answer lacks ``id`` or ``webhook_secret``, or a value holds a newline.
    """
    if not conversion.get("id") or not conversion.get("webhook_secret"):
        raise ValueError("GitHub's answer has no App id or webhook secret")
    values = {"GITHUB_APP_ID": str(conversion["id"]), "GITHUB_WEBHOOK_SECRET": str(conversion["webhook_secret"]),
              "GITHUB_PRIVATE_KEY_PATH": key_path}
    if conversion.get("client_id") and conversion.get("client_secret"):
        values["GITHUB_CLIENT_ID"] = str(conversion["client_id"])
        values["GITHUB_CLIENT_SECRET"] = str(conversion["client_secret"])
        values["PERFGATE_SESSION_SECRET"] = session_secret
    if public_url:
        values["PERFGATE_PUBLIC_URL"] = public_url
    if any("\n" in v or "\r" in v for v in values.values()):
        raise ValueError("a value in GitHub's answer holds a line break")
    slug = str(conversion.get("slug") or "")
    header = f"# The GitHub App {slug!r}, registered from perfgate's manifest. Keep this file secret.\n"
    return header + "".join(f"{k}={v}\n" for k, v in values.items())
