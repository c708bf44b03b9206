"""Who may read what the App shows: the run pages, the index, the dashboard and its JSON.

A repository's runs, reports and history are shown only to those who may read the repository:

- ``PERFGATE_READ_ACCESS=public`` (the default): repositories GitHub reported as public in its
  webhooks (``repository.private``, recorded per repository by the App, moved only by newer
  evidence: :func:`next_visibility`) are readable by everyone; any other one answers 404, as if
  it did not exist.
- Signing in with GitHub (``GITHUB_CLIENT_ID``/``GITHUB_CLIENT_SECRET`` of the GitHub App, and
  ``PERFGATE_SESSION_SECRET``): the web application flow at ``/login``; a signed-in user also
  sees the private repositories for which GitHub answers ``GET /repos/{owner}/{repo}`` with
  their user token (the App is installed there and they may read it). The answer is cached with
  the user's server-side session (``bot.web.sessions``) for :data:`CACHE_SECONDS`.
- ``PERFGATE_READ_ACCESS=all``: everything to everyone, for deployments behind their own
  authentication (a VPN, an authenticating proxy).

This module decides (pure): :func:`may_read`, :func:`visibility`, :func:`next_visibility`,
:func:`safe_next`. The Flask
shell — the ``/login``, ``/login/callback`` and ``/logout`` routes, and ``allowed`` / ``require``
for the views — is ``bot.web.signin``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...history.points import is_repository_name


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


@dataclass(frozen=True)
class Visibility:
    """A repository's visibility as recorded (a ``repositories`` row): ``private``, GitHub's
    ``repository.private`` (None: never reported); ``at``, when the newest delivery that reported
    it was received (None: unknown, older than any evidence); ``publicized_at``, when the newest
    ``repository`` ``publicized`` delivery that made it public was received."""

    private: bool | None = None
    at: _dt.datetime | None = None
    publicized_at: _dt.datetime | None = None


def visibility_records(event_name: str, action: str | None, repository: str | None,
                       payload: Mapping[str, Any]) -> list[tuple[str, bool, bool]]:
    """What every signed delivery says of its repositories' visibility, to record
    (``bot.app.store.store.record_visibility``): ``[(owner/name, private, publicized)]`` in name
    order (several jobs record in one order: none waits on another in a cycle), only well-formed
    names; ``publicized``: the delivery is the ``repository publicized`` notice of that repository
    (the only evidence that moves a recorded visibility towards public)."""
    publicized = event_name == "repository" and action == "publicized"
    return [(name, private, publicized and name == repository)
            for name, private in sorted(visibility(payload).items()) if is_repository_name(name)]


def _newer(moment: _dt.datetime, than: _dt.datetime | None) -> bool:
    return than is None or moment > than


def _latest(a: _dt.datetime | None, b: _dt.datetime | None) -> _dt.datetime | None:
    return b if a is None else a if b is None else max(a, b)


def next_visibility(stored: Visibility, private: bool, at: _dt.datetime, *, publicized: bool = False) -> Visibility:
    """What to record after a delivery received at ``at`` reported ``private`` (pure).

    ``publicized``: the delivery is GitHub's notice that the repository was made public
    (``repository`` ``publicized``). Deliveries are processed out of the order they were
    received — Huey's retries, the sweep (failed deliveries up to 6 h old), GitHub's Redeliver
    of the same delivery, two workers — and a payload received after a change may have been
    written before it, so the order of processing says nothing (security review N5). The rule
    fails closed:

    - towards private, any evidence counts, an old one included — except evidence older than the
      ``publicized`` notice that made the repository public (it was made public after that);
    - towards public, only a ``publicized`` notice received after the evidence of privacy: a
      private repository stays private until GitHub says it was made public, later;
    - the same value from newer evidence moves the times forward, so a later change is compared
      with the newest evidence.

    Times are receipt times of the deliveries (the App's clock, kept by every retry).
    """
    if stored.private is None:
        return Visibility(private, at, at if publicized and not private else None)
    if private:
        if stored.private:
            return Visibility(True, _latest(stored.at, at), stored.publicized_at)
        if stored.publicized_at is not None and at < stored.publicized_at:
            return stored  # made public after this evidence was received
        return Visibility(True, at, stored.publicized_at)
    if not stored.private:
        return Visibility(False, _latest(stored.at, at),
                          _latest(stored.publicized_at, at) if publicized else stored.publicized_at)
    if publicized and _newer(at, stored.at):
        return Visibility(False, at, at)
    return stored


def safe_next(target: str | None) -> str:
    """A local path to return to after signing in (anything else: ``/``), so ``/login?next=``
    cannot send people elsewhere."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"
