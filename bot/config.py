"""The web application's settings, read once (from a mapping or the environment) by ``create_app``.

The database, the public URL and who may read the pages (``bot.app.access``):
``PERFGATE_READ_ACCESS`` (``public``, the default, or ``all``), and for signing in with GitHub
``GITHUB_CLIENT_ID`` / ``GITHUB_CLIENT_SECRET`` (the GitHub App's OAuth credentials) with
``PERFGATE_SESSION_SECRET`` (signs the session cookie) and ``GITHUB_API_URL``. The App's own
GitHub settings (``GITHUB_APP_ID``, ``GITHUB_WEBHOOK_SECRET``, ...) are ``bot.app_settings``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from runner.errors import UserError

from . import db
from .app_settings import DEFAULT_SERVER_URL, server_url

READ_ACCESS_MODES = ("public", "all")


@dataclass(frozen=True)
class Settings:
    """``database_url``: SQLAlchemy URL (``DATABASE_URL``, else ``$PERFGATE_HOME/perfgate.db``);
    ``public_url``: where the App is reachable, for links in comments (``PERFGATE_PUBLIC_URL``,
    no trailing slash; None: links are root-relative); ``testing``: Flask's TESTING;
    ``read_access``: ``public`` or ``all`` (``bot.app.access``); the rest: signing in with GitHub;
    ``github_url``: GitHub's web address (``bot.app_settings.server_url``), the only host
    the pages link to from stored data."""

    database_url: str
    public_url: str | None = None
    testing: bool = False
    read_access: str = "public"
    api_url: str = "https://api.github.com"
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = field(default=None, repr=False)
    session_secret: str | None = field(default=None, repr=False)

    @property
    def oauth(self) -> bool:
        """Can people sign in with GitHub?"""
        return bool(self.oauth_client_id and self.oauth_client_secret and self.session_secret)
    github_url: str = DEFAULT_SERVER_URL


def load_settings(source: Mapping[str, str]) -> Settings:
    """Settings from ``source`` (``os.environ`` or a test's dict with the same keys).

    Raises:
        runner.errors.UserError: a value is malformed (the message names the variable).
    """
    public = (source.get("PERFGATE_PUBLIC_URL") or "").strip().rstrip("/") or None
    testing = str(source.get("TESTING", "")).lower() in ("1", "true", "yes")
    mode = (source.get("PERFGATE_READ_ACCESS") or "public").strip().lower()
    if mode not in READ_ACCESS_MODES:
        raise UserError(f"PERFGATE_READ_ACCESS must be public (the default: public repositories only) or all "
                        f"(everything, behind your own authentication), got {mode!r}")
    client_id = (source.get("GITHUB_CLIENT_ID") or "").strip() or None
    client_secret = (source.get("GITHUB_CLIENT_SECRET") or "").strip() or None
    session_secret = (source.get("PERFGATE_SESSION_SECRET") or "").strip() or None
    if bool(client_id) != bool(client_secret):
        raise UserError("signing in with GitHub needs both GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (the GitHub "
                        "App's OAuth credentials); one of them is not set")
    if client_id and (session_secret is None or len(session_secret) < 32):
        raise UserError("signing in with GitHub needs PERFGATE_SESSION_SECRET, at least 32 random characters "
                        "(it signs the session cookie)")
    api_url = (source.get("GITHUB_API_URL") or "").strip().rstrip("/") or "https://api.github.com"
    return Settings(database_url=db.database_url(source), public_url=public, testing=testing, read_access=mode,
                    api_url=api_url, oauth_client_id=client_id, oauth_client_secret=client_secret,
                    session_secret=session_secret, github_url=server_url(source))
