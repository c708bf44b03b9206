"""What every part of the App that calls GitHub shares (thin shell, no requests of its own):
:class:`GitHubError` with the HTTP status and whether a retry may go otherwise (``transient``),
the redaction of URLs' query strings from what is logged, the wrapper that turns PyGithub's
exceptions into :class:`GitHubError` (:func:`wrap`), PyGithub's retry policy
(:func:`idempotent_retry`) and the plain answers of the gateway (:class:`Artifact`,
:class:`Dispatched`). ``bot.app.github.gateway`` (as the App) and ``bot.app.github.github_user`` (as
a user) build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

#: ``GithubIntegration`` options under ``TESTING``: no retries, no pacing sleeps (GITHUB.md).
TESTING_CLIENT_OPTIONS = {"retry": None, "seconds_between_requests": 0, "seconds_between_writes": 0, "timeout": 10}


class GitHubError(Exception):
    """A GitHub API call failed. ``status``: HTTP status (0: no answer).

    The message is fixed text that may be published (what failed, the HTTP status);
    ``detail`` is the underlying error for the App's log only — never for a comment or a
    check run (a transport error's text can hold a pre-signed storage URL)."""

    def __init__(self, status: int, message: str, detail: str | None = None):
        super().__init__(message)
        self.status = status
        self.detail = detail or message

    @property
    def transient(self) -> bool:
        """No answer, a server error, or a rate limit (429, or 403 "secondary rate limit"):
        the call may have had its effect, or may succeed later — retry, never conclude."""
        return self.status == 0 or self.status >= 500 or self.status == 429 or (
            self.status == 403 and "rate limit" in self.detail.lower())


_QUERY = re.compile(r"\?[^\s'\"<>()]+")


def redact(text: str) -> str:
    """``text`` with every URL query string (absolute or a bare path's, as in requests'
    errors) replaced by ``?…``: signatures and tokens stay out of the log."""
    return _QUERY.sub("?…", text)


class ArtifactTooLarge(GitHubError):
    """An artifact bigger than the configured limit (not downloaded past it)."""


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    size_in_bytes: int
    archive_download_url: str
    expired: bool


@dataclass(frozen=True)
class Dispatched:
    """The workflow run GitHub created for a dispatch (``return_run_details``)."""

    run_id: int | None
    html_url: str | None


def _wrap(doing: str, func: Callable[[], Any]) -> Any:
    from github import GithubException

    try:
        return func()
    except GithubException as exc:
        data = getattr(exc, "data", None)  # GitHub's JSON error: its "message" says why
        why = str(data["message"]) if isinstance(data, dict) and data.get("message") else str(exc)
        raise GitHubError(exc.status, f"GitHub could not {doing} (HTTP {exc.status})",
                          redact(f"GitHub could not {doing} (HTTP {exc.status}: {why})")) from None
    except (OSError, ValueError) as exc:  # connection refused, timeouts (requests' errors are OSErrors)
        raise GitHubError(0, f"could not reach GitHub to {doing}",
                          redact(f"could not reach GitHub to {doing}: {type(exc).__name__}: {exc}")) from None


def idempotent_retry():
    """PyGithub's ``GithubRetry`` (5xx, rate limits with their ``Retry-After``) for the methods
    that may be repeated without a second effect — never POST; 3 retries, backoff 0.5 s × 2^n."""
    from github.GithubRetry import GithubRetry

    return GithubRetry(total=3, backoff_factor=0.5,
                       allowed_methods=frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"}))


@dataclass(frozen=True)
class CheckRunState:
    """A check run as GitHub lists it: its id, ``external_id`` (the run key it was created
    with) and ``status`` (queued, in_progress, completed)."""

    id: int
    external_id: str | None
    status: str


#: The wrapper's public name (``bot.app.github.gateway`` and ``bot.app.github.github_user`` use it).
wrap = _wrap
