"""Who may read what the App shows: the run pages, the index, the dashboard and its JSON.

A repository's runs, reports and history are shown only to those who may read the repository:

- ``PERFGATE_READ_ACCESS=public`` (the default): repositories GitHub reported as public in its
  webhooks (``repository.private``, recorded per repository by the App) are readable by
  everyone; any other one answers 404, as if it did not exist.
- Signing in with GitHub (``GITHUB_CLIENT_ID``/``GITHUB_CLIENT_SECRET`` of the GitHub App, and
  ``PERFGATE_SESSION_SECRET``): the web application flow at ``/login``; a signed-in user also
  sees the private repositories for which GitHub answers ``GET /repos/{owner}/{repo}`` with
  their user token (the App is installed there and they may read it). The answer is cached with
  the user's server-side session (``bot.web.sessions``) for :data:`CACHE_SECONDS`.
- ``PERFGATE_READ_ACCESS=all``: everything to everyone, for deployments behind their own
  authentication (a VPN, an authenticating proxy).

This module decides (pure): :func:`may_read`, :func:`visibility`, :func:`safe_next`. The Flask
shell — the ``/login``, ``/login/callback`` and ``/logout`` routes, and ``allowed`` / ``require``
for the views — is ``bot.web.signin``.
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlsplit


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
